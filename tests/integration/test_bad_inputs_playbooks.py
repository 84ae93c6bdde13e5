# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 10 items 2, 3, 18, 24: the playbooks refuse every bad input of bad_inputs.yml before any AWS or
Kubernetes change, with a message naming the parameter, and say "Nothing was changed" only when so."""

from __future__ import annotations

import re

import pytest

from bad_inputs import case_id, cases
from nodegroup_state import call_counts, changes_by_the_collection
from sandbox_helpers import REPO_ROOT, run_playbook

SCENARIO = "demo"
CASES = cases(playbooks=True)


def failure_text(stdout: str) -> str:
    """What Ansible printed from the first failed task on ("failed:" for an item of a loop)."""
    starts = [index for index in (stdout.find("fatal: ["), stdout.find("failed: [")) if index >= 0]
    return stdout[min(starts):] if starts else ""


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_bad_input_is_refused_before_any_change(sandbox, case):
    before = call_counts(sandbox)
    result = run_playbook(sandbox, REPO_ROOT / "playbooks" / case["where"], case["args"])
    assert result.returncode != 0, result.stdout[-3000:]
    failure = failure_text(result.stdout)
    assert case["parameter"] in failure and case["says"] in failure, result.stdout[-3000:]
    assert changes_by_the_collection(before, call_counts(sandbox)) == {}, failure
    assert "PLAY RECAP" in result.stdout and "changed=0" in result.stdout.split("PLAY RECAP")[1]
    # Issue 10 item 24: an input error is answered with "correct it", not "rerun the same job"; the summary says
    # "Auto Scaling group not found" only when that is the error, and names the group when it is known.
    resume = re.findall(r"To resume: (.*?)\"", result.stdout)
    assert all(advice.startswith("Nothing was changed for this reason; correct the parameter named above")
               for advice in resume), resume
    if "Auto Scaling group not found" in result.stdout:
        assert case["parameter"] in ("nodegroup_name", "asg_name"), failure
