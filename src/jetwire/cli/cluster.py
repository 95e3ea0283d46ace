"""Cluster operations shared by ``stream cluster``, ``consumer cluster`` and ``server cluster``:
leader step-downs that wait for the new leader; ``jetwire server cluster step-down`` (the meta
group's leader).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ._click import DURATION, CliError, JetwireGroup, connected, connection_options, echo_json
from ._conn import ConnSettings, human_duration
from ._shared import js_of, json_option

if TYPE_CHECKING:
    from jetwire import Client
    from jetwire.jetstream.models import ConsumerInfo, StreamInfo

# ============================================================================== cluster


def leader_of(info: StreamInfo | ConsumerInfo) -> str | None:
    return info.cluster.leader if info.cluster is not None else None


def new_leader(leader_fn: Callable[[], str | None], old: str | None, wait: float) -> str | None:
    """The leader ``leader_fn()`` names once it is another than ``old`` (None when none is
    elected within ``wait`` seconds; the info requests fail while there is no leader)."""
    import jetwire

    deadline = time.monotonic() + wait
    while True:
        try:
            lead = leader_fn()
            if lead and lead != old:
                return lead
        except jetwire.NatsError:
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


def stepped_down(what: str, old: str | None, new: str | None, wait: float, as_json: bool,
                  **ids: Any) -> None:
    if as_json:
        echo_json({**ids, "previous_leader": old, "leader": new})
    if new is None:
        raise CliError(f"{what}: the leader ({old or 'unknown'}) stepped down, no new leader within "
                       f"{human_duration(wait)}")
    if not as_json:
        click.echo(f"{what}: leader stepped down ({old or 'unknown'}), new leader {new}")


preferred_option = click.option("--preferred", metavar="SERVER", default=None,
                                help="The server that should lead next (else the cluster picks).")
wait_option = click.option("--wait", type=DURATION, default="10s", show_default=True,
                           help="How long to wait for the new leader.")



def _meta_leader(nc: Client) -> str | None:
    """The meta group's leader as ``$SYS.REQ.SERVER.PING.JSZ`` reports it (system account)."""
    import orjson

    m = nc.request("$SYS.REQ.SERVER.PING.JSZ", b"{}", timeout=1)
    data = orjson.loads(m.data).get("data") or {}
    return (data.get("meta_cluster") or {}).get("leader")


@click.group("cluster", cls=JetwireGroup)
def server_cluster() -> None:
    """The JetStream meta group: step-down (a user of the system account)."""


@server_cluster.command("step-down")
@preferred_option
@wait_option
@json_option
@connection_options
def server_cluster_step_down(preferred: str | None, wait: float, as_json: bool, conn: ConnSettings) -> None:
    """Make the JetStream meta leader step down; prints the new leader."""
    with connected(conn) as nc:
        try:
            old = _meta_leader(nc)
        except Exception:
            old = None
        js_of(nc).meta_leader_stepdown(preferred)
        new = new_leader(lambda: _meta_leader(nc), old, wait)
    stepped_down("JetStream meta group", old, new, wait, as_json)
