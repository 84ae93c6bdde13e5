# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of nodegroup/termination.py: instances EC2 does not know (issue 10 item 11) and the wait through
termination lifecycle hooks (issue 10 item 14). Fakes follow AWS's documented answers: InvalidInstanceID.NotFound
naming the unknown ids, TerminateInstanceInAutoScalingGroup's ValidationError for an instance in no group, and
Terminating:Wait while a hook holds an instance (its EC2 instance still running)."""

from __future__ import annotations

import types

import pytest
from botocore.exceptions import ClientError

from ansible_collections.eksops.nodegroup.plugins.module_utils.members import group_watch
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import termination
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError

from ..fakes import FakeClock

OLD, NEW, OTHER = "i-0000000000000001", "i-0000000000000002", "i-0000000000000003"
HOOK = {"LifecycleHookName": "drain", "AutoScalingGroupName": "workers",
        "LifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING", "HeartbeatTimeout": 60,
        "GlobalTimeout": 6000, "DefaultResult": "CONTINUE"}


def not_found(ids, name_them=True):
    if not name_them:
        message = "Not found"
    elif len(ids) == 1:
        message = "The instance ID '%s' does not exist" % ids[0]
    else:
        message = "The instance IDs '%s' do not exist" % ", ".join(ids)
    return ClientError({"Error": {"Code": "InvalidInstanceID.NotFound", "Message": message}}, "DescribeInstances")


class Ec2:
    """DescribeInstances over ``states`` ({id: state name or callable(now) -> name}); ids in ``unknown`` (or
    absent) fail the whole call with InvalidInstanceID.NotFound, as EC2 does."""

    def __init__(self, states, unknown=(), clock=None, name_them=True):
        self.states = dict(states)
        self.unknown = set(unknown)
        self.clock = clock
        self.name_them = name_them
        self.calls = []

    def get_paginator(self, _operation):
        return self

    def paginate(self, InstanceIds):
        self.calls.append(list(InstanceIds))
        missing = [i for i in InstanceIds if i in self.unknown or i not in self.states]
        if missing:
            raise not_found(missing, self.name_them)
        instances = []
        for instance_id in InstanceIds:
            state = self.states[instance_id]
            state = state(self.clock.now()) if callable(state) else state
            instances.append({"InstanceId": instance_id, "State": {"Name": state}})
        return [{"Reservations": [{"Instances": instances}]}]


class Autoscaling:
    """DescribeAutoScalingGroups (lifecycle states: {id: state or callable(now)}), DescribeLifecycleHooks and a
    TerminateInstanceInAutoScalingGroup that may answer an error."""

    def __init__(self, lifecycle, hooks=(), clock=None, terminate_error=None):
        self.lifecycle = dict(lifecycle)
        self.hooks = list(hooks)
        self.clock = clock
        self.terminate_error = terminate_error
        self.calls = []

    def describe_auto_scaling_groups(self, AutoScalingGroupNames):
        self.calls.append("DescribeAutoScalingGroups")
        instances = []
        for instance_id, state in self.lifecycle.items():
            state = state(self.clock.now()) if callable(state) else state
            if state is not None:
                instances.append({"InstanceId": instance_id, "LifecycleState": state, "AvailabilityZone": "us-west-2a"})
        return {"AutoScalingGroups": [{"AutoScalingGroupName": AutoScalingGroupNames[0], "Instances": instances}]}

    def describe_lifecycle_hooks(self, AutoScalingGroupName):
        self.calls.append("DescribeLifecycleHooks")
        return {"LifecycleHooks": self.hooks}

    def terminate_instance_in_auto_scaling_group(self, InstanceId, ShouldDecrementDesiredCapacity):
        self.calls.append("TerminateInstanceInAutoScalingGroup")
        if self.terminate_error:
            raise ClientError({"Error": {"Code": "ValidationError", "Message": self.terminate_error % InstanceId}},
                              "TerminateInstanceInAutoScalingGroup")


# --- item 11: instances EC2 does not know ---------------------------------------------------------------------

def test_item11_describe_known_instances_drops_the_ids_ec2_names_and_describes_the_rest():
    ec2 = Ec2({OLD: "running", OTHER: "running"}, unknown=[NEW])
    found, unknown = termination.describe_known_instances(ec2, [OLD, NEW, OTHER])
    assert sorted(found) == [OLD, OTHER] and unknown == [NEW]
    assert ec2.calls == [[OLD, NEW, OTHER], [OLD, OTHER]], "one retry without the id the error named"


def test_item11_describe_known_instances_asks_one_by_one_when_the_error_names_no_id():
    ec2 = Ec2({OLD: "running"}, unknown=[NEW], name_them=False)
    found, unknown = termination.describe_known_instances(ec2, [OLD, NEW])
    assert list(found) == [OLD] and unknown == [NEW]


def test_item11_other_errors_are_raised():
    class Denied(Ec2):
        def paginate(self, InstanceIds):
            raise ClientError({"Error": {"Code": "UnauthorizedOperation", "Message": "no"}}, "DescribeInstances")

    with pytest.raises(UpgradeError) as excinfo:
        termination.describe_known_instances(Denied({}), [OLD])
    assert excinfo.value.code == "AccessDenied"


def group_ref():
    return types.SimpleNamespace(asg_name="workers", nodegroup_name="workers", node_selector=None)


def test_item11_the_group_watch_takes_a_just_launched_instance_as_not_yet_visible():
    """Issue 10 item 11: DescribeInstances right after a launch can answer InvalidInstanceID.NotFound; the group
    watch must not fail on it, and describes the instance once EC2 knows it."""
    autoscaling = Autoscaling({OLD: "InService", NEW: "Pending"})
    ec2 = Ec2({OLD: "running", NEW: "pending"}, unknown=[NEW])
    watch = group_watch.GroupWatch(autoscaling, ec2, None, group_ref())
    watch.poll()
    snapshot = watch.snapshot([])
    assert [i["instance_id"] for i in snapshot.instances] == [OLD, NEW]
    assert [i["image_id"] for i in snapshot.instances] == [None, None]
    ec2.unknown.clear()
    watch.poll()
    assert ec2.calls[-1] == [NEW], "asked again, and only for the instance not described yet"
    assert NEW in watch._ec2_cache  # pylint: disable=protected-access


def test_item11_an_instance_another_actor_terminated_meanwhile_is_gone_already():
    message = "Instance Id not found - No managed instance found for instance ID: %s"
    autoscaling = Autoscaling({OLD: None}, terminate_error=message)
    for state in ("terminated", "shutting-down"):
        assert termination.terminate_or_gone(autoscaling, Ec2({OLD: state}), "workers", OLD, False) is False
    assert termination.terminate_or_gone(autoscaling, Ec2({}, unknown=[OLD]), "workers", OLD, False) is False
    # Still in the group, being terminated by someone else: gone already too.
    leaving = Autoscaling({OLD: "Terminating:Wait"}, terminate_error=message)
    assert termination.terminate_or_gone(leaving, Ec2({OLD: "running"}), "workers", OLD, False) is False


def test_item11_a_refusal_for_an_instance_still_in_service_is_raised():
    refusal = "Currently, desiredSize equals minSize (3). Terminating instance without replacement will violate " \
        "group's min size constraint. %s"
    autoscaling = Autoscaling({OLD: "InService"}, terminate_error=refusal)
    with pytest.raises(UpgradeError) as excinfo:
        termination.terminate_or_gone(autoscaling, Ec2({OLD: "running"}), "workers", OLD, True)
    assert "desiredSize equals minSize" in excinfo.value.msg
    # Out of the group but running (detached): not gone, the error stands.
    detached = Autoscaling({OLD: None}, terminate_error="Instance Id not found - %s")
    with pytest.raises(UpgradeError):
        termination.terminate_or_gone(detached, Ec2({OLD: "running"}), "workers", OLD, False)


def test_item11_a_termination_that_works_is_true():
    autoscaling = Autoscaling({OLD: "InService"})
    assert termination.terminate_or_gone(autoscaling, Ec2({OLD: "running"}), "workers", OLD, False) is True
    assert autoscaling.calls == ["TerminateInstanceInAutoScalingGroup"]


# --- item 14: lifecycle hooks ---------------------------------------------------------------------------------

def test_item14_termination_hooks_are_the_groups_terminating_hooks_with_aws_defaults():
    launch = dict(HOOK, LifecycleHookName="warm", LifecycleTransition="autoscaling:EC2_INSTANCE_LAUNCHING")
    bare = {"LifecycleHookName": "audit", "LifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING"}
    hooks = termination.termination_hooks(Autoscaling({}, hooks=[HOOK, launch, bare]), "workers")
    assert hooks == [
        dict(name="audit", heartbeat_timeout=3600, global_timeout=None, default_result="ABANDON"),
        dict(name="drain", heartbeat_timeout=60, global_timeout=6000, default_result="CONTINUE")]
    assert termination.hook_hold_seconds(hooks) == 3660
    assert termination.hook_hold_seconds([]) == 0


def held_world(clock, released_at, terminated_at):
    """OLD in Terminating:Wait until ``released_at`` (its hook's owner completes the action), then
    Terminating:Proceed and shutting-down until ``terminated_at``, when it leaves the group."""
    autoscaling = Autoscaling({OLD: lambda now: "Terminating:Wait" if now < released_at else (
        "Terminating:Proceed" if now < terminated_at else None)}, hooks=[HOOK], clock=clock)
    ec2 = Ec2({OLD: lambda now: "running" if now < released_at else (
        "shutting-down" if now < terminated_at else "terminated")}, clock=clock)
    return autoscaling, ec2


def test_item14_an_instance_held_by_a_hook_is_waited_for_beyond_wait_timeout():
    """Issue 10 item 14: an instance held in Terminating:Wait longer than wait_timeout is waited for, up to the
    hook's heartbeat timeout; the wait says which hook it waited for."""
    clock = FakeClock(start=0)
    autoscaling, ec2 = held_world(clock, released_at=40, terminated_at=42)
    hooks = termination.termination_hooks(autoscaling, "workers")
    waiter = termination.TerminationWait(ec2, autoscaling, "workers", hooks, clock=clock)
    assert waiter.run([OLD], timeout=10) == []
    assert 42 <= clock.now() < 48
    assert waiter.extension == 60, "first seen waiting at 0: 0 + 60 (HeartbeatTimeout) + 10 - 10"
    [wait] = waiter.hook_waits()
    assert wait["instance_id"] == OLD and wait["lifecycle_hooks"] == ["drain"] and not wait["still_held"]
    assert 40 <= wait["held_seconds"] < 46
    assert "CompleteLifecycleAction" not in autoscaling.calls, "the hook's action is its owner's to complete"


def test_item14_without_the_hooks_the_same_instance_times_out_at_wait_timeout():
    clock = FakeClock(start=0)
    autoscaling, ec2 = held_world(clock, released_at=40, terminated_at=42)
    waiter = termination.TerminationWait(ec2, autoscaling, "workers", [], clock=clock)
    assert waiter.run([OLD], timeout=10) == [OLD]
    assert clock.now() == 10 and "DescribeAutoScalingGroups" not in autoscaling.calls


def test_item14_a_hook_held_past_its_heartbeat_timeout_is_a_timeout_naming_the_hook():
    clock = FakeClock(start=0)
    autoscaling, ec2 = held_world(clock, released_at=10 ** 6, terminated_at=10 ** 6)
    hooks = termination.termination_hooks(autoscaling, "workers")
    waiter = termination.TerminationWait(ec2, autoscaling, "workers", hooks, clock=clock)
    assert waiter.run([OLD], timeout=10) == [OLD]
    assert clock.now() == 70
    err = waiter.timeout_error([OLD], "workers")
    assert err.code == "WaitTimeout"
    assert "within 70 s (wait_timeout 10 s plus 60 s for termination lifecycle hook(s) 'drain' " \
        "(HeartbeatTimeout 60 s, DefaultResult CONTINUE))" in err.msg
    assert "%s is still in Terminating:Wait after 70 s, held by lifecycle hook(s) 'drain'" % OLD in err.msg
    assert "complete-lifecycle-action --auto-scaling-group-name workers" in err.msg
    assert err.details["lifecycle_hook_waits"][0]["still_held"] is True


def test_item14_while_every_instance_waits_for_a_hook_the_group_is_polled_gently():
    clock = FakeClock(start=0)
    autoscaling, ec2 = held_world(clock, released_at=10 ** 6, terminated_at=10 ** 6)
    waiter = termination.TerminationWait(ec2, autoscaling, "workers", termination.termination_hooks(autoscaling, "workers"),
                                         clock=clock)
    waiter.run([OLD], timeout=10)
    # 70 s at one look every ASG_POLL_SECONDS (5 s) once held: about 15 of each describe call, not 35+.
    assert len(ec2.calls) <= 16 and autoscaling.calls.count("DescribeAutoScalingGroups") <= 16


def test_item14_an_instance_not_held_times_out_with_its_states():
    clock = FakeClock(start=0)
    autoscaling = Autoscaling({OLD: "Terminating"}, hooks=[HOOK], clock=clock)
    waiter = termination.TerminationWait(Ec2({OLD: "shutting-down"}, clock=clock), autoscaling, "workers",
                                         termination.termination_hooks(autoscaling, "workers"), clock=clock)
    assert waiter.run([OLD], timeout=10) == [OLD]
    assert clock.now() == 10 and waiter.extension == 0
    err = waiter.timeout_error([OLD], "workers")
    assert err.msg.endswith("within 10 s (wait_timeout 10 s): %s is shutting-down in EC2, Terminating in the group"
                            % OLD)
    assert waiter.hook_waits() == []


# --- instance lifecycle policies: Terminating:Retained ---------------------------------------------------------
# Auto Scaling user guide, "Manage retained instances": with TerminateHookAbandon=retain an abandoned termination
# goes Terminating:Wait -> Terminating:Proceed -> Terminating:Retained; the EC2 instance keeps running until someone
# terminates it, and the group no longer counts it.

ABANDONING_HOOK = dict(HOOK, DefaultResult="ABANDON")


def retaining_world(clock, retained_at, other_terminated_at=None):
    """OLD in Terminating:Wait until ``retained_at``, then Terminating:Retained for ever (running in EC2); NEW, when
    ``other_terminated_at`` is given, terminates normally then."""
    lifecycle = {OLD: lambda now: "Terminating:Wait" if now < retained_at else "Terminating:Retained"}
    states = {OLD: "running"}
    if other_terminated_at is not None:
        lifecycle[NEW] = lambda now: "Terminating:Proceed" if now < other_terminated_at else None
        states[NEW] = lambda now: "shutting-down" if now < other_terminated_at else "terminated"
    return Autoscaling(lifecycle, hooks=[ABANDONING_HOOK], clock=clock), Ec2(states, clock=clock)


def test_a_retained_instance_ends_the_wait_and_is_reported():
    clock = FakeClock(start=0)
    autoscaling, ec2 = retaining_world(clock, retained_at=20)
    waiter = termination.TerminationWait(ec2, autoscaling, "workers", termination.termination_hooks(autoscaling, "workers"),
                                         clock=clock)
    assert waiter.run([OLD], timeout=600) == [], "nothing left to wait for: it will not terminate by itself"
    assert 20 <= clock.now() <= 20 + termination.ASG_POLL_SECONDS + 1, "seen at the next look at the group"
    assert waiter.retained_instances() == [OLD]
    [wait] = waiter.hook_waits()
    assert wait["instance_id"] == OLD and wait["still_held"] is False
    assert "CompleteLifecycleAction" not in autoscaling.calls


def test_the_others_are_still_waited_for_until_terminated():
    clock = FakeClock(start=0)
    autoscaling, ec2 = retaining_world(clock, retained_at=5, other_terminated_at=40)
    waiter = termination.TerminationWait(ec2, autoscaling, "workers", termination.termination_hooks(autoscaling, "workers"),
                                         clock=clock)
    assert waiter.run([OLD, NEW], timeout=600) == []
    assert 40 <= clock.now() < 46
    assert waiter.retained_instances() == [OLD]


def test_an_instance_retained_before_the_wait_is_not_waited_for_even_without_hooks():
    """A rerun naming an instance retained by an earlier run: the caller's description of the group says so, and
    the group may have no termination hook left to make the wait look at it."""
    clock = FakeClock(start=0)
    autoscaling, ec2 = retaining_world(clock, retained_at=0)
    waiter = termination.TerminationWait(ec2, autoscaling, "workers", [], clock=clock)
    waiter.note_retained(autoscaling.describe_auto_scaling_groups(["workers"])["AutoScalingGroups"][0], [OLD, NEW])
    assert waiter.run([OLD], timeout=600) == []
    assert clock.now() == 0 and ec2.calls == []
    assert waiter.retained_instances() == [OLD]


def test_a_timeout_beside_a_retained_instance_names_it():
    clock = FakeClock(start=0)
    autoscaling, ec2 = retaining_world(clock, retained_at=0)
    autoscaling.lifecycle[NEW] = "Terminating:Proceed"
    ec2.states[NEW] = "shutting-down"
    waiter = termination.TerminationWait(ec2, autoscaling, "workers", termination.termination_hooks(autoscaling, "workers"),
                                         clock=clock)
    assert waiter.run([OLD, NEW], timeout=10) == [NEW]
    err = waiter.timeout_error([NEW], "workers")
    assert err.details["retained_instances"] == [OLD]


def test_retained_warnings_say_what_happened_and_how_to_end_it():
    drained, nodeless, other = OLD, NEW, OTHER
    warnings = termination.retained_warnings([other, drained, nodeless], "workers", terminated=[drained, nodeless],
                                             never_joined=[nodeless])
    assert len(warnings) == 3, "one per instance"
    by_instance = dict((i, next(w for w in warnings if w.startswith("Instance %s " % i))) for i in (OLD, NEW, OTHER))
    assert "was drained" in by_instance[drained]
    assert "had no Kubernetes node" in by_instance[nodeless] and "drained" not in by_instance[nodeless]
    assert "was already leaving the group" in by_instance[other] and "drained" not in by_instance[other]
    for instance_id, warning in by_instance.items():
        assert "Terminating:Retained" in warning and "instance lifecycle policy" in warning
        assert "no longer counts toward the group's desired capacity" in warning
        assert "keeps running, and costing" in warning
        assert warning.endswith("aws ec2 terminate-instances --instance-ids %s" % instance_id)
