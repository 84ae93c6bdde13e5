# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 1: the eks_nodegroups inventory plugin, one host per node group of every kind (SPEC K1, W1),
keyed_groups / groups / compose as amazon.aws's inventories spell them, filters by cluster and tag, Ansible's
inventory cache, and a discovery cost bounded by the clusters and managed node groups, never by the Auto Scaling
groups."""

from __future__ import annotations

import math

import boto3
import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import find_nodegroup

from ..moto_nodegroup import asg_tag_list, self_managed_tags, TERRAFORM
from .conftest import ROLE


def hostvars(data, name):
    return data.get_host(name).get_vars()


def group_hosts(data, group):
    return sorted(host.name for host in data.groups[group].get_hosts()) if group in data.groups else []


def test_issue28_item1_one_host_per_nodegroup_of_every_kind(inventory, fleet):
    data, _plugin = inventory(dict(regions=["us-west-2", "us-east-1"]))
    assert sorted(data.hosts) == ["dev-x/dev", "prod-a/system", "prod-a/workers", "prod-b/batch", "prod-b/web",
                                  "prod-c/api"]
    system = hostvars(data, "prod-a/system")
    assert (system["kind"], system["owner"], system["nodegroup_kubernetes_version"], system["cluster_version"],
            system["nodegroup_release_version"], system["aws_region"], system["aws_account_id"]) == (
        "managed", "EKS", "1.29", "1.30", "1.29.0-20240615", "us-west-2", "123456789012")
    assert system["nodegroup_tags"] == {"upgrade-ring": "canary", "team": "platform"}
    workers = hostvars(data, "prod-a/workers")
    assert (workers["kind"], workers["owner"], workers["nodegroup_image_id"], workers["nodegroup_kubernetes_version"],
            workers["asg_name"]) == ("self_managed", "terraform-aws-eks", fleet.workers_ami, "1.29",
                                     "workers-2024061512000012340000000b")
    assert [hostvars(data, name)[key] for name, key in (("prod-b/batch", "owner"), ("prod-b/web", "owner"),
                                                        ("prod-b/batch", "kind"), ("prod-b/web", "kind"),
                                                        ("prod-b/batch", "nodegroup_kubernetes_version"),
                                                        ("prod-c/api", "aws_region"))] == [
        "eksctl", "CloudFormation", "self_managed_eksctl", "self_managed", "1.28", "us-east-1"]
    # Each host's names are those the playbooks find the node group by (discovery, SPEC K1).
    for name in ("prod-a/workers", "prod-b/batch", "prod-b/web"):
        found = find_nodegroup(boto3.client("autoscaling", region_name="us-west-2"),
                               boto3.client("eks", region_name="us-west-2"),
                               hostvars(data, name)["cluster_name"], hostvars(data, name)["nodegroup_name"])
        assert (found.asg_name, found.kind) == (hostvars(data, name)["asg_name"], hostvars(data, name)["kind"])


def test_issue28_item1_keyed_groups_make_rings_from_the_upgrade_ring_tag(inventory):
    data, _plugin = inventory(dict(
        regions=["us-west-2", "us-east-1"],
        keyed_groups=[dict(key="nodegroup_tags['upgrade-ring'] | default('none')", prefix="ring"),
                      dict(key="cluster_name", prefix="cluster")],
        groups=dict(behind_control_plane="nodegroup_kubernetes_version != cluster_version"),
        compose=dict(upgrade_order="nodegroup_tags['upgrade-ring'] | default('9')")))
    assert group_hosts(data, "ring_canary") == ["dev-x/dev", "prod-a/system"]
    assert group_hosts(data, "ring_1") == ["prod-a/workers", "prod-c/api"]
    assert group_hosts(data, "ring_2") == ["prod-b/batch"]
    assert group_hosts(data, "ring_none") == ["prod-b/web"]
    assert group_hosts(data, "cluster_prod_b") == ["prod-b/batch", "prod-b/web"]
    assert len(group_hosts(data, "behind_control_plane")) == 6
    assert hostvars(data, "prod-b/web")["upgrade_order"] == "9"


def test_issue28_item1_cluster_filter_describes_only_the_clusters_it_matches(inventory):
    data, plugin = inventory(dict(clusters=["prod-*"]))
    assert sorted(data.hosts) == ["prod-a/system", "prod-a/workers", "prod-b/batch", "prod-b/web"]
    assert plugin.requests["us-west-2"]["DescribeCluster"] == 2
    assert plugin.requests["us-west-2"]["ListNodegroups"] == 2


def test_issue28_item1_tag_filter_keeps_the_groups_whose_tags_match(inventory):
    data, _plugin = inventory(dict(tags={"upgrade-ring": "[12]"}))
    assert sorted(data.hosts) == ["prod-a/workers", "prod-b/batch"]
    data, _plugin = inventory(dict(tags={"team": None}))
    assert sorted(data.hosts) == ["prod-a/system", "prod-b/web"]


def test_issue28_item1_the_cache_answers_without_aws_until_flushed(inventory, tmp_path):
    config = dict(cache=True, cache_plugin="jsonfile", cache_connection=str(tmp_path / "cache"),
                  cache_timeout=600)
    first, plugin = inventory(config)
    assert sum(plugin.requests["us-west-2"].values()) > 0
    again, plugin = inventory(config)
    assert plugin.requests == {} and sorted(again.hosts) == sorted(first.hosts)
    assert hostvars(again, "prod-a/workers") == hostvars(first, "prod-a/workers")
    flushed, plugin = inventory(config, cache=False)  # --flush-cache / refresh_inventory
    assert sum(plugin.requests["us-west-2"].values()) > 0 and sorted(flushed.hosts) == sorted(first.hosts)


def discovery_bound(clusters, managed, auto_scaling_groups, launch_templates, images):
    """The requests of one region: ListClusters and DescribeAutoScalingGroups in pages of 100, one DescribeCluster and
    one ListNodegroups per cluster, one DescribeNodegroup per managed group, one DescribeLaunchTemplateVersions per
    launch template, DescribeImages per 200 AMIs."""
    return dict(ListClusters=math.ceil(max(clusters, 1) / 100), DescribeCluster=clusters, ListNodegroups=clusters,
                DescribeNodegroup=managed, DescribeAutoScalingGroups=math.ceil(max(auto_scaling_groups, 1) / 100),
                DescribeLaunchTemplateVersions=launch_templates, DescribeImages=math.ceil(images / 200))


@pytest.mark.parametrize("groups_per_cluster", [1, 40])
def test_issue28_item1_discovery_cost_grows_with_clusters_not_with_auto_scaling_groups(
        inventory, fleet, groups_per_cluster):
    """3 clusters of us-east-2, each with one managed group and ``groups_per_cluster`` self-managed ones on one launch
    template: 120 self-managed groups cost what 3 do but one more page of DescribeAutoScalingGroups."""
    for index in range(3):
        cluster = "fleet-%d" % index
        fleet.cluster("us-east-2", cluster)
        fleet.managed("us-east-2", cluster, "system", {})
        lt_id, _image = fleet.launch_template("us-east-2", "lt-%d" % index)
        for group in range(groups_per_cluster):
            name = "workers%d" % group
            fleet.self_managed("us-east-2", "%s-%s" % (cluster, name), self_managed_tags(TERRAFORM, cluster, name),
                               lt_id)
    data, plugin = inventory(dict(regions=["us-east-2"]))
    assert len(data.hosts) == 3 * (1 + groups_per_cluster)
    assert plugin.requests["us-east-2"] == discovery_bound(3, 3, 3 * groups_per_cluster, 3, 3)


def test_issue28_item1_two_nodegroups_under_one_host_name_fail_naming_both(inventory, fleet, plugin_module):
    """A second plain group named workers in prod-a: both would be host prod-a/workers."""
    lt_id, _image = fleet.launch_template("us-west-2", "workers-blue")
    fleet.self_managed("us-west-2", "workers-blue", self_managed_tags(TERRAFORM, "prod-a", "workers"), lt_id)
    with pytest.raises(plugin_module.AnsibleParserError,
                       match="host prod-a/workers would be two node groups: .*workers-2024.*workers-blue"):
        inventory(dict(clusters=["prod-a"]))
    data, _plugin = inventory(dict(clusters=["prod-a"], hostname="cluster_name ~ '/' ~ asg_name"))
    assert "prod-a/workers-blue" in data.hosts and "prod-a/workers-2024061512000012340000000b" in data.hosts


def test_issue28_item1_a_host_of_another_source_is_not_overwritten(inventory, fleet, plugin_module):
    """Two files of an inventory directory (two accounts, say) that name one host differently fail too."""
    data, _plugin = inventory(dict(regions=["us-east-1"]))
    fleet.cluster("us-west-2", "prod-c")
    fleet.managed("us-west-2", "prod-c", "api", {})
    with pytest.raises(plugin_module.AnsibleParserError, match="host prod-c/api would be two node groups"):
        inventory(dict(regions=["us-west-2"]), data=data)


def test_issue28_item1_assume_role_arn_lists_the_roles_account(inventory):
    """moto keeps one backend per account: the role's credentials reach account 210987654321's cluster only."""
    other = "210987654321"
    credentials = boto3.client("sts", region_name="us-west-2").assume_role(
        RoleArn="arn:aws:iam::%s:role/fleet" % other, RoleSessionName="setup")["Credentials"]
    eks = boto3.client("eks", region_name="us-west-2", aws_access_key_id=credentials["AccessKeyId"],
                       aws_secret_access_key=credentials["SecretAccessKey"],
                       aws_session_token=credentials["SessionToken"])
    eks.create_cluster(name="staging", roleArn=ROLE, version="1.30", resourcesVpcConfig={"subnetIds": []})
    eks.create_nodegroup(clusterName="staging", nodegroupName="payments", nodeRole=ROLE, subnets=["subnet-1"])
    data, _plugin = inventory(dict(iam_role_arn="arn:aws:iam::%s:role/fleet" % other))
    assert list(data.hosts) == ["staging/payments"]
    assert hostvars(data, "staging/payments")["aws_account_id"] == other


def test_issue28_item1_a_group_without_launch_template_or_cluster_tag_is_handled(inventory, fleet):
    """A launch-configuration group of a cluster is listed without an AMI; a group tagged for two clusters is not a
    node group of either (kinds.tagged_cluster)."""
    autoscaling = boto3.client("autoscaling", region_name="us-west-2")
    autoscaling.create_launch_configuration(LaunchConfigurationName="old", ImageId=fleet.workers_ami,
                                            InstanceType="m5.large")
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="legacy", LaunchConfigurationName="old", MinSize=0, MaxSize=1,
        AvailabilityZones=["us-west-2a"], Tags=asg_tag_list("legacy", self_managed_tags(TERRAFORM, "prod-a", "legacy")))
    shared = dict(self_managed_tags(TERRAFORM, "prod-a", "shared"), **{"kubernetes.io/cluster/prod-b": "owned"})
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="shared", LaunchConfigurationName="old", MinSize=0, MaxSize=1,
        AvailabilityZones=["us-west-2a"], Tags=asg_tag_list("shared", shared))
    data, _plugin = inventory(dict(clusters=["prod-a"]))
    assert sorted(data.hosts) == ["prod-a/legacy", "prod-a/system", "prod-a/workers"]
    legacy = hostvars(data, "prod-a/legacy")
    assert (legacy["launch_template"], legacy["nodegroup_image_id"], legacy["nodegroup_kubernetes_version"]) == (
        None, None, None)
