# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the ASG helpers shared by asg_surge, asg_instance_terminate and nodegroup_scale_restore."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import asg_state as asg_ops
from ansible_collections.eksops.nodegroup.plugins.module_utils.host import clock as clocks
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import kinds
from ansible_collections.eksops.nodegroup.plugins.module_utils.members import group_nodes as nodegroup_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import termination
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import instance_id_of, join_instances_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef

from ..fakes import FakeClock, FakeCoreV1, api_error


def raw_node(name, instance_id, ready="True", annotations=None, labels=None):
    """A node of a plain self-managed group (no node-group label, SPEC K1) unless ``labels`` says otherwise."""
    return {"metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name},
                         "annotations": annotations or {}},
            "spec": {"providerID": "aws:///us-west-2a/" + instance_id, "unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}}


def test_node_view_feeds_join_instances_nodes():
    nodes = [nodegroup_nodes.node_view(raw_node("n1", "i-0000000000000001")),
             nodegroup_nodes.node_view(raw_node("n2", "i-0000000000000002", ready="False"))]
    joined = join_instances_nodes([{"InstanceId": "i-0000000000000001", "AvailabilityZone": "us-west-2a"},
                                   {"InstanceId": "i-0000000000000002", "AvailabilityZone": "us-west-2a"},
                                   {"InstanceId": "i-0000000000000003", "AvailabilityZone": "us-west-2b"}], {}, nodes)
    assert [(j["node_name"], j["ready"], j["unschedulable"]) for j in joined] == [
        ("n1", True, True), ("n2", False, True), (None, False, False)]


def test_parse_utc_time():
    assert clocks.parse_utc_iso("2026-01-02T03:04:05Z") == datetime.datetime(
        2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    assert clocks.parse_utc_iso("garbage") is None and clocks.parse_utc_iso(None) is None


class FakeEc2:
    """Instances that reach 'terminated' after a number of describe calls."""

    def __init__(self, polls_until_terminated):
        self.left = dict(polls_until_terminated)
        self.calls = 0

    def get_paginator(self, _operation):
        return self

    def paginate(self, InstanceIds):
        self.calls += 1
        instances = []
        for instance_id in InstanceIds:
            self.left[instance_id] -= 1
            instances.append({"InstanceId": instance_id,
                              "State": {"Name": "terminated" if self.left[instance_id] <= 0 else "shutting-down"}})
        return [{"Reservations": [{"Instances": instances}]}]


def test_wait_terminated_polls_until_done():
    clock = FakeClock(start=0)
    ec2 = FakeEc2({"i-1": 1, "i-2": 3})
    assert termination.wait_terminated(ec2, ["i-1", "i-2"], timeout=60, poll=2, clock=clock) == []
    assert ec2.calls == 3 and clock.now() == 1 + 2


def test_wait_terminated_sees_a_quick_shutdown_quickly_and_backs_off_to_poll():
    clock = FakeClock(start=0)
    assert termination.wait_terminated(FakeEc2({"i-1": 2}), ["i-1"], timeout=60, clock=clock) == []
    assert clock.now() == termination.EC2_FIRST_POLL_SECONDS == 1.0  # never more often than once a second
    clock = FakeClock(start=0)
    slow = FakeEc2({"i-1": 1000})
    assert termination.wait_terminated(slow, ["i-1"], timeout=60, poll=2, clock=clock) == ["i-1"]
    # looks at 0, 1, 3, then every 2 s until the timeout: about 30 DescribeInstances a minute, not more
    assert clock.now() == 60 and slow.calls == 32


def test_wait_terminated_returns_the_stragglers_at_timeout():
    clock = FakeClock(start=0)
    assert termination.wait_terminated(FakeEc2({"i-1": 100}), ["i-1"], timeout=10, poll=2, clock=clock) == ["i-1"]
    assert clock.now() == 10


def test_issue26_item5_wait_terminated_raises_the_callers_error_at_timeout():
    """The surplus wait of nodegroup_scale_restore: its WaitTimeout, raised by the waiter at the deadline."""
    clock = FakeClock(start=0)
    with pytest.raises(UpgradeError) as raised:
        termination.wait_terminated(FakeEc2({"i-1": 100, "i-2": 2}), ["i-1", "i-2"], timeout=10, poll=2, clock=clock,
                                    on_timeout=lambda pending: UpgradeError("WaitTimeout", ", ".join(pending)))
    assert (raised.value.code, raised.value.msg, clock.now()) == ("WaitTimeout", "i-1", 10)


def node_store(*raw_nodes):
    """The fake API server holding ``raw_nodes``, and the fake CoreV1Api whose node LIST it answers."""
    core_v1 = FakeCoreV1(raw_nodes)
    return core_v1.store, core_v1


def group(kind, instance_ids, nodegroup="workers"):
    """A discovered node group of ``kind`` whose ASG holds ``instance_ids``."""
    return NodegroupRef("demo", nodegroup, kind, {"AutoScalingGroupName": "asg-" + nodegroup,
                                                  "Instances": [{"InstanceId": i} for i in instance_ids]})


EKSCTL = {"alpha.eksctl.io/nodegroup-name": "workers"}


def test_a_self_managed_groups_nodes_are_its_instances_nodes_by_provider_id_K2():
    """No label marks a plain self-managed group's nodes (K1): every node is listed, and the group's are those
    whose spec.providerID names one of its instances."""
    fargate = raw_node("fargate-ip-10-0-0-1", "i-3")
    fargate["spec"]["providerID"] = "aws:///us-west-2a/fargate-ip-10-0-0-1"
    store, core_v1 = node_store(raw_node("n1", "i-1"), raw_node("n2", "i-2"), raw_node("other", "i-9"), fargate)
    nodes = nodegroup_nodes.list_nodegroup_nodes(core_v1, group(kinds.SELF_MANAGED, ["i-1", "i-2", "i-3"]))
    assert sorted((n.metadata.name, instance_id_of(n)) for n in nodes) == [("n1", "i-1"), ("n2", "i-2")]
    assert [kwargs.get("label_selector") for dummy, kwargs in store.calls] == [None]


def test_a_labelling_kinds_nodes_are_listed_by_label_P2():
    """eksctl labels its nodes: the LIST is narrowed on the server; the instances still decide (K2), so a
    labelled node whose instance left the group is not the group's."""
    other = raw_node("other", "i-9", labels={"alpha.eksctl.io/nodegroup-name": "batch"})
    store, core_v1 = node_store(raw_node("n1", "i-1", labels=EKSCTL), raw_node("n2", "i-2", labels=EKSCTL),
                                raw_node("gone", "i-8", labels=EKSCTL), other)
    nodes = nodegroup_nodes.list_nodegroup_nodes(core_v1, group(kinds.SELF_MANAGED_EKSCTL, ["i-1", "i-2"]))
    assert [(n.metadata.name, instance_id_of(n)) for n in nodes] == [("n1", "i-1"), ("n2", "i-2")]
    assert [kwargs["label_selector"] for dummy, kwargs in store.calls] == ["alpha.eksctl.io/nodegroup-name=workers"]


def test_a_node_without_its_kinds_label_is_still_its_instances_node_K2():
    """A node whose bootstrap left the kind's label out (eksctl overrideBootstrapCommand) is found by its
    providerID among all nodes: it must not pass for an instance without a node."""
    store, core_v1 = node_store(raw_node("n1", "i-1", labels=EKSCTL), raw_node("plain", "i-2"),
                                raw_node("elsewhere", "i-7"))
    nodes = nodegroup_nodes.list_nodegroup_nodes(core_v1, group(kinds.SELF_MANAGED_EKSCTL, ["i-1", "i-2"]))
    assert [(n.metadata.name, instance_id_of(n)) for n in nodes] == [("n1", "i-1"), ("plain", "i-2")]
    assert [kwargs.get("label_selector") for dummy, kwargs in store.calls] == [
        "alpha.eksctl.io/nodegroup-name=workers", None]


def test_list_all_nodes_with_and_without_a_selector():
    store, core_v1 = node_store(raw_node("n1", "i-1", labels=EKSCTL), raw_node("n2", "i-2"))
    assert [n.metadata.name for n in nodegroup_nodes.list_all_nodes(core_v1)] == ["n1", "n2"]
    assert [n.metadata.name for n in nodegroup_nodes.list_all_nodes(core_v1, "alpha.eksctl.io/nodegroup-name=workers")] \
        == ["n1"]
    assert [kwargs.get("label_selector") for dummy, kwargs in store.calls] == [
        None, "alpha.eksctl.io/nodegroup-name=workers"]


@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_failed_node_list_is_retried_P3(status):
    """The fault soak's "list nodes ... failed: 500": one transient error is retried."""
    clock = FakeClock()
    store, core_v1 = node_store(raw_node("n1", "i-1"))
    store.faults["list"].append(api_error(status))
    assert [n.metadata.name for n in nodegroup_nodes.list_nodegroup_nodes(
        core_v1, group(kinds.SELF_MANAGED, ["i-1"]), clock=clock)] == ["n1"]
    assert store.kinds() == ["list", "list"] and len(clock.sleeps) == 1


@pytest.mark.parametrize("kind, named", [(kinds.SELF_MANAGED_EKSCTL, "alpha.eksctl.io/nodegroup-name=workers"),
                                         (kinds.SELF_MANAGED, "workers")])
def test_a_node_list_that_keeps_failing_says_what_it_listed(kind, named):
    store, core_v1 = node_store()
    store.faults["list"].extend(api_error(500) for dummy in range(100))
    with pytest.raises(UpgradeError) as raised:
        nodegroup_nodes.list_nodegroup_nodes(core_v1, group(kind, ["i-1"]), clock=FakeClock())
    assert "list the nodes of node group workers" in str(raised.value) and named in str(raised.value)
    assert len(store.calls) > 1


def test_c2_mark_skips_nodes_already_annotated_and_unmark_removes_only_ours():
    raw_ours = raw_node("n1", "i-1")
    raw_theirs = raw_node("n2", "i-2", annotations={nodegroup_nodes.SCALE_DOWN_DISABLED_ANNOTATION: "true"})
    core_v1 = FakeCoreV1([raw_ours, raw_theirs])
    ours, theirs = nodegroup_nodes.node_view(raw_ours), nodegroup_nodes.node_view(raw_theirs)
    assert nodegroup_nodes.mark_scale_down_disabled(core_v1, [ours, theirs], "run-1") == ["n1"]
    assert core_v1.patches == [("n1", {"metadata": {"annotations": {
        nodegroup_nodes.SCALE_DOWN_DISABLED_ANNOTATION: "true", nodegroup_nodes.SCALE_DOWN_DISABLED_BY_ANNOTATION: "run-1"}}},
        nodegroup_nodes.MERGE_PATCH)]
    core_v1.patches = []
    marked = nodegroup_nodes.node_view(raw_node("n1", "i-1", annotations={
        nodegroup_nodes.SCALE_DOWN_DISABLED_ANNOTATION: "true", nodegroup_nodes.SCALE_DOWN_DISABLED_BY_ANNOTATION: "run-1"}))
    assert nodegroup_nodes.unmark_scale_down_disabled(core_v1, [marked, theirs]) == ["n1"]
    assert core_v1.patches == [("n1", {"metadata": {"annotations": {
        nodegroup_nodes.SCALE_DOWN_DISABLED_ANNOTATION: None, nodegroup_nodes.SCALE_DOWN_DISABLED_BY_ANNOTATION: None}}},
        nodegroup_nodes.MERGE_PATCH)]


class FakeAutoscaling:
    def __init__(self, activities):
        self.activities = activities

    def describe_scaling_activities(self, AutoScalingGroupName, MaxRecords):
        return {"Activities": self.activities}


def test_c3_autoscaler_error_reports_activities_since_the_upgrade_started():
    start = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.timezone.utc)
    activities = [
        {"ActivityId": "new", "StartTime": start + datetime.timedelta(minutes=5), "StatusCode": "Successful",
         "Description": "Launching a new EC2 instance: i-1", "Cause": "set desired capacity from 6 to 8"},
        {"ActivityId": "old", "StartTime": start - datetime.timedelta(minutes=5), "StatusCode": "Successful"}]
    journal = Journal(started_at="2026-01-01T12:00:00Z", desired_capacity_set=6)
    err = asg_ops.autoscaler_error(FakeAutoscaling(activities), {"AutoScalingGroupName": "asg", "DesiredCapacity": 8},
                                   journal)
    assert err.code == "ClusterAutoscalerActive"
    assert "is 8" in err.msg and "set it to 6" in err.msg
    assert [a["activity_id"] for a in err.details["scaling_activities"]] == ["new"]


class PurgingEc2(FakeEc2):
    """EC2 that no longer knows i-gone: any call naming it fails with InvalidInstanceID.NotFound."""

    def paginate(self, InstanceIds):
        if "i-gone" in InstanceIds:
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "InvalidInstanceID.NotFound", "Message": "i-gone"}},
                              "DescribeInstances")
        return super(PurgingEc2, self).paginate(InstanceIds)


