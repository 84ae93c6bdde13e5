# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node group's nodes: listing them, and the C2 annotation that keeps the cluster autoscaler off them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import find_instance_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import translate_k8s_errors
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import Clock, list_all, read_body, retry_api_call

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef

# SPEC C2: the cluster autoscaler reads this node annotation and never scales such a node down.
SCALE_DOWN_DISABLED_ANNOTATION = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
# Which nodes got SCALE_DOWN_DISABLED_ANNOTATION from us (value: the journal's run_id), so restore removes
# only ours and leaves an annotation a person set.
SCALE_DOWN_DISABLED_BY_ANNOTATION = "eksops.nodegroup/scale-down-disabled-by"
MERGE_PATCH = "application/merge-patch+json"


class _Obj:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


def node_view(raw: dict[str, Any]) -> _Obj:
    """A raw node dict (as kube_watch yields) with the attribute shape instances.join_instances_nodes reads."""
    metadata = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    conditions = [_Obj(type=c.get("type"), status=c.get("status"))
                  for c in (raw.get("status") or {}).get("conditions") or []]
    return _Obj(
        metadata=_Obj(name=metadata.get("name"), labels=metadata.get("labels") or {},
                      annotations=metadata.get("annotations") or {}),
        spec=_Obj(provider_id=spec.get("providerID"), unschedulable=spec.get("unschedulable")),
        status=_Obj(conditions=conditions),
        raw=raw,
    )


def patch_node_annotations(core_v1: Any, node_name: str, annotations: Mapping[str, str | None]) -> None:
    """Merge-patch node annotations (a None value removes one); retried on 429/5xx (SPEC P3)."""
    patch_node_metadata(core_v1, node_name, {}, annotations)


def patch_node_metadata(core_v1: Any, node_name: str, labels: Mapping[str, str | None],
                        annotations: Mapping[str, str | None]) -> None:
    """Merge-patch node labels and annotations in one request (a None value removes one); retried on 429/5xx
    (SPEC P3)."""
    metadata = dict(annotations=dict(annotations))
    if labels:
        metadata["labels"] = dict(labels)
    with translate_k8s_errors("%s node %s" % ("label" if labels else "annotate", node_name)):
        read_body(retry_api_call(core_v1.patch_node, node_name, {"metadata": metadata}, _content_type=MERGE_PATCH,
                                 _preload_content=False))


def mark_scale_down_disabled(core_v1: Any, nodes: Iterable[_Obj], run_id: str | None) -> list[str]:
    """Give nodes the C2 annotation, recording that we set it; returns the names changed."""
    changed = []
    for node in nodes:
        annotations = node.metadata.annotations or {}
        if annotations.get(SCALE_DOWN_DISABLED_ANNOTATION) == "true":
            continue
        patch_node_annotations(core_v1, node.metadata.name, {
            SCALE_DOWN_DISABLED_ANNOTATION: "true", SCALE_DOWN_DISABLED_BY_ANNOTATION: run_id or "unknown"})
        changed.append(node.metadata.name)
    return changed


def unmark_scale_down_disabled(core_v1: Any, nodes: Iterable[_Obj]) -> list[str]:
    """Remove the C2 annotation from the nodes we gave it to; returns the names changed."""
    changed = []
    for node in nodes:
        if SCALE_DOWN_DISABLED_BY_ANNOTATION in (node.metadata.annotations or {}):
            patch_node_annotations(core_v1, node.metadata.name, {
                SCALE_DOWN_DISABLED_ANNOTATION: None, SCALE_DOWN_DISABLED_BY_ANNOTATION: None})
            changed.append(node.metadata.name)
    return changed


def list_all_nodes(core_v1: Any, label_selector: str | None = None, purpose: str = "list nodes") -> list[_Obj]:
    """Nodes as node_view objects: one paged LIST (each page retried as SPEC P3 says), narrowed on the server
    by ``label_selector`` when there is one (SPEC P2). ``purpose`` names the list in an error."""
    with translate_k8s_errors(purpose + (" (%s)" % label_selector if label_selector else "")):
        items, _version = list_all(core_v1.list_node, **selector_kwargs(label_selector))
    return [node_view(item) for item in items]


def list_nodegroup_nodes(core_v1: Any, group: NodegroupRef, *, clock: Clock | None = None) -> list[_Obj]:
    """The nodes of the group's instances as node_view objects, matched by spec.providerID and narrowed by the
    kind's node label where it has one (instances.find_instance_nodes)."""
    instance_ids = [instance["InstanceId"] for instance in group.asg.get("Instances", [])]
    with translate_k8s_errors("list the nodes of node group %s (%s)"
                              % (group.nodegroup_name, group.node_selector or "every node")):
        nodes = find_instance_nodes(core_v1.list_node, instance_ids, group.node_selector, clock=clock)
    return [node_view(node) for node in nodes.values()]


def selector_kwargs(label_selector: str | None) -> dict[str, str]:
    return dict(label_selector=label_selector) if label_selector else {}
