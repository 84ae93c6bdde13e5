# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-group kinds (SPEC K1): what each tool's tags say, how a plain self-managed group is recognised by name,
and which node labels narrow a node LIST (P2) or are required of new nodes (U3)."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import kinds

CLUSTER = "demo"
NODEGROUP = "workers"
# terraform's name_prefix suffix: 18 timestamp digits and an 8-hex-digit counter
TF_SUFFIX = "20240615120000123400000001"

MANAGED_TAGS = {"eks:cluster-name": CLUSTER, "eks:nodegroup-name": NODEGROUP,
                "kubernetes.io/cluster/demo": "owned", "k8s.io/cluster-autoscaler/enabled": "true",
                "k8s.io/cluster-autoscaler/demo": "owned"}
EKSCTL_TAGS = {"alpha.eksctl.io/cluster-name": CLUSTER, "alpha.eksctl.io/nodegroup-name": NODEGROUP,
               "alpha.eksctl.io/nodegroup-type": "unmanaged", "kubernetes.io/cluster/demo": "owned",
               "Name": "demo-workers-Node"}
TERRAFORM_TAGS = {"Name": NODEGROUP, "kubernetes.io/cluster/demo": "owned", "k8s.io/cluster/demo": "owned"}
CLOUDFORMATION_TAGS = {"Name": "demo-workers-Node", "kubernetes.io/cluster/demo": "owned"}


@pytest.mark.parametrize("tags, kind", [
    (MANAGED_TAGS, kinds.MANAGED),
    (EKSCTL_TAGS, kinds.SELF_MANAGED_EKSCTL),
    (TERRAFORM_TAGS, kinds.SELF_MANAGED),
    (CLOUDFORMATION_TAGS, kinds.SELF_MANAGED),
    ({}, kinds.SELF_MANAGED),
    # the node-group tag decides, not the cluster tag alone
    ({"eks:cluster-name": CLUSTER}, kinds.SELF_MANAGED),
    ({"alpha.eksctl.io/cluster-name": CLUSTER}, kinds.SELF_MANAGED),
])
def test_kind_of_reads_the_node_group_tag_of_each_tool(tags, kind):
    assert kinds.kind_of(tags) == kind


@pytest.mark.parametrize("tags, cluster, nodegroup", [
    (MANAGED_TAGS, CLUSTER, NODEGROUP),
    (EKSCTL_TAGS, CLUSTER, NODEGROUP),
    (TERRAFORM_TAGS, CLUSTER, None),
    (CLOUDFORMATION_TAGS, CLUSTER, None),
    ({"Name": "workers"}, None, None),
    # two kubernetes.io/cluster tags: the tags do not say which cluster
    ({"kubernetes.io/cluster/demo": "owned", "kubernetes.io/cluster/prod": "shared"}, None, None),
    # an eks: or eksctl cluster tag is the cluster's name, whatever the kubernetes.io tag says
    ({"eks:cluster-name": "prod", "kubernetes.io/cluster/demo": "owned"}, "prod", None),
    ({"alpha.eksctl.io/cluster-name": "prod", "alpha.eksctl.io/nodegroup-name": "gpu"}, "prod", "gpu"),
])
def test_tagged_cluster_and_nodegroup(tags, cluster, nodegroup):
    assert kinds.tagged_cluster(tags) == cluster
    assert kinds.tagged_nodegroup(tags) == nodegroup


@pytest.mark.parametrize("asg_name, tags", [
    ("workers-" + TF_SUFFIX, TERRAFORM_TAGS),                                   # terraform-aws-eks
    ("demo-workers-NodeGroup-1A2B3C4D5E6F", CLOUDFORMATION_TAGS),                # the CloudFormation template
    ("workers", {"kubernetes.io/cluster/demo": "owned"}),                        # named as the node group
    ("workers-" + TF_SUFFIX, {"kubernetes.io/cluster/demo": "owned"}),           # terraform name_prefix only
    # the counter is hex: the eleventh name_prefix of a terraform run ends in "a"
    ("workers-2024061512000012340000000a", {"kubernetes.io/cluster/demo": "owned"}),
    ("workers-202406151200001234000001f3", {"kubernetes.io/cluster/demo": "owned"}),
    # a Name tag that says so is enough, whatever the group is called
    ("anything-at-all", {"Name": "workers", "kubernetes.io/cluster/demo": "shared"}),
])
def test_self_managed_match(asg_name, tags):
    assert kinds.self_managed_match(asg_name, tags, CLUSTER, NODEGROUP) is True


