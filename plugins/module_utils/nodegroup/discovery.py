# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node group discovery (SPEC K1): which Auto Scaling group is the node group, of which kind, and EKS's record of
it when EKS manages it; the options that name it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
import re

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import kinds
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.shapes import aws_tags_to_dict
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import eks as eks_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    NOT_FOUND,
    UpgradeError,
    invalid_parameter,
    not_found,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import describe_eks_cluster

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule

# EKS CreateCluster: "The name can contain only alphanumeric characters (case-sensitive), hyphens, and underscores.
# It must start with an alphanumeric character and can't be longer than 100 characters." CreateNodegroup names
# follow the same rule (63 characters); eksctl, terraform-aws-eks and the CloudFormation template name their
# groups within it, with dots at most (issue 10 item 24: an empty or ";" name reached AWS as an HTML 404).
CLUSTER_NAME_PATTERN = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
NODEGROUP_NAME_PATTERN = re.compile(r"^[0-9A-Za-z][A-Za-z0-9._-]{0,254}$")


def check_names(cluster_name: str | None, nodegroup_name: str | None) -> None:
    """Refuse a cluster or node group name AWS could never hold, naming the parameter, before any call."""
    if not CLUSTER_NAME_PATTERN.match(cluster_name or ""):
        raise invalid_parameter(
            "cluster_name", "cluster_name %r is not an EKS cluster name (letters, digits, - and _, starting with "
            "a letter or digit, at most 100 characters)" % (cluster_name,), value=cluster_name)
    if not NODEGROUP_NAME_PATTERN.match(nodegroup_name or ""):
        raise invalid_parameter(
            "nodegroup_name", "nodegroup_name %r is not a node group name (letters, digits, ., - and _, starting "
            "with a letter or digit)" % (nodegroup_name,), value=nodegroup_name)


# --- Auto Scaling group -------------------------------------------------------------------------------------

def describe_asg(autoscaling: Any, asg_name: str, parameter: str = "asg_name") -> dict[str, Any]:
    """The ASG description; ResourceNotFound naming ``parameter`` when it does not exist."""
    group = autoscaling_api.describe_auto_scaling_group(autoscaling, asg_name)
    if group is None:
        raise not_found(parameter, "Auto Scaling group %r (%s) does not exist" % (asg_name, parameter),
                        asg_name=asg_name)
    return group


def describe_managed_nodegroup(eks: Any, cluster_name: str, nodegroup_name: str) -> dict[str, Any] | None:
    """DescribeNodegroup's answer, or None when EKS has no managed node group of that name (self-managed)."""
    try:
        return eks_api.describe_nodegroup(eks, cluster_name, nodegroup_name)
    except UpgradeError as err:
        if err.code == NOT_FOUND:
            return None
        raise


class NodegroupRef:
    """A discovered node group: its kind (SPEC K1), its Auto Scaling group, and EKS's record when managed."""

    def __init__(self, cluster_name: str, nodegroup_name: str, kind: str, asg: dict[str, Any],
                 managed: dict[str, Any] | None = None) -> None:
        self.cluster_name = cluster_name
        self.nodegroup_name = nodegroup_name
        self.kind = kind
        self.asg = asg
        self.managed = managed

    @property
    def asg_name(self) -> str:
        return self.asg["AutoScalingGroupName"]

    def journal(self) -> Journal | None:
        """The upgrade journal on the Auto Scaling group, or None."""
        return Journal.from_tags(self.asg.get("Tags"), asg_name=self.asg_name)

    def with_asg(self, asg: dict[str, Any]) -> NodegroupRef:
        """The same node group with a newer description of its Auto Scaling group."""
        return NodegroupRef(self.cluster_name, self.nodegroup_name, self.kind, asg, self.managed)

    @property
    def node_selector(self) -> str | None:
        return kinds.node_selector(self.kind, self.nodegroup_name)

    def refuse_if_managed(self, action: str) -> None:
        """SPEC K3: never write to an Auto Scaling group or launch template EKS owns."""
        if self.kind == kinds.MANAGED:
            raise invalid_parameter(
                "nodegroup_name", "Node group %s of cluster %s is an EKS managed node group: EKS owns its Auto Scaling "
                "group %s and launch template, so this collection does not %s; it upgrades managed node groups "
                "through EKS (eks_nodegroup_update; upgrade_nodegroup.yml does that by itself)"
                % (self.nodegroup_name, self.cluster_name, self.asg_name, action),
                kind=self.kind, asg_name=self.asg_name)


