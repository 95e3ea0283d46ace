"""What the examples do to a server they are pointed at."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

import jetwire

ROOT = Path(__file__).resolve().parents[2]


def _example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_spark_pipeline_deletes_existing_streams_only_when_asked(nats_server_factory: Any) -> None:
    srv = nats_server_factory()
    ex = _example("spark_pipeline")
    with jetwire.connect(srv.url) as nc:
        js = nc.jetstream()
        js.create_stream(name="ORDERS", subjects=["orders.>"])
        js.publish("orders.eu", b"precious")
        with pytest.raises(SystemExit, match="--reset"):
            ex.setup_streams(srv.url, reset=False)
        assert js.stream("ORDERS").info().state.messages == 1  # untouched
        assert "ORDER_TOTALS" not in set(js.stream_names())  # nothing created either
        ex.setup_streams(srv.url, reset=True)
        assert js.stream("ORDERS").info().state.messages == 0
        assert js.stream("ORDER_TOTALS").info().config.subjects == ["totals.>"]
