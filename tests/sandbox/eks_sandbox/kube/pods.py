# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pod side of the controller loop: the scheduler (least-loaded feasible node, replicas spread), the
kubelet starting bound pods, and pods finishing their graceful termination."""

from __future__ import annotations

import ipaddress
from typing import Any, Callable

from . import objects
from .api import Api
from .resources import NODES, PODS
from .store import Key, controller_uid
from .workloads import fits_node

# A pod that handles SIGTERM stops at most this fast; one that ignores it takes its whole (scaled) grace period.
QUICK_STOP_SECONDS = 0.2
_POD_NETWORK = ipaddress.ip_network("10.64.0.0/10")


class PodLifecycle:
    def __init__(self, api: Api, timings: dict[str, float], gone_nodes: Callable[[], set[str]]):
        self.api = api
        self.store = api.store
        self.timings = timings
        self._gone_nodes = gone_nodes
        self._bound_at: dict[Key, float] = {}
        self._next_ip = 1

    def sync(self, now: float) -> list[tuple[float, float, str]]:
        """One pass; returns the pods the kubelet stopped, as (deletion time, stop seconds, node)."""
        pending = list(self.store.pending_pods)
        if pending:
            nodes = {n["metadata"]["name"]: n for n in self.store.items(NODES)}
            self._schedule([key for key in pending if not self.store.get(PODS, *key)["spec"].get("nodeName")],
                           nodes)
            self._start(pending, nodes, now)
        return self._finish_terminating(now)

    # -- scheduler --

    def _schedule(self, unbound: list[Key], nodes: dict[str, dict[str, Any]]) -> None:
        if not unbound:
            return
        gone = self._gone_nodes()
        candidates = [node for name, node in nodes.items() if name not in gone and objects.node_ready(node)]
        load = {node["metadata"]["name"]: len(self.store.pod_keys_on_node(node["metadata"]["name"]))
                for node in candidates}
        capacity = {node["metadata"]["name"]: int(node["status"].get("allocatable", {}).get("pods", 110))
                    for node in candidates}
        spread: dict[str, dict[str, int]] = {}  # controller uid -> node -> its pods there
        pods = sorted((self.store.get(PODS, *key) for key in unbound),
                      key=lambda p: (p["metadata"]["creationTimestamp"], p["metadata"]["name"]))
        for pod in pods:
            owner = controller_uid(pod) or ""
            if owner not in spread:
                spread[owner] = self._pods_per_node(owner) if owner else {}
            feasible = [node["metadata"]["name"] for node in candidates
                        if load[node["metadata"]["name"]] < capacity[node["metadata"]["name"]]
                        and fits_node(pod["spec"], node)]
            if not feasible:
                self._mark_unschedulable(pod, len(nodes))
                continue
            chosen = min(feasible, key=lambda n: (spread[owner].get(n, 0), load[n], n))
            load[chosen] += 1
            spread[owner][chosen] = spread[owner].get(chosen, 0) + 1
            status = dict(pod.get("status") or {})
            status["conditions"] = objects.set_condition(status.get("conditions"),
                                                         objects.condition("PodScheduled", True, probe=True))
            self.store.replace(PODS, {**pod, "spec": {**pod["spec"], "nodeName": chosen}, "status": status})

    def _pods_per_node(self, owner_uid: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for key in self.store.pod_keys_of_controller(owner_uid):
            node = self.store.get(PODS, *key)["spec"].get("nodeName")
            if node:
                counts[node] = counts.get(node, 0) + 1
        return counts

    def _mark_unschedulable(self, pod: dict[str, Any], node_count: int) -> None:
        message = f"0/{node_count} nodes are available: no node is Ready, schedulable, with a free pod slot, " \
                  "matching the pod's node selector and tolerating its taints."
        status = dict(pod.get("status") or {})
        for cond in status.get("conditions") or ():
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return
        status["conditions"] = objects.set_condition(status.get("conditions"), objects.condition(
            "PodScheduled", False, "Unschedulable", message, probe=True))
        self.store.replace(PODS, {**pod, "status": status})

    # -- kubelet: start --

    def _start(self, pending: list[Key], nodes: dict[str, dict[str, Any]], now: float) -> None:
        gone = self._gone_nodes()
        for key in [k for k in self._bound_at if k not in self.store.pending_pods]:
            del self._bound_at[key]
        for key in pending:
            pod = self.store.get(PODS, *key)
            if pod is None or key not in self.store.pending_pods:
                continue
            node = nodes.get(pod["spec"].get("nodeName") or "")
            if node is None or node["metadata"]["name"] in gone or not objects.node_ready(node):
                continue
            bound_at = self._bound_at.setdefault(key, now)
            if now - bound_at >= self.timings["pod_start_seconds"]:
                self.store.replace(PODS, self._running(pod, node))
                del self._bound_at[key]

    def _pod_ip(self) -> str:
        ip = _POD_NETWORK.network_address + self._next_ip
        self._next_ip = self._next_ip % (_POD_NETWORK.num_addresses - 2) + 1
        return str(ip)

    def _running(self, pod: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
        started = objects.rfc3339()
        host_ip = next((a["address"] for a in node["status"].get("addresses") or ()
                        if a.get("type") == "InternalIP"), "10.0.0.1")
        pod_ip = self._pod_ip()
        conditions = pod.get("status", {}).get("conditions")
        for type_ in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"):
            conditions = objects.set_condition(conditions, objects.condition(type_, True, probe=True))
        container_statuses = [{
            "name": c["name"], "image": c.get("image", objects.CONTAINER_IMAGE),
            "imageID": f"{c.get('image', objects.CONTAINER_IMAGE)}@sha256:{'0' * 64}",
            "containerID": f"containerd://{objects.template_hash({'pod': pod['metadata']['uid'], 'c': c['name']})}",
            "ready": True, "restartCount": 0, "started": True, "state": {"running": {"startedAt": started}},
        } for c in pod["spec"].get("containers") or ()]
        status = {**pod.get("status", {}), "phase": "Running", "conditions": conditions, "hostIP": host_ip,
                  "hostIPs": [{"ip": host_ip}], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}], "startTime": started,
                  "containerStatuses": container_statuses}
        return {**pod, "status": status}

    # -- kubelet: graceful termination --

    def _stop_seconds(self, pod: dict[str, Any]) -> float:
        scaled = float(pod["metadata"].get("deletionGracePeriodSeconds", 0)) * self.timings["grace_period_scale"]
        annotations = pod["metadata"].get("annotations") or {}
        if annotations.get(objects.IGNORE_SIGTERM_ANNOTATION) == "true":
            return scaled
        return min(scaled, QUICK_STOP_SECONDS)

    def _finish_terminating(self, now: float) -> list[tuple[float, float, str]]:
        """Remove the pods whose stop is over; returns (deletion time, stop seconds, node) of each."""
        stopped = []
        gone = self._gone_nodes()
        for key, since in list(self.store.terminating_pods.items()):
            pod = self.store.get(PODS, *key)
            if pod is None or pod["metadata"].get("finalizers"):
                continue
            node = pod["spec"].get("nodeName") or ""
            if node in gone:
                continue  # no kubelet to confirm the stop: the pod goes with its node
            stop = self._stop_seconds(pod)
            if now - since >= stop:
                self.store.remove(PODS, *key)
                stopped.append((since, stop, node))
        return stopped
