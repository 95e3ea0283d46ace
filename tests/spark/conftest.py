"""Fixtures of the Spark data source tests: one embedded nats-server and one local
SparkSession for the whole run.

These tests are part of the suite: CI installs the ``spark`` extra and Java. When
pyspark/pyarrow or ``java`` is missing they FAIL with a message saying what to install,
rather than being skipped silently.

``spark`` is ``local[2,2]``: two worker threads (as ``local[2]``) and up to two
attempts per task, which the write-retry test relies on (a task whose first attempt
fails is retried once). ``PYSPARK_PYTHON`` is this interpreter (the workers need
jetwire and pyarrow), and everything binds to loopback. ``cluster_spark`` is a session
on a real standalone cluster (``spark_cluster``: a master and two one-core workers from
the pyspark distribution, started once per run by ``jetwire.testing.spark_cluster``);
one process has one SparkContext, so asking for the other kind stops the active one.
``spark_connect`` is a Spark Connect server (``jetwire.testing.spark_cluster``), used
by clients in subprocesses.
"""
from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any

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


_LOCAL_CONF = {
    "spark.master": "local[2,2]",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "1g",
    "spark.sql.session.timeZone": "UTC",
}


def _session(conf: dict, app: str) -> Any:
    """The active SparkSession if it runs on ``conf["spark.master"]``, else a new one
    (one SparkContext per process: a session on another master is stopped first)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        if active.sparkContext.master == conf["spark.master"]:
            return active
        active.stop()
    builder = SparkSession.builder.appName(app)
    for k, v in conf.items():
        builder = builder.config(k, v)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def stop_active_session() -> None:
    """Stop this process's SparkSession (if any): the next test that needs one makes it."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


@pytest.fixture(scope="session")
def _spark_sessions(spark_available: None) -> Iterator[None]:
    """Stops whichever session (local or cluster) is active at the end of the run."""
    yield
    stop_active_session()


@pytest.fixture
def spark(_spark_sessions: None) -> Any:
    """A ``local[2,2]`` SparkSession (made once, and again after a cluster test)."""
    return _session(_LOCAL_CONF, "jetwire-spark-tests")


@pytest.fixture(scope="session")
def spark_cluster(spark_available: None) -> Iterator[Any]:
    """A standalone Spark cluster on loopback: a master and two one-core workers (512 MB
    each), whose executors run this interpreter with this jetwire on their path."""
    import jetwire
    from jetwire.testing.spark_cluster import SparkStandaloneCluster

    src = os.path.dirname(os.path.dirname(os.path.abspath(jetwire.__file__)))
    cluster = SparkStandaloneCluster(workers=2, cores=1, memory="512m", pythonpath=[src])
    cluster.start(timeout=120)
    try:
        yield cluster
    finally:
        if _cluster_session_active(cluster):
            stop_active_session()
        cluster.stop()


def _cluster_session_active(cluster: Any) -> bool:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    return active is not None and active.sparkContext.master == cluster.master_url


@pytest.fixture
def cluster_spark(_spark_sessions: None, spark_cluster: Any) -> Any:
    """A SparkSession whose driver is this process and whose executors are the
    cluster's (two executor JVMs, registered before it is returned)."""
    return _session(spark_cluster.driver_conf(), "jetwire-spark-cluster-tests")


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


@pytest.fixture(scope="session")
def spark_connect(spark_available: None) -> Iterator[Any]:
    """A Spark Connect server on loopback (``local[2,2]``), whose Python workers run this
    interpreter with this jetwire on their path. Its clients must run in another
    process: PySpark refuses a Connect session in a process with a classic one."""
    import jetwire
    from jetwire.testing.spark_cluster import SparkConnectServer

    src = os.path.dirname(os.path.dirname(os.path.abspath(jetwire.__file__)))
    server = SparkConnectServer("local[2,2]", pythonpath=[src])
    server.start(timeout=120)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def free_spark_cluster(spark_cluster: Any) -> Any:
    """The cluster with no application of this process on it (the in-process cluster
    session takes every core): for tests whose drivers are subprocesses."""
    if _cluster_session_active(spark_cluster):
        stop_active_session()
    return spark_cluster
