# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node group discovery (SPEC K1): each kind found and named, neighbours and doubles refused."""

from __future__ import annotations


import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import discovery as ng
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import INVALID_PARAMETER, UpgradeError

from ..moto_nodegroup import (
    ASG_NAME,
    CLOUDFORMATION,
    CLUSTER,
    KIND_SETUPS,
    MANAGED,
    NODEGROUP,
    SELF_MANAGED,
    SELF_MANAGED_EKSCTL,
    TERRAFORM,
    TF_ASG_SUFFIX,
    MotoNodegroup,
    asg_tag_list,
    eksctl_tags,
    managed_tags,
    self_managed_tags,
)


@pytest.fixture(params=KIND_SETUPS, ids=["-".join(filter(None, setup)) for setup in KIND_SETUPS])
def kind_world(request):
    """A node group of each kind, as its own tool makes it, with one instance. Its own mock_aws: the tests that
    use it come before any test of ``world`` (a mock_aws inside another shares the outer one's state)."""
    kind, convention = request.param
    with mock_aws():
        yield MotoNodegroup(desired=1, kind=kind, convention=convention or TERRAFORM)


def add_asg(world, name, tags, desired=0):
    world.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name, MinSize=0, MaxSize=3, DesiredCapacity=desired,
        LaunchTemplate={"LaunchTemplateId": world.lt_id, "Version": "1"}, VPCZoneIdentifier=world.subnets[0],
        Tags=asg_tag_list(name, tags))


SELECTORS = {MANAGED: "eks.amazonaws.com/nodegroup=workers",
             SELF_MANAGED_EKSCTL: "alpha.eksctl.io/nodegroup-name=workers",
             SELF_MANAGED: None}


def test_find_nodegroup_finds_each_kind_and_says_which(kind_world):
    """K1 discovery: DescribeNodegroup, else the eksctl tags, else the cluster tag with a matching name."""
    group = ng.find_nodegroup(kind_world.autoscaling, kind_world.eks, CLUSTER, NODEGROUP)
    assert (group.kind, group.asg_name) == (kind_world.kind, kind_world.asg_name)
    assert (group.cluster_name, group.nodegroup_name) == (CLUSTER, NODEGROUP)
    assert group.node_selector == SELECTORS[kind_world.kind]
    assert len(group.asg["Instances"]) == 1
    if kind_world.kind == MANAGED:
        assert group.managed["nodegroupName"] == NODEGROUP and group.managed["clusterName"] == CLUSTER
    else:
        assert group.managed is None


def test_with_asg_name_the_kind_comes_from_its_tags(kind_world):
    group = ng.find_nodegroup(kind_world.autoscaling, kind_world.eks, CLUSTER, NODEGROUP, kind_world.asg_name)
    assert (group.kind, group.asg_name) == (kind_world.kind, kind_world.asg_name)
    assert (group.managed is not None) == (kind_world.kind == MANAGED)
    fresher = group.with_asg(dict(group.asg, DesiredCapacity=7))
    assert (fresher.kind, fresher.managed, fresher.node_selector, fresher.asg["DesiredCapacity"]) == (
        group.kind, group.managed, group.node_selector, 7)


def test_only_the_managed_kind_is_refused_for_writes(kind_world):
    """K3: a module that writes to the ASG or launch template refuses a group EKS owns, naming it."""
    group = ng.find_nodegroup(kind_world.autoscaling, kind_world.eks, CLUSTER, NODEGROUP)
    if kind_world.kind != MANAGED:
        group.refuse_if_managed("scale its Auto Scaling group")
        return
    with pytest.raises(UpgradeError) as raised:
        group.refuse_if_managed("scale its Auto Scaling group")
    err = raised.value
    assert (err.code, err.details["parameter"], err.details["kind"]) == ("InvalidParameter", "nodegroup_name", MANAGED)
    assert NODEGROUP in err.msg and kind_world.asg_name in err.msg and "eks_nodegroup_update" in err.msg


