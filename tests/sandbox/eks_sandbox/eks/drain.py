# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What EKS does to nodes through the Kubernetes API during an update: it finds a node by its instance, marks old
nodes, and drains a node by evicting its pods through the Eviction API, so PodDisruptionBudgets answer EKS exactly
as they answer any client (kube/eviction.py).

Source: the EKS user guide, "Managed node update behavior": "It marks nodes as unschedulable ... It also labels
nodes with node.kubernetes.io/exclude-from-external-load-balancers=true"; "It drains the Pods from the node";
"Managed node groups": "Amazon EKS automatically drains nodes using the Kubernetes API".
"""

from __future__ import annotations

from typing import Any

from ..kube import errors, objects
from ..kube.api import Api
from ..kube.eviction import evict
from ..kube.patch import MERGE_PATCH
from ..kube.resources import NODES, PODS
from ..kube.store import Store

__all__ = ["EXCLUDE_LB_LABEL", "NodeDrain", "mark_for_removal", "nodes_by_instance"]

EXCLUDE_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"


def nodes_by_instance(store: Store) -> dict[str, dict[str, Any]]:
    """Nodes keyed by the EC2 instance in their spec.providerID (aws:///<az>/<instance-id>)."""
    with store.lock:
        return {node["spec"]["providerID"].rsplit("/", 1)[-1]: node for node in store.items(NODES)
                if node["spec"].get("providerID", "").startswith("aws:///")}


def mark_for_removal(api: Api, node_name: str) -> None:
    """Cordon the node and take it out of external load balancers."""
    api.patch(NODES, "", node_name, {"spec": {"unschedulable": True},
                                     "metadata": {"labels": {EXCLUDE_LB_LABEL: "true"}}}, MERGE_PATCH)


def _stays_on_node(pod: dict[str, Any]) -> bool:
    """DaemonSet and mirror pods belong to their node: a drain leaves them (as kubectl drain does)."""
    if objects.MIRROR_ANNOTATION in (pod["metadata"].get("annotations") or {}):
        return True
    return any(ref.get("controller") and ref.get("kind") == "DaemonSet"
               for ref in pod["metadata"].get("ownerReferences") or ())


class NodeDrain:
    """The drain of one node: every step evicts the pods still on it (a refused eviction is retried at the next
    step), and `remaining()` says which pods have not left yet (a pod being deleted has not left)."""

    def __init__(self, api: Api, node_name: str, started_at: float):
        self.api = api
        self.node_name = node_name
        self.started_at = started_at
        self.refusals: dict[str, str] = {}  # "<ns>/<pod>" -> why its last eviction was refused

    def _pods(self) -> list[dict[str, Any]]:
        store = self.api.store
        with store.lock:
            pods = (store.get(PODS, *key) for key in store.pod_keys_on_node(self.node_name))
            return [pod for pod in pods if pod is not None and not _stays_on_node(pod)]

    def remaining(self) -> list[str]:
        return sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in self._pods())

    def step(self) -> list[str]:
        """Evict every pod not already going; returns the pods still on the node."""
        for pod in self._pods():
            if objects.is_terminating(pod):
                continue
            namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            try:
                evict(self.api, namespace, name, None)
                self.refusals.pop(f"{namespace}/{name}", None)
            except errors.ApiError as exc:
                if exc.code != 404:
                    self.refusals[f"{namespace}/{name}"] = exc.message
        return self.remaining()

    def delete_remaining(self) -> None:
        """The force flag: delete the pods that would not leave, PodDisruptionBudgets notwithstanding."""
        for pod in self._pods():
            if not objects.is_terminating(pod):
                try:
                    self.api.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
                except errors.ApiError as exc:
                    if exc.code != 404:
                        raise
