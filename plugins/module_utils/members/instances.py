# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node group's instances: their EC2 descriptions, their nodes (matched by providerID, SPEC K2), and the two joined."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.shapes import aws_tags_to_dict
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import ec2 as ec2_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import utc_now_iso
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import Clock, list_all


# The EC2 tag AWS puts on instances launched from a launch template.
EC2_LT_VERSION_TAG = "aws:ec2launchtemplate:version"

DESCRIBE_INSTANCES_CHUNK = 200


def int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def describe_instances(ec2: Any, instance_ids: Iterable[str],
                       chunk_size: int = DESCRIBE_INSTANCES_CHUNK) -> dict[str, dict[str, Any]]:
    """EC2 descriptions of ``instance_ids`` (chunked, paged): {instance_id: description}."""
    found = {}
    ids = sorted(set(instance_ids))
    for start in range(0, len(ids), chunk_size):
        chunk = ids[start:start + chunk_size]
        for instance in ec2_api.describe_instances(ec2, chunk):
            found[instance["InstanceId"]] = instance
    return found


def described_for_join(ec2: Any, instance_ids: Iterable[str], known: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """EC2 descriptions of ``instance_ids`` for join_instances_nodes, only those not in ``known`` asked of EC2 (and
    added to it). What the join reads of a description never changes in an instance's life (image, launch time,
    placement, the launch template version EC2 tags it with at launch), so a process describes each instance once
    (issue 11 item 4: at N = 30 each DescribeInstances of the group took 0.2 s on moto)."""
    ids = list(instance_ids)
    missing = [instance_id for instance_id in ids if instance_id not in known]
    if missing:
        known.update(describe_instances(ec2, missing))
    return dict((instance_id, known[instance_id]) for instance_id in ids if instance_id in known)


def instance_id_of(node: Any) -> str | None:
    """The EC2 instance id in a node's providerID (aws:///<az>/<instance-id>), or None."""
    spec = node.get("spec", {}) if isinstance(node, dict) else node.spec
    if isinstance(spec, dict):
        provider_id = spec.get("providerID") or spec.get("provider_id")
    else:
        provider_id = getattr(spec, "provider_id", None) if spec is not None else None
    if not provider_id or not provider_id.startswith("aws://"):
        return None
    instance_id = provider_id.rstrip("/").rsplit("/", 1)[-1]
    return instance_id if instance_id.startswith("i-") else None


def find_instance_nodes(list_node: Callable[..., Any], instance_ids: Iterable[str], node_selector: str | None = None,
                        clock: Clock | None = None) -> dict[str, dict[str, Any]]:
    """{instance_id: raw node} for the nodes whose spec.providerID (aws:///<az>/<instance-id>) names one of
    ``instance_ids`` (SPEC K2); instances without a node (never joined, or gone) are left out.

    Nodes cannot be selected by providerID on the server: one paged LIST, narrowed by ``node_selector`` (the
    node group's label, where its kind sets one: P2), and a second of every node only if some instance was not
    among them (a node whose bootstrap left the label out must not pass for no node).
    """
    wanted = set(instance_ids)
    found = {}
    for selector in ([node_selector] if node_selector else []) + [None]:
        kwargs = dict(label_selector=selector) if selector else {}
        items, _version = list_all(list_node, clock=clock, **kwargs)
        for node in items:
            instance_id = instance_id_of(node)
            if instance_id in wanted:
                found[instance_id] = node
        if len(found) == len(wanted):
            break
    return found


def node_is_ready(node: Any) -> bool:
    conditions = (node.status.conditions if node.status else None) or []
    return any(condition.type == "Ready" and condition.status == "True" for condition in conditions)


def _launched_lt_version(asg_instance: Mapping[str, Any], ec2_instance: Mapping[str, Any] | None) -> int | None:
    """The launch template version an instance was launched from: the ASG's record, else the EC2 launch tag."""
    version = int_or_none((asg_instance.get("LaunchTemplate") or {}).get("Version"))
    if version is None and ec2_instance:
        version = int_or_none(aws_tags_to_dict(ec2_instance.get("Tags")).get(EC2_LT_VERSION_TAG))
    return version


def join_instances_nodes(asg_instances: Iterable[Mapping[str, Any]], ec2_instances: dict[str, dict[str, Any]] | Iterable[Mapping[str, Any]],
                         nodes: Iterable[Any]) -> list[dict[str, Any]]:
    """One dict per ASG instance, joined with its EC2 description and Kubernetes node (by providerID).

    ``ec2_instances``: {instance_id: description} or a list of descriptions.
    """
    if not isinstance(ec2_instances, dict):
        ec2_instances = dict((instance["InstanceId"], instance) for instance in ec2_instances)
    nodes_by_instance = {}
    for node in nodes:
        instance_id = instance_id_of(node)
        if instance_id:
            nodes_by_instance[instance_id] = node
    joined = []
    for asg_instance in asg_instances:
        instance_id = asg_instance["InstanceId"]
        ec2_instance = ec2_instances.get(instance_id) or {}
        node = nodes_by_instance.get(instance_id)
        labels = dict(node.metadata.labels or {}) if node is not None else {}
        joined.append(dict(
            instance_id=instance_id,
            availability_zone=asg_instance.get("AvailabilityZone")
            or (ec2_instance.get("Placement") or {}).get("AvailabilityZone"),
            lifecycle_state=asg_instance.get("LifecycleState"),
            health_status=asg_instance.get("HealthStatus"),
            launch_template_version=_launched_lt_version(asg_instance, ec2_instance),
            instance_type=asg_instance.get("InstanceType") or ec2_instance.get("InstanceType"),
            image_id=ec2_instance.get("ImageId"),
            launch_time=utc_now_iso(ec2_instance["LaunchTime"]) if ec2_instance.get("LaunchTime") else None,
            node_name=node.metadata.name if node is not None else None,
            ready=node_is_ready(node) if node is not None else False,
            unschedulable=bool(node.spec.unschedulable) if node is not None and node.spec is not None else False,
            labels=labels,
        ))
    return joined
