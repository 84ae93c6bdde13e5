# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""asg_instance_terminate against AWS behaviour the happy path never shows (issue 10 items 11 and 14), on an inline
sandbox scenario: EC2's eventually consistent DescribeInstances (the `instance_not_visible` fault), termination
lifecycle hooks (Terminating:Wait) and instance lifecycle policies (Terminating:Retained), played by the sandbox as
AWS documents them (tests/sandbox/README.md, "Moto corrections")."""

from __future__ import annotations

import threading
import time

import pytest

from nodegroup_state import asg_name_of, instance_id_of, nodegroup_nodes, workers_asg
from sandbox_helpers import run_module, running_sandbox

OLD_AMI = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
HIDDEN_SECONDS = 8
SCENARIO = {
    "name": "terminate-aws",
    "cluster": {"name": "terminate-aws", "kubernetes_version": "1.29"},
    "availability_zones": ["us-west-2a", "us-west-2b"],
    "amis": [{"name": OLD_AMI, "kubernetes_version": "1.29"}],
    "nodegroups": [{"name": "workers", "ami": OLD_AMI, "min_size": 1, "max_size": 6, "desired_capacity": 3}],
    "workloads": [{"kind": "DaemonSet", "name": "node-agent", "namespace": "kube-system"}],
    # Every instance launched once the sandbox is ready stays unknown to DescribeInstances for a while.
    "faults": [{"type": "instance_not_visible", "seconds": HIDDEN_SECONDS}],
}
ARGS = {"cluster_name": "terminate-aws", "nodegroup_name": "workers"}


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    with running_sandbox(SCENARIO, tmp_path_factory.mktemp("sandbox-terminate-aws")) as handle:
        yield handle


def cordoned_in_service_instance(sandbox):
    """An InService instance whose node is cordoned (only DaemonSet pods run here): terminable (SPEC U5)."""
    in_service = {i["InstanceId"] for i in workers_asg(sandbox)["Instances"] if i["LifecycleState"] == "InService"}
    node = next(n for n in nodegroup_nodes(sandbox) if instance_id_of(n) in in_service and not n.spec.unschedulable)
    sandbox.core_v1().patch_node(node.metadata.name, {"spec": {"unschedulable": True}})
    return instance_id_of(node)


def lifecycle_state(sandbox, instance_id):
    return next((i["LifecycleState"] for i in workers_asg(sandbox)["Instances"] if i["InstanceId"] == instance_id),
                None)


def calls(sandbox, key):
    return sandbox.report()["aws_calls"].get(key, 0)


def start_hook_owner(sandbox, hook_name, instance_id, action_result, record, hold=0.0):
    """What a termination hook's handler does, in a thread of its own (returned, started): it waits (up to 60 s) for
    the instance in Terminating:Wait (then sets record["held_from"]; it gives up silently if it never comes), does its
    work (here: waits `hold` seconds), then CompleteLifecycleAction with `action_result` (then sets record["at"])."""
    autoscaling = sandbox.client("autoscaling")
    group = asg_name_of(sandbox)

    def hook_owner():
        deadline = time.time() + 60
        while lifecycle_state(sandbox, instance_id) != "Terminating:Wait":
            if time.time() > deadline:
                return
            time.sleep(0.2)
        record["held_from"] = time.time()
        if hold:
            time.sleep(hold)
        autoscaling.complete_lifecycle_action(LifecycleHookName=hook_name, AutoScalingGroupName=group,
                                              InstanceId=instance_id, LifecycleActionResult=action_result)
        record["at"] = time.time()

    owner = threading.Thread(target=hook_owner, daemon=True)
    owner.start()
    return owner


def test_item11_a_replacement_ec2_does_not_describe_yet_is_waited_for(sandbox):
    """Issue 10 item 11: DescribeInstances right after a launch can answer InvalidInstanceID.NotFound (EC2's eventual
    consistency). The group watch waiting for the replacement took that as an error and failed; it is "not yet
    visible", and the wait goes on until EC2 describes the instance and its node is Ready."""
    victim = cordoned_in_service_instance(sandbox)
    before = calls(sandbox, "DescribeInstances InvalidInstanceID.NotFound")
    result = run_module(sandbox, "asg_instance_terminate", dict(
        ARGS, instance_ids=[victim], should_decrement_desired_capacity=False, wait_for_replacements=True,
        wait_timeout=120))
    assert not result.get("failed"), result
    report = result["termination"]
    assert report["terminated"] == [victim]
    [replacement] = report["replacements"]
    assert replacement["ready"] is True and replacement["node_name"]
    assert calls(sandbox, "DescribeInstances InvalidInstanceID.NotFound") > before, \
        "EC2 did not describe the replacement at first: the case under test happened"