def test_neighbours_are_not_taken_for_the_node_group(world):
    """Groups of another node group whose name starts with ours, of another cluster, or of another eksctl node
    group are not candidates (K1): discovery still finds the one group, and only it."""
    neighbours = {
        "workers-gpu-" + TF_ASG_SUFFIX: self_managed_tags(TERRAFORM, nodegroup="workers-gpu"),
        "workers-20240615120000123400000042": self_managed_tags(TERRAFORM, cluster="prod"),
        "demo-batch-NodeGroup-1A2B3C": self_managed_tags(CLOUDFORMATION, nodegroup="batch"),
        "eksctl-demo-nodegroup-batch-NodeGroup-1A2B3C": eksctl_tags(nodegroup="batch"),
        "eksctl-staging-nodegroup-workers-NodeGroup-1A2B3C": eksctl_tags(cluster="staging"),
    }
    for name, tags in neighbours.items():
        add_asg(world, name, tags)
    try:
        group = ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP)
        assert (group.kind, group.asg_name) == (SELF_MANAGED, ASG_NAME)
        assert ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, "workers-gpu").asg_name == \
            "workers-gpu-" + TF_ASG_SUFFIX
        assert ng.find_nodegroup(world.autoscaling, world.eks, "staging", NODEGROUP).kind == SELF_MANAGED_EKSCTL
    finally:
        for name in neighbours:
            world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName=name, ForceDelete=True)


def test_a_group_found_by_its_terraform_name_alone(world):
    """An ASG made with name_prefix and no Name tag: its name is <node group>-<terraform suffix>, whose counter
    is hex (the eleventh name_prefix of a terraform run ends in "a")."""
    name = "spot-2024061512000012340000000a"
    add_asg(world, name, {"kubernetes.io/cluster/demo": "owned"})
    try:
        group = ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, "spot")
        assert (group.kind, group.asg_name) == (SELF_MANAGED, name)
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName=name, ForceDelete=True)


@pytest.mark.parametrize("tags, told", [
    (self_managed_tags(TERRAFORM, cluster="prod"), "prod"),
    (eksctl_tags(cluster="prod"), "prod"),
    (eksctl_tags(nodegroup="batch"), "batch"),
    (managed_tags(nodegroup="batch"), "batch"),
    (managed_tags(cluster="prod"), "prod"),
])
def test_asg_name_tagged_for_another_cluster_or_node_group_is_refused(world, tags, told):
    add_asg(world, "named", tags)
    try:
        with pytest.raises(UpgradeError) as raised:
            ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP, "named")
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName="named", ForceDelete=True)
    err = raised.value
    assert (err.code, err.details["parameter"]) == ("InvalidParameter", "asg_name")
    assert "named" in err.msg and told in err.msg


def test_asg_name_of_a_group_tagged_only_for_the_cluster_is_taken_as_self_managed(world):
    """The user names the group: its cluster tag says it is this cluster's, nothing says it is another kind."""
    add_asg(world, "hand-made", {"team": "platform", "kubernetes.io/cluster/" + CLUSTER: "owned"})
    try:
        group = ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP, "hand-made")
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName="hand-made", ForceDelete=True)
    assert (group.kind, group.asg_name, group.node_selector) == (SELF_MANAGED, "hand-made", None)


@pytest.mark.parametrize("tags", [
    {"team": "platform"},
    {"kubernetes.io/cluster/staging": "owned", "kubernetes.io/cluster/prod": "owned"},
])
def test_asg_name_of_a_group_not_tagged_for_the_cluster_is_refused(world, tags):
    """An untagged group may be another cluster's: its instances would all look like nodes that never joined,
    and be terminated with their pods (issue 9)."""
    add_asg(world, "hand-made", tags)
    try:
        with pytest.raises(UpgradeError) as raised:
            ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP, "hand-made")
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName="hand-made", ForceDelete=True)
    assert raised.value.code == INVALID_PARAMETER and raised.value.details["parameter"] == "asg_name"
    assert "kubernetes.io/cluster/%s" % CLUSTER in raised.value.msg


