# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether nodes belong to a node group: the scope check of a module given ``nodegroup_name`` (issue 10 item 24).

A node is the group's when its instance (the ``spec.providerID`` ``aws:///<az>/<instance-id>``, SPEC K2) is one
of the group's Auto Scaling group's instances, or is leaving that group (EC2 still tags it
``aws:autoscaling:groupName=<the group>`` while the group terminates it and drops it from its list). Labels
never decide (a node's labels are whatever its bootstrap wrote); they only help to say where a node belongs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import kinds
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.termination import describe_known_instances
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.shapes import aws_tags_to_dict
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import invalid_parameter

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef

# The tag EC2 Auto Scaling puts on every instance it launches (Auto Scaling user guide, "Tag Auto Scaling groups
# and instances"); it stays on an instance the group terminates.
ASG_NAME_TAG = "aws:autoscaling:groupName"


def group_instance_ids(group: NodegroupRef) -> frozenset[str]:
    """The instance ids the node group's Auto Scaling group lists (a nodegroup.NodegroupRef)."""
    return frozenset(instance["InstanceId"] for instance in group.asg.get("Instances") or [])


def labelled_nodegroup(labels: Mapping[str, str] | None) -> str | None:
    """The node group a node's labels name (EKS's or eksctl's label), or None."""
    labels = labels or {}
    return labels.get(kinds.EKS_NODEGROUP_LABEL) or labels.get(kinds.EKSCTL_NODEGROUP_LABEL)


def outside_nodegroup(group: NodegroupRef, node_instances: Mapping[str, str | None], ec2_tags: Mapping[str, Mapping[str, str]] | None = None,
                      node_labels: Mapping[str, Mapping[str, str]] | None = None) -> list[dict[str, Any]]:
    """The nodes of ``node_instances`` ({node name: instance id or None}) that are not ``group``'s, sorted by name:
    [{node, instance_id, asg_name, nodegroup}] where ``asg_name`` is the Auto Scaling group EC2's tag names (from
    ``ec2_tags``: {instance id: {key: value}}, None when unknown) and ``nodegroup`` the group the node's labels
    name (``node_labels``: {node name: labels}). Pure."""
    members = group_instance_ids(group)
    ec2_tags = ec2_tags or {}
    outside = []
    for name, instance_id in sorted(node_instances.items()):
        if instance_id in members:
            continue
        owner = (ec2_tags.get(instance_id) or {}).get(ASG_NAME_TAG) if instance_id else None
        if owner is not None and owner == group.asg_name:
            continue  # leaving the group: the group is terminating it
        outside.append(dict(node=name, instance_id=instance_id, asg_name=owner,
                            nodegroup=labelled_nodegroup((node_labels or {}).get(name))))
    return outside


def _where(entry: Mapping[str, Any]) -> str:
    if entry["instance_id"] is None:
        return "node %s has no EC2 instance in its spec.providerID" % entry["node"]
    if entry["asg_name"]:
        where = "is in Auto Scaling group %s" % entry["asg_name"]
    else:
        where = "is in no Auto Scaling group EC2 knows of"
    if entry["nodegroup"]:
        where += " (its node is labelled node group %s)" % entry["nodegroup"]
    return "node %s (instance %s) %s" % (entry["node"], entry["instance_id"], where)


def outside_message(group: NodegroupRef, outside: list[dict[str, Any]], parameter: str, action: str) -> str:
    return ("%s names nodes outside node group %s of cluster %s (nodegroup_name; Auto Scaling group %s): %s. Refusing "
            "to %s nodes of another node group; name only this group's nodes, or leave nodegroup_name out to act on "
            "any node. Nothing was changed."
            % (parameter, group.nodegroup_name, group.cluster_name, group.asg_name,
               "; ".join(_where(entry) for entry in outside), action))


def check_nodes_in_nodegroup(group: NodegroupRef, node_instances: Mapping[str, str | None], aws: Callable[[str], Any], parameter: str,
                             action: str = "cordon or drain", node_labels: Mapping[str, Mapping[str, str]] | None = None) -> None:
    """Refuse, with InvalidParameter naming ``parameter`` and every node outside, nodes that are not ``group``'s
    (see outside_nodegroup). EC2 (``aws("ec2")``, a module's client factory) is asked, with one DescribeInstances,
    only about instances the group does not list; nodes all in the group cost no call."""
    members = group_instance_ids(group)
    unlisted = sorted(set(i for i in node_instances.values() if i and i not in members))
    ec2_tags = {}
    if unlisted:
        found, _unknown = describe_known_instances(aws("ec2"), unlisted)
        ec2_tags = dict((instance_id, aws_tags_to_dict(description.get("Tags")))
                        for instance_id, description in found.items())
    outside = outside_nodegroup(group, node_instances, ec2_tags, node_labels)
    if outside:
        raise invalid_parameter(parameter, outside_message(group, outside, parameter, action), outside=outside,
                                nodegroup_name=group.nodegroup_name, asg_name=group.asg_name)
