"""The ``jetwire`` command hears Ctrl-C even when it was started with SIGINT blocked (a
signal mask is inherited from whoever forked it): it exits 130 saying what was done."""
from __future__ import annotations

import signal
import subprocess
import sys

from jetwire.testing import NatsServer


def test_ctrl_c_reaches_a_command_started_with_sigint_blocked(nats_server: NatsServer) -> None:
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # the child inherits the mask
    try:
        # SIGINT left blocked (the point of the test), its disposition the default
        p = subprocess.Popen([sys.executable, "-m", "jetwire", "sub", "cli.signals.x", "-s", nats_server.url],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    try:
        assert "Subscribing on" in p.stderr.readline()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130 and "interrupted: 0 received" in err
