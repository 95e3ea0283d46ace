#!/usr/bin/env python
"""Long differential fuzz run of the protocol parser: compiled vs pure twin.

Every input is fed to both implementations, split at the same points; they must give
identical per-feed outcomes (the same events, or ProtocolError at the same feed), and
for well-formed streams exactly the expected events. Any other exception, a mismatch,
or an interpreter crash is a finding.

Engines:
* ``--engine random`` (default): a seeded loop over the frame grammar of
  ``tests/unit/test_differential.py`` (valid streams, mutated streams, garbage), plus
  header blocks, ack subjects and publish subjects. Runs for ``--seconds``; on a
  finding it prints the seed and writes the input to ``--out``.
* ``--engine atheris``: coverage-guided fuzzing with atheris (if installed); extra
  arguments after ``--`` go to libFuzzer.
* ``--engine hypothesis``: runs the differential test module with the ``fuzz``
  hypothesis profile (200000 examples per test).

Examples::

    python -X faulthandler tools/fuzz_parser.py --seconds 3600
    python -X faulthandler tools/fuzz_parser.py --seed 1234 --iterations 1   # replay
    python tools/fuzz_parser.py --engine atheris -- -max_total_time=3600
    python tools/fuzz_parser.py --engine hypothesis
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "tests" / "unit"


def load_grammar():
    """The frame generators and helpers of the differential tests."""
    sys.path.insert(0, str(UNIT))
    import conftest  # noqa: F401  (registers the hypothesis profiles the module reads)
    import test_differential as grammar

    return grammar


def impls():
    from jetwire import _impl

    mods = _impl.implementations()
    if "compiled" not in mods:
        sys.exit("jetwire._c is not built: run `python setup.py build_ext --inplace` first")
    return mods


class Finding(Exception):
    pass


CURRENT: dict = {"input": None}  # the input of the case being run, for reporting


def msg_classes(mods):
    out = {}
    for name, mod in mods.items():

        class FMsg(mod.MsgBase):
            __slots__ = ()

        out[name] = FMsg
    return out


def compare_parsers(g, mods, classes, chunks, expected=None, **kw):
    CURRENT["input"] = (b"".join(chunks), [len(c) for c in chunks], kw)
    outcomes = {name: g.run(mod, classes[name], chunks, **kw) for name, mod in mods.items()}
    first = next(iter(outcomes.values()))
    if any(o != first for o in outcomes.values()):
        raise Finding(f"parsers disagree: {outcomes!r}")
    if expected is not None:
        if "ProtocolError" in first:
            raise Finding(f"valid stream rejected: {first!r}")
        # a skipped message (OP_FRAME_ERROR) is expected by its subject; its text is
        # compared between the parsers above
        got = [e[:2] if e[0] == 6 else e for o in first for e in o]
        if got != expected:
            raise Finding(f"unexpected events: {got!r} != {expected!r}")


def compare_calls(fn_name, mods, arg, errors):
    CURRENT["input"] = (fn_name, arg)
    outcomes = []
    for mod in mods.values():
        try:
            r = getattr(mod, fn_name)(arg)
            if hasattr(r, "to_dict"):
                r = (r.to_dict(), r.items(), r.status, r.description)
        except errors as e:
            r = type(e).__name__
        outcomes.append(r)
    if any(o != outcomes[0] for o in outcomes):
        raise Finding(f"{fn_name} disagrees on {arg!r}: {outcomes!r}")


def one_case(g, mods, classes, seed):
    """Run one seeded case (raises Finding); returns the main input it used."""
    from jetwire.errors import BadSubjectError, NotJSMessageError, ProtocolError

    stream, expected, cuts, rnd = g.random_stream(seed, max_frames=rnd_frames(seed))
    kind = seed % 8
    if kind <= 2:
        compare_parsers(g, mods, classes, g.split(stream, cuts), expected)
        limit = rnd.randint(1, 80)
        compare_parsers(g, mods, classes, g.split(stream, cuts), max_control_line=limit)
        return stream
    if kind <= 5:
        data = g.mutate(stream, g.random_mutations(rnd))
        compare_parsers(g, mods, classes, g.split(data, cuts), max_control_line=rnd.choice([16, 64, 256, 4096]))
        return data
    if kind == 6:
        parts = [rnd.choice(GARBAGE) if rnd.random() < 0.7 else rnd.randbytes(rnd.randint(1, 6)) for _ in range(rnd.randint(1, 40))]
        data = b"".join(parts)
        compare_parsers(g, mods, classes, g.split(data, [rnd.randint(0, len(data)) for _ in range(4)]), max_control_line=64)
        raw, _ = g._rheaders(rnd)
        compare_calls("decode_headers", mods, g.mutate(raw, g.random_mutations(rnd)) if rnd.random() < 0.7 else raw, (ProtocolError,))
        return data
    toks = [rnd.choice(["", "_", "x", "S", "-1", "1", str(rnd.getrandbits(70)), "٣", "9" * 20]) for _ in range(rnd.randint(0, 13))]
    subject = ".".join(["$JS", "ACK", *toks])
    compare_calls("parse_metadata_fields", mods, subject, (NotJSMessageError,))
    compare_calls("validate_subject", mods, g._rsubject(rnd) + rnd.choice(["", " ", ".", "..", "\u3000", "\x00"]), (BadSubjectError,))
    return subject


def rnd_frames(seed):
    return 4 + seed % 13


GARBAGE = [b"MSG ", b"HMSG ", b"msg\t", b"PING", b"PONG", b"+OK", b"-ERR ", b"INFO ", b"\r\n", b"\r", b"\n", b" ", b"\t",
           b"0", b"1", b"12", b"99", b"a", b"foo.bar", b"NATS/1.0", b"NATS/1.0 503", b": ", b"K: v", b"{}", b"'", b"\xff"]


def run_random(args) -> int:
    g = load_grammar()
    mods = impls()
    classes = msg_classes(mods)
    master = random.Random(args.seed)
    deadline = time.monotonic() + args.seconds
    n = 0
    last_report = time.monotonic()
    while n < args.iterations and time.monotonic() < deadline:
        seed = args.seed if args.iterations == 1 else master.getrandbits(63)
        try:
            one_case(g, mods, classes, seed)
        except Finding as e:
            Path(args.out).write_text(f"seed={seed}\ninput={CURRENT['input']!r}\n{e}\n")
            print(f"FINDING with seed {seed}: {e}\nreplay: python tools/fuzz_parser.py --seed {seed} --iterations 1\n"
                  f"details written to {args.out}", file=sys.stderr)
            return 1
        n += 1
        now = time.monotonic()
        if now - last_report >= 30:
            print(f"{n} cases, {n / (now - deadline + args.seconds):.0f}/s", flush=True)
            last_report = now
    print(f"done: {n} cases, no findings")
    return 0


def run_atheris(extra) -> int:
    try:
        import atheris
    except ImportError:
        sys.exit("atheris is not installed (pip install atheris); use --engine random")
    with atheris.instrument_imports():
        from jetwire.errors import ProtocolError  # noqa: F401
        from jetwire.protocol import _pure  # noqa: F401
    g = load_grammar()
    mods = impls()
    classes = msg_classes(mods)

    def test_one_input(data: bytes) -> None:
        fdp = atheris.FuzzedDataProvider(data)
        limit = fdp.ConsumeIntInRange(1, 4096)
        cuts = [fdp.ConsumeIntInRange(0, 4096) for _ in range(fdp.ConsumeIntInRange(0, 6))]
        stream = fdp.ConsumeBytes(fdp.remaining_bytes())
        try:
            compare_parsers(g, mods, classes, g.split(stream, cuts), max_control_line=limit)
        except Finding as e:
            raise AssertionError(str(e)) from None

    atheris.Setup([sys.argv[0], *extra], test_one_input)
    atheris.Fuzz()
    return 0


def run_hypothesis() -> int:
    import pytest

    os.environ["HYPOTHESIS_PROFILE"] = "fuzz"
    return pytest.main(["-q", "-p", "no:cacheprovider", str(UNIT / "test_differential.py")])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=["random", "atheris", "hypothesis"], default="random")
    ap.add_argument("--seconds", type=float, default=600.0, help="time budget of the random engine")
    ap.add_argument("--iterations", type=int, default=sys.maxsize, help="stop after this many cases")
    ap.add_argument("--seed", type=int, default=int(time.time()), help="master seed (the case seed with --iterations 1)")
    ap.add_argument("--out", default="fuzz-finding.txt", help="where a finding is written")
    ap.add_argument("extra", nargs="*", help="arguments passed to libFuzzer (atheris engine)")
    args = ap.parse_args(argv)
    if args.engine == "atheris":
        return run_atheris(args.extra)
    if args.engine == "hypothesis":
        return run_hypothesis()
    print(f"fuzzing compiled vs pure parser, master seed {args.seed}, {args.seconds:.0f}s", flush=True)
    return run_random(args)


if __name__ == "__main__":
    sys.exit(main())
