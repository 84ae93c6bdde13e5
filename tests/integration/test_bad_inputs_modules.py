# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 10 items 18, 24: the modules refuse every bad input of bad_inputs.yml before any AWS or Kubernetes
change, naming the parameter; and docs/bad-inputs.md is the table rendered from that file."""

from __future__ import annotations

import pytest

from bad_inputs import DOC, case_id, cases, render
from nodegroup_state import call_counts, changes_by_the_collection
from sandbox_helpers import run_module

SCENARIO = "demo"
CASES = cases(playbooks=False)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_bad_input_is_refused_before_any_change(sandbox, case):
    before = call_counts(sandbox)
    result = run_module(sandbox, case["where"], case["args"])
    assert result.get("failed"), result
    assert result.get("parameter") == case["parameter"], result
    assert case["parameter"] in result["msg"] and case["says"] in result["msg"], result["msg"]
    assert changes_by_the_collection(before, call_counts(sandbox)) == {}, result["msg"]


def test_the_table_in_docs_is_rendered_from_the_cases():
    """Regenerate with: python tests/integration/bad_inputs.py > docs/bad-inputs.md"""
    assert DOC.read_text(encoding="utf-8") == render()
    assert len(cases(playbooks=True)) + len(CASES) >= 30
