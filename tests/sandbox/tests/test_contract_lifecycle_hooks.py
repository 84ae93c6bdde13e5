# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (boto3, botocore's models): termination lifecycle hooks and EC2's eventually consistent DescribeInstances,
as the sandbox plays them (moto_patches (h) and (i), aws/lifecycle.py).

Expected behaviour, from AWS's documentation rather than from what the collection expects:
- Amazon EC2 Auto Scaling User Guide, "Amazon EC2 Auto Scaling lifecycle hooks": a terminating instance waits in
  Terminating:Wait "until you either complete the lifecycle action, or the timeout period ends", then
  Terminating:Proceed; a heartbeat "extends the timeout period by the timeout value specified when you created the
  lifecycle hook"; "The maximum amount of time that you can keep an instance in a wait state is 48 hours or 100 times
  the heartbeat timeout, whichever is smaller"; HeartbeatTimeout "must be from 30 to 7200 seconds"; for a terminating
  instance "both ABANDON and CONTINUE allow the instance to terminate. However, ABANDON stops any remaining actions,
  such as other lifecycle hooks, and CONTINUE allows any other lifecycle hooks to complete".
- API reference: PutLifecycleHook (HeartbeatTimeout default 3600, DefaultResult default ABANDON), LifecycleHook
  (GlobalTimeout), CompleteLifecycleAction and RecordLifecycleActionHeartbeat (by token or instance id).