def test_wait_terminated_counts_purged_instances_as_terminated():
    clock = FakeClock(start=0)
    ec2 = PurgingEc2({"i-1": 2})
    assert termination.wait_terminated(ec2, ["i-gone", "i-1"], timeout=60, poll=2, clock=clock) == []


@pytest.mark.parametrize("settings, named, off, on", [
    (dict(MaxInstanceLifetime=604800), "a maximum instance lifetime of 604800 s", "--max-instance-lifetime 0",
     "the same option with its value"),
    (dict(CapacityRebalance=True), "capacity rebalancing", "--no-capacity-rebalance", "--capacity-rebalance"),
    (dict(MaxInstanceLifetime=86400, CapacityRebalance=True),
     "a maximum instance lifetime of 86400 s and capacity rebalancing",
     "--max-instance-lifetime 0 --no-capacity-rebalance", "the same option with its value, --capacity-rebalance"),
])
def test_issue29_item2_a_group_that_replaces_instances_itself_is_refused_saying_how_to_go_on(settings, named, off,
                                                                                             on):
    """W2: Auto Scaling replaces instances at the end of their lifetime or on a Spot rebalance recommendation, without
    a drain, and no process the upgrade suspends stops it."""
    with pytest.raises(UpgradeError) as refused:
        asg_ops.check_no_self_replacement(dict(AutoScalingGroupName="workers", **settings))
    message = refused.value.msg
    assert refused.value.code == "ReplacesInstancesItself" and named in message
    assert off in message and "(%s)" % on in message and message.endswith("Nothing was changed.")


