# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The disruption controller's arithmetic (SPEC E5): a PodDisruptionBudget's status from its pods."""

from __future__ import annotations

import math
import time
from typing import Any

from . import objects
from .resources import DAEMONSETS, DEPLOYMENTS, PDBS, PODS, REPLICASETS, STATEFULSETS
from .selectors import from_label_selector_object
from .store import Store
from .timefmt import parse_rfc3339

# A pod recorded in disruptedPods that is still not deleted after this long counts as healthy again.
DISRUPTED_POD_TIMEOUT_SECONDS = 120.0


def matching_pods(store: Store, namespace: str, selector_obj: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Pods of `namespace` a LabelSelector object selects, narrowed through the label index."""
    selector = from_label_selector_object(selector_obj)
    keys = store.pod_keys_with_labels(namespace, selector.equalities())
    pods = store.items(PODS, namespace) if keys is None else [store.get(PODS, *key) for key in keys]
    return [pod for pod in pods if pod is not None and selector.matches(pod["metadata"].get("labels"))]


def pdbs_for_pod(store: Store, pod: dict[str, Any]) -> list[dict[str, Any]]:
    labels = pod["metadata"].get("labels") or {}
    return [pdb for pdb in store.items(PDBS, pod["metadata"]["namespace"])
            if from_label_selector_object(pdb["spec"].get("selector")).matches(labels)]


def _scaled(value: Any, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def _controller_scale(store: Store, pod: dict[str, Any]) -> tuple[str, int] | None:
    """(controller uid, desired replicas) of the workload owning `pod`, as the disruption controller finds it."""
    namespace = pod["metadata"]["namespace"]
    for ref in pod["metadata"].get("ownerReferences") or ():
        if not ref.get("controller"):
            continue
        if ref.get("kind") == "ReplicaSet":
            rs = store.get(REPLICASETS, namespace, ref["name"])
            if rs is None or rs["metadata"]["uid"] != ref["uid"]:
                return None
            for rs_ref in rs["metadata"].get("ownerReferences") or ():
                if rs_ref.get("controller") and rs_ref.get("kind") == "Deployment":
                    deployment = store.get(DEPLOYMENTS, namespace, rs_ref["name"])
                    if deployment is not None:
                        return deployment["metadata"]["uid"], int(deployment["spec"].get("replicas", 1))
            return rs["metadata"]["uid"], int(rs["spec"].get("replicas", 1))
        if ref.get("kind") == "DaemonSet":
            ds = store.get(DAEMONSETS, namespace, ref["name"])
            if ds is not None:
                return ds["metadata"]["uid"], int(ds.get("status", {}).get("desiredNumberScheduled", 0))
        if ref.get("kind") == "StatefulSet":  # kubernetes pkg/controller/disruption getPodStatefulSet: spec.replicas
            sts = store.get(STATEFULSETS, namespace, ref["name"])
            if sts is not None:
                return sts["metadata"]["uid"], int(sts["spec"].get("replicas", 1))
    return None


def compute_status(store: Store, pdb: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    spec = pdb["spec"]
    pods = matching_pods(store, pdb["metadata"]["namespace"], spec.get("selector"))
    sync_error = None
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and not isinstance(min_available, str):
        expected, desired = len(pods), int(min_available)
    else:
        scales: dict[str, int] = {}
        for pod in pods:
            found = _controller_scale(store, pod)
            if found is None:
                sync_error = f"found no controller for pod {pod['metadata']['name']!r}"
                break
            scales[found[0]] = found[1]
        expected = sum(scales.values())
        if min_available is not None:
            desired = _scaled(min_available, expected)
        elif max_unavailable is not None:
            desired = max(0, expected - _scaled(max_unavailable, expected))
        else:
            desired = 0

    previous = pdb.get("status") or {}
    disrupted: dict[str, str] = {}
    pods_by_name = {pod["metadata"]["name"]: pod for pod in pods}
    for name, when in (previous.get("disruptedPods") or {}).items():
        pod = pods_by_name.get(name)
        if pod is not None and not objects.is_terminating(pod) \
                and parse_rfc3339(when) + DISRUPTED_POD_TIMEOUT_SECONDS > now:
            disrupted[name] = when
    healthy = sum(1 for pod in pods if objects.pod_is_ready(pod) and not objects.is_terminating(pod)
                  and pod["metadata"]["name"] not in disrupted)
    allowed = 0 if sync_error else max(0, healthy - desired)
    generation = pdb["metadata"].get("generation", 1)
    status: dict[str, Any] = {"observedGeneration": generation, "expectedPods": expected,
                              "currentHealthy": healthy, "desiredHealthy": desired, "disruptionsAllowed": allowed}
    if disrupted:
        status["disruptedPods"] = disrupted
    if sync_error:
        cond = objects.condition("DisruptionAllowed", False, "SyncFailed", sync_error)
    elif allowed > 0:
        cond = objects.condition("DisruptionAllowed", True, "SufficientPods", "")
    else:
        cond = objects.condition("DisruptionAllowed", False, "InsufficientPods", "")
    cond["observedGeneration"] = generation
    status["conditions"] = objects.set_condition(previous.get("conditions"), cond)
    return status