@pytest.mark.parametrize("asg_name, tags", [
    # near misses of the name: another node group that starts with ours
    ("workers-gpu-" + TF_SUFFIX, {"kubernetes.io/cluster/demo": "owned"}),
    ("workers-gpu", {"kubernetes.io/cluster/demo": "owned", "Name": "workers-gpu"}),
    ("workers2-" + TF_SUFFIX, {"kubernetes.io/cluster/demo": "owned"}),
    ("workersx", {"kubernetes.io/cluster/demo": "owned"}),
    # a suffix of the wrong length or alphabet is not terraform's
    ("workers-" + TF_SUFFIX[:-1], {"kubernetes.io/cluster/demo": "owned"}),
    ("workers-" + TF_SUFFIX + "0", {"kubernetes.io/cluster/demo": "owned"}),
    ("workers-2024061512000012340000000A", {"kubernetes.io/cluster/demo": "owned"}),
    ("workers-a02406151200001234000000aa", {"kubernetes.io/cluster/demo": "owned"}),
    ("workers_" + TF_SUFFIX, {"kubernetes.io/cluster/demo": "owned"}),
    # CloudFormation's Name of another cluster or node group
    ("demo-workers-NodeGroup-1A2B", {"Name": "prod-workers-Node", "kubernetes.io/cluster/demo": "owned"}),
    ("demo-batch-NodeGroup-1A2B", {"Name": "demo-batch-Node", "kubernetes.io/cluster/demo": "owned"}),
    # right name, but not tagged for this cluster (or not at all)
    ("workers-" + TF_SUFFIX, {"Name": "workers", "kubernetes.io/cluster/prod": "owned"}),
    ("workers", {"Name": "workers"}),
    ("workers", {"k8s.io/cluster/demo": "owned"}),
    # another kind's group is never a plain self-managed match, even with the right name and cluster tag
    ("workers", MANAGED_TAGS),
    ("workers", EKSCTL_TAGS),
])
def test_self_managed_near_misses(asg_name, tags):
    assert kinds.self_managed_match(asg_name, tags, CLUSTER, NODEGROUP) is False


def test_cluster_tag():
    assert kinds.cluster_tag("demo") == "kubernetes.io/cluster/demo"


@pytest.mark.parametrize("kind, selector, expected", [
    (kinds.MANAGED, "eks.amazonaws.com/nodegroup=workers", {}),
    (kinds.SELF_MANAGED_EKSCTL, "alpha.eksctl.io/nodegroup-name=workers",
     {"alpha.eksctl.io/nodegroup-name": "workers"}),
    (kinds.SELF_MANAGED, None, {}),
])
def test_node_selector_and_expected_labels_per_kind(kind, selector, expected):
    """P2: the LIST is narrowed by the label the kind's tool sets, where it sets one; U3: a self-managed group's
    new nodes need only the labels its own tool sets (a managed group's are EKS's to check)."""
    assert kinds.node_selector(kind, NODEGROUP) == selector
    assert kinds.expected_node_labels(kind, NODEGROUP) == expected
    label = kinds.node_label(kind, NODEGROUP)
    assert (label is None) == (selector is None)
    if label is not None:
        assert "%s=%s" % label == selector


@pytest.mark.parametrize("asg_name, tags, nodegroup", [
    # terraform-aws-eks self-managed-node-group: Name=<name>, the group <name>-<name_prefix suffix>
    ("workers-2024061512000012340000000b", {"Name": "workers", "kubernetes.io/cluster/prod": "owned"}, "workers"),
    # the CloudFormation node group template: Name=<cluster>-<nodegroup>-Node
    ("prod-web-NodeGroup-9X4T2B7QK1LD", {"Name": "prod-web-Node", "kubernetes.io/cluster/prod": "owned"}, "web"),
    # another tool's plain group without a Name tag: its own name
    ("gpu-pool", {"kubernetes.io/cluster/prod": "owned"}, "gpu-pool"),
    # a Name tag that only looks like the template's: "prod--Node" names no node group, so the tag is the name
    ("odd", {"Name": "prod--Node", "kubernetes.io/cluster/prod": "owned"}, "prod--Node"),
])
def test_issue28_item1_self_managed_name_is_the_name_discovery_finds_the_group_by(asg_name, tags, nodegroup):
    assert kinds.self_managed_name(asg_name, tags, "prod") == nodegroup
    assert kinds.self_managed_match(asg_name, tags, "prod", nodegroup)


def test_issue28_item1_an_eksctl_group_is_named_by_its_nodegroup_tag():
    tags = {"alpha.eksctl.io/cluster-name": "prod", "alpha.eksctl.io/nodegroup-name": "batch",
            "Name": "prod-batch-Node", "kubernetes.io/cluster/prod": "owned"}
    assert kinds.self_managed_name("eksctl-prod-nodegroup-batch-NodeGroup-1", tags, "prod") == "batch"
