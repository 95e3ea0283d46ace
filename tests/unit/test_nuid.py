"""NUIDs: unique ids for inboxes and consumer names."""
from __future__ import annotations


def test_nuids_differ_after_fork():
    import os

    from jetwire import _nuid

    mine = _nuid.NUID()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next ids, then leave at once
        os.write(w, f"{_nuid.next_nuid()} {mine.next()}".encode())
        os._exit(0)
    os.close(w)
    child = os.read(r, 200).decode().split()
    os.waitpid(pid, 0)
    os.close(r)
    assert child[0] != _nuid.next_nuid() and child[1] != mine.next()
    assert child[0][:12] != _nuid.next_nuid()[:12]  # a new random prefix, not just the next sequence
