# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How each tool that makes EKS node groups names and tags what it creates, and which node labels its user data
passes to the kubelet (SPEC K1). The sandbox seeds node groups with exactly these, so that discovery and node
matching are tested against what real clusters carry, not against what the collection expects.

Sources (read them before changing a value here):
- EKS managed node groups: the EKS user guide, "Managed node groups" and "Customize managed nodes with launch
  templates" (EKS creates the Auto Scaling group eks-<nodegroup>-<uuid> and the launch template eks-<uuid>, tags
  the group eks:cluster-name / eks:nodegroup-name plus the cluster-autoscaler auto-discovery tags, and writes the
  eks.amazonaws.com/* node labels into the user data of every launch template version it creates).
- eksctl unmanaged node groups: eksctl-io/eksctl pkg/cfn/manager/nodegroup.go (the CloudFormation stack
  eksctl-<cluster>-nodegroup-<ng>, its tags alpha.eksctl.io/*, which CloudFormation propagates to the group),
  pkg/cfn/builder/nodegroup.go (the group's Name and kubernetes.io/cluster/<cluster> tags, the launch template
  named after the stack), pkg/apis/eksctl.io/v1alpha5/defaults.go setDefaultNodeLabels and pkg/nodebootstrap
  (--node-labels alpha.eksctl.io/cluster-name and alpha.eksctl.io/nodegroup-name). On AL2 eksctl's bootstrap
  helper also adds node-lifecycle and alpha.eksctl.io/instance-id at boot; the sandbox leaves those out.
- terraform-aws-eks modules/self-managed-node-group/main.tf (aws_autoscaling_group with name_prefix "<name>-",
  tags Name=<name>, kubernetes.io/cluster/<cluster>=owned and k8s.io/cluster/<cluster>=owned propagated at
  launch; launch template name_prefix "<name>-node-group-"; no node label unless the user's
  bootstrap_extra_args add one).
- The AWS CloudFormation node group template amazon-eks-nodegroup.yaml (EKS user guide, "Create self-managed
  Amazon Linux nodes"): Auto Scaling group <stack>-NodeGroup-<suffix>, tags Name=<cluster>-<ng>-Node and
  kubernetes.io/cluster/<cluster>=owned propagated at launch; bootstrap.sh with BootstrapArguments, no label.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any

from .bootstrap import os_of_ami_family, render_user_data

__all__ = ["EKS_NODEGROUP_LABEL", "EKSCTL_NODEGROUP_LABEL", "NodegroupResources", "self_managed_resources",
           "managed_resources", "node_group_labels", "node_user_data", "pin_labels"]

EKS_NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
EKS_IMAGE_LABEL = "eks.amazonaws.com/nodegroup-image"
EKS_CAPACITY_TYPE_LABEL = "eks.amazonaws.com/capacityType"
EKS_SOURCE_LT_ID_LABEL = "eks.amazonaws.com/sourceLaunchTemplateId"
EKS_SOURCE_LT_VERSION_LABEL = "eks.amazonaws.com/sourceLaunchTemplateVersion"
EKSCTL_CLUSTER_LABEL = "alpha.eksctl.io/cluster-name"
EKSCTL_NODEGROUP_LABEL = "alpha.eksctl.io/nodegroup-name"
EKSCTL_VERSION = "0.190.0"


@dataclass(frozen=True)
class NodegroupResources:
    """What a tool creates for a node group: the Auto Scaling group's name and tags (all propagated at launch, as
    every one of these tools does), the launch template's name, and the node labels its user data sets."""

    asg_name: str
    asg_tags: dict[str, str]
    launch_template_name: str
    node_labels: dict[str, str] = field(default_factory=dict)


def _suffix(*parts: str, length: int = 13, upper: bool = True) -> str:
    """A stable stand-in for the random suffix CloudFormation / terraform append to physical names."""
    digest = hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]
    return digest.upper() if upper else digest


def self_managed_resources(cluster: str, nodegroup: dict[str, Any]) -> NodegroupResources:
    """The resources of a self-managed node group (kinds self_managed_eksctl and self_managed)."""
    name = nodegroup["name"]
    cluster_tag = {f"kubernetes.io/cluster/{cluster}": "owned"}
    if nodegroup["kind"] == "self_managed_eksctl":
        stack = f"eksctl-{cluster}-nodegroup-{name}"
        return NodegroupResources(
            asg_name=f"{stack}-NodeGroup-{_suffix(cluster, name)}",
            asg_tags={"Name": f"{cluster}-{name}-Node", **cluster_tag,
                      "alpha.eksctl.io/cluster-name": cluster, "alpha.eksctl.io/nodegroup-name": name,
                      "alpha.eksctl.io/nodegroup-type": "unmanaged", "alpha.eksctl.io/eksctl-version": EKSCTL_VERSION,
                      "eksctl.cluster.k8s.io/v1alpha1/cluster-name": cluster,
                      "eksctl.io/v1alpha2/nodegroup-name": name,
                      "aws:cloudformation:stack-name": stack, "aws:cloudformation:logical-id": "NodeGroup"},
            launch_template_name=stack,
            node_labels={EKSCTL_CLUSTER_LABEL: cluster, EKSCTL_NODEGROUP_LABEL: name})
    if nodegroup["convention"] == "cloudformation":
        stack = f"{cluster}-{name}-nodes"
        return NodegroupResources(
            asg_name=f"{stack}-NodeGroup-{_suffix(cluster, name)}",
            asg_tags={"Name": f"{cluster}-{name}-Node", **cluster_tag,
                      "aws:cloudformation:stack-name": stack, "aws:cloudformation:logical-id": "NodeGroup"},
            launch_template_name=f"{stack}-NodeLaunchTemplate-{_suffix(stack, 'lt')}")
    # terraform-aws-eks: name_prefix "<name>-" gives "<name>-<UTC timestamp><counter>" (26 digits).
    stamp = "20240101120000" + str(int(_suffix(cluster, name, length=10, upper=False), 16))[-12:].zfill(12)
    return NodegroupResources(
        asg_name=f"{name}-{stamp}",
        asg_tags={"Name": name, **cluster_tag, f"k8s.io/cluster/{cluster}": "owned"},
        launch_template_name=f"{name}-node-group-{stamp}")


def managed_resources(cluster: str, nodegroup: dict[str, Any], nodegroup_uuid: str | None = None) -> tuple[
        str, NodegroupResources]:
    """(node group uuid, resources) of an EKS managed node group, as EKS's CreateNodegroup makes them.

    The node labels are the ones EKS writes into the user data of its own launch template versions, except
    eks.amazonaws.com/nodegroup-image and the sourceLaunchTemplate* labels, which depend on the version (the
    EKS side adds them per version).
    """
    nodegroup_uuid = nodegroup_uuid or str(uuid.UUID(hashlib.md5(f"{cluster}/{nodegroup['name']}".encode()).hexdigest()))
    name = nodegroup["name"]
    return nodegroup_uuid, NodegroupResources(
        asg_name=f"eks-{name}-{nodegroup_uuid}",
        asg_tags={"eks:cluster-name": cluster, "eks:nodegroup-name": name,
                  "k8s.io/cluster-autoscaler/enabled": "true", f"k8s.io/cluster-autoscaler/{cluster}": "owned",
                  f"kubernetes.io/cluster/{cluster}": "owned"},
        launch_template_name=f"eks-{nodegroup_uuid}",
        node_labels={EKS_CAPACITY_TYPE_LABEL: "ON_DEMAND", EKS_NODEGROUP_LABEL: name})


def node_group_labels(cluster: str, nodegroup: dict[str, Any]) -> dict[str, str]:
    """The labels a node group's user data gives every node: the tool's own, then the scenario's `labels`."""
    if nodegroup["kind"] == "managed":
        tool = managed_resources(cluster, nodegroup)[1].node_labels
    else:
        tool = self_managed_resources(cluster, nodegroup).node_labels
    return {**tool, **nodegroup["labels"]}


def pin_labels(cluster: str, nodegroup: dict[str, Any]) -> dict[str, str]:
    """The nodeSelector that pins a workload to a node group: the tool's node-group label, or for a plain
    self-managed group (which has none) the scenario's own labels."""
    if nodegroup["kind"] == "managed":
        return {EKS_NODEGROUP_LABEL: nodegroup["name"]}
    if nodegroup["kind"] == "self_managed_eksctl":
        return {EKSCTL_NODEGROUP_LABEL: nodegroup["name"]}
    return dict(nodegroup["labels"])


def node_user_data(scenario: dict[str, Any], nodegroup: dict[str, Any], family: str, kube_url: str,
                   kube_ca_pem: str | None, labels: dict[str, str]) -> str:
    """The user data a tool writes into a node group's launch template: the bootstrap of the AMI's family
    (bootstrap.sh on AL2, a nodeadm NodeConfig on AL2023, TOML settings on Bottlerocket) with the node labels,
    taints and max pods (base64, as EC2 stores it)."""
    text = render_user_data(
        os_of_ami_family(family), cluster_name=scenario["cluster"]["name"], api_server_endpoint=kube_url,
        certificate_authority=base64.b64encode(kube_ca_pem.encode()).decode() if kube_ca_pem else None,
        labels=labels, taints=nodegroup["taints"], max_pods=nodegroup["max_pods"])
    return base64.b64encode(text.encode()).decode()
