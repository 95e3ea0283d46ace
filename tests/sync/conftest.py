"""Blocking tests: generated from tests/aio by tools/gen_sync.py."""