def test_two_candidates_are_refused_naming_both(world):
    """K1: a CloudFormation group with the same node-group name in the same cluster; the module must not guess."""
    second = "demo-workers-NodeGroup-1A2B3C"
    add_asg(world, second, self_managed_tags(CLOUDFORMATION))
    try:
        with pytest.raises(UpgradeError) as raised:
            ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP)
        # asg_name settles it
        assert ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP, second).asg_name == second
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName=second, ForceDelete=True)
    err = raised.value
    assert (err.code, err.details["parameter"]) == ("InvalidParameter", "asg_name")
    assert ASG_NAME in err.msg and second in err.msg
    assert err.details["candidates"] == sorted([ASG_NAME, second])


def test_a_managed_and_a_self_managed_group_of_one_name_are_refused_naming_both(world):
    managed = world.eks.create_nodegroup(
        clusterName=CLUSTER, nodegroupName=NODEGROUP, nodeRole="arn:aws:iam::123456789012:role/eks-node",
        subnets=world.subnets)["nodegroup"]
    managed_asg = managed["resources"]["autoScalingGroups"][0]["name"]
    add_asg(world, managed_asg, managed_tags())
    try:
        with pytest.raises(UpgradeError) as raised:
            ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP)
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName=managed_asg, ForceDelete=True)
        world.eks.delete_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)
    assert raised.value.details["parameter"] == "asg_name"
    assert "%s (managed)" % managed_asg in raised.value.msg and "%s (self_managed)" % ASG_NAME in raised.value.msg


@pytest.mark.parametrize("args, parameter, named", [
    ((CLUSTER, "nope", None), "nodegroup_name", "nope"),
    (("prod", NODEGROUP, None), "cluster_name", "prod"),        # no such cluster: its name is what is wrong
    ((CLUSTER, NODEGROUP, "no-such-asg"), "asg_name", "no-such-asg"),
])
def test_nothing_found_names_the_parameter(world, args, parameter, named):
    with pytest.raises(UpgradeError) as raised:
        ng.find_nodegroup(world.autoscaling, world.eks, *args)
    assert (raised.value.code, raised.value.details["parameter"]) == ("ResourceNotFound", parameter)
    assert named in raised.value.msg


def test_an_existing_cluster_without_the_node_group_names_nodegroup_name(world):
    """The cluster exists (so it is the node group that is not there) and the message says where it looked."""
    world.eks.create_cluster(name="prod", roleArn="arn:aws:iam::123456789012:role/eks",
                             resourcesVpcConfig={"subnetIds": world.subnets})
    try:
        with pytest.raises(UpgradeError) as raised:
            ng.find_nodegroup(world.autoscaling, world.eks, "prod", NODEGROUP)
    finally:
        world.eks.delete_cluster(name="prod")
    err = raised.value
    assert (err.code, err.details["parameter"]) == ("ResourceNotFound", "nodegroup_name")
    assert NODEGROUP in err.msg and "prod" in err.msg
    assert "kubernetes.io/cluster/prod" in err.msg and "alpha.eksctl.io/nodegroup-name=workers" in err.msg


class DeniedEks:
    def describe_nodegroup(self, clusterName, nodegroupName):
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "not authorized to perform "
                                     "eks:DescribeNodegroup"}}, "DescribeNodegroup")


def test_access_denied_on_describe_nodegroup_is_not_taken_for_self_managed(world):
    """Without eks:DescribeNodegroup a managed group would be taken for a self-managed one and written to (K3):
    the error stops discovery instead."""
    with pytest.raises(UpgradeError) as raised:
        ng.find_nodegroup(world.autoscaling, DeniedEks(), CLUSTER, NODEGROUP)
    assert raised.value.code == "AccessDenied"
    assert "DescribeNodegroup" in raised.value.msg


def test_asg_launch_template_spec():
    assert ng.asg_launch_template({"LaunchTemplate": {"LaunchTemplateId": "lt-1", "Version": "$Latest"}}) == (
        "lt-1", "$Latest")
    mixed = {"MixedInstancesPolicy": {"LaunchTemplate": {"LaunchTemplateSpecification": {
        "LaunchTemplateId": "lt-2", "Version": "4"}}}}
    assert ng.asg_launch_template_spec(mixed) == dict(id="lt-2", name=None, version="4", mixed=True)
    with pytest.raises(UpgradeError) as raised:
        ng.asg_launch_template({"AutoScalingGroupName": "lc", "LaunchConfigurationName": "old"})
    assert raised.value.details["parameter"] == "asg_name"
