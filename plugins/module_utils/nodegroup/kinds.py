# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-group kinds (SPEC K1): how each tool that makes EKS node groups tags its Auto Scaling group and labels
its nodes, and what follows for discovery, node lookup and the new-node check. Pure: no API calls.

- ``managed``: an EKS managed node group. EKS creates the Auto Scaling group (tags eks:cluster-name and
  eks:nodegroup-name) and, unless the user gave one, the launch template; its nodes carry the
  eks.amazonaws.com/nodegroup label from the user data EKS writes (EKS user guide, "Managed node groups").
- ``self_managed_eksctl``: an eksctl unmanaged node group; its CloudFormation stack tags the group
  alpha.eksctl.io/cluster-name and alpha.eksctl.io/nodegroup-name, and its bootstrap labels nodes
  alpha.eksctl.io/nodegroup-name (eksctl-io/eksctl pkg/cfn/manager/nodegroup.go, pkg/apis/eksctl.io/v1alpha5
  defaults.go setDefaultNodeLabels).
- ``self_managed``: a plain Auto Scaling group as terraform-aws-eks's self-managed-node-group (tags Name=<name>,
  kubernetes.io/cluster/<cluster>=owned; group named <name>-<26 digits>) or the CloudFormation node group
  template (tags Name=<cluster>-<nodegroup>-Node, kubernetes.io/cluster/<cluster>=owned) make it. Its nodes
  carry no node-group label unless the user's bootstrap arguments add one.
"""

from __future__ import annotations

from collections.abc import Mapping
import re

MANAGED = "managed"
SELF_MANAGED_EKSCTL = "self_managed_eksctl"
SELF_MANAGED = "self_managed"

EKS_CLUSTER_TAG = "eks:cluster-name"
EKS_NODEGROUP_TAG = "eks:nodegroup-name"
EKSCTL_CLUSTER_TAG = "alpha.eksctl.io/cluster-name"
EKSCTL_NODEGROUP_TAG = "alpha.eksctl.io/nodegroup-name"
NAME_TAG = "Name"
CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"

EKS_NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
EKSCTL_NODEGROUP_LABEL = "alpha.eksctl.io/nodegroup-name"

# terraform's name_prefix appends 26 characters: a UTC timestamp to 1/10000 s (18 digits) and a per-run counter
# in 8 hex digits (terraform-plugin-sdk helper/id PrefixedUniqueId: "%s%s%08x"), e.g. 2024061512000012340000000a.
_TERRAFORM_SUFFIX = re.compile(r"^-\d{18}[0-9a-f]{8}$")


def cluster_tag(cluster_name: str) -> str:
    return CLUSTER_TAG_PREFIX + cluster_name


def kind_of(tags: Mapping[str, str]) -> str:
    """The kind an Auto Scaling group's tags say it is (tags: {key: value})."""
    if EKS_NODEGROUP_TAG in tags:
        return MANAGED
    if EKSCTL_NODEGROUP_TAG in tags:
        return SELF_MANAGED_EKSCTL
    return SELF_MANAGED


def tagged_cluster(tags: Mapping[str, str]) -> str | None:
    """The cluster an Auto Scaling group's tags name, or None (several kubernetes.io/cluster tags: None)."""
    for key in (EKS_CLUSTER_TAG, EKSCTL_CLUSTER_TAG):
        if tags.get(key):
            return tags[key]
    clusters = [key[len(CLUSTER_TAG_PREFIX):] for key in tags if key.startswith(CLUSTER_TAG_PREFIX)]
    return clusters[0] if len(clusters) == 1 else None


def tagged_for_cluster(tags: Mapping[str, str], cluster_name: str) -> bool:
    """Whether an Auto Scaling group's tags say it belongs to ``cluster_name``: the cluster tag EKS or eksctl
    writes, or kubernetes.io/cluster/<cluster_name>, which every tool (and the cluster autoscaler) relies on."""
    return cluster_name in (tags.get(EKS_CLUSTER_TAG), tags.get(EKSCTL_CLUSTER_TAG)) or cluster_tag(cluster_name) in tags


def tagged_nodegroup(tags: Mapping[str, str]) -> str | None:
    """The node-group name an Auto Scaling group's own tool recorded in its tags, or None (self_managed)."""
    return tags.get(EKS_NODEGROUP_TAG) or tags.get(EKSCTL_NODEGROUP_TAG)


def self_managed_match(asg_name: str, tags: Mapping[str, str], cluster_name: str, nodegroup_name: str) -> bool:
    """Whether a plain self-managed group (tagged kubernetes.io/cluster/<cluster_name>) is ``nodegroup_name``:
    its Name tag is the node-group name (terraform-aws-eks) or <cluster>-<nodegroup>-Node (the CloudFormation
    template), or its own name is the node-group name, bare or with terraform's name_prefix suffix."""
    if kind_of(tags) != SELF_MANAGED or cluster_tag(cluster_name) not in tags:
        return False
    if tags.get(NAME_TAG) in (nodegroup_name, "%s-%s-Node" % (cluster_name, nodegroup_name)):
        return True
    return asg_name == nodegroup_name or terraform_name_prefixed(asg_name, nodegroup_name)


def self_managed_name(asg_name: str, tags: Mapping[str, str], cluster_name: str) -> str:
    """The node-group name discovery finds a self-managed group of ``cluster_name`` by (the inverse of
    self_managed_match, and eksctl's tag): eksctl's nodegroup-name tag; the CloudFormation template's
    Name=<cluster>-<nodegroup>-Node; terraform-aws-eks's Name=<nodegroup>; else the group's own name."""
    told = tagged_nodegroup(tags)
    if told:
        return told
    name = tags.get(NAME_TAG) or ""
    node_suffix = "-Node"
    cloudformation_prefix = cluster_name + "-"
    if name.startswith(cloudformation_prefix) and name.endswith(node_suffix) \
            and len(name) > len(cloudformation_prefix) + len(node_suffix):
        return name[len(cloudformation_prefix):-len(node_suffix)]
    return name or asg_name


def terraform_name_prefixed(name: str, prefix: str) -> bool:
    """Whether ``name`` is what terraform's ``name_prefix = "<prefix>-"`` makes of ``prefix``."""
    return bool(prefix) and name.startswith(prefix) and bool(_TERRAFORM_SUFFIX.match(name[len(prefix):]))


def node_label(kind: str, nodegroup_name: str) -> tuple[str, str] | None:
    """(key, value) of the label the kind's tool gives every node of the group, or None (self_managed)."""
    if kind == MANAGED:
        return EKS_NODEGROUP_LABEL, nodegroup_name
    if kind == SELF_MANAGED_EKSCTL:
        return EKSCTL_NODEGROUP_LABEL, nodegroup_name
    return None


def node_selector(kind: str, nodegroup_name: str) -> str | None:
    """A label selector that narrows a node LIST to the group's nodes on the server (SPEC P2), or None when
    the kind sets no label. Nodes are matched to instances by spec.providerID either way (SPEC K2)."""
    label = node_label(kind, nodegroup_name)
    return "%s=%s" % label if label else None


def expected_node_labels(kind: str, nodegroup_name: str) -> dict[str, str]:
    """The labels the new-node check requires of a self-managed group's new nodes (SPEC U3): only those its
    own tool sets. A managed group's new nodes are checked by EKS itself."""
    label = node_label(kind, nodegroup_name)
    return dict([label]) if label and kind != MANAGED else {}
