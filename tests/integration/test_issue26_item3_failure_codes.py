# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 26 item 3 (SPEC U8, K3): a refusal of the roles fails as the modules fail, with its code and the parameter
it names in the task's result, and the failure handling records them from there, not from the message's first word.
Before, the roles' refusals began their messages with "InvalidParameter: " for roles/nodegroup_upgrade/tasks/
failure.yml to find the code by regex, and named no parameter."""

from __future__ import annotations

import json

import pytest

from nodegroup_state import call_counts, changes_by_the_collection
from sandbox_helpers import REPO_ROOT, run_playbook

SCENARIO = "managed"


@pytest.mark.parametrize("playbook, extra, parameter, says", [
    # SPEC K3: EKS offers no surge parameters.
    ("surge_upgrade.yml", {}, "update_strategy", "node group workers is an EKS managed node group, and EKS offers no "
                                                 "surge parameters"),
    # Issue 11 item 2: EKS sizes a managed node group's surge itself.
    ("upgrade_nodegroup.yml", {"surge": "per_az"}, "surge", "surge (nodegroup_upgrade_surge) per_az applies to "
                                                            "self-managed node groups only"),
])
def test_issue26_item3_a_role_refusal_records_its_code_and_parameter_from_the_task_result(
        sandbox, tmp_path, playbook, extra, parameter, says):
    before = call_counts(sandbox)
    report_path = tmp_path / "report.json"
    result = run_playbook(sandbox, REPO_ROOT / "playbooks" / playbook, dict(
        cluster_name="managed", nodegroup_name="workers", kubernetes_version="1.30",
        upgrade_report_path=str(report_path), **extra))
    assert result.returncode != 0, result.stdout[-3000:]
    error = json.loads(report_path.read_text())["error"]
    assert (error["phase"], error["code"], error["parameter"]) == ("setup", "InvalidParameter", parameter), error
    # The code is data beside the message, which no longer begins with it.
    assert error["msg"].startswith(says), error["msg"]
    assert error["resume"].startswith("Nothing was changed for this reason; correct the parameter named above")
    assert changes_by_the_collection(before, call_counts(sandbox)) == {}


def test_issue26_item3_eks_s_update_followed_past_its_timeout_records_wait_timeout_as_data(sandbox, tmp_path):
    """The managed_update role's own failure: its code is the task's, and its message no longer begins with it."""
    report_path = tmp_path / "report.json"
    result = run_playbook(sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", dict(
        cluster_name="managed", nodegroup_name="workers", kubernetes_version="1.30", managed_update_timeout=1,
        managed_update_poll_interval=1, upgrade_report_path=str(report_path)))
    assert result.returncode != 0, result.stdout[-3000:]
    error = json.loads(report_path.read_text())["error"]
    assert (error["phase"], error["code"], error["parameter"]) == ("eks_update", "WaitTimeout", None), error
    assert error["msg"].startswith("EKS's update "), error["msg"]
