"""``bench compare``'s CPU pinning (--server-cpus/--client-cpus): the list grammar and
that a process started inside ``pinned`` runs, with its children, on those CPUs only."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from jetwire.cli.compare import parse_cpus, pinned, pinning, pinning_line

ALLOWED = sorted(os.sched_getaffinity(0))


def test_parse_cpus_takes_tasksets_list_form() -> None:
    first = ALLOWED[0]
    assert parse_cpus(None) is None and parse_cpus("") is None
    assert parse_cpus(str(first)) == {first}
    assert parse_cpus(f"{first}-{first}") == {first}
    if list(range(ALLOWED[0], ALLOWED[-1] + 1)) == ALLOWED:
        assert parse_cpus(f"{ALLOWED[0]}-{ALLOWED[-1]}") == set(ALLOWED)
    assert parse_cpus(",".join(map(str, ALLOWED))) == set(ALLOWED)


@pytest.mark.parametrize("bad", ["x", "1-", "-1", "3-1", "1,,2", "0.5"])
def test_parse_cpus_refuses_what_is_not_a_list(bad: str) -> None:
    with pytest.raises(ValueError, match="CPU list"):
        parse_cpus(bad)


def test_parse_cpus_refuses_cpus_the_machine_does_not_offer() -> None:
    with pytest.raises(ValueError, match="does not offer"):
        parse_cpus(str(max(ALLOWED) + 1000))


def test_pinned_child_process_runs_on_the_given_cpus_and_affinity_comes_back() -> None:
    want = {ALLOWED[-1]}
    before = os.sched_getaffinity(0)
    with pinned(want):
        out = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                             capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == str(sorted(want))
    assert os.sched_getaffinity(0) == before
    with pinned(None):
        assert os.sched_getaffinity(0) == before


def test_the_summary_says_where_each_side_ran() -> None:
    assert pinning_line(pinning(None, None)) is None
    assert pinning(None, {0}) == {"server_cpus": None, "client_cpus": [0]}
    assert pinning_line(pinning({1}, {0})) == "pinned: server on CPU 1, each client on CPU 0"
    assert pinning_line(pinning(None, {0, 2})) == "pinned: server on any CPU, each client on CPU 0,2"
