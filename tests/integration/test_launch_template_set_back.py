# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 29 item 4: a launch template version set back by hand mid-upgrade. Before, the upgrade judged old and new
nodes by the version the group pointed at: it cordoned the nodes it had already upgraded as old ones, ended in an
error that blamed the wrong nodes, and a rerun surged again. Now the next step stops with
LaunchTemplateVersionChanged, naming both versions and what to do, before any further change; the group's state is
judged against the journal's target; and the rerun, once the group points at the target again, replaces only the
nodes still old."""

from __future__ import annotations

import json

from asg_helpers import journal_tags, workers_asg
from nodegroup_state import nodegroup_nodes
from sandbox_helpers import REPO_ROOT, run_playbook, running_playbook, wait_for

# Every pod here can move without breaking a budget (test_desired_capacity_lowered.py).
SCENARIO = "rolling"
PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"


def upgrade_vars(report_path):
    return {"cluster_name": "rolling", "nodegroup_name": "workers", "kubernetes_version": "1.30",
            "drain_timeout": 60, "post_drain_wait": 0, "node_ready_timeout": 120,
            "upgrade_report_path": str(report_path)}


def point_at(sandbox, asg, version):
    sandbox.client("autoscaling").update_auto_scaling_group(
        AutoScalingGroupName=asg["AutoScalingGroupName"],
        LaunchTemplate={"LaunchTemplateId": asg["LaunchTemplate"]["LaunchTemplateId"], "Version": version})


def test_issue29_a_launch_template_version_set_back_by_hand_mid_upgrade(sandbox, tmp_path):
    old = {i["InstanceId"] for i in workers_asg(sandbox)["Instances"]}
    report_path = tmp_path / "report.json"
    with running_playbook(sandbox, PLAYBOOK, upgrade_vars(report_path)) as upgrade:
        # The new nodes are Ready: someone points the group back at the version it had before the upgrade.
        wait_for(lambda: journal_tags(workers_asg(sandbox)).get("phase") == "upgrade", 300, "the upgrade phase")
        asg = workers_asg(sandbox)
        journal = journal_tags(asg)
        target, previous = journal["target_launch_template_version"], journal["previous_launch_template_version"]
        point_at(sandbox, asg, previous)
        members = {i["InstanceId"] for i in asg["Instances"]}
        output = upgrade.communicate(timeout=600)[0]
    assert upgrade.returncode != 0, output[-3000:]
    error = json.loads(report_path.read_text())["error"]
    assert error["code"] == "LaunchTemplateVersionChanged", error
    assert "version %s, no longer from %s version %s" % (previous, journal["launch_template_id"], target) \
        in error["msg"]
    assert "point the group at the upgrade's version again" in error["resume"]
    # Judged against the journal's target: the nodes the upgrade added are new, only the first six are old.
    assert set(error["group_state"]["old_instances"]) <= old
    upgraded = members - old
    assert set(error["group_state"]["new_instances"]) == upgraded and len(upgraded) == 6
    # Nothing more was changed: nothing launched since, the group still points where it was set, the new nodes
    # were never cordoned.
    asg = workers_asg(sandbox)
    assert {i["InstanceId"] for i in asg["Instances"]} <= members and asg["LaunchTemplate"]["Version"] == previous
    unschedulable = {node.spec.provider_id.rsplit("/", 1)[-1] for node in nodegroup_nodes(sandbox)
                     if node.spec.unschedulable}
    assert not unschedulable & upgraded

    # As the message says: the group pointed at the target again, the same job run again.
    point_at(sandbox, asg, target)
    again_path = tmp_path / "again.json"
    rerun = run_playbook(sandbox, PLAYBOOK, upgrade_vars(again_path), timeout=900)
    assert rerun.returncode == 0, rerun.stdout[-5000:]
    report = json.loads(again_path.read_text())
    assert set(report["replaced_instances"]) <= old, report["replaced_instances"]  # no upgraded node again
    final = workers_asg(sandbox)
    # Nothing surged again: the group ends with nodes the first run launched, none of the old ones.
    assert len(final["Instances"]) == 6 and {i["InstanceId"] for i in final["Instances"]} <= upgraded
    assert all(i["LaunchTemplate"]["Version"] == target for i in final["Instances"])
    assert sandbox.report()["pods_lost"] == [] and sandbox.report()["pdb_violations"] == []
