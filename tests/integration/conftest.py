"""Integration fixtures: each test module gets a fresh sandbox for its `SCENARIO` (default "demo").

    SCENARIO = "fault_pdb_blocked"

    def test_something(sandbox):
        result = run_module(sandbox, "node_drain", {...})
        assert sandbox.report()["pdb_violations"] == []
"""

from __future__ import annotations

import pytest

from sandbox_helpers import SandboxHandle, start_sandbox, stop_sandbox

DEFAULT_SCENARIO = "demo"


@pytest.fixture(scope="module")
def sandbox(request, tmp_path_factory) -> SandboxHandle:
    scenario = getattr(request.module, "SCENARIO", DEFAULT_SCENARIO)
    state_dir = tmp_path_factory.mktemp(f"sandbox-{scenario}")
    handle = None
    try:
        try:
            handle = start_sandbox(scenario, state_dir)
        except RuntimeError as exc:
            pytest.fail(str(exc), pytrace=False)
        yield handle
    finally:
        if handle is not None:
            handle.close()
        # Always, even when `up` failed half-way: down is a no-op when nothing runs.
        stop_sandbox(state_dir)
