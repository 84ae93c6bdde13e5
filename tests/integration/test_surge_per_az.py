# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 11 item 2 (SPEC B2, U2, U3, K5): `surge: per_az` on a 2-node group over 3 AZs, through the real playbook.

Auto Scaling put the 2 nodes in us-west-2a and us-west-2b. EKS's scale-up adds max(2 x 3, 1) = 6; per_az adds 4,
the fewest that are sure to reach both AZs with old nodes: the first launch goes to the empty us-west-2c, and
after it the three AZs tie in an order Auto Scaling does not document (2 launches can never do it). The tests run
in order on one sandbox: the dry run, the upgrade, and a rerun on the upgraded group.
"""

from __future__ import annotations

import datetime
import json

from asg_helpers import journal_tags, workers_asg
from nodegroup_state import call_counts, changes_by_the_collection
from sandbox_helpers import REPO_ROOT, run_playbook

SCENARIO = "two_nodes_three_azs"
ARGS = {"cluster_name": SCENARIO, "nodegroup_name": "workers", "kubernetes_version": "1.30", "surge": "per_az",
        "drain_timeout": 60, "post_drain_wait": 0}
PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"


def activities_since(sandbox, since):
    """The group's scaling activities that started at or after ``since``, oldest first."""
    found = sandbox.client("autoscaling").describe_scaling_activities(
        AutoScalingGroupName=workers_asg(sandbox)["AutoScalingGroupName"])["Activities"]
    return sorted((a for a in found if a["StartTime"] >= since), key=lambda a: a["StartTime"])


def launch_az(activity):
    return json.loads(activity.get("Details") or "{}").get("Availability Zone")


def test_the_dry_run_shows_the_per_az_surge_and_changes_nothing(sandbox, tmp_path):
    before = call_counts(sandbox)
    report_path = tmp_path / "report.json"
    result = run_playbook(sandbox, PLAYBOOK, dict(ARGS, upgrade_report_path=str(report_path)), check=True)
    assert result.returncode == 0, result.stdout[-4000:]
    assert changes_by_the_collection(before, call_counts(sandbox)) == {}
    plan = json.loads(report_path.read_text())["plan"]
    assert (plan["surge"], plan["surge_sizing"], plan["desired_capacity_during"]) == (4, "per_az", 6)
    assert "surge per_az" in result.stdout and "us-west-2a, us-west-2b" in result.stdout
    # SPEC B1 (issue 11 item 1): the default schedule once plans the group back to 1-1-0, all new.
    assert plan["schedule"]["schedule"] == "once" and "schedule once (each pod moves once)" in result.stdout
    assert plan["schedule"]["end_per_az"] == {"us-west-2a": 1, "us-west-2b": 1, "us-west-2c": 0}


def test_per_az_launches_four_nodes_not_six_and_reaches_both_azs_with_old_nodes(sandbox, tmp_path):
    old = sorted(i["AvailabilityZone"] for i in workers_asg(sandbox)["Instances"])
    assert old == ["us-west-2a", "us-west-2b"]
    started = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    report_path = tmp_path / "report.json"
    result = run_playbook(sandbox, PLAYBOOK, dict(ARGS, upgrade_report_path=str(report_path)))
    assert result.returncode == 0, result.stdout[-4000:]
    report = json.loads(report_path.read_text())
    assert (report["status"], report["surge"], report["surge_sizing"]) == ("succeeded", 4, "per_az")
    assert report["surge_instance_minutes"] > 0 and len(report["replaced_instances"]) == 2

    # What the sandbox's Auto Scaling did: the scale-up's launches are the ones before the first termination.
    activities = activities_since(sandbox, started)
    first_termination = next(i for i, a in enumerate(activities) if a["Description"].startswith("Terminating"))
    scale_up = [a for a in activities[:first_termination] if a["Description"].startswith("Launching")]
    assert len(scale_up) == 4, [a["Description"] for a in activities]
    assert {"us-west-2a", "us-west-2b"} <= set(launch_az(a) for a in scale_up)

    asg = workers_asg(sandbox)
    assert asg["DesiredCapacity"] == 2 and journal_tags(asg) == {}
    # SPEC B1: the group ends as it started per AZ, and the scale-down drained no pod.
    assert sorted(i["AvailabilityZone"] for i in asg["Instances"] if i["LifecycleState"] == "InService") == old
    assert (report["schedule"], report["surplus_nodes_with_pods"]) == ("once", 0)
    assert report["disruptions_per_old_pod"] in (None, 1.0)
    sandbox_report = sandbox.report()
    assert sandbox_report["pods_lost"] == [] and sandbox_report["pdb_violations"] == []


def test_a_rerun_on_the_upgraded_group_changes_nothing(sandbox, tmp_path):
    """SPEC K5: every instance runs the target; the rerun with per_az surges nothing and writes no journal."""
    before = call_counts(sandbox)
    started = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    report_path = tmp_path / "report.json"
    result = run_playbook(sandbox, PLAYBOOK, dict(ARGS, upgrade_report_path=str(report_path)))
    assert result.returncode == 0, result.stdout[-4000:]
    report = json.loads(report_path.read_text())
    assert (report["status"], report["on_target_already"], report["surge"]) == ("succeeded", True, None)
    assert changes_by_the_collection(before, call_counts(sandbox)) == {}
    assert activities_since(sandbox, started) == []
    assert workers_asg(sandbox)["DesiredCapacity"] == 2 and journal_tags(workers_asg(sandbox)) == {}
