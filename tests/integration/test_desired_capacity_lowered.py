# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 10 items 22 and 24: someone sets the group's desired capacity back to its original value (a Terraform
apply, an operator) while the upgrade runs. Before, the group scaled in on its own and terminated cordoned old
nodes that still held pods (9 pods lost, two PDBs at 0 ready), and the change was noticed only at the scale-down.
Now every instance is protected from scale-in for the upgrade, and the next batch stops with
ClusterAutoscalerActive before any change."""

from __future__ import annotations

import json

from asg_helpers import journal_tags, workers_asg
from sandbox_helpers import REPO_ROOT, running_playbook, wait_for

# The demo cluster without its single replica whose PDB never allows an eviction (only force moves it, which is
# a PDB violation by design): every pod here can move without breaking a budget.
SCENARIO = "rolling"


def test_a_desired_capacity_set_back_mid_upgrade_loses_no_pod(sandbox, tmp_path):
    report_path = tmp_path / "report.json"
    extra_vars = {"cluster_name": "rolling", "nodegroup_name": "workers", "kubernetes_version": "1.30",
                  "drain_timeout": 60, "post_drain_wait": 0, "upgrade_report_path": str(report_path)}
    with running_playbook(sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", extra_vars) as upgrade:
        wait_for(lambda: journal_tags(workers_asg(sandbox)).get("phase") == "upgrade", 300, "the upgrade phase")
        asg = workers_asg(sandbox)
        assert all(i["ProtectedFromScaleIn"] for i in asg["Instances"]), asg["Instances"]
        sandbox.client("autoscaling").update_auto_scaling_group(
            AutoScalingGroupName=asg["AutoScalingGroupName"], DesiredCapacity=6)
        output = upgrade.communicate(timeout=600)[0]
    assert upgrade.returncode != 0, output[-3000:]
    error = json.loads(report_path.read_text())["error"]
    assert error["code"] == "ClusterAutoscalerActive" and error["phase"] == "upgrade", error
    report = sandbox.report()
    assert report["pods_lost"] == [] and report["pdb_violations"] == []
    # the group could not scale in: every instance the upgrade did not terminate itself is still there
    asg = workers_asg(sandbox)
    assert asg["DesiredCapacity"] == 6 and len(asg["Instances"]) > 6
    assert all(i["ProtectedFromScaleIn"] for i in asg["Instances"] if i["LifecycleState"] == "InService")