def _tags(asg: Mapping[str, Any]) -> dict[str, str]:
    return aws_tags_to_dict(asg.get("Tags"))


def _check_named_asg(asg: Mapping[str, Any], cluster_name: str, nodegroup_name: str) -> None:
    """The named ASG must be tagged for this cluster, and for this node group as far as its kind's tags tell:
    an untagged group may be another cluster's, whose instances would all look like nodes that never joined."""
    tags = _tags(asg)
    name = asg["AutoScalingGroupName"]
    if not kinds.tagged_for_cluster(tags, cluster_name):
        told = kinds.tagged_cluster(tags)
        raise invalid_parameter(
            "asg_name", "Auto Scaling group %r (asg_name) is not tagged for cluster %s (%s): no %s=%s, %s=%s or %s tag; "
            "refusing to touch a group that may be another cluster's (tag it %s=owned if it is this cluster's)"
            % (name, cluster_name, "it names cluster %s" % told if told else "it names no cluster",
               kinds.EKS_CLUSTER_TAG, cluster_name, kinds.EKSCTL_CLUSTER_TAG, cluster_name,
               kinds.cluster_tag(cluster_name), kinds.cluster_tag(cluster_name)), asg_name=name)
    for told, expected, parameter in ((kinds.tagged_cluster(tags), cluster_name, "cluster_name"),
                                      (kinds.tagged_nodegroup(tags), nodegroup_name, "nodegroup_name")):
        if told is not None and expected and told != expected:
            raise invalid_parameter(
                "asg_name", "Auto Scaling group %r (asg_name) is tagged as %s, not %s (%s); refusing to touch another "
                "node group's Auto Scaling group" % (name, told, expected, parameter), asg_name=name)


def _candidates(autoscaling: Any, eks: Any, cluster_name: str, nodegroup_name: str) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """Every Auto Scaling group that could be the node group, by kind (SPEC K1): [(kind, asg, managed record)]."""
    found = []
    managed = describe_managed_nodegroup(eks, cluster_name, nodegroup_name)
    for group in ((managed or {}).get("resources") or {}).get("autoScalingGroups") or []:
        found.append((kinds.MANAGED, describe_asg(autoscaling, group["name"], parameter="nodegroup_name"), managed))
    eksctl = autoscaling_api.find_auto_scaling_groups(autoscaling, {
        kinds.EKSCTL_CLUSTER_TAG: cluster_name, kinds.EKSCTL_NODEGROUP_TAG: nodegroup_name})
    tagged = autoscaling_api.find_auto_scaling_groups(autoscaling, {kinds.cluster_tag(cluster_name): None})
    found.extend((kinds.SELF_MANAGED_EKSCTL, asg, None) for asg in eksctl)
    found.extend((kinds.SELF_MANAGED, asg, None) for asg in tagged
                 if kinds.self_managed_match(asg["AutoScalingGroupName"], _tags(asg), cluster_name, nodegroup_name))
    unique = {}
    for kind, asg, record in found:
        unique.setdefault(asg["AutoScalingGroupName"], (kind, asg, record))
    return list(unique.values())


