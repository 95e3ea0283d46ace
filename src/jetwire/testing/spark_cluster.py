"""A Spark standalone cluster on loopback for tests: one master and N workers started
from the ``pyspark`` distribution (``bin/spark-class``), each worker with its own
executor JVMs -- what users run, unlike ``local[n]`` where everything shares one JVM.
:class:`SparkConnectServer` is a Spark Connect server for clients that reach Spark
through ``sc://`` (its jobs on ``local[n]`` or on such a cluster).

    from jetwire.testing.spark_cluster import SparkStandaloneCluster

    with SparkStandaloneCluster(workers=2, pythonpath=["/path/to/src"]) as cluster:
        spark = SparkSession.builder.master(cluster.master_url) ...  # see driver_conf()

Every JVM is started in its own process group and killed with it (executors included)
on :meth:`stop`, on ``__exit__`` and at interpreter exit. Start-up is bounded: the
master's ``/json/`` must list ``workers`` ALIVE workers within ``timeout`` seconds, or
:class:`SparkClusterError` says so with the tail of the logs. Needs ``pyspark`` (for
``spark-class`` and the jars) and Java 17+.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from typing import Any

from .server import free_port

__all__ = ["SparkClusterError", "SparkConnectServer", "SparkStandaloneCluster", "executor_jvm_pid", "spark_home"]

# small, short-lived JVMs: the C1 compiler only and the serial GC start faster and use
# fewer threads (the machines these tests run on have two cores)
_FAST_START = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

_live: set[SparkStandaloneCluster | SparkConnectServer] = set()
_live_lock = threading.Lock()



def _kill_group(p: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``p``'s process group (a JVM and what it started) and reap ``p``."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass


def _forget(owner: SparkStandaloneCluster | SparkConnectServer, tmpdir: str | None) -> None:
    """``owner`` is stopped: no longer live, and its scratch folder removed."""
    with _live_lock:
        _live.discard(owner)
    if tmpdir:
        shutil.rmtree(tmpdir, ignore_errors=True)

class SparkClusterError(RuntimeError):
    """The cluster did not start (or a process of it is missing)."""


def spark_home() -> str:
    """The Spark distribution that ships with the installed ``pyspark``."""
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def _children(pid: int) -> list[int]:
    """Pids of the live processes whose parent is ``pid`` (Linux ``/proc``)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # "<pid> (<comm>) <state> <ppid> ...": comm may hold spaces/parens, split after the last ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == pid and fields[0] != b"Z":
            out.append(int(name))
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class SparkStandaloneCluster:
    """A master and ``workers`` workers (``cores`` cores and ``memory`` each) on
    ``127.0.0.1``. ``python`` is the interpreter executors run Python with (default: this
    one) and ``pythonpath`` is put on the workers' (hence the executors') ``PYTHONPATH``."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "512m", *,
                 python: str | None = None, pythonpath: Sequence[str] = (),
                 env: dict[str, str] | None = None, daemon_memory: str = "256m") -> None:
        self.host = "127.0.0.1"
        self.n_workers = workers
        self.cores = cores
        self.memory = memory
        self.python = python or sys.executable
        self.pythonpath = list(pythonpath)
        self.extra_env = dict(env or {})
        self.daemon_memory = daemon_memory
        self.master_port = 0
        self.webui_port = 0
        self.tmpdir: str | None = None
        self._procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[str] = []

    # -- addresses
    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.master_port}"

    @property
    def webui_url(self) -> str:
        return f"http://{self.host}:{self.webui_port}"

    def __repr__(self) -> str:
        return f"<SparkStandaloneCluster {self.master_url} workers={self.n_workers} running={self.running}>"

    @property
    def running(self) -> bool:
        return bool(self._procs) and all(p.poll() is None for p in self._procs)

    def driver_conf(self) -> dict[str, str]:
        """Spark configuration for a driver of this cluster (loopback, this Python on the
        executors, wait for every executor before the first job, task retries allowed)."""
        total = self.n_workers * self.cores
        conf = {
            "spark.master": self.master_url,
            "spark.driver.host": self.host,
            "spark.driver.bindAddress": self.host,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.executor.memory": self.memory,
            "spark.executor.cores": str(self.cores),
            "spark.cores.max": str(total),
            "spark.pyspark.python": self.python,
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "60s",
            "spark.task.maxFailures": "4",
            "spark.executor.extraJavaOptions": _FAST_START,
            "spark.sql.shuffle.partitions": str(total),
            "spark.sql.session.timeZone": "UTC",
        }
        if self.pythonpath:
            conf["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(self.pythonpath)
        return conf

    # -- processes
    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "SPARK_HOME": spark_home(),
            "SPARK_LOCAL_IP": self.host,
            "SPARK_DAEMON_MEMORY": self.daemon_memory,
            "SPARK_DAEMON_JAVA_OPTS": _FAST_START,
            "SPARK_LOG_DIR": os.path.join(self.tmpdir or ".", "logs"),
            "SPARK_WORKER_DIR": os.path.join(self.tmpdir or ".", "work"),
            "PYSPARK_PYTHON": self.python,
        })
        if self.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(self.pythonpath + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env.update(self.extra_env)
        return env

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        assert self.tmpdir is not None
        log = os.path.join(self.tmpdir, f"{name}.log")
        self._logs.append(log)
        with open(log, "wb") as out:
            p = subprocess.Popen([os.path.join(spark_home(), "bin", "spark-class"), *args], env=self._env(),
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True, cwd=self.tmpdir)
        self._procs.append(p)
        return p

    def start(self, timeout: float = 90.0) -> SparkStandaloneCluster:
        if self._procs:
            raise SparkClusterError("cluster already started")
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise SparkClusterError("no `java` on PATH and JAVA_HOME is unset; Spark needs a JDK (17+)")
        self.tmpdir = tempfile.mkdtemp(prefix="jetwire-spark-cluster-")
        with _live_lock:
            _live.add(self)
        try:
            self.master_port, self.webui_port = free_port(), free_port()
            self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", self.host,
                                   "--port", str(self.master_port), "--webui-port", str(self.webui_port)])
            for i in range(self.n_workers):
                self._spawn(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", self.master_url,
                                           "--host", self.host, "--port", str(free_port()),
                                           "--webui-port", str(free_port()), "--cores", str(self.cores),
                                           "--memory", self.memory,
                                           "--work-dir", os.path.join(self.tmpdir, f"work{i}")])
            self.wait_workers(self.n_workers, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def master_state(self, timeout: float = 2.0) -> dict[str, Any]:
        """The master's ``/json/`` (workers, applications, status)."""
        with urllib.request.urlopen(self.webui_url + "/json/", timeout=timeout) as r:
            state: dict[str, Any] = json.loads(r.read())
            return state

    def alive_workers(self) -> int:
        try:
            state = self.master_state()
        except OSError:
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def wait_workers(self, n: int, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            dead = [p for p in self._procs if p.poll() is not None]
            if dead:
                raise SparkClusterError(f"a cluster process exited with {dead[0].returncode}\n{self.log_tail()}")
            if self.alive_workers() >= n:
                return
            if time.monotonic() > deadline:
                raise SparkClusterError(f"{n} ALIVE workers not registered within {timeout:.0f}s\n{self.log_tail()}")
            time.sleep(0.2)

    @property
    def worker_pids(self) -> list[int]:
        return [p.pid for p in self._procs[1:] if p.poll() is None]

    def executor_pids(self) -> list[int]:
        """The executor JVMs (``CoarseGrainedExecutorBackend``) the workers run now."""
        return [c for w in self.worker_pids for c in _children(w) if "CoarseGrainedExecutorBackend" in _cmdline(c)]

    def log_tail(self, lines: int = 30) -> str:
        out = []
        for log in self._logs:
            try:
                with open(log, "rb") as f:
                    text = f.read().decode(errors="replace").splitlines()[-lines:]
            except OSError:
                continue
            out.append(f"--- {os.path.basename(log)}\n" + "\n".join(text))
        return "\n".join(out)

    def stop(self) -> None:
        """Kill every JVM of the cluster (workers first, each with its executors)."""
        procs, self._procs = self._procs, []
        for p in reversed(procs):
            _kill_group(p)
        tmp, self.tmpdir = self.tmpdir, None
        _forget(self, tmp)

    def __enter__(self) -> SparkStandaloneCluster:
        return self.start() if not self._procs else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SparkConnectServer:
    """A Spark Connect server on ``127.0.0.1`` (``sbin/start-connect-server.sh --wait``
    from the ``pyspark`` distribution, in the foreground, in its own process group):
    clients reach it at :attr:`url` (``sc://127.0.0.1:<port>``) with
    ``SparkSession.builder.remote(url)``. ``master`` is where the server runs its jobs
    (``local[2,2]``, or a standalone cluster's ``master_url``); its Python workers run
    ``python`` (default: this interpreter) with ``pythonpath`` on their path -- that is
    where a Python data source's code runs, so jetwire must be importable there.
    ``port`` is a free one unless given. :meth:`start` waits at most ``timeout`` seconds
    for the gRPC port (else :class:`SparkClusterError` with the log's tail);
    :meth:`stop` (also ``__exit__`` and interpreter exit) kills the process group."""

    def __init__(self, master: str = "local[2,2]", *, port: int | None = None, python: str | None = None,
                 pythonpath: Sequence[str] = (), conf: dict[str, str] | None = None,
                 env: dict[str, str] | None = None, driver_memory: str = "1g") -> None:
        self.host = "127.0.0.1"
        self.master = master
        self.port = port or 0
        self.python = python or sys.executable
        self.pythonpath = list(pythonpath)
        self.conf = dict(conf or {})
        self.extra_env = dict(env or {})
        self.driver_memory = driver_memory
        self.tmpdir: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"sc://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def log_path(self) -> str | None:
        return os.path.join(self.tmpdir, "connect.log") if self.tmpdir else None

    def __repr__(self) -> str:
        return f"<SparkConnectServer {self.url} master={self.master} running={self.running}>"

    def _env(self) -> dict[str, str]:
        assert self.tmpdir is not None
        env = dict(os.environ)
        for k in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_API_MODE"):
            env.pop(k, None)
        env.update({
            "SPARK_HOME": spark_home(),
            "SPARK_LOCAL_IP": self.host,
            "SPARK_NO_DAEMONIZE": "1",
            "SPARK_PID_DIR": self.tmpdir,
            "SPARK_LOG_DIR": self.tmpdir,
            "SPARK_IDENT_STRING": f"jetwire-{self.port}",
            "PYSPARK_PYTHON": self.python,
            "PYSPARK_DRIVER_PYTHON": self.python,
        })
        if self.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(self.pythonpath + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env.update(self.extra_env)
        return env

    def _args(self) -> list[str]:
        conf = {
            "spark.connect.grpc.binding.address": self.host,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": self.host,
            "spark.driver.bindAddress": self.host,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.session.timeZone": "UTC",
            "spark.pyspark.python": self.python,
            **self.conf,
        }
        if self.pythonpath:
            conf.setdefault("spark.executorEnv.PYTHONPATH", os.pathsep.join(self.pythonpath))
        args = [os.path.join(spark_home(), "sbin", "start-connect-server.sh"), "--wait", "--master", self.master,
                "--driver-memory", self.driver_memory, "--driver-java-options", _FAST_START]
        for k, v in conf.items():
            args += ["--conf", f"{k}={v}"]
        return args

    def start(self, timeout: float = 90.0) -> SparkConnectServer:
        if self._proc is not None:
            raise SparkClusterError("Spark Connect server already started")
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise SparkClusterError("no `java` on PATH and JAVA_HOME is unset; Spark needs a JDK (17+)")
        self.tmpdir = tempfile.mkdtemp(prefix="jetwire-spark-connect-")
        if not self.port:
            self.port = free_port(self.host)
        with _live_lock:
            _live.add(self)
        try:
            assert self.log_path is not None
            with open(self.log_path, "wb") as out:
                self._proc = subprocess.Popen(["bash", *self._args()], env=self._env(), stdin=subprocess.DEVNULL,
                                              stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                              cwd=self.tmpdir)
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Until the gRPC port accepts connections (bounded; a dead server fails at once)."""
        import socket

        deadline = time.monotonic() + timeout
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise SparkClusterError(f"the Spark Connect server exited with {code}\n{self.log_tail()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=1.0):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SparkClusterError(f"Spark Connect server not listening on {self.host}:{self.port} within "
                                        f"{timeout:.0f}s\n{self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self, lines: int = 40) -> str:
        try:
            assert self.log_path is not None
            with open(self.log_path, "rb") as f:
                return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])
        except (OSError, AssertionError):
            return ""

    def stop(self) -> None:
        """Kill the server's process group (the JVM and its Python workers)."""
        p, self._proc = self._proc, None
        if p is not None:
            _kill_group(p)
        tmp, self.tmpdir = self.tmpdir, None
        _forget(self, tmp)

    def __enter__(self) -> SparkConnectServer:
        return self.start() if self._proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@atexit.register
def _kill_leftovers() -> None:  # pragma: no cover - runs at interpreter exit
    with _live_lock:
        clusters = list(_live)
    for c in clusters:
        try:
            c.stop()
        except Exception:
            pass


def executor_jvm_pid() -> int:
    """In a Spark task's Python worker: the pid of the executor JVM running the task (the
    nearest ancestor process that is a ``CoarseGrainedExecutorBackend``; the driver's
    pid in ``local`` mode, where there is no such process). Use it in a UDF to see
    which executor ran a row."""
    pid = os.getppid()
    while pid > 1:
        cmd = _cmdline(pid)
        if "CoarseGrainedExecutorBackend" in cmd or "SparkSubmit" in cmd or "PythonGatewayServer" in cmd:
            return pid
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            break
        pid = int(stat[stat.rfind(b")") + 2:].split()[1])
    return os.getppid()
