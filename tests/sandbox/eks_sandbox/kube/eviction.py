# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""POST pods/<name>/eviction, as kube-apiserver's eviction REST handler decides (SPEC E1-E4)."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from . import errors, objects
from .api import Api
from .disruption import pdbs_for_pod
from .resources import PDBS, PODS
from .timefmt import rfc3339

PDB_VIOLATION_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_PDBS_MESSAGE = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
# Retry-After the API server suggests while the disruption controller has not caught up with a PDB change.
PDB_PROCESSING_RETRY_SECONDS = 10


def _disruption_target_condition() -> dict[str, Any]:
    return objects.condition("DisruptionTarget", True, "EvictionByEvictionAPI", "Eviction API: evicting")


def _can_ignore_pdb(pod: dict[str, Any]) -> bool:
    """E1: a pod that is not running (or already going) costs no disruption."""
    return pod.get("status", {}).get("phase") in ("Pending", "Succeeded", "Failed") or objects.is_terminating(pod)


def _budget_error(message: str, cause: str, retry_after: int | None) -> errors.ApiError:
    return errors.ApiError(429, message, details={"causes": [{"type": "DisruptionBudget", "message": cause}]},
                           retry_after=retry_after)


def evict(api: Api, namespace: str, name: str, body: Any) -> dict[str, Any]:
    """Evict the pod or raise the ApiError the API server answers; returns the 201 Success status."""
    if body is not None and not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be an Eviction object")
    eviction = body or {}
    if eviction.get("metadata", {}).get("name") not in (None, "", name):
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = dict(eviction.get("deleteOptions") or {})
    dry_run = bool(options.pop("dryRun", None))
    store = api.store
    with store.lock:
        pod = api.get(PODS, namespace, name)
        api.check_preconditions(PODS, pod, options)
        if not _can_ignore_pdb(pod):
            pdbs = pdbs_for_pod(store, pod)
            if len(pdbs) > 1:
                raise errors.ApiError(500, MULTIPLE_PDBS_MESSAGE)
            if pdbs and not _unhealthy_pod_may_go(pod, pdbs[0]):
                _check_and_decrement(api, pdbs[0], name, dry_run)
        if not dry_run:
            api.delete(PODS, namespace, name, options, pod_condition=_disruption_target_condition())
    return errors.success_status(201)


def _unhealthy_pod_may_go(pod: dict[str, Any], pdb: dict[str, Any]) -> bool:
    """E3: an unready pod is evicted without spending the budget when the policy or the budget allows it."""
    if objects.pod_is_ready(pod):
        return False
    if pdb["spec"].get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = pdb.get("status") or {}
    return status.get("currentHealthy", 0) >= status.get("desiredHealthy", 0) > 0


def _check_and_decrement(api: Api, pdb: dict[str, Any], pod_name: str, dry_run: bool) -> None:
    """E4: spend one disruption of the budget, or refuse with 429."""
    status = pdb.get("status") or {}
    pdb_name = pdb["metadata"]["name"]
    if status.get("observedGeneration", 0) < pdb["metadata"].get("generation", 1):
        raise _budget_error(PDB_VIOLATION_MESSAGE, f"The disruption budget {pdb_name} is still being processed "
                                                   "by the server.", PDB_PROCESSING_RETRY_SECONDS)
    if status.get("disruptionsAllowed", 0) <= 0:
        raise _budget_error(PDB_VIOLATION_MESSAGE,
                            f"The disruption budget {pdb_name} needs {status.get('desiredHealthy', 0)} healthy "
                            f"pods and has {status.get('currentHealthy', 0)} currently", None)
    if dry_run:
        return
    new_status = dict(status)
    new_status["disruptionsAllowed"] = status["disruptionsAllowed"] - 1
    new_status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: rfc3339(time.time())}
    if new_status["disruptionsAllowed"] == 0:
        cond = objects.condition("DisruptionAllowed", False, "InsufficientPods", "")
        cond["observedGeneration"] = status.get("observedGeneration", 0)
        new_status["conditions"] = objects.set_condition(status.get("conditions"), cond)
    api.store.replace(PDBS, {**pdb, "status": new_status})
    # For the disruption controller's measurement of budget rounds (Controllers._record_rounds).
    api.store.budget_spent.setdefault(pdb["metadata"]["uid"], deque()).append(time.monotonic())
