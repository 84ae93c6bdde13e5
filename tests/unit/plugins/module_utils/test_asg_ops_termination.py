"""Unit tests of asg_ops' termination helpers: instances EC2 does not know (issue 10 item 11). Fakes follow AWS's
documented answers: InvalidInstanceID.NotFound naming the unknown ids, TerminateInstanceInAutoScalingGroup's
ValidationError for an instance in no group."""

from __future__ import annotations

import types

import pytest
from botocore.exceptions import ClientError

from ansible_collections.eksops.nodegroup.plugins.module_utils import asg_ops
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError

OLD, NEW, OTHER = "i-0000000000000001", "i-0000000000000002", "i-0000000000000003"


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
            state = state(self.clock.now) if callable(state) else state
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
            state = state(self.clock.now) if callable(state) else state
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
    found, unknown = asg_ops.describe_known_instances(ec2, [OLD, NEW, OTHER])
    assert sorted(found) == [OLD, OTHER] and unknown == [NEW]
    assert ec2.calls == [[OLD, NEW, OTHER], [OLD, OTHER]], "one retry without the id the error named"


def test_item11_describe_known_instances_asks_one_by_one_when_the_error_names_no_id():
    ec2 = Ec2({OLD: "running"}, unknown=[NEW], name_them=False)
    found, unknown = asg_ops.describe_known_instances(ec2, [OLD, NEW])
    assert list(found) == [OLD] and unknown == [NEW]


def test_item11_other_errors_are_raised():
    class Denied(Ec2):
        def paginate(self, InstanceIds):
            raise ClientError({"Error": {"Code": "UnauthorizedOperation", "Message": "no"}}, "DescribeInstances")

    with pytest.raises(UpgradeError) as excinfo:
        asg_ops.describe_known_instances(Denied({}), [OLD])
    assert excinfo.value.code == "AccessDenied"


def group_ref():
    return types.SimpleNamespace(asg_name="workers", nodegroup_name="workers", node_selector=None)


def test_item11_the_group_watch_takes_a_just_launched_instance_as_not_yet_visible():
    """Issue 10 item 11: DescribeInstances right after a launch can answer InvalidInstanceID.NotFound; the group
    watch must not fail on it, and describes the instance once EC2 knows it."""
    autoscaling = Autoscaling({OLD: "InService", NEW: "Pending"})
    ec2 = Ec2({OLD: "running", NEW: "pending"}, unknown=[NEW])
    watch = asg_ops.GroupWatch(autoscaling, ec2, None, group_ref())
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
        assert asg_ops.terminate_or_gone(autoscaling, Ec2({OLD: state}), "workers", OLD, False) is False
    assert asg_ops.terminate_or_gone(autoscaling, Ec2({}, unknown=[OLD]), "workers", OLD, False) is False
    # Still in the group, being terminated by someone else: gone already too.
    leaving = Autoscaling({OLD: "Terminating:Wait"}, terminate_error=message)
    assert asg_ops.terminate_or_gone(leaving, Ec2({OLD: "running"}), "workers", OLD, False) is False


def test_item11_a_refusal_for_an_instance_still_in_service_is_raised():
    refusal = "Currently, desiredSize equals minSize (3). Terminating instance without replacement will violate " \
        "group's min size constraint. %s"
    autoscaling = Autoscaling({OLD: "InService"}, terminate_error=refusal)
    with pytest.raises(UpgradeError) as excinfo:
        asg_ops.terminate_or_gone(autoscaling, Ec2({OLD: "running"}), "workers", OLD, True)
    assert "desiredSize equals minSize" in excinfo.value.msg
    # Out of the group but running (detached): not gone, the error stands.
    detached = Autoscaling({OLD: None}, terminate_error="Instance Id not found - %s")
    with pytest.raises(UpgradeError):
        asg_ops.terminate_or_gone(detached, Ec2({OLD: "running"}), "workers", OLD, False)


def test_item11_a_termination_that_works_is_true():
    autoscaling = Autoscaling({OLD: "InService"})
    assert asg_ops.terminate_or_gone(autoscaling, Ec2({OLD: "running"}), "workers", OLD, False) is True
    assert autoscaling.calls == ["TerminateInstanceInAutoScalingGroup"]