- Instance lifecycle policies (moto_patches (l), lifecycle.py): User Guide "Configure instance retention"
  (https://docs.aws.amazon.com/autoscaling/ec2/userguide/configure-instance-retention.html): the TerminateHookAbandon
  trigger retains an instance "When you explicitly call the CompleteLifecycleAction API with the ABANDON result" and
  "When a termination lifecycle action with default result ABANDON times out"; the policies "only apply when
  termination lifecycle actions are abandoned, not when they complete successfully with the CONTINUE result"; with
  no termination lifecycle hooks "the policy has no effect". "Manage retained instances"
  (https://docs.aws.amazon.com/autoscaling/ec2/userguide/manage-retained-instances.html): Terminating,
  Terminating:Wait, Terminating:Proceed, Terminating:Retained; "Retained instances do not count toward your Amazon
  EC2 Auto Scaling group's desired capacity. When an instance enters a retained state, Auto Scaling launches a
  replacement instance"; EC2 charges apply "until you manually terminate the retained instance". API reference
  RetentionTriggers: TerminateHookAbandon "Valid Values: retain | terminate"; retained instances "remain until you
  call TerminateInstanceInAutoScalingGroup". CreateAutoScalingGroup / UpdateAutoScalingGroup take
  InstanceLifecyclePolicy, AutoScalingGroup reports it.
- EC2 API reference, error codes: InvalidInstanceID.NotFound, "The specified instance does not exist ... This error
  may occur because the ID of a recently created instance has not propagated through the system".
"""

from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError

from eks_sandbox.aws import lifecycle
from eks_sandbox.scenario.loader import load_scenario

from harness import asg, aws_running, describe_group, seeded_aws, tick_until, valid

TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING"
TIMINGS = {"instance_pending_seconds": 0.05, "instance_shutdown_seconds": 0.05}
HIDDEN_SECONDS = 0.6


def scenario(faults=()):
    return load_scenario({
        "name": "hooks", "timings": TIMINGS, "faults": list(faults),
        "amis": [{"name": "eks-node-1.29-v1", "kubernetes_version": "1.29"}],
        "nodegroups": [{"name": "workers", "ami": "eks-node-1.29-v1", "min_size": 1, "max_size": 12,
                        "desired_capacity": 3}],
    })


def started_sim(faults=()):
    return seeded_aws(scenario(faults))


@pytest.fixture
def sim():
    with aws_running(scenario()) as started:
        yield started


def lifecycle_state(sim, instance_id):
    return next((i["LifecycleState"] for i in describe_group(sim)["Instances"] if i["InstanceId"] == instance_id), None)


def ec2_state(sim, instance_id):
    return sim.client("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0][
        "State"]["Name"]


def in_service(sim):
    return [i["InstanceId"] for i in describe_group(sim)["Instances"] if i["LifecycleState"] == "InService"]


def put_hook(sim, name="drain", **extra):
    sim.client("autoscaling").put_lifecycle_hook(
        LifecycleHookName=name, AutoScalingGroupName=asg(sim), **{"LifecycleTransition": TERMINATING, **extra})


def moto_state(sim, instance_id):
    """The moto InstanceState of an instance (for the tests that move the clock of a lifecycle action)."""
    group = sim._autoscaling.autoscaling_groups[asg(sim)]  # pylint: disable=protected-access
    return next(s for s in group.instance_states if s.instance.id == instance_id)


def error_of(excinfo):
    return excinfo.value.response["Error"]["Code"], excinfo.value.response["Error"]["Message"]


# ------------------------------------------------------------------------------------------ PutLifecycleHook

def test_a_hook_reports_aws_defaults_and_global_timeout(sim):
    put_hook(sim, HeartbeatTimeout=300, DefaultResult="CONTINUE")
    put_hook(sim, name="plain")  # no timeout, no result: AWS's defaults
    autoscaling = sim.client("autoscaling")
    hooks = valid(autoscaling, "DescribeLifecycleHooks", autoscaling.describe_lifecycle_hooks(
        AutoScalingGroupName=asg(sim)))["LifecycleHooks"]
    by_name = {hook["LifecycleHookName"]: hook for hook in hooks}
    assert by_name["drain"]["HeartbeatTimeout"] == 300 and by_name["drain"]["GlobalTimeout"] == 30000
    assert by_name["drain"]["DefaultResult"] == "CONTINUE"
    assert by_name["plain"]["HeartbeatTimeout"] == 3600 and by_name["plain"]["DefaultResult"] == "ABANDON"
    assert by_name["plain"]["GlobalTimeout"] == 172800  # 100 x 3600 is more than 48 h
    assert "NotificationTargetARN" not in by_name["plain"] and "RoleARN" not in by_name["plain"], "none was given"


def test_an_update_keeps_what_it_does_not_give(sim):
    put_hook(sim, HeartbeatTimeout=300, DefaultResult="CONTINUE")
    sim.client("autoscaling").put_lifecycle_hook(LifecycleHookName="drain", AutoScalingGroupName=asg(sim),
                                                 HeartbeatTimeout=600)
    [hook] = sim.client("autoscaling").describe_lifecycle_hooks(AutoScalingGroupName=asg(sim))["LifecycleHooks"]
    assert (hook["LifecycleTransition"], hook["HeartbeatTimeout"], hook["DefaultResult"], hook["GlobalTimeout"]) == (
        TERMINATING, 600, "CONTINUE", 60000)


@pytest.mark.parametrize("extra,word", [
    ({"HeartbeatTimeout": 7201}, "HeartbeatTimeout"),
    ({"DefaultResult": "RETRY"}, "DefaultResult"),
    ({"LifecycleTransition": "autoscaling:EC2_INSTANCE_REBOOTING"}, "LifecycleTransition"),
])
def test_invalid_hooks_are_refused(sim, extra, word):
    with pytest.raises(ClientError) as excinfo:
        put_hook(sim, **extra)
    code, message = error_of(excinfo)
    assert code == "ValidationError" and word in message
    assert sim.client("autoscaling").describe_lifecycle_hooks(AutoScalingGroupName=asg(sim))["LifecycleHooks"] == []


# ------------------------------------------------------------------------------------------ Terminating:Wait

def test_a_terminated_instance_waits_for_the_hook_and_goes_when_it_is_completed(sim):
    put_hook(sim, HeartbeatTimeout=300, DefaultResult="CONTINUE")
    autoscaling = sim.client("autoscaling")
    victim = in_service(sim)[0]
    autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=victim, ShouldDecrementDesiredCapacity=False)
    for dummy in range(5):
        sim.tick()
    assert lifecycle_state(sim, victim) == "Terminating:Wait"
    assert ec2_state(sim, victim) == "running", "the instance runs while the hook holds it"
    # The group does not count it: its replacement is launched meanwhile (Terminate and launch, the default).
    tick_until(sim, lambda: len(in_service(sim)) == 3)
    activities = valid(autoscaling, "DescribeScalingActivities", autoscaling.describe_scaling_activities(
        AutoScalingGroupName=asg(sim)))["Activities"]
    [termination] = [a for a in activities if a["Description"] == f"Terminating EC2 instance: {victim}"]
    assert termination["StatusCode"] == "MidLifecycleAction"

    autoscaling.complete_lifecycle_action(LifecycleHookName="drain", AutoScalingGroupName=asg(sim),
                                          InstanceId=victim, LifecycleActionResult="CONTINUE")
    assert lifecycle_state(sim, victim) == "Terminating:Proceed"
    assert ec2_state(sim, victim) == "shutting-down"
    tick_until(sim, lambda: ec2_state(sim, victim) == "terminated")
    assert lifecycle_state(sim, victim) is None, "gone from the group once terminated"
    [termination] = [a for a in autoscaling.describe_scaling_activities(AutoScalingGroupName=asg(sim))["Activities"]
                     if a["Description"] == f"Terminating EC2 instance: {victim}"]
    assert termination["StatusCode"] == "Successful"


def test_completing_an_action_that_is_not_there_is_a_validation_error(sim):
    put_hook(sim, HeartbeatTimeout=300)
    with pytest.raises(ClientError) as excinfo:
        sim.client("autoscaling").complete_lifecycle_action(
            LifecycleHookName="drain", AutoScalingGroupName=asg(sim), InstanceId=in_service(sim)[0],
            LifecycleActionResult="CONTINUE")
    code, message = error_of(excinfo)
    assert code == "ValidationError" and message.startswith("No active Lifecycle Action found with instance ID")


def test_an_action_is_completed_by_its_token(sim):
    put_hook(sim, HeartbeatTimeout=300)
    victim = in_service(sim)[0]
    sim.client("autoscaling").terminate_instance_in_auto_scaling_group(InstanceId=victim,
                                                                       ShouldDecrementDesiredCapacity=True)
    token = moto_state(sim, victim).sandbox_lifecycle_actions[0].token
    sim.client("autoscaling").complete_lifecycle_action(LifecycleHookName="drain", AutoScalingGroupName=asg(sim),
                                                        LifecycleActionToken=token, LifecycleActionResult="ABANDON")
    assert lifecycle_state(sim, victim) == "Terminating:Proceed", "ABANDON terminates a terminating instance too"


def test_a_scale_in_waits_for_the_hook_too(sim):
    put_hook(sim, HeartbeatTimeout=300)
    sim.client("autoscaling").set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=2)
    sim.tick()
    states = [i["LifecycleState"] for i in describe_group(sim)["Instances"]]
    assert sorted(states) == ["InService", "InService", "Terminating:Wait"]


def test_without_a_heartbeat_the_default_result_applies_when_the_heartbeat_timeout_passes(sim):
    put_hook(sim, HeartbeatTimeout=30, DefaultResult="CONTINUE")
    victim = in_service(sim)[0]
    sim.client("autoscaling").terminate_instance_in_auto_scaling_group(InstanceId=victim,
                                                                       ShouldDecrementDesiredCapacity=True)
    state = moto_state(sim, victim)
    started = state.sandbox_lifecycle_actions[0].started
    group = state.auto_scaling_group
    with sim.lock:
        lifecycle.advance_lifecycle_actions(group, started + 29)
    assert lifecycle_state(sim, victim) == "Terminating:Wait"
    with sim.lock:
        lifecycle.advance_lifecycle_actions(group, started + 30)
    assert lifecycle_state(sim, victim) == "Terminating:Proceed"


def test_heartbeats_extend_the_wait_up_to_the_global_timeout(sim):
    put_hook(sim, HeartbeatTimeout=30)
    victim = in_service(sim)[0]
    autoscaling = sim.client("autoscaling")
    autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=victim, ShouldDecrementDesiredCapacity=True)
    autoscaling.record_lifecycle_action_heartbeat(LifecycleHookName="drain", AutoScalingGroupName=asg(sim),
                                                  InstanceId=victim)  # through the API once
    state = moto_state(sim, victim)
    started = state.sandbox_lifecycle_actions[0].started
    group = state.auto_scaling_group
    backend = group.autoscaling_backend
    with sim.lock:
        # A heartbeat 20 s in: 30 s more from then, so still waiting at 45 s, gone at 50 s.
        lifecycle.record_lifecycle_action_heartbeat(backend, asg(sim), "drain", instance_id=victim, now=started + 20)
        lifecycle.advance_lifecycle_actions(group, started + 45)
        assert state.lifecycle_state == "Terminating:Wait"
        # Heartbeats every 25 s keep it, but not past GlobalTimeout (100 x 30 s).
        for beat in range(45, 3000, 25):
            lifecycle.record_lifecycle_action_heartbeat(backend, asg(sim), "drain", instance_id=victim,
                                                        now=started + beat)
            lifecycle.advance_lifecycle_actions(group, started + beat + 1)
            if beat + 1 < 3000:
                assert state.lifecycle_state == "Terminating:Wait", beat
        lifecycle.advance_lifecycle_actions(group, started + 3000)
        assert state.lifecycle_state == "Terminating:Proceed"


def test_continue_waits_for_the_other_hooks_and_abandon_ends_them(sim):
    put_hook(sim, name="drain", HeartbeatTimeout=300)
    put_hook(sim, name="logs", HeartbeatTimeout=300)
    autoscaling = sim.client("autoscaling")
    first, second = in_service(sim)[:2]
    for victim in (first, second):
        autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=victim, ShouldDecrementDesiredCapacity=True)
    autoscaling.complete_lifecycle_action(LifecycleHookName="drain", AutoScalingGroupName=asg(sim),
                                          InstanceId=first, LifecycleActionResult="CONTINUE")
    assert lifecycle_state(sim, first) == "Terminating:Wait", "'logs' is still open"
    autoscaling.complete_lifecycle_action(LifecycleHookName="logs", AutoScalingGroupName=asg(sim),
                                          InstanceId=first, LifecycleActionResult="CONTINUE")
    assert lifecycle_state(sim, first) == "Terminating:Proceed"
    autoscaling.complete_lifecycle_action(LifecycleHookName="drain", AutoScalingGroupName=asg(sim),
                                          InstanceId=second, LifecycleActionResult="ABANDON")
    assert lifecycle_state(sim, second) == "Terminating:Proceed", "ABANDON stops the other hooks' actions"


def test_an_instance_terminated_through_ec2_is_not_held(sim):
    put_hook(sim, HeartbeatTimeout=300)
    victim = in_service(sim)[0]
    sim.client("ec2").terminate_instances(InstanceIds=[victim])
    assert lifecycle_state(sim, victim) == "Terminating"
    tick_until(sim, lambda: ec2_state(sim, victim) == "terminated")


# ------------------------------------------------------------------------------------------ instance lifecycle policy

RETAIN = {"RetentionTriggers": {"TerminateHookAbandon": "retain"}}


def set_policy(sim, policy):
    sim.client("autoscaling").update_auto_scaling_group(AutoScalingGroupName=asg(sim), InstanceLifecyclePolicy=policy)


def live(sim):
    return [i["InstanceId"] for i in describe_group(sim)["Instances"] if i["LifecycleState"] in ("Pending", "InService")]


def termination_activity(sim, instance_id):
    autoscaling = sim.client("autoscaling")
    activities = valid(autoscaling, "DescribeScalingActivities", autoscaling.describe_scaling_activities(
        AutoScalingGroupName=asg(sim)))["Activities"]
    return [a for a in activities if a["Description"] == f"Terminating EC2 instance: {instance_id}"]


def test_the_group_keeps_and_reports_its_instance_lifecycle_policy(sim):
    assert "InstanceLifecyclePolicy" not in describe_group(sim), "none was given"
    set_policy(sim, RETAIN)
    assert describe_group(sim)["InstanceLifecyclePolicy"] == RETAIN  # valid() checked it against AutoScalingGroup
    sim.client("autoscaling").update_auto_scaling_group(AutoScalingGroupName=asg(sim), MaxSize=11)
    assert describe_group(sim)["InstanceLifecyclePolicy"] == RETAIN, "an update without it keeps it"
    with pytest.raises(ClientError) as excinfo:
        set_policy(sim, {"RetentionTriggers": {"TerminateHookAbandon": "keep"}})
    code, message = error_of(excinfo)
    assert code == "ValidationError" and "TerminateHookAbandon" in message
    assert describe_group(sim)["InstanceLifecyclePolicy"] == RETAIN


def test_create_auto_scaling_group_takes_the_policy(sim):
    autoscaling = sim.client("autoscaling")
    seeded = describe_group(sim)
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="retaining", MinSize=0, MaxSize=2, DesiredCapacity=0,
        LaunchTemplate={"LaunchTemplateId": seeded["LaunchTemplate"]["LaunchTemplateId"], "Version": "$Latest"},
        VPCZoneIdentifier=seeded["VPCZoneIdentifier"], InstanceLifecyclePolicy=RETAIN)
    [group] = valid(autoscaling, "DescribeAutoScalingGroups", autoscaling.describe_auto_scaling_groups(
        AutoScalingGroupNames=["retaining"]))["AutoScalingGroups"]
    assert group["InstanceLifecyclePolicy"] == RETAIN


def test_an_abandoned_termination_is_retained_running_and_replaced(sim):
    put_hook(sim, HeartbeatTimeout=300, DefaultResult="CONTINUE")
    set_policy(sim, RETAIN)
    autoscaling = sim.client("autoscaling")
    victim = in_service(sim)[0]
    autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=victim, ShouldDecrementDesiredCapacity=False)
    assert lifecycle_state(sim, victim) == "Terminating:Wait"
    autoscaling.complete_lifecycle_action(LifecycleHookName="drain", AutoScalingGroupName=asg(sim),
                                          InstanceId=victim, LifecycleActionResult="ABANDON")
    assert lifecycle_state(sim, victim) == "Terminating:Retained", "still a member of the group, retained"
    # "Auto Scaling launches a replacement instance to maintain the desired capacity": 3 + the retained one.
    tick_until(sim, lambda: len(in_service(sim)) == 3)
    for dummy in range(5):
        sim.tick()
    group = describe_group(sim)
    assert group["DesiredCapacity"] == 3 and len(group["Instances"]) == 4
    assert lifecycle_state(sim, victim) == "Terminating:Retained"
    assert ec2_state(sim, victim) == "running", "it keeps running (and costing) until someone terminates it"
    [activity] = termination_activity(sim, victim)
    assert activity["StatusCode"] == "Cancelled"


def test_with_a_decrement_a_retained_instance_is_not_replaced(sim):
    victim = retained_instance(sim, decrement=True)
    for dummy in range(5):
        sim.tick()
    assert describe_group(sim)["DesiredCapacity"] == 2 and len(live(sim)) == 2
    assert lifecycle_state(sim, victim) == "Terminating:Retained"


@pytest.mark.parametrize("default_result,after", [("ABANDON", "Terminating:Retained"),
                                                  ("CONTINUE", "Terminating:Proceed")])
def test_a_heartbeat_timeout_retains_only_with_default_result_abandon(sim, default_result, after):
    put_hook(sim, HeartbeatTimeout=30, DefaultResult=default_result)
    set_policy(sim, RETAIN)
    victim = in_service(sim)[0]
    sim.client("autoscaling").terminate_instance_in_auto_scaling_group(InstanceId=victim,
                                                                       ShouldDecrementDesiredCapacity=True)
    state = moto_state(sim, victim)
    started = state.sandbox_lifecycle_actions[0].started
    with sim.lock:
        lifecycle.advance_lifecycle_actions(state.auto_scaling_group, started + 30)
    assert lifecycle_state(sim, victim) == after


def test_continue_is_not_retained_and_terminate_is_the_default_behaviour(sim):
    put_hook(sim, HeartbeatTimeout=300)
    autoscaling = sim.client("autoscaling")
    first, second = in_service(sim)[:2]
    set_policy(sim, RETAIN)
    autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=first, ShouldDecrementDesiredCapacity=True)
    autoscaling.complete_lifecycle_action(LifecycleHookName="drain", AutoScalingGroupName=asg(sim),
                                          InstanceId=first, LifecycleActionResult="CONTINUE")
    assert lifecycle_state(sim, first) == "Terminating:Proceed"
    set_policy(sim, {"RetentionTriggers": {"TerminateHookAbandon": "terminate"}})
    autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=second, ShouldDecrementDesiredCapacity=True)
    autoscaling.complete_lifecycle_action(LifecycleHookName="drain", AutoScalingGroupName=asg(sim),
                                          InstanceId=second, LifecycleActionResult="ABANDON")
    assert lifecycle_state(sim, second) == "Terminating:Proceed"


def test_without_termination_hooks_the_policy_has_no_effect(sim):
    set_policy(sim, RETAIN)
    victim = in_service(sim)[0]
    sim.client("autoscaling").terminate_instance_in_auto_scaling_group(InstanceId=victim,
                                                                       ShouldDecrementDesiredCapacity=True)
    tick_until(sim, lambda: ec2_state(sim, victim) == "terminated")
    assert lifecycle_state(sim, victim) is None


def retained_instance(sim, decrement=False):
    """An instance of a retaining group (a termination hook, TerminateHookAbandon retain) whose termination
    (ShouldDecrementDesiredCapacity ``decrement``) was abandoned, checked to be in Terminating:Retained."""
    put_hook(sim, HeartbeatTimeout=300)
    set_policy(sim, RETAIN)
    autoscaling = sim.client("autoscaling")
    victim = in_service(sim)[0]
    autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=victim, ShouldDecrementDesiredCapacity=decrement)
    autoscaling.complete_lifecycle_action(LifecycleHookName="drain", AutoScalingGroupName=asg(sim),
                                          InstanceId=victim, LifecycleActionResult="ABANDON")
    assert lifecycle_state(sim, victim) == "Terminating:Retained"
    return victim


def test_a_retained_instance_terminated_through_ec2_leaves_the_group(sim):
    victim = retained_instance(sim)
    sim.client("ec2").terminate_instances(InstanceIds=[victim])
    tick_until(sim, lambda: ec2_state(sim, victim) == "terminated")
    assert lifecycle_state(sim, victim) is None


def test_terminate_instance_in_auto_scaling_group_terminates_a_retained_instance_through_its_hooks(sim):
    victim = retained_instance(sim)
    autoscaling = sim.client("autoscaling")
    with pytest.raises(ClientError) as excinfo:
        autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=victim, ShouldDecrementDesiredCapacity=True)
    assert error_of(excinfo)[0] == "ValidationError"
    autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=victim, ShouldDecrementDesiredCapacity=False)
    assert lifecycle_state(sim, victim) == "Terminating:Wait", "a new termination, through the hook again"
    autoscaling.complete_lifecycle_action(LifecycleHookName="drain", AutoScalingGroupName=asg(sim),
                                          InstanceId=victim, LifecycleActionResult="CONTINUE")
    tick_until(sim, lambda: ec2_state(sim, victim) == "terminated")
    assert lifecycle_state(sim, victim) is None
    assert [a["StatusCode"] for a in termination_activity(sim, victim)] == ["Successful", "Cancelled"]


# ------------------------------------------------------------------------------------------ eventual consistency

def test_a_just_launched_instance_is_unknown_to_describe_instances_for_a_while():
    sim = started_sim([{"type": "instance_not_visible", "seconds": HIDDEN_SECONDS}])
    try:
        autoscaling, ec2 = sim.client("autoscaling"), sim.client("ec2")
        seeded = in_service(sim)
        autoscaling.set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=4)
        sim.tick()
        [new] = [i["InstanceId"] for i in describe_group(sim)["Instances"] if i["InstanceId"] not in seeded]
        with pytest.raises(ClientError) as excinfo:
            ec2.describe_instances(InstanceIds=[seeded[0], new])
        assert error_of(excinfo) == ("InvalidInstanceID.NotFound", f"The instance ID '{new}' does not exist")
        listed = [i["InstanceId"] for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]]
        assert sorted(listed) == sorted(seeded), "a listing leaves it out"
        time.sleep(HIDDEN_SECONDS)
        assert ec2_state(sim, new) in ("pending", "running")
        assert sim.faults.fired_counts()[0]["fired"] == 1, "asked once per launch, seeding excluded"
    finally:
        sim.stop()
