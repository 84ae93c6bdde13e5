# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workloads whose pods come back to the node being drained (SPEC Z3, D14; issue 10 item 7).

A cordon keeps the scheduler away from a node, but not a pod that tolerates the cordon's
``node.kubernetes.io/unschedulable`` taint (a Deployment with ``tolerations: [{operator: Exists}]`` tolerates
every taint), nor a pod its controller binds to the node itself (``spec.nodeName``, a DaemonSet-like
controller pinning its pods with node affinity on ``metadata.name``). Evicting such a pod only makes its
controller create another one that lands on the same node: an eviction storm, with the workload at 0 Ready
until the drain gives up. EKS lists "a Deployment that tolerates all taints" as a PodEvictionFailure cause.

The drain asks a ``ReturnTracker`` (one per node) about every pod that lands on the node after the drain
listed it. A newcomer *returns* when a pod of the same workload was removed from this node by this drain
(eviction or delete accepted, or in flight). A return with a cause in the pod's spec (it tolerates the
cordon, or it is pinned to the node) flags the workload at once; a return with no visible cause (the pod
was bound by ``spec.nodeName``, or a scheduler had not seen the cordon yet) is evicted again after a
jittered backoff, and the next return flags the workload. The drain then stops evicting the workload's pods
on that node: without ``force`` the node fails (PodEvictionFailure naming the workload and why), with
``force`` its pods are left to go with the node.

Pure logic over raw pod and node dicts; no API calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
import random
import threading

from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import backoff_delay

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
HOSTNAME_LABEL = "kubernetes.io/hostname"
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"

# Why a workload's pods come back (the ``cause`` of a Returning workload).
TOLERATES_ALL = "tolerates_all"
TOLERATES_CORDON = "tolerates_cordon"
PINNED = "pinned"
BOUND = "bound"

CAUSE_TEXT = {
    TOLERATES_ALL: "its pods tolerate every taint and are scheduled back onto the cordoned node",
    TOLERATES_CORDON: "its pods tolerate the %s taint and are scheduled back onto the cordoned node"
                      % UNSCHEDULABLE_TAINT,
    PINNED: "its pods are pinned to this node (node affinity on metadata.name or a %s node selector, as a "
            "DaemonSet's are) and are recreated on it" % HOSTNAME_LABEL,
    BOUND: "its pods are bound to this node by spec.nodeName, past the scheduler and the cordon, and come back "
           "after each eviction",
}

# What would let the drain go through without force.
REMEDY = {
    TOLERATES_ALL: "give its pods keyed tolerations instead of one that tolerates every taint",
    TOLERATES_CORDON: "remove its pods' toleration of the %s taint" % UNSCHEDULABLE_TAINT,
    PINNED: "unpin it from the node or scale it down",
    BOUND: "stop its controller binding pods to the node or scale it down",
}

# How many returns without a cause in the pod's spec flag a workload: one may be chance (a scheduler that had
# not seen the cordon yet), two are a pattern.
RETURNS_WITHOUT_CAUSE = 2


# --------------------------------------------------------------------------------------------------------
# Pure helpers
# --------------------------------------------------------------------------------------------------------

