# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""launch_template_version against the demo sandbox (SPEC U1; a conflicting journal is UpgradeTargetConflict).

The tests share one sandbox and run in file order: bad input and check mode first, on the untouched group.
"""

from __future__ import annotations

import pytest

from asg_helpers import journal_tags
from nodegroup_state import aws_state, call_counts, calls_between, image_id_by_name, mutating_calls, workers_asg
from sandbox_helpers import run_module

SCENARIO = "demo"
BASE = {"cluster_name": "demo", "nodegroup_name": "workers"}
OLD_AMI = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
NEW_AMI = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"


def journal(sandbox):
    return journal_tags(workers_asg(sandbox))


@pytest.mark.parametrize("args, parameter, named", [
    ({"cluster_name": "nope", "kubernetes_version": "1.30"}, "cluster_name", "nope"),
    ({"nodegroup_name": "nope", "kubernetes_version": "1.30"}, "nodegroup_name", "nope"),
    ({"asg_name": "nope", "kubernetes_version": "1.30"}, "asg_name", "nope"),
    ({"image_id": "ami-00000000000000000"}, "image_id", "ami-00000000000000000"),
    ({"version": 99}, "launch_template_version", "99"),
    ({"kubernetes_version": "1.99"}, "kubernetes_version", "1.99"),
])
def test_bad_input_names_the_problem_and_changes_nothing(sandbox, args, parameter, named):
    before, calls_before = aws_state(sandbox), call_counts(sandbox)
    result = run_module(sandbox, "launch_template_version", {**BASE, **args})
    assert result["failed"] is True
    assert result["parameter"] == parameter, result
    assert named in result["msg"]
    assert aws_state(sandbox) == before
    assert mutating_calls(calls_between(calls_before, call_counts(sandbox))) == {}


def test_check_mode_reports_the_plan_and_changes_nothing(sandbox):
    before, calls_before = aws_state(sandbox), call_counts(sandbox)
    result = run_module(sandbox, "launch_template_version", {**BASE, "kubernetes_version": "1.30"},
                        check=True, diff=True)
    assert result["changed"] is True, result
    lt = result["launch_template"]
    assert (lt["created"], lt["pinned"], lt["previous_version"], lt["version"]) == (True, True, 1, 2)
    assert lt["image_id"] == image_id_by_name(sandbox, NEW_AMI)
    diff = result["diff"]
    assert (diff["before"]["launch_template_version"], diff["after"]["launch_template_version"]) == ("1", "2")
    assert diff["before"]["image_id"] == image_id_by_name(sandbox, OLD_AMI)
    assert diff["after"]["image_id"] == lt["image_id"]
    assert aws_state(sandbox) == before
    assert mutating_calls(calls_between(calls_before, call_counts(sandbox))) == {}


def test_kubernetes_version_creates_a_version_from_the_current_one_and_pins_the_group(sandbox):
    """U1: SourceVersion = the ASG's version, only the AMI replaced, the ASG pinned to the number."""
    ec2 = sandbox.client("ec2")
    result = run_module(sandbox, "launch_template_version",
                        {**BASE, "kubernetes_version": "1.30", "run_id": "it-run-1"})
    assert result["changed"] is True, result
    lt = result["launch_template"]
    new_ami = image_id_by_name(sandbox, NEW_AMI)
    assert (lt["version"], lt["image_id"], lt["created"]) == (2, new_ami, True)
    assert lt["ssm_parameter"].endswith("/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id")
    assert workers_asg(sandbox)["LaunchTemplate"]["Version"] == "2"
    source, created = ec2.describe_launch_template_versions(
        LaunchTemplateId=lt["id"], Versions=["1", "2"])["LaunchTemplateVersions"]
    assert created["LaunchTemplateData"] == dict(source["LaunchTemplateData"], ImageId=new_ami)
    assert journal(sandbox) == {
        "run_id": "it-run-1", "phase": "setup", "started_at": result["launch_template"]["journal"]["started_at"],
        "previous_launch_template_version": "1", "target_launch_template_version": "2",
        "launch_template_id": lt["id"], "target_image_id": new_ami,
        "suspended_processes": "AZRebalance,AlarmNotification,ScheduledActions,ReplaceUnhealthy,InstanceRefresh"}
    # A1: suspended before the group was pointed at the new version
    assert sorted(p["ProcessName"] for p in workers_asg(sandbox)["SuspendedProcesses"]) == [
        "AZRebalance", "AlarmNotification", "InstanceRefresh", "ReplaceUnhealthy", "ScheduledActions"]


def test_second_run_changes_nothing(sandbox):
    before, calls_before = aws_state(sandbox), call_counts(sandbox)
    result = run_module(sandbox, "launch_template_version", {**BASE, "kubernetes_version": "1.30"})
    assert result["changed"] is False, result
    assert (result["launch_template"]["version"], result["launch_template"]["journal"]["run_id"]) == (2, "it-run-1")
    # U1: the group is on version 2 already; the version before the upgrade comes from the journal
    lt = result["launch_template"]
    assert (lt["previous_version"], lt["previous_image_id"]) == (1, image_id_by_name(sandbox, OLD_AMI))
    assert aws_state(sandbox) == before
    assert mutating_calls(calls_between(calls_before, call_counts(sandbox))) == {}


def test_another_target_fails_with_version_mismatch_unless_forced(sandbox):
    """U8: the journal names version 2; version 1 is refused, then retargeted with force_new_target."""
    before = aws_state(sandbox)
    refused = run_module(sandbox, "launch_template_version", {**BASE, "version": 1})
    assert refused["failed"] is True and refused["code"] == "UpgradeTargetConflict"
    assert "it-run-1" in refused["msg"] and "force_new_target" in refused["msg"]
    assert aws_state(sandbox) == before
    forced = run_module(sandbox, "launch_template_version", {**BASE, "version": 1, "force_new_target": True})
    assert forced["changed"] is True and forced["launch_template"]["created"] is False
    assert workers_asg(sandbox)["LaunchTemplate"]["Version"] == "1"
    assert journal(sandbox)["target_launch_template_version"] == "1"
    assert journal(sandbox)["run_id"] == "it-run-1"