def test_item14_an_instance_held_by_a_termination_hook_is_waited_for_and_the_hook_named(sandbox):
    """Issue 10 item 14: an instance held in Terminating:Wait by a lifecycle hook made the termination wait time
    out. The module reads the group's hooks once, waits for the hook's owner (up to the hook's heartbeat timeout
    beyond wait_timeout), says which hook it waited for, and never completes the action itself."""
    autoscaling = sandbox.client("autoscaling")
    group = asg_name_of(sandbox)
    autoscaling.put_lifecycle_hook(LifecycleHookName="log-shipper", AutoScalingGroupName=group,
                                   LifecycleTransition="autoscaling:EC2_INSTANCE_TERMINATING",
                                   HeartbeatTimeout=300, DefaultResult="CONTINUE")
    victim = cordoned_in_service_instance(sandbox)
    hold = 8.0
    completed = {}
    describes_before = calls(sandbox, "DescribeLifecycleHooks OK")
    completes_before = calls(sandbox, "CompleteLifecycleAction OK")
    # The hook's owner: its work (here: waiting), then CompleteLifecycleAction CONTINUE.
    owner = start_hook_owner(sandbox, "log-shipper", victim, "CONTINUE", completed, hold=hold)
    try:
        result = run_module(sandbox, "asg_instance_terminate", dict(
            ARGS, instance_ids=[victim], should_decrement_desired_capacity=True, wait_timeout=5))
    finally:
        owner.join(timeout=90)
        autoscaling.delete_lifecycle_hook(LifecycleHookName="log-shipper", AutoScalingGroupName=group)
    assert "at" in completed, "the hook's owner never saw the instance in Terminating:Wait"
    assert not result.get("failed"), result
    report = result["termination"]
    assert report["terminated"] == [victim]
    assert [hook["name"] for hook in report["lifecycle_hooks"]] == ["log-shipper"]
    [wait] = report["lifecycle_hook_waits"]
    assert wait["instance_id"] == victim and wait["lifecycle_hooks"] == ["log-shipper"]
    assert wait["still_held"] is False and wait["held_seconds"] >= hold - 2
    assert report["elapsed_seconds"] > 5, "it outwaited wait_timeout because the hook held the instance"
    ec2 = sandbox.client("ec2")
    assert ec2.describe_instances(InstanceIds=[victim])["Reservations"][0]["Instances"][0]["State"]["Name"] \
        == "terminated"
    assert calls(sandbox, "DescribeLifecycleHooks OK") - describes_before == 1, "the hooks are read once"
    assert calls(sandbox, "CompleteLifecycleAction OK") - completes_before == 1, "only the hook's owner completed it"


def test_a_retained_instance_ends_the_wait_at_once_with_a_warning(sandbox):
    """Auto Scaling user guide, "Manage retained instances" and "Configure instance retention": in a group whose
    instance lifecycle policy has TerminateHookAbandon=retain, an abandoned termination lifecycle action leaves the
    instance in Terminating:Retained, running, no longer counted toward the desired capacity, until someone
    terminates it. The wait used to go on until wait_timeout (plus the hook's heartbeat timeout) and fail after the
    node was drained; it ends as soon as the group shows the instance retained, and says what to do."""
    autoscaling, ec2 = sandbox.client("autoscaling"), sandbox.client("ec2")
    group = asg_name_of(sandbox)
    autoscaling.put_lifecycle_hook(LifecycleHookName="backup", AutoScalingGroupName=group,
                                   LifecycleTransition="autoscaling:EC2_INSTANCE_TERMINATING",
                                   HeartbeatTimeout=300, DefaultResult="ABANDON")
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=group, InstanceLifecyclePolicy={
        "RetentionTriggers": {"TerminateHookAbandon": "retain"}})
    desired = workers_asg(sandbox)["DesiredCapacity"]
    victim = cordoned_in_service_instance(sandbox)
    abandoned = {}
    # A hook handler whose work failed: it abandons the lifecycle action.
    owner = start_hook_owner(sandbox, "backup", victim, "ABANDON", abandoned)
    try:
        result = run_module(sandbox, "asg_instance_terminate", dict(
            ARGS, instance_ids=[victim], should_decrement_desired_capacity=False, wait_timeout=120))
        owner.join(timeout=90)
        assert "at" in abandoned, "the hook's owner never saw the instance in Terminating:Wait"
        assert not result.get("failed"), result
        report = result["termination"]
        assert report["terminated"] == [victim]
        assert report["retained_instances"] == [victim]
        assert report["elapsed_seconds"] < 40, "it returned once the group showed the instance retained"
        [warning] = [w for w in result.get("warnings", []) if victim in w]
        assert "Terminating:Retained" in warning and "was drained" in warning
        assert warning.endswith("aws ec2 terminate-instances --instance-ids %s" % victim)
        assert lifecycle_state(sandbox, victim) == "Terminating:Retained"
        assert ec2.describe_instances(InstanceIds=[victim])["Reservations"][0]["Instances"][0]["State"]["Name"] \
            == "running"
        # Not counted toward the desired capacity: the group launches a replacement.
        deadline = time.time() + 30
        while sum(i["LifecycleState"] in ("Pending", "InService") for i in workers_asg(sandbox)["Instances"]) < desired:
            assert time.time() < deadline, "no replacement for the retained instance"
            time.sleep(0.5)
    finally:
        owner.join(timeout=90)
        autoscaling.delete_lifecycle_hook(LifecycleHookName="backup", AutoScalingGroupName=group)
        autoscaling.update_auto_scaling_group(AutoScalingGroupName=group, InstanceLifecyclePolicy={
            "RetentionTriggers": {"TerminateHookAbandon": "terminate"}})
        if lifecycle_state(sandbox, victim) == "Terminating:Retained":
            ec2.terminate_instances(InstanceIds=[victim])  # what the warning tells the user to do
