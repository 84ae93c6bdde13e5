# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Integration fixtures: each test module gets a fresh sandbox for its `SCENARIO` (default "demo").

    SCENARIO = "fault_pdb_blocked"

    def test_something(sandbox):
        result = run_module(sandbox, "node_drain", {...})
        assert sandbox.report()["pdb_violations"] == []
"""

from __future__ import annotations

import pytest

from sandbox_helpers import SandboxHandle, running_sandbox

DEFAULT_SCENARIO = "demo"


@pytest.fixture(scope="module")
def sandbox(request, tmp_path_factory) -> SandboxHandle:
    scenario = getattr(request.module, "SCENARIO", DEFAULT_SCENARIO)
    with running_sandbox(scenario, tmp_path_factory.mktemp(f"sandbox-{scenario}")) as handle:
        yield handle
