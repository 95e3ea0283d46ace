"""Fixtures of the Spark data source tests: one embedded nats-server and one local
SparkSession for the whole run.

These tests are part of the suite: CI installs the ``spark`` extra and Java. When
pyspark/pyarrow or ``java`` is missing they FAIL with a message saying what to install,
rather than being skipped silently.

The session is ``local[2,2]``: two worker threads (as ``local[2]``) and up to two
attempts per task, which the write-retry test relies on (a task whose first attempt
fails is retried once). ``PYSPARK_PYTHON`` is this interpreter (the workers need
jetwire and pyarrow), and everything binds to loopback.
"""
from __future__ import annotations

import os
import shutil
import sys
import uuid
from typing import Any, Callable, Iterator

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _missing() -> str:
    problems = []
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        problems.append(f"pyspark/pyarrow are not installed ({exc}); install the extra: pip install -e '.[spark]'")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        problems.append("no `java` on PATH and JAVA_HOME is unset; Spark needs a JDK (17+)")
    return "; ".join(problems)


def pytest_collection_modifyitems(config: Any, items: list) -> None:
    for item in items:
        if str(item.fspath).startswith(HERE):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark_nats() -> Iterator[Any]:
    """A JetStream server for the Spark tests (private: tests create their own streams)."""
    from jetwire.testing import NatsServer

    srv = NatsServer().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def spark_available() -> None:
    """Fails the test (not a skip) when pyspark/pyarrow or Java is missing."""
    problem = _missing()
    if problem:
        pytest.fail(f"Spark tests cannot run: {problem}", pytrace=False)


@pytest.fixture(scope="session")
def spark(spark_available: None) -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2,2]")
        .appName("jetwire-spark-tests")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def js(spark_nats: Any) -> Iterator[Any]:
    """A blocking JetStream context on the test server (closed after the test)."""
    import jetwire

    nc = jetwire.connect(spark_nats.url)
    try:
        yield nc.jetstream()
    finally:
        nc.close()


@pytest.fixture
def make_stream(js: Any) -> Iterator[Callable[..., str]]:
    """``make_stream(**config) -> name``: a fresh stream with subjects ``<name>.>``
    (deleted after the test)."""
    made = []

    def make(**config: Any) -> str:
        name = config.pop("name", None) or f"SP_{uuid.uuid4().hex[:10].upper()}"
        config.setdefault("subjects", [f"{name.lower()}.>"])
        js.create_stream(name=name, **config)
        made.append(name)
        return name

    yield make
    for name in made:
        try:
            js.delete_stream(name)
        except Exception:
            pass


@pytest.fixture
def fill(js: Any) -> Callable[..., None]:
    """``fill(stream, n, subjects=3, start=0, headers_every=0)``: publish ``n`` messages
    to ``<stream>.s<i % subjects>`` with data ``m<i>``; every ``headers_every``-th
    message (when > 0) gets a multi-valued header."""

    def _fill(stream: str, n: int, subjects: int = 3, start: int = 0, headers_every: int = 0) -> None:
        base = stream.lower()
        futs = []
        for i in range(start, start + n):
            hdrs = {"X-Multi": ["a", str(i)], "X-One": "1"} if headers_every and i % headers_every == 0 else None
            futs.append(js.publish_async(f"{base}.s{i % subjects}", b"m%d" % i, headers=hdrs, stall_wait=10))
        js.publish_async_complete(timeout=30)
        for f in futs:
            f.result()

    return _fill
