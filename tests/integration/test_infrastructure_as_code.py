# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node groups that infrastructure as code owns, and the instance refreshes around them (issue 29 items 1 and 2,
SPEC W1, W2), through the rolling playbook against the sandbox, whose owners apply as terraform-aws-eks and a
CloudFormation stack do (tests/sandbox/eks_sandbox/aws/owners.py).

Each test has a sandbox of its own: an owner's apply and a refresh change the group for good.
"""

from __future__ import annotations

import pytest

from nodegroup_state import aws_state, call_counts, changes_by_the_collection, image_id_by_name, workers_asg
from sandbox_helpers import REPO_ROOT, running_sandbox, run_playbook

PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"
NEW_AMI = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"
FAST = {"post_drain_wait": 1, "drain_timeout": 120}


def upgrade(sandbox, cluster, **extra):
    """The rolling playbook; the owner's revert is not accepted unless ``extra`` says so."""
    return run_playbook(sandbox, PLAYBOOK, {"cluster_name": cluster, "nodegroup_name": "workers",
                                            "accept_owner_revert": False, **FAST, **extra})


def refreshes(sandbox):
    return sandbox.client("autoscaling").describe_instance_refreshes(
        AutoScalingGroupName=workers_asg(sandbox)["AutoScalingGroupName"])["InstanceRefreshes"]


def node_images(sandbox):
    return sorted({node["ami"] for node in sandbox.report()["nodegroups"]["workers"]["nodes"]})


@pytest.mark.parametrize("scenario, cluster, owner", [
    ("rolling", "rolling", "terraform-aws-eks"),
    ("fault_launch_failure", "fault_launch_failure", "CloudFormation"),
])
def test_issue29_item1_pinning_a_version_behind_the_owners_back_is_refused_before_any_change(tmp_path, scenario,
                                                                                             cluster, owner):
    with running_sandbox(scenario, tmp_path) as sandbox:
        before, calls = aws_state(sandbox), call_counts(sandbox)
        result = upgrade(sandbox, cluster, kubernetes_version="1.30")
        assert result.returncode != 0
        assert "OwnedByInfrastructureAsCode" in result.stdout and "owned by %s" % owner in result.stdout
        assert "use_current_launch_template=true" in result.stdout and "accept_owner_revert=true" in result.stdout
        assert aws_state(sandbox) == before
        assert changes_by_the_collection(calls, call_counts(sandbox)) == {}


def test_issue29_item1_the_terraform_workflow_survives_the_next_apply(tmp_path):
    """W1: terraform applies the new AMI with its refresh off, the playbook rolls the nodes onto that version
    without touching the template or the group's reference, and the next apply (refresh on) finds nothing to do:
    no instance is replaced without a drain, no pod lost, no budget violated."""
    with running_sandbox("rolling", tmp_path) as sandbox:
        assert any("made it the default" in line for line in sandbox.apply(ami=NEW_AMI, instance_refresh=False))
        template_before = aws_state(sandbox)["versions"]
        result = upgrade(sandbox, "rolling", use_current_launch_template=True)
        assert result.returncode == 0, result.stdout[-3000:]
        assert "the version the Auto Scaling group already used" in result.stdout
        assert aws_state(sandbox)["versions"] == template_before  # no version made behind terraform's back
        assert workers_asg(sandbox)["LaunchTemplate"]["Version"] == "2"
        assert sandbox.apply(instance_refresh=True) == []
        assert refreshes(sandbox) == []
        report = sandbox.report()
        assert report["pods_lost"] == [] and report["pdb_violations"] == []
        assert node_images(sandbox) == [image_id_by_name(sandbox, NEW_AMI)]


def test_issue29_item1_an_accepted_revert_is_what_the_next_apply_does(tmp_path):
    """W1, the danger the refusal names: with accept_owner_revert the upgrade pins a version of its own; the next
    terraform apply points the group at a new version with the code's (old) AMI and starts an instance refresh."""
    with running_sandbox("rolling", tmp_path) as sandbox:
        old_ami = aws_state(sandbox)["versions"][0][1]
        result = upgrade(sandbox, "rolling", kubernetes_version="1.30", accept_owner_revert=True)
        assert result.returncode == 0, result.stdout[-3000:]
        done = sandbox.apply()
        assert any("instance refresh" in line for line in done)
        state = aws_state(sandbox)
        assert dict(state["versions"])[int(state["asg"]["LaunchTemplate"]["Version"])] == old_ami
        assert refreshes(sandbox)[0]["Status"] in ("Pending", "InProgress")


def test_issue29_item2_an_active_instance_refresh_is_refused_before_any_change(tmp_path):
    """W2: a refresh replaces nodes without a drain; the upgrade does not start beside it."""
    with running_sandbox("rolling", tmp_path) as sandbox:
        asg_name = workers_asg(sandbox)["AutoScalingGroupName"]
        autoscaling = sandbox.client("autoscaling")
        # Paused (its process suspended, as terraform's own refresh is once an upgrade suspends it), so that it is
        # still active however slowly the playbook starts: a paused refresh resumes, undrained, with the process.
        autoscaling.suspend_processes(AutoScalingGroupName=asg_name, ScalingProcesses=["InstanceRefresh"])
        autoscaling.start_instance_refresh(AutoScalingGroupName=asg_name, Preferences={"MinHealthyPercentage": 100})
        before, calls = aws_state(sandbox), call_counts(sandbox)
        result = upgrade(sandbox, "rolling", kubernetes_version="1.30", accept_owner_revert=True)
        assert result.returncode != 0
        assert "InstanceRefreshInProgress" in result.stdout and "cancel-instance-refresh" in result.stdout
        assert not any(key.startswith("eksops.nodegroup/") for key, _value in aws_state(sandbox)["tags"])
        assert aws_state(sandbox)["versions"] == before["versions"]
        assert changes_by_the_collection(calls, call_counts(sandbox)) == {}


@pytest.mark.parametrize("settings, code", [
    ({"MaxInstanceLifetime": 604800}, "ReplacesInstancesItself"),
    ({"CapacityRebalance": True}, "ReplacesInstancesItself"),
    (None, "WarmPoolPresent"),
])
def test_issue29_item2_what_replaces_nodes_by_itself_is_refused_before_any_change(tmp_path, settings, code):
    """W2: maximum instance lifetime and capacity rebalancing replace instances without a drain; a warm pool's old
    instances would be the surge. Each is refused before the first change, saying how to go on."""
    with running_sandbox("rolling", tmp_path) as sandbox:
        autoscaling = sandbox.client("autoscaling")
        asg_name = workers_asg(sandbox)["AutoScalingGroupName"]
        if settings:
            autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg_name, **settings)
        else:
            autoscaling.put_warm_pool(AutoScalingGroupName=asg_name, MinSize=1)
        before, calls = aws_state(sandbox), call_counts(sandbox)
        result = upgrade(sandbox, "rolling", kubernetes_version="1.30", accept_owner_revert=True)
        assert result.returncode != 0 and code in result.stdout, result.stdout[-3000:]
        assert "Nothing was changed" in result.stdout
        assert aws_state(sandbox) == before
        assert changes_by_the_collection(calls, call_counts(sandbox)) == {}
