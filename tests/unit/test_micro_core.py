"""The sans-IO part of services (ADR-32): checks, subjects, queue groups, times, documents."""
from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from jetwire import micro_core as core
from jetwire.errors import InvalidServiceConfigError, InvalidServiceNameError, InvalidServiceVersionError


@pytest.mark.parametrize("name", ["a", "A-b_9", "x" * 200, "0"])
def test_good_names(name):
    assert core.check_name(name) == name


@pytest.mark.parametrize("name", ["", " ", "a b", "a.b", "a*", "a>", "é", None, 5, "a\n"])
def test_bad_names(name):
    with pytest.raises(InvalidServiceNameError):
        core.check_name(name)
    assert issubclass(InvalidServiceNameError, ValueError)


@pytest.mark.parametrize("v", ["0.0.0", "1.2.3", "10.20.30", "1.1.2-prerelease+meta", "1.0.0-alpha.beta.1",
                               "1.0.0-0A.is.legal", "99999999999999999999999.999999999999999999.99999999999999999",
                               "1.0.0+0.build.1-rc.10000aaa-kk-0.1"])
def test_good_versions(v):
    assert core.check_version(v) == v


@pytest.mark.parametrize("v", ["1", "1.2", "1.2.3-0123", "1.2.3-0123.0123", "1.1.2+.123", "+invalid", "-invalid",
                               "alpha", "1.2.3.DEV", "01.1.1", "1.01.1", "9.8.7-whatever+meta+meta", "v1.0.0", "", "1.0.0\n",
                               None, "1.0.0 "])
def test_bad_versions(v):
    with pytest.raises(InvalidServiceVersionError):
        core.check_version(v)


def test_queue_group_inheritance():
    r = core.resolve_queue_group
    assert r(None, None) == "q"  # nothing set anywhere: the default
    assert r(None, "svc") == "svc"  # inherited
    assert r("own", "svc") == "own"  # overridden
    assert r("", "svc") == ""  # none for this one
    assert r(None, "") == ""  # a parent with none passes that on
    assert r("own", "") == "own"


def test_subjects():
    assert core.control_subject("ping") == "$SRV.PING"
    assert core.control_subject("INFO", "svc") == "$SRV.INFO.svc"
    assert core.control_subject("STATS", "svc", "ID") == "$SRV.STATS.svc.ID"
    assert core.control_subjects("PING", "s", "i") == ["$SRV.PING", "$SRV.PING.s", "$SRV.PING.s.i"]
    with pytest.raises(InvalidServiceConfigError):
        core.control_subject("PING", None, "ID")
    with pytest.raises(InvalidServiceConfigError):
        core.control_subject("HELLO")
    assert core.join_subject("", "a") == "a" and core.join_subject("g.h", "a") == "g.h.a"
    for ok in ("a", "a.b", "a.*", "a.>", "*", ">"):
        core.check_subject(ok)
    for bad in ("", "a..b", ".a", "a.", "a.>.b", "a b", "a*", "a.b>", "a\tb"):
        with pytest.raises(InvalidServiceConfigError):
            core.check_subject(bad)
    with pytest.raises(InvalidServiceConfigError):
        core.check_group_name("a.>")
    assert core.check_group_name("") == ""


def test_endpoint_settings_resolved_by_the_service_core():
    sc = core.ServiceCore("svc", "1.0.0", "ID", None, None, "svcq", None)
    ep = sc.new_endpoint("g.h", "add", None, None, "gq", {"k": "v"})
    assert (ep.name, ep.subject, ep.queue_group, ep.metadata) == ("add", "g.h.add", "gq", {"k": "v"})
    ep = sc.new_endpoint("", "add", "math.plus", "", "svcq", None)
    assert (ep.subject, ep.queue_group, ep.metadata) == ("math.plus", "", {})
    with pytest.raises(InvalidServiceConfigError):
        sc.new_endpoint("", "bad.name", None, None, None, None)
    with pytest.raises(InvalidServiceConfigError):
        sc.new_endpoint("", "ok", None, None, None, {"k": 1})


def test_times():
    t = datetime(2026, 1, 2, 3, 4, 5, 60, tzinfo=UTC)
    assert core.format_time(t) == "2026-01-02T03:04:05.000060Z"
    assert core.parse_time("2026-01-02T03:04:05.000060Z") == t
    # nats.go writes RFC 3339 with nanoseconds, trailing zeros trimmed
    assert core.parse_time("2026-01-02T03:04:05.123456789Z") == t.replace(microsecond=123456)
    assert core.parse_time("2026-01-02T03:04:05Z") == t.replace(microsecond=0)
    assert core.parse_time("2026-01-02T05:04:05.5+02:00") == t.replace(microsecond=500000)
    assert core.parse_time("2026-01-02T03:04:05.123Z").microsecond == 123000  # nats-py: milliseconds
    assert core.parse_time("yesterday") is None and core.parse_time(None) is None


def test_documents_round_trip_and_units():
    sc = core.ServiceCore("svc", "1.0.0", "ID", "desc", {"a": "b"}, None, lambda ep: {"n": ep})
    ep = sc.new_endpoint("", "add", None, None, None, None)
    sc.endpoints.append((ep, "handle"))
    ep.num_requests, ep.num_errors, ep.last_error, ep.processing_ns = 3, 1, "500:x", 10
    st = orjson.loads(sc.answer("STATS"))
    e = st["endpoints"][0]
    assert (e["processing_time"], e["average_processing_time"], e["data"]) == (10, 3, {"n": "handle"})
    typed = core.ServiceStats.from_dict(st)
    assert typed.endpoints[0].processing_time == 10e-9 and typed.started == sc.started.replace(
        microsecond=sc.started.microsecond)
    assert core.ServiceStats.from_dict(typed.to_dict()) == typed
    info = core.ServiceInfo.from_dict(orjson.loads(sc.answer("INFO")))
    assert info == sc.info() and info.endpoints[0].queue_group == "q"
    assert core.ServicePing.from_dict(orjson.loads(sc.answer("PING"))) == sc.ping()
    # lenient with what other implementations send: nulls, missing fields
    other = core.ServiceInfo.from_dict({"name": "n", "id": "i", "version": "1.0.0", "description": None,
                                        "metadata": None, "endpoints": [{"name": "e", "subject": "s",
                                                                         "metadata": None}]})
    assert (other.description, other.metadata, other.endpoints[0].metadata, other.endpoints[0].queue_group) == (
        "", {}, {}, "")


def test_error_headers_and_answers():
    h = core.error_headers(400, "bad\ninput", {"X": "1"})
    assert h == {"X": "1", "Nats-Service-Error": "bad input", "Nats-Service-Error-Code": "400"}
    with pytest.raises(InvalidServiceConfigError):
        core.error_headers("", "x")
    with pytest.raises(InvalidServiceConfigError):
        core.error_headers("400", "")
    assert core.exception_answer(RuntimeError("boom")) == ("500", "RuntimeError: boom")
    assert core.exception_answer(KeyError()) == ("500", "KeyError")
    from jetwire.errors import ServiceError

    assert core.exception_answer(ServiceError("418", "teapot")) == ("418", "teapot")
    e = ServiceError("503", "busy", data=b"later")
    assert (e.code, e.description, e.data, str(e)) == ("503", "busy", b"later", "503: busy")
