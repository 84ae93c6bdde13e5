# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node group's instances and their nodes, matched by providerID (SPEC K2)."""

from __future__ import annotations

import datetime

import pytest
from kubernetes.client import V1Node, V1NodeCondition, V1NodeSpec, V1NodeStatus, V1ObjectMeta

from ansible_collections.eksops.nodegroup.plugins.module_utils.members import instances as insts


def node(name, instance_id, az="us-west-2a", ready=True, unschedulable=None, labels=None):
    """A node of a plain self-managed group: the kubelet's own labels only (SPEC K1)."""
    return V1Node(
        metadata=V1ObjectMeta(name=name, labels=dict({"kubernetes.io/hostname": name}, **(labels or {}))),
        spec=V1NodeSpec(provider_id="aws:///%s/%s" % (az, instance_id) if instance_id else None,
                        unschedulable=unschedulable),
        status=V1NodeStatus(conditions=[V1NodeCondition(type="Ready", status="True" if ready else "False")]))


@pytest.mark.parametrize("provider_id, instance_id", [
    ("aws:///us-west-2a/i-0123456789abcdef0", "i-0123456789abcdef0"),
    ("aws:///us-west-2a/i-0123/", "i-0123"),
    ("kind://docker/kind/kind-worker", None),
    ("aws:///us-west-2a/fargate-ip-10-0-0-1", None),
    (None, None),
])
def test_instance_id_of(provider_id, instance_id):
    assert insts.instance_id_of(V1Node(metadata=V1ObjectMeta(name="n"), spec=V1NodeSpec(provider_id=provider_id))) \
        == instance_id
    assert insts.instance_id_of({"spec": {"providerID": provider_id}}) == instance_id


def test_join_instances_nodes():
    asg_instances = [
        {"InstanceId": "i-1", "AvailabilityZone": "us-west-2a", "LifecycleState": "InService",
         "HealthStatus": "Healthy", "LaunchTemplate": {"Version": "1"}, "InstanceType": "m5.large"},
        {"InstanceId": "i-2", "AvailabilityZone": "us-west-2b", "LifecycleState": "InService",
         "HealthStatus": "Healthy", "LaunchTemplate": {"Version": "2"}},
        {"InstanceId": "i-3", "AvailabilityZone": "us-west-2c", "LifecycleState": "Pending"},
    ]
    launched = datetime.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.timezone.utc)
    ec2_instances = [
        {"InstanceId": "i-1", "ImageId": "ami-old", "LaunchTime": launched},
        {"InstanceId": "i-2", "ImageId": "ami-new"},
        {"InstanceId": "i-3", "ImageId": "ami-new", "Tags": [{"Key": "aws:ec2launchtemplate:version", "Value": "2"}]},
    ]
    nodes = [node("n1", "i-1", unschedulable=True), node("n2", "i-2", "us-west-2b", ready=False),
             node("stray", "i-9")]
    joined = {row["instance_id"]: row for row in insts.join_instances_nodes(asg_instances, ec2_instances, nodes)}
    assert joined["i-1"] == dict(instance_id="i-1", availability_zone="us-west-2a", lifecycle_state="InService",
                                 health_status="Healthy", launch_template_version=1, instance_type="m5.large",
                                 image_id="ami-old",
                                 launch_time="2026-01-02T03:04:05Z", node_name="n1", ready=True, unschedulable=True,
                                 labels={"kubernetes.io/hostname": "n1"})
    assert (joined["i-2"]["node_name"], joined["i-2"]["ready"], joined["i-2"]["launch_template_version"]) == (
        "n2", False, 2)
    assert joined["i-2"]["launch_time"] is None
    assert (joined["i-3"]["node_name"], joined["i-3"]["ready"], joined["i-3"]["launch_template_version"]) == (
        None, False, 2)
    assert list(joined) == ["i-1", "i-2", "i-3"]


def test_node_labels_never_say_what_an_instance_runs():
    """K2: the launch template version and the AMI come from AWS only; a node's labels (which only some kinds
    set, and anyone can edit) are not evidence, so an instance AWS says nothing about stays unknown (old)."""
    labelled = node("n1", "i-1", labels={"eks.amazonaws.com/sourceLaunchTemplateVersion": "3",
                                         "eks.amazonaws.com/nodegroup-image": "ami-lbl"})
    [row] = insts.join_instances_nodes([{"InstanceId": "i-1"}], {}, [labelled])
    assert (row["launch_template_version"], row["image_id"]) == (None, None)
    assert row["node_name"] == "n1"


def test_describe_instances_in_chunks(world):
    ids = [i["InstanceId"] for i in world.asg()["Instances"]]
    calls = []

    def count(params, **kwargs):
        calls.append(sorted(params["InstanceIds"]))
    # botocore's documented event hooks see every DescribeInstances the client sends
    world.ec2.meta.events.register("provide-client-params.ec2.DescribeInstances", count)
    try:
        found = insts.describe_instances(world.ec2, ids + ids[:1], chunk_size=2)
    finally:
        world.ec2.meta.events.unregister("provide-client-params.ec2.DescribeInstances", count)
    assert sorted(found) == sorted(ids)
    assert all(found[i]["ImageId"] == world.old_ami for i in ids)
    assert calls == [sorted(ids)[0:2], sorted(ids)[2:4], sorted(ids)[4:]]
    assert insts.DESCRIBE_INSTANCES_CHUNK == 200  # DescribeInstances' limit on InstanceIds per request
