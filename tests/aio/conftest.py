"""asyncio tests: coroutine test functions run on uvloop, bounded by the test's timeout
(the runner is in tests/conftest.py, shared with tests/chaos)."""
