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


def register(spark: object) -> type:
    """Register ``format("jetstream")`` on ``spark`` (a ``SparkSession``); returns the
    data source class. Harmless when Spark already found it through ``pyspark_jetwire``
    (Spark 4.0 refuses to register a name twice; that refusal is ignored)."""
    try:
        spark.dataSource.register(JetStreamDataSource)  # type: ignore[attr-defined]
    except Exception as exc:
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(exc):
            raise
    return JetStreamDataSource
