"""Messages to column buffers for bulk readers (``DirectRows`` filled by a
``DirectCollector``, ``AckRows`` filled by an ``AckCollector``, ``ack_columns``, ``rfc3339_us``), each run against both
implementations."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jetwire.errors import NotJSMessageError
from jetwire.protocol.headers import Headers

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
HYP = settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])


def us_of(dt: datetime) -> int:
    return (dt - EPOCH) // timedelta(microseconds=1)


@pytest.mark.parametrize("text, expected", [
    ("2026-11-25T12:34:56.123456789Z", datetime(2026, 11, 25, 12, 34, 56, 123456, tzinfo=UTC)),
    ("2026-11-25T12:34:56Z", datetime(2026, 11, 25, 12, 34, 56, tzinfo=UTC)),
    ("2026-11-25t12:34:56.5z", datetime(2026, 11, 25, 12, 34, 56, 500000, tzinfo=UTC)),
    ("2026-11-25T12:34:56.1+02:00", datetime(2026, 11, 25, 10, 34, 56, 100000, tzinfo=UTC)),
    ("2026-11-25T12:34:56-01:30", datetime(2026, 11, 25, 14, 4, 56, tzinfo=UTC)),
    ("1970-01-01T00:00:00Z", EPOCH),
    ("2024-02-29T23:59:59.999999999Z", datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)),
    ("1969-12-31T23:59:59.5Z", datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC)),
])
def test_rfc3339(impl, text, expected):
    assert impl.rfc3339_us(text) == us_of(expected)


@pytest.mark.parametrize("text", [
    "", "x", "2026-11-25", "2026-11-25 12:34:56Z", "2026-11-25T12:34:56", "2026-11-25T12:34:56.Z",
    "2026-11-25T12:34:56.1234567890Z", "2023-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-04-31T00:00:00Z",
    "2026-11-25T24:00:00Z", "2026-11-25T12:60:00Z", "2026-11-25T12:34:56ZZ", "2026-11-25T12:34:56+0200",
    "2026-11-25T12:34:56+02:0", "٢٠٢٦-11-25T12:34:56Z", "2026-11-25T12:34:56.١Z", "+2026-11-25T12:34:56Z",
    "2026-11-25T12:34:56\udcffZ",
])
def test_rfc3339_rejects(impl, text):
    assert impl.rfc3339_us(text) is None


@HYP
@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 30)), st.integers(0, 9),
       st.integers(0, 999), st.sampled_from(["Z", "z", "+00:00", "+05:30", "-11:45"]))
def test_rfc3339_matches_datetime(impl, dt, ndigits, extra_ns, zone):
    frac = f"{dt.microsecond:06d}{extra_ns:03d}"[:ndigits]
    text = dt.strftime("%Y-%m-%dT%H:%M:%S").rjust(19, "0") + (f".{frac}" if ndigits else "") + zone
    sign = -1 if zone[0] == "-" else 1
    offset = timedelta() if zone in "Zz" else sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    whole = dt.replace(microsecond=int((frac + "000000")[:6]) if ndigits else 0, tzinfo=UTC) - offset
    assert impl.rfc3339_us(text) == us_of(whole)


@HYP
@given(st.text(max_size=40))
def test_rfc3339_twins_agree(all_impls, text):
    assert len({repr(mod.rfc3339_us(text)) for mod in all_impls.values()}) == 1


REPLY = "_INBOX.x.1"


def direct_reply(msg_cls, seq, subject="orders.new", data=b"x", time="2026-11-25T12:34:56.123456789Z",
                 extra=None, reply=REPLY):
    h = Headers({"Nats-Stream": "S", "Nats-Subject": subject, "Nats-Sequence": str(seq), "Nats-Time-Stamp": time,
                 "Nats-Num-Pending": "5", "Nats-Last-Sequence": "0"})
    for k, v in (extra or {}).items():
        h[k] = v
    return msg_cls(reply, data, headers=h)


def collect(impl, msgs, reply=REPLY):
    """Feed ``msgs`` to a collector whose target is a fresh ``DirectRows``: (rows, statuses)."""
    statuses = []
    c = impl.DirectCollector(statuses.append)
    rows = impl.DirectRows(reply)
    c.target = rows
    for m in msgs:
        c(m)
    return rows, statuses


def test_direct_rows(impl, msg_cls):
    msgs = [direct_reply(msg_cls, 7, data=b"a"), direct_reply(msg_cls, 8, subject="orders.old", data=b"bb")]
    rows, statuses = collect(impl, msgs)
    assert len(rows) == 2 and rows.last_seq == 8 and rows.error is None and statuses == []
    subjects, seqs, times, data, headers, odd = rows.columns()
    assert subjects == ["orders.new", "orders.old"] and data == [b"a", b"bb"]
    assert list(seqs) == [7, 8] and seqs.typecode == "q" and times.typecode == "q"
    t = us_of(datetime(2026, 11, 25, 12, 34, 56, 123456, tzinfo=UTC))
    assert list(times) == [t, t] and headers is None and odd == []


def test_direct_rows_many(impl, msg_cls):
    rows, _ = collect(impl, [direct_reply(msg_cls, s) for s in range(1, 2501)])
    assert list(rows.columns()[1]) == list(range(1, 2501)) and len(rows.columns()[2]) == 2500
    assert impl.DirectRows("r").last_seq == 0 and list(impl.DirectRows("r").columns()[1]) == []


def test_direct_collector_routes(impl, msg_cls):
    bare = msg_cls(REPLY, b"", headers=None)
    late = direct_reply(msg_cls, 9, reply="_INBOX.x.0")
    h = Headers({"Nats-Last-Sequence": "8"})
    h.status, h.description = "204", "EOB"
    end = msg_cls(REPLY, b"", headers=h)
    rows, statuses = collect(impl, [direct_reply(msg_cls, 7), late, end, bare])
    assert len(rows) == 1 and statuses == [end, bare]  # the late reply is dropped
    c = impl.DirectCollector(statuses.append)
    c(direct_reply(msg_cls, 1))  # no target: dropped
    assert c.target is None and len(statuses) == 2


def test_direct_rows_published_headers(impl, msg_cls):
    msgs = [direct_reply(msg_cls, 1), direct_reply(msg_cls, 2, extra={"A": ["1", "2"], "B": "x"}),
            direct_reply(msg_cls, 3)]
    assert collect(impl, msgs)[0].columns()[4] == [None, [("A", ["1", "2"]), ("B", ["x"])], None]
    assert collect(impl, msgs[:1])[0].columns()[4] is None
    assert collect(impl, msgs[2:] + msgs[1:2])[0].columns()[4] == [None, [("A", ["1", "2"]), ("B", ["x"])]]


def test_direct_rows_odd_time_left_to_the_caller(impl, msg_cls):
    rows, _ = collect(impl, [direct_reply(msg_cls, 1), direct_reply(msg_cls, 2, time="Tuesday")])
    _, seqs, times, _, _, odd = rows.columns()
    assert odd == [(1, "Tuesday")] and times[1] == 0 and list(seqs) == [1, 2]


def test_direct_rows_errors(impl, msg_cls):
    m = direct_reply(msg_cls, 1)
    del m.headers["Nats-Subject"]
    rows, _ = collect(impl, [direct_reply(msg_cls, 1), m, direct_reply(msg_cls, 3)])
    assert isinstance(rows.error, KeyError) and len(rows) == 1  # nothing is added after an error
    for bad in ("", "x", "-1", "1" * 19, "١"):
        rows, _ = collect(impl, [direct_reply(msg_cls, bad)])
        assert isinstance(rows.error, ValueError) and len(rows) == 0
    rows = impl.DirectRows(REPLY)
    rows.add(msg_cls(REPLY, b""))  # no headers at all
    assert rows.error is not None and len(rows) == 0


TS = 1_700_000_000_123_456_789


def pulled(msg_cls, seq, pending, subject="orders.new", data=b"d", headers=None):
    return msg_cls(subject, data, reply=f"$JS.ACK.S.C.1.{seq}.{seq}.{TS + seq * 1000}.{pending}", headers=headers)


def cols(columns):
    """``AckRows.columns()`` as ``(subjects, seqs, times, data, headers)`` with Python lists
    of subjects (str) and data (bytes), checking the Arrow layout of the two."""
    soff, subj, seqs, times, doff, data, headers = columns
    n = len(seqs)
    assert soff.typecode == doff.typecode == "i" and len(soff) == len(doff) == n + 1 and soff[0] == doff[0] == 0
    assert soff[n] == len(subj) and doff[n] == len(data)
    subjects = [bytes(subj[soff[i]:soff[i + 1]]).decode("utf-8", "surrogateescape") for i in range(n)]
    return subjects, seqs, times, [bytes(data[doff[i]:doff[i + 1]]) for i in range(n)], headers


def ack(impl, msgs, hi):
    *columns, end = impl.ack_columns(msgs, hi)
    return (*cols(columns), end)


def test_ack_columns_until_no_more_pending(impl, msg_cls):
    msgs = [pulled(msg_cls, s, 3 - s) for s in (1, 2, 3)] + [pulled(msg_cls, 4, 0)]
    subjects, seqs, times, data, headers, end = ack(impl, msgs, 100)
    assert list(seqs) == [1, 2, 3] and end and headers is None
    assert list(times) == [(TS + s * 1000) // 1000 for s in (1, 2, 3)]
    assert subjects == ["orders.new"] * 3 and data == [b"d"] * 3


def test_ack_columns_range_end(impl, msg_cls):
    msgs = [pulled(msg_cls, s, 100) for s in (5, 6, 7, 8)]
    it = iter(msgs)
    _, seqs, _, _, _, end = ack(impl, it, 7)
    assert list(seqs) == [5, 6] and end
    assert next(it) is msgs[2]  # nothing taken past the one that ended the range
    _, seqs, _, _, _, end = ack(impl, [pulled(msg_cls, 9, 100)], 7)
    assert list(seqs) == [] and end
    _, seqs, _, _, _, end = ack(impl, msgs[:2], 100)
    assert list(seqs) == [5, 6] and not end


def test_ack_columns_headers_and_many(impl, msg_cls):
    msgs = [pulled(msg_cls, s, 5000) for s in range(1, 3001)]
    msgs[1500] = pulled(msg_cls, 1501, 5000, headers={"K": ["a", "b"]})
    _subjects, seqs, times, _data, headers, end = ack(impl, msgs, 10_000)
    assert list(seqs) == list(range(1, 3001)) and not end and len(times) == 3000
    assert headers is not None and len(headers) == 3000
    assert headers[1500] == [("K", ["a", "b"])] and headers.count(None) == 2999


def test_ack_columns_errors(impl, msg_cls):
    with pytest.raises(NotJSMessageError):
        ack(impl, [msg_cls("a", b"")], 10)
    with pytest.raises(NotJSMessageError):
        ack(impl, [msg_cls("a", b"", reply="_INBOX.x")], 10)
    with pytest.raises(OverflowError):
        ack(impl, [msg_cls("a", b"", reply=f"$JS.ACK.S.C.1.{2**64}.1.{TS}.1")], 10)



def status_msg(msg_cls, subject, status, description=""):
    h = Headers()
    h.status, h.description = status, description
    return msg_cls(subject, b"", headers=h)


def pull_collect(impl, msgs, hi=100, want=10, reply=REPLY):
    """Feed ``msgs`` to an ``AckCollector`` whose target is a fresh ``AckRows``: (rows, events)."""
    events = []
    c = impl.AckCollector(events.append)
    rows = impl.AckRows(reply, hi, want)
    c.target = rows
    for m in msgs:
        c(m)
    return rows, events


def test_ack_collector_full_pull(impl, msg_cls):
    msgs = [pulled(msg_cls, s, 100) for s in (1, 2, 3)]
    rows, events = pull_collect(impl, msgs, want=3)
    assert events == [None] and len(rows) == 3 and rows.last_seq == 3 and not rows.end and rows.delivered == 3
    subjects, seqs, times, data, headers = cols(rows.columns())
    assert list(seqs) == [1, 2, 3] and list(times) == [(TS + s * 1000) // 1000 for s in (1, 2, 3)]
    assert subjects == ["orders.new"] * 3 and data == [b"d"] * 3 and headers is None
    rows, events = pull_collect(impl, msgs[:2], want=3)
    assert events == [] and len(rows) == 2  # the pull is still open


def test_ack_collector_ends_and_drops_the_rest(impl, msg_cls):
    # no more pending: the rows end at once (no wait for the pull to expire); later ones are dropped
    rows, events = pull_collect(impl, [pulled(msg_cls, 1, 1), pulled(msg_cls, 2, 0), pulled(msg_cls, 3, 0)])
    assert events == [None] and rows.end and list(cols(rows.columns())[1]) == [1, 2] and rows.delivered == 2
    # the range end: hi - 1 is taken, a delivery at or past hi is not
    rows, events = pull_collect(impl, [pulled(msg_cls, 5, 9), pulled(msg_cls, 6, 9)], hi=6)
    assert events == [None] and rows.end and list(cols(rows.columns())[1]) == [5]
    rows, events = pull_collect(impl, [pulled(msg_cls, 8, 9)], hi=6)
    assert events == [None] and rows.end and len(rows) == 0


def test_ack_collector_statuses_and_errors(impl, msg_cls):
    late = status_msg(msg_cls, "_INBOX.other", "408", "Request Timeout")
    mine = status_msg(msg_cls, REPLY, "409", "Consumer Deleted")
    rows, events = pull_collect(impl, [late, pulled(msg_cls, 1, 5), mine])
    assert events == [mine] and len(rows) == 1  # a status on another subject (an old pull) is dropped
    rows, events = pull_collect(impl, [msg_cls("a", b"x", reply="_INBOX.not.an.ack"), pulled(msg_cls, 1, 5)])
    assert events == [None] and isinstance(rows.error, NotJSMessageError) and len(rows) == 0
    c = impl.AckCollector(events.append)
    c(pulled(msg_cls, 1, 5))  # no target: dropped
    assert events == [None]
