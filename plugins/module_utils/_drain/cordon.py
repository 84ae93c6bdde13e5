# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cordon and uncordon (D1, U4, C1): the patches, the marks that say which run changed what, and the calls."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any
import json

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.api import (
    KubeApi,
    in_parallel,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.options import (
    noop_log,
    validate_names,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.result import (
    DrainResult,
    NodeResult,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    AUTOSCALER_ACTIVE,
    UpgradeError,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import (
    CORDONED_BY_ANNOTATION,
    TAG_PREFIX,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import translate_k8s_errors


EXCLUDE_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
AUTOSCALER_TAINT = "ToBeDeletedByClusterAutoscaler"
# Z3 with force: the workloads whose pods a drain left on the node because they come back to it, as JSON
# {"run_id": ..., "workloads": ["Deployment ns/name", ...]}; the check before a termination (U5) lets their
# pods go with the node, and an uncordon by that run (or an explicit one) removes it.
LEFT_PODS_ANNOTATION = TAG_PREFIX + "left-pods"
REASON_CORDON = "EksopsCordon"
REASON_UNCORDON = "EksopsUncordon"


def node_taint_keys(node: Mapping[str, Any]) -> list[str | None]:
    return [taint.get("key") for taint in (node.get("spec") or {}).get("taints") or []]


def node_state(node: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a node this engine changes, for diffs."""
    metadata = node.get("metadata") or {}
    return dict(
        unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
        labels=dict(metadata.get("labels") or {}),
        annotations=dict((key, value) for key, value in (metadata.get("annotations") or {}).items()
                         if key in (CORDONED_BY_ANNOTATION, LEFT_PODS_ANNOTATION)),
    )


def check_not_autoscaler_target(node: Mapping[str, Any], parameter: str = "names") -> None:
    """C1: never cordon or drain a node the cluster autoscaler is deleting."""
    if AUTOSCALER_TAINT in node_taint_keys(node):
        name = (node.get("metadata") or {}).get("name")
        raise UpgradeError(
            AUTOSCALER_ACTIVE,
            "node %s carries the %s taint: the cluster autoscaler is removing it; refusing to cordon or drain it"
            % (name, AUTOSCALER_TAINT), node=name, parameter=parameter)


# What a run changed on a node, in CORDONED_BY_ANNOTATION: "<run_id>" when it set both spec.unschedulable and
# the exclusion label (also what the first format of the annotation meant), "<run_id>; set=<what>" when it set
# only one of them, so an uncordon by that run undoes only its own change (an operator's cordon or label stays).
SET_UNSCHEDULABLE = "unschedulable"
SET_LABEL = "label"
_CORDON_MARK_FIELDS = frozenset((SET_UNSCHEDULABLE, SET_LABEL))
_CORDON_MARK_SEPARATOR = "; set="


def cordon_mark(run_id: str, fields: Iterable[str]) -> str:
    """The CORDONED_BY_ANNOTATION value saying that ``run_id`` set ``fields`` (SET_UNSCHEDULABLE, SET_LABEL)."""
    fields = frozenset(fields)
    if fields == _CORDON_MARK_FIELDS:
        return run_id
    return "%s%s%s" % (run_id, _CORDON_MARK_SEPARATOR, ",".join(sorted(fields)))


def parse_cordon_mark(value: str) -> tuple[str, frozenset[str]]:
    """(run_id, frozenset of what it set) from a CORDONED_BY_ANNOTATION value; a bare run id means both."""
    head, separator, tail = value.rpartition(_CORDON_MARK_SEPARATOR)
    fields = frozenset(tail.split(","))
    if separator and fields <= _CORDON_MARK_FIELDS:
        return head, fields
    return value, _CORDON_MARK_FIELDS


def cordon_patch(node: Mapping[str, Any], run_id: str, exclude_from_load_balancers: bool) -> dict[str, Any] | None:
    """The merge patch that cordons (D1) and marks (U4) ``node``, or None when nothing would change."""
    state = node_state(node)
    patch = {}
    changing = set()
    if not state["unschedulable"]:
        patch["spec"] = {"unschedulable": True}
        changing.add(SET_UNSCHEDULABLE)
    if exclude_from_load_balancers and state["labels"].get(EXCLUDE_LB_LABEL) != "true":
        patch.setdefault("metadata", {})["labels"] = {EXCLUDE_LB_LABEL: "true"}
        changing.add(SET_LABEL)
    if changing:
        # The journal on the node: which run changed what, so a restore undoes only its own work. Another
        # run's mark stays; our own grows when this run sets more (an operator uncordoned in between).
        mark = state["annotations"].get(CORDONED_BY_ANNOTATION)
        owner, fields = parse_cordon_mark(mark) if mark is not None else (run_id, frozenset())
        if owner == run_id and not changing <= fields:
            patch.setdefault("metadata", {})["annotations"] = {
                CORDONED_BY_ANNOTATION: cordon_mark(run_id, fields | changing)}
    return patch or None


def uncordon_patch(node: Mapping[str, Any], run_id: str | None = None) -> dict[str, Any] | None:
    """The merge patch that undoes a cordon, or None (nothing to do, or cordoned by another run).

    With ``run_id``, only what that run recorded setting is undone. Without it (an explicit uncordon, as
    kubectl's) the node is made schedulable; the exclusion label is removed only when our annotation says we
    set it, so a label an operator set stays.
    """
    state = node_state(node)
    mark = state["annotations"].get(CORDONED_BY_ANNOTATION)
    owner, fields = parse_cordon_mark(mark) if mark is not None else (None, frozenset())
    patch = {}
    if run_id is None or owner == run_id:
        if state["unschedulable"] and (run_id is None or SET_UNSCHEDULABLE in fields):
            patch["spec"] = {"unschedulable": None}
        if mark is not None:
            metadata = patch.setdefault("metadata", {})
            metadata["annotations"] = {CORDONED_BY_ANNOTATION: None}
            if SET_LABEL in fields and EXCLUDE_LB_LABEL in state["labels"]:
                metadata["labels"] = {EXCLUDE_LB_LABEL: None}
    left = left_pods_mark(node)
    if left is not None and (run_id is None or left[0] == run_id):
        patch.setdefault("metadata", {}).setdefault("annotations", {})[LEFT_PODS_ANNOTATION] = None
    return patch or None


def left_pods_mark(node: Mapping[str, Any]) -> tuple[Any, frozenset[str]] | None:
    """(run_id, frozenset of "Kind ns/name") from the node's LEFT_PODS_ANNOTATION, or None (absent or unreadable)."""
    value = ((node.get("metadata") or {}).get("annotations") or {}).get(LEFT_PODS_ANNOTATION)
    try:
        parsed = json.loads(value) if value else None
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    return parsed.get("run_id"), frozenset(w for w in parsed.get("workloads") or [] if isinstance(w, str))


def apply_merge_patch(obj: Any, patch: Any) -> Any:
    """RFC 7386 merge patch applied to a copy of ``obj`` (for check-mode diffs)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(obj) if isinstance(obj, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def cordon(api: KubeApi, names: list[str], run_id: str, exclude_from_load_balancers: bool, check_mode: bool,
           log: Callable[[str], None]) -> dict[str, tuple[dict[str, Any], NodeResult]]:
    """Cordon and mark every node (C1 checked for all first). Returns {name: (node_after, NodeResult)}."""
    nodes = dict(zip(names, in_parallel(api.get_node, names)))
    for node in nodes.values():
        check_not_autoscaler_target(node)

    def cordon(name: str) -> tuple[dict[str, Any], NodeResult]:
        node = nodes[name]
        result = NodeResult(name)
        result.before = node_state(node)
        patch = cordon_patch(node, run_id, exclude_from_load_balancers)
        if patch is not None and not check_mode:
            node = api.patch_node(name, patch)
            message = "cordoned by eksops.nodegroup run %s" % run_id
            if exclude_from_load_balancers:
                message += "; excluded from external load balancers"
            api.record_event(node, REASON_CORDON, message, log=log)
            log("node %s: %s" % (name, message))
        elif patch is not None:
            node = apply_merge_patch(node, patch)
        result.after = node_state(node)
        result.changed = patch is not None
        result.cordoned = result.after["unschedulable"]
        return node, result

    return dict(zip(names, in_parallel(cordon, names)))


def read_nodes(core_v1: Any, node_names: Iterable[str] | None) -> tuple[dict[str, dict[str, Any]], int]:
    """({name: raw node}, requests made) for ``node_names``; ResourceNotFound naming the first unknown node."""
    names = validate_names(node_names)
    api = KubeApi(core_v1)
    with translate_k8s_errors("read nodes"):
        nodes = dict(zip(names, in_parallel(api.get_node, names)))
    return nodes, api.requests_made


def cordon_nodes(core_v1: Any, node_names: Iterable[str] | None, *, run_id: str, exclude_from_load_balancers: bool = True,
                 check_mode: bool = False, log: Callable[[str], None] | None = None) -> DrainResult:
    """D1/U4/C1: cordon (and label) every node; no-op for nodes already set. Returns a DrainResult."""
    names = validate_names(node_names)
    api = KubeApi(core_v1)
    result = DrainResult(names)
    with translate_k8s_errors("cordon nodes"):
        cordoned = cordon(api, names, run_id, exclude_from_load_balancers, check_mode, log or noop_log)
        for name, (_node, node_result) in cordoned.items():
            result.nodes[name] = node_result
    result.requests_made = api.requests_made
    return result


def uncordon_nodes(core_v1: Any, node_names: Iterable[str] | None, *, run_id: str | None = None, check_mode: bool = False,
                   log: Callable[[str], None] | None = None) -> DrainResult:
    """Undo a cordon. With ``run_id``, only nodes cordoned by that run are touched. Returns a DrainResult."""
    names = validate_names(node_names)
    log = log or noop_log
    api = KubeApi(core_v1)
    result = DrainResult(names)
    with translate_k8s_errors("uncordon nodes"):
        for name in names:
            node = api.get_node(name)
            node_result = result.nodes[name]
            node_result.before = node_state(node)
            patch = uncordon_patch(node, run_id)
            if patch is not None and not check_mode:
                node = api.patch_node(name, patch)
                api.record_event(node, REASON_UNCORDON, "uncordoned by eksops.nodegroup", log=log)
                log("node %s: uncordoned" % name)
            elif patch is not None:
                node = apply_merge_patch(node, patch)
            node_result.after = node_state(node)
            node_result.changed = patch is not None
            node_result.cordoned = node_result.after["unschedulable"]
    result.requests_made = api.requests_made
    return result
