"""PySpark data source for JetStream: ``spark.read.format("jetstream")``,
``spark.readStream.format("jetstream")``, ``df.write.format("jetstream")`` and
``df.writeStream.format("jetstream")``.

Install with ``pip install jetwire[spark]`` (pyspark 4.0+ and pyarrow). Once installed,
Spark finds the source by itself (through the top-level ``pyspark_jetwire`` module);
``register(spark)`` registers it explicitly, e.g. on a session whose Python path
does not include the installed package. See ``docs/guide/spark.md``.
"""
from __future__ import annotations

try:
    import pyarrow  # noqa: F401
    import pyspark.sql.datasource  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "jetwire.spark needs pyspark>=4.0 and pyarrow: pip install 'jetwire[spark]'"
    ) from exc

from ..errors import CommitLogError as CommitLogError
from ..errors import DataLossError as DataLossError
from ._options import OptionError as OptionError
from .source import (
    JetStreamCommitMessage,
    JetStreamDataSource,
    JetStreamPartition,
    JetStreamReader,
    JetStreamStreamReader,
    JetStreamStreamWriter,
    JetStreamWriter,
)

# the data source classes of ``source.__all__`` and the names above (a test compares them)
__all__ = [
    "CommitLogError",
    "DataLossError",
    "JetStreamCommitMessage",
    "JetStreamDataSource",
    "JetStreamPartition",
    "JetStreamReader",
    "JetStreamStreamReader",
    "JetStreamStreamWriter",
    "JetStreamWriter",
    "OptionError",
    "register",
]


# Spark prints a streaming read's options in its plans (explain()) and
# masks only the values whose key matches spark.sql.redaction.options.regex (default
# "(?i)url") or spark.redaction.regex (password, token, ...). The options are Spark's
# own map, built by DataFrameReader before the data source sees them: the source cannot
# keep them out of the plan. These are its options that can hold a secret (``servers``:
# a URL with user:password@); register() adds them to the session's pattern.
_REDACTION_CONF = "spark.sql.redaction.options.regex"
_REDACTED_OPTIONS = "(?i:^(?:servers|user|password|token|creds|nkeyseed)$)"


def _redact_secret_options(spark: object) -> None:
    """Extend ``spark.sql.redaction.options.regex`` of ``spark`` with the secret options
    of this source, keeping what it had (Spark's default ``(?i)url`` or the user's own)."""
    conf = spark.conf  # type: ignore[attr-defined]
    try:
        current = conf.get(_REDACTION_CONF)  # what is in force: the user's value or Spark's default
    except Exception:
        current = None
    current = current or "(?i)url"
    if _REDACTED_OPTIONS in current:
        return
    conf.set(_REDACTION_CONF, f"(?:{current})|{_REDACTED_OPTIONS}")


def register(spark: object) -> type:
    """Register ``format("jetstream")`` on ``spark`` (a ``SparkSession``); returns the
    data source class. Harmless when Spark already found it through ``pyspark_jetwire``
    (Spark 4.0 refuses to register a name twice; that refusal is ignored).

    Also appends this source's options that can hold a secret (``servers``, ``user``,
    ``password``, ``token``, ``creds``, ``nkeySeed``) to the session's
    ``spark.sql.redaction.options.regex``, so that the plans Spark shows mask them."""
    try:
        spark.dataSource.register(JetStreamDataSource)  # type: ignore[attr-defined]
    except Exception as exc:
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(exc):
            raise
    try:
        _redact_secret_options(spark)
    except Exception as exc:  # e.g. a platform that forbids setting it: say so, still register
        import logging

        logging.getLogger("jetwire.spark").warning(
            "jetwire.spark.register: could not extend %s (%s); options such as nkeySeed and a servers URL with "
            "a password show in the plans of streaming reads", _REDACTION_CONF, exc)
    return JetStreamDataSource