def find_nodegroup(autoscaling: Any, eks: Any, cluster_name: str, nodegroup_name: str, asg_name: str | None = None) -> NodegroupRef:
    """The node group and its kind (SPEC K1): the named Auto Scaling group (its kind from its tags), else the one
    DescribeNodegroup names, the one eksctl tagged, or the plain one tagged kubernetes.io/cluster/<cluster>
    whose Name (or own name) is the node group's. Two matches are refused, naming both."""
    check_names(cluster_name, nodegroup_name)
    if asg_name:
        asg = describe_asg(autoscaling, asg_name)
        _check_named_asg(asg, cluster_name, nodegroup_name)
        kind = kinds.kind_of(_tags(asg))
        managed = None
        if kind == kinds.MANAGED:
            managed = describe_managed_nodegroup(eks, cluster_name, _tags(asg)[kinds.EKS_NODEGROUP_TAG])
        return NodegroupRef(cluster_name, nodegroup_name, kind, asg, managed)
    candidates = _candidates(autoscaling, eks, cluster_name, nodegroup_name)
    if len(candidates) > 1:
        named = ", ".join("%s (%s)" % (asg["AutoScalingGroupName"], kind) for kind, asg, _record in candidates)
        raise invalid_parameter(
            "asg_name", "Several Auto Scaling groups could be node group %s of cluster %s: %s; pass asg_name"
            % (nodegroup_name, cluster_name, named),
            candidates=sorted(asg["AutoScalingGroupName"] for _kind, asg, _record in candidates))
    if candidates:
        kind, asg, managed = candidates[0]
        return NodegroupRef(cluster_name, nodegroup_name, kind, asg, managed)
    # Say which name is wrong: the cluster's, or the node group's.
    describe_eks_cluster(eks, cluster_name)
    raise not_found(
        "nodegroup_name", "No node group %r (nodegroup_name) found in cluster %r: EKS has no managed node group of "
        "that name, no Auto Scaling group is tagged %s=%s and %s=%s, and none tagged %s has a Name tag %s or %s; "
        "pass asg_name" % (nodegroup_name, cluster_name, kinds.EKSCTL_CLUSTER_TAG, cluster_name,
                           kinds.EKSCTL_NODEGROUP_TAG, nodegroup_name, kinds.cluster_tag(cluster_name), nodegroup_name,
                           "%s-%s-Node" % (cluster_name, nodegroup_name)),
        cluster_name=cluster_name, nodegroup_name=nodegroup_name)


def asg_launch_template_spec(asg: Mapping[str, Any]) -> dict[str, Any]:
    """{"id", "name", "version", "mixed"} of the launch template an ASG launches from."""
    spec = asg.get("LaunchTemplate")
    mixed = False
    if not spec and asg.get("MixedInstancesPolicy"):
        spec = asg["MixedInstancesPolicy"].get("LaunchTemplate", {}).get("LaunchTemplateSpecification")
        mixed = True
    if not spec:
        raise invalid_parameter(
            "asg_name", "Auto Scaling group %s uses no launch template (launch configurations are not supported)"
            % asg.get("AutoScalingGroupName"), asg_name=asg.get("AutoScalingGroupName"))
    return dict(id=spec.get("LaunchTemplateId"), name=spec.get("LaunchTemplateName"),
                version=str(spec.get("Version") or "$Default"), mixed=mixed)


def asg_launch_template(asg: Mapping[str, Any]) -> tuple[str | None, str]:
    """(launch template id, version string as the ASG has it, e.g. "3" or "$Latest")."""
    spec = asg_launch_template_spec(asg)
    return spec["id"], spec["version"]


def asg_summary(asg: Mapping[str, Any]) -> dict[str, Any]:
    """The sizes, processes and AZs of an ASG, snake_case."""
    spec = asg_launch_template_spec(asg)
    return dict(
        name=asg["AutoScalingGroupName"],
        min_size=asg["MinSize"],
        max_size=asg["MaxSize"],
        desired_capacity=asg["DesiredCapacity"],
        suspended_processes=sorted(process["ProcessName"] for process in asg.get("SuspendedProcesses", [])),
        availability_zones=sorted(asg.get("AvailabilityZones", [])),
        launch_template=dict(id=spec["id"], name=spec["name"], version=spec["version"]),
        tags=aws_tags_to_dict(asg.get("Tags")),
    )


def find_module_nodegroup(module: EksopsModule, refuse_managed: str | None = None) -> NodegroupRef:
    """The node group a module's cluster_name, nodegroup_name and asg_name options name (find_nodegroup). With
    ``refuse_managed``, what the module would do to its Auto Scaling group, an EKS managed group is refused
    (SPEC K3)."""
    params = module.params
    group = find_nodegroup(module.aws("autoscaling"), module.aws("eks"), params["cluster_name"],
                           params["nodegroup_name"], params["asg_name"])
    if refuse_managed:
        group.refuse_if_managed(refuse_managed)
    return group


# --- Module options ------------------------------------------------------------------------------------------

# The options naming the node group, shared by the modules that find its ASG with find_asg (documentation:
# the eksops.nodegroup.nodegroup doc fragment). Modules start from a deep copy so that none shares option dicts.
NODEGROUP_ARGUMENT_SPEC = dict(
    cluster_name=dict(type="str", required=True),
    nodegroup_name=dict(type="str", required=True),
    asg_name=dict(type="str"),
)
