# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The evictions EKS makes while it updates a managed node group, counted from the cluster (issue 29 item 3: the
report said pods_evicted 0 and disruptions_per_old_pod null on a managed group; 1.79 evictions per old pod measured).

EKS drains through the Kubernetes API ("Managed node groups": "Amazon EKS automatically drains nodes using the
Kubernetes API"; "Managed node update behavior": "It drains the Pods from the node"), and kube-apiserver's eviction
handler marks every pod it evicts with the condition DisruptionTarget, reason EvictionByEvictionAPI, before it
deletes the pod (kubernetes pkg/registry/core/pod/storage/eviction.go, the PodDisruptionConditions feature: on by
default since Kubernetes 1.26, GA in 1.31). A watch of the pods sees each one; those on a node of the node group
(label eks.amazonaws.com/nodegroup, which EKS sets) are the evictions of its update. A watch of the group's nodes
says which nodes the update replaced: those there when following began and gone at its end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
import threading

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.kinds import EKS_NODEGROUP_LABEL
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import Waker, list_then_watch

EVICTION_CONDITION_TYPE = "DisruptionTarget"
EVICTION_CONDITION_REASON = "EvictionByEvictionAPI"
# Each WATCH request is renewed after this long (list_then_watch resumes from the last resourceVersion).
WATCH_WINDOW_SECONDS = 300
# How long stop() waits for a watch thread to end once its stream is shut down.
STOP_WAIT_SECONDS = 10


def evicted_on(pod: Mapping[str, Any]) -> str | None:
    """The node of a pod the Eviction API is evicting (its DisruptionTarget condition), else None."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == EVICTION_CONDITION_TYPE and condition.get("status") == "True" \
                and condition.get("reason") == EVICTION_CONDITION_REASON:
            return (pod.get("spec") or {}).get("nodeName")
    return None


def eviction_counts(evicted: Mapping[str, str | None], group_nodes: set[str], nodes_at_start: set[str],
                    nodes_at_end: set[str]) -> dict[str, Any]:
    """{pods_evicted, nodes_replaced}: the evictions (``evicted``: pod uid -> node) from nodes of the group (every
    name the group's nodes had while it was watched), and the nodes there at the start and gone at the end."""
    return dict(pods_evicted=sum(1 for node in evicted.values() if node in group_nodes),
                nodes_replaced=sorted(nodes_at_start - nodes_at_end))


class EvictionWatch:
    """Two watches while EKS works, each in a thread of its own: the cluster's pods (each evicted pod recorded once,
    by uid) and the node group's nodes (their names). ``start()`` before the update starts (or is followed),
    ``stop()`` after; it returns eviction_counts. ``log`` hears of a watch that failed (the count then misses what it
    did not see, and says so: counted False)."""

    def __init__(self, core_v1: Any, nodegroup_name: str, log: Callable[[str], None]) -> None:
        self.core_v1 = core_v1
        self.selector = "%s=%s" % (EKS_NODEGROUP_LABEL, nodegroup_name)
        self.log = log
        self._lock = threading.Lock()
        self._stopped = False
        self._failed = False
        self._evicted = {}
        self._nodes_seen = set()
        self._nodes_at_start = None
        self._nodes_now = set()
        self._wakers = []
        self._threads = []

    def _pods(self, objects: Mapping[Any, Mapping[str, Any]]) -> bool:
        with self._lock:
            for pod in objects.values():
                uid = (pod.get("metadata") or {}).get("uid")
                if uid not in self._evicted:
                    node = evicted_on(pod)
                    if node is not None:
                        self._evicted[uid] = node
            return self._stopped

    def _nodes(self, objects: Mapping[Any, Mapping[str, Any]]) -> bool:
        names = set(node["metadata"]["name"] for node in objects.values())
        with self._lock:
            if self._nodes_at_start is None:
                self._nodes_at_start = set(names)
            self._nodes_now = names
            self._nodes_seen |= names
            return self._stopped

    def _watch(self, pods: bool, waker: Waker, ready: threading.Event) -> None:
        """The watch of the cluster's pods (``pods``) or of the group's nodes, until stop()."""
        list_func = self.core_v1.list_node
        kwargs = dict(label_selector=self.selector)
        condition = self._nodes
        if pods:
            list_func = self.core_v1.list_pod_for_all_namespaces
            kwargs = {}
            condition = self._pods

        def first(objects: Mapping[Any, Any]) -> bool:
            ready.set()
            return condition(objects)

        try:
            while not self._stopped:
                list_then_watch(list_func, timeout=WATCH_WINDOW_SECONDS, condition=first, waker=waker, **kwargs)
        except Exception as exc:  # pylint: disable=broad-except
            with self._lock:
                self._failed = True
            self.log("cannot watch the cluster to count EKS's evictions (%s)" % exc)
        finally:
            ready.set()

    def start(self) -> None:
        """Both watches listed (so nothing EKS does from now on is missed), then watching."""
        for pods in (True, False):
            waker, ready = Waker(), threading.Event()
            thread = threading.Thread(target=self._watch, args=(pods, waker, ready), name="eksops-eks-evictions")
            thread.daemon = True
            thread.start()
            self._wakers.append(waker)
            self._threads.append((thread, ready))
        for dummy, ready in self._threads:
            ready.wait()

    def stop(self) -> dict[str, Any]:
        """End both watches; returns {pods_evicted, nodes_replaced, counted}."""
        with self._lock:
            self._stopped = True
        for waker in self._wakers:
            waker.wake()
        for thread, dummy in self._threads:
            thread.join(STOP_WAIT_SECONDS)
        return self.counts()

    def counts(self) -> dict[str, Any]:
        """{pods_evicted, nodes_replaced, counted} as far as the watches have seen."""
        with self._lock:
            counts = eviction_counts(self._evicted, self._nodes_seen, self._nodes_at_start or set(), self._nodes_now)
            counts["counted"] = not self._failed
        return counts