def test_issue29_item2_a_group_without_either_setting_passes():
    asg_ops.check_no_self_replacement(dict(AutoScalingGroupName="workers", MaxInstanceLifetime=None,
                                           CapacityRebalance=False))


@pytest.mark.parametrize("phase,desired_now,desired_set,pending,kept", [
    ("scale_up", 4, 10, None, 10),    # killed before the raise: the capacity recorded, not recomputed
    ("scale_up", 11, 11, None, 11),   # after a relaunch (surge 6 + 1)
    ("setup", 4, None, None, None),
    ("upgrade", 8, 8, None, 8),       # two decrements recorded: kept, not raised to 10
    ("upgrade", 9, 10, 8, 9),         # killed among the decrementing terminations
    ("upgrade", 10, 10, 8, 10),       # killed before them
    ("upgrade", 7, 10, 8, 10),        # below what they leave: not ours, the capacity set is restored
    ("upgrade", 7, 10, None, 10),
    ("scale_down", 6, 6, None, 6),
    ("upgrade", 6, None, None, None),
])
def test_issue25_item1_resume_keeps_the_capacity_the_upgrade_set(phase, desired_now, desired_set, pending, kept):
    """Issue 25 item 1 (SPEC W5, B1): a rerun's scale-up reaches the capacity recorded, and past the scale-up adds
    nothing to the capacity the upgrade set since; without a surge recorded it computes one."""
    recorded = Journal.start(phase=phase, desired_capacity_set=desired_set, desired_capacity_pending=pending, surge=6)
    assert asg_ops.resumed_capacity(recorded, desired_now) == kept
    assert asg_ops.resumed_capacity(recorded.replace(surge=None), desired_now) is None
    assert asg_ops.resumed_capacity(None, desired_now) is None
