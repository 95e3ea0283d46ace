"""Blocking flavour: generated from ``jetwire.aio`` by tools/gen_sync.py (except the I/O driver)."""