def controller_ref(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ownerReference with controller: true, or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def workload_of(pod: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of the workload that owns ``pod``, or None for a pod without a controller.

    A ReplicaSet that a Deployment made is named ``<deployment>-<pod-template-hash>`` and its pods carry the
    ``pod-template-hash`` label: such a pod's workload is the Deployment (no read of the ReplicaSet, so no
    extra permission), which also keeps one workload across a rollout that makes a new ReplicaSet.
    """
    ref = controller_ref(pod)
    if ref is None:
        return None
    metadata = pod.get("metadata") or {}
    namespace = metadata.get("namespace") or ""
    kind, name = ref.get("kind") or "", ref.get("name") or ""
    pod_hash = (metadata.get("labels") or {}).get(POD_TEMPLATE_HASH_LABEL)
    if kind == "ReplicaSet" and pod_hash and name.endswith("-" + pod_hash) and len(name) > len(pod_hash) + 1:
        return ("Deployment", namespace, name[:-len(pod_hash) - 1])
    return (kind, namespace, name)


def workload_ref(workload: tuple[str, str, str]) -> str:
    """"Kind namespace/name" of a workload tuple."""
    kind, namespace, name = workload
    return "%s %s/%s" % (kind, namespace, name)


def _pod_spec(pod: Mapping[str, Any]) -> dict[str, Any]:
    return pod.get("spec") or {}


def _tolerates(toleration: Mapping[str, Any], key: str, effect: str) -> bool:
    if toleration.get("effect") and toleration.get("effect") != effect:
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration.get("key") == key
    return toleration.get("key") == key


def tolerates_every_taint(pod: Mapping[str, Any]) -> bool:
    """A toleration with operator Exists and no key (and no effect) tolerates every taint."""
    return any(t.get("operator") == "Exists" and not t.get("key") and not t.get("effect")
               for t in _pod_spec(pod).get("tolerations") or [])


def tolerates_cordon(pod: Mapping[str, Any]) -> bool:
    """Whether the pod tolerates the NoSchedule taint a cordon puts on a node."""
    return any(_tolerates(t, UNSCHEDULABLE_TAINT, "NoSchedule") for t in _pod_spec(pod).get("tolerations") or [])


def _only_value(requirement: Mapping[str, Any], key: str) -> str | None:
    """The single value an ``In`` requirement on ``key`` allows, or None."""
    values = requirement.get("values") or []
    if requirement.get("key") == key and requirement.get("operator") == "In" and len(values) == 1:
        return values[0]
    return None


def pinned_to_node(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether the pod can only run on ``node``: a nodeSelector on its hostname, or required node affinity on
    its ``metadata.name`` (what the DaemonSet controller writes) or its hostname, in every term."""
    metadata = node.get("metadata") or {}
    node_name = metadata.get("name")
    hostname = (metadata.get("labels") or {}).get(HOSTNAME_LABEL) or node_name
    spec = _pod_spec(pod)
    if (spec.get("nodeSelector") or {}).get(HOSTNAME_LABEL) == hostname:
        return True
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []

    def pins(term: Mapping[str, Any]) -> bool:
        return (any(_only_value(r, "metadata.name") == node_name for r in term.get("matchFields") or [])
                or any(_only_value(r, HOSTNAME_LABEL) == hostname for r in term.get("matchExpressions") or []))

    return bool(terms) and all(pins(term) for term in terms)


def return_cause(pod: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    """Why a pod that came back to the cordoned ``node`` could land there: TOLERATES_ALL, TOLERATES_CORDON,
    PINNED, or BOUND (nothing in its spec lets the scheduler put it there: its controller bound it)."""
    if tolerates_every_taint(pod):
        return TOLERATES_ALL
    if tolerates_cordon(pod):
        return TOLERATES_CORDON
    if pinned_to_node(pod, node):
        return PINNED
    return BOUND


def _is_candidate(pod: Mapping[str, Any]) -> bool:
    """Only running pods of a (non-DaemonSet) controller can return; a terminating one is already leaving."""
    metadata = pod.get("metadata") or {}
    if metadata.get("deletionTimestamp") or ((pod.get("status") or {}).get("phase")) in ("Succeeded", "Failed"):
        return False
    ref = controller_ref(pod)
    return ref is not None and ref.get("kind") != "DaemonSet"


# --------------------------------------------------------------------------------------------------------
# The tracker
# --------------------------------------------------------------------------------------------------------

class Returning:
    """A workload whose pods come back to the node: what, why, and the figures."""

    def __init__(self, workload: tuple[str, str, str], cause: str, removed: int, returned: int) -> None:
        self.workload = workload
        self.cause = cause
        self.removed = removed
        self.returned = returned
        self.pods = []

    @property
    def ref(self) -> str:
        return workload_ref(self.workload)

    @property
    def why(self) -> str:
        return CAUSE_TEXT[self.cause]

    @property
    def remedy(self) -> str:
        return REMEDY[self.cause]

    def describe(self) -> str:
        """"<Kind ns/name>: <why> (N evicted from this node, M came back)"."""
        return "%s: %s (%d of its pod(s) removed from this node, %d came back)" % (
            self.ref, self.why, self.removed, self.returned)

    def to_dict(self) -> dict[str, Any]:
        return dict(workload=self.ref, reason=self.why, cause=self.cause, removed=self.removed,
                    returned=self.returned, pods=sorted(self.pods))


class ReturnTracker:
    """One node's record of the workloads this drain removed pods of, and of their pods that came back.

    ``sending(pod)`` before a removal request, ``sent(pod, accepted)`` after it; ``arrived(pod)`` for a pod
    that landed on the node after the drain listed it: the workload's Returning when it is (now) flagged,
    else None (a newcomer as any other; ``take_delay(pod)`` then says how long to wait before evicting a
    return that has no visible cause). Thread-safe: removals report from the eviction workers, arrivals come
    from the node's watch.
    """

    def __init__(self, node: Mapping[str, Any], rng: Any = random) -> None:
        self.node = node
        self._rng = rng
        self._lock = threading.Lock()
        self._in_flight = {}   # workload -> removal requests being sent
        self._removed = {}     # workload -> removals accepted
        self._returns = {}     # workload -> pods that came back
        self._delays = {}      # pod uid -> backoff before evicting it
        self._flagged = {}     # workload -> Returning

    def sending(self, pod: Mapping[str, Any]) -> None:
        workload = workload_of(pod)
        if workload is None:
            return
        with self._lock:
            self._in_flight[workload] = self._in_flight.get(workload, 0) + 1

    def sent(self, pod: Mapping[str, Any], accepted: bool) -> None:
        workload = workload_of(pod)
        if workload is None:
            return
        with self._lock:
            self._in_flight[workload] = max(0, self._in_flight.get(workload, 0) - 1)
            if accepted:
                self._removed[workload] = self._removed.get(workload, 0) + 1
                if workload in self._flagged:
                    self._flagged[workload].removed += 1

    def arrived(self, pod: Mapping[str, Any]) -> Returning | None:
        """Record a newcomer; the Returning of its workload when the workload is flagged, else None."""
        if not _is_candidate(pod):
            return None
        workload = workload_of(pod)
        with self._lock:
            flagged = self._flagged.get(workload)
            if flagged is not None:
                flagged.returned += 1
                return flagged
            # The replacement may be seen before the eviction's answer: a removal in flight counts.
            if not self._removed.get(workload) and not self._in_flight.get(workload):
                return None
            returns = self._returns[workload] = self._returns.get(workload, 0) + 1
            cause = return_cause(pod, self.node)
            if cause != BOUND or returns >= RETURNS_WITHOUT_CAUSE:
                flagged = self._flagged[workload] = Returning(workload, cause, self._removed.get(workload, 0), returns)
                return flagged
            # Back off between evictions of the same workload: 0.25-0.5 s, doubling per return.
            self._delays[(pod.get("metadata") or {}).get("uid")] = backoff_delay(returns - 1, rng=self._rng)
            return None

    def take_delay(self, pod: Mapping[str, Any]) -> float:
        """Seconds to wait before evicting ``pod`` (a return with no visible cause), once; 0.0 otherwise."""
        with self._lock:
            return self._delays.pop((pod.get("metadata") or {}).get("uid"), 0.0)

    def flagged(self, pod: Mapping[str, Any]) -> Returning | None:
        """The Returning of ``pod``'s workload, or None."""
        workload = workload_of(pod)
        if workload is None:
            return None
        with self._lock:
            return self._flagged.get(workload)

    def returning(self) -> list[Returning]:
        """Every flagged workload, by reference."""
        with self._lock:
            return sorted(self._flagged.values(), key=lambda r: r.ref)
