# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 10 items 4, 5 and 9, on the demo sandbox, read from its own counters: a dry run shows the real plan
and changes nothing; a node the cluster autoscaler is deleting stops the upgrade before any change, after the
preflight report is shown."""

from __future__ import annotations

import json

from nodegroup_state import call_counts, changes_by_the_collection, nodegroup_nodes
from sandbox_helpers import REPO_ROOT, run_playbook

SCENARIO = "demo"
ARGS = {"cluster_name": "demo", "nodegroup_name": "workers", "kubernetes_version": "1.30"}


def test_a_dry_run_shows_the_plan_against_the_target_and_changes_nothing(sandbox, tmp_path):
    """Item 9 (the plan was computed against the current version: "0 of 6 nodes ... SUCCEEDED") and item 4
    (50 % of the 6-node group is 3 nodes at a time, not a percentage of the surged 12)."""
    report_path = tmp_path / "report.json"
    before = call_counts(sandbox)
    result = run_playbook(sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml",
                          dict(ARGS, max_unavailable_percentage=50, upgrade_report_path=str(report_path)),
                          check=True)
    assert result.returncode == 0, result.stdout[-4000:]
    assert changes_by_the_collection(before, call_counts(sandbox)) == {}
    report = json.loads(report_path.read_text())
    assert (report["status"], report["dry_run"], report["max_unavailable"]) == ("planned", True, 3)
    plan = report["plan"]
    old = sorted(i["InstanceId"] for i in sandbox.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[report["asg_name"]])["AutoScalingGroups"][0]["Instances"])
    assert sorted(i for batch in plan["batches"] for i in batch) == old
    assert [len(batch) for batch in plan["batches"]] == [3, 3]
    assert (plan["surge"], plan["desired_capacity_during"]) == (6, 12)
    names = sorted(node.metadata.name for node in nodegroup_nodes(sandbox))
    assert sorted(name for batch in plan["batch_nodes"] for name in batch) == names
    assert "Dry run (check mode): nothing was changed" in result.stdout and "batch: " + plan["batch_nodes"][0][0] \
        in result.stdout


def test_a_node_the_autoscaler_is_deleting_stops_the_upgrade_before_any_change(sandbox, tmp_path):
    """Item 5: the preflight finds the ToBeDeletedByClusterAutoscaler taint; before, the cordon step failed after
    the surge, leaving 11 instances, processes suspended and the journal."""
    core = sandbox.core_v1()
    node = nodegroup_nodes(sandbox)[0].metadata.name
    core.patch_node(node, {"spec": {"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "value": "1700000000",
                                                "effect": "NoSchedule"}]}})
    report_path = tmp_path / "report.json"
    try:
        before = call_counts(sandbox)
        result = run_playbook(sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml",
                              dict(ARGS, upgrade_report_path=str(report_path)))
        assert result.returncode != 0
        assert changes_by_the_collection(before, call_counts(sandbox)) == {}
    finally:
        core.patch_node(node, {"spec": {"taints": None}})
    # What the setup phase found is printed before it stops (issue 11 item 4: the nodegroup_setup action's lines).
    shown = result.stdout
    assert shown.index("Node group workers is a self-managed node group") < shown.index("Preflight: ") \
        < shown.index("- Node %s carries the ToBeDeletedByClusterAutoscaler taint" % node)
    error = json.loads(report_path.read_text())["error"]
    assert (error["code"], error["phase"]) == ("PreflightBlocked", "setup")
    assert node in error["msg"] and "ToBeDeletedByClusterAutoscaler" in error["msg"]
    assert error["resume"].startswith("Nothing was changed")
