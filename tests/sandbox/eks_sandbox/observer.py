# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The observer: samples node and replica counts over time and builds the report (README "Report").

It is fed plain data (a `KubeSim.snapshot()`, `AwsSim.instances()`, ASG views) so it can be tested with
synthetic snapshots. Sampling starts once the sandbox is settled: minima taken while the cluster is still
booting would say nothing about an upgrade.
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["Observer"]

# Instances that count towards a group's size: launched and not on their way out.
_LIVE_INSTANCE_STATES = ("pending", "running")


class _Range:
    """Lowest and highest value seen."""

    def __init__(self) -> None:
        self.low: int | None = None
        self.high: int | None = None

    def add(self, value: int) -> None:
        self.low = value if self.low is None else min(self.low, value)
        self.high = value if self.high is None else max(self.high, value)


class _NodegroupStats:
    def __init__(self) -> None:
        self.nodes = _Range()
        self.ready = _Range()
        self.instances = _Range()


class Observer:
    """Thread-safe: `sample` runs on the controller loop, `report` on the control server's threads."""

    def __init__(self, scenario: dict[str, Any], recorder: Any, max_timeline: int = 2000):
        self._scenario = scenario
        self._recorder = recorder
        self._max_timeline = max(2, max_timeline)
        self._lock = threading.Lock()
        self._nodegroups: dict[str, _NodegroupStats] = {ng["name"]: _NodegroupStats()
                                                        for ng in scenario["nodegroups"]}
        self._min_ready: dict[str, int] = {}
        self._open_violations: dict[str, dict[str, Any]] = {}
        self._violations: list[dict[str, Any]] = []
        self._timeline: list[dict[str, Any]] = []
        self._timeline_decimations = 0
        self._samples = 0

    # --------------------------------------------------------------------------------------------- sampling

    def sample(self, snapshot: dict[str, Any], instances: list[dict[str, Any]] | None = None,
               now: float | None = None) -> None:
        """Record one observation of the cluster."""
        now = time.time() if now is None else now
        node_counts = self._node_counts(snapshot["nodes"])
        instance_counts = self._instance_counts(instances) if instances is not None else None
        with self._lock:
            self._samples += 1
            for name in node_counts:
                self._nodegroups.setdefault(name, _NodegroupStats())
            for name, stats in self._nodegroups.items():
                counts = node_counts.get(name, {"total": 0, "ready": 0, "unschedulable": 0, "ready_by_az": {}})
                stats.nodes.add(counts["total"])
                stats.ready.add(counts["ready"])
                if instance_counts is not None:
                    stats.instances.add(instance_counts.get(name, 0))
            ready_replicas = {}
            for key, workload in snapshot["workloads"].items():
                ready = workload["ready"]
                ready_replicas[key] = ready
                self._min_ready[key] = min(ready, self._min_ready.get(key, ready))
                self._check_budget(key, ready, workload.get("pdb_min_available"), now)
            self._add_to_timeline({"t": round(now, 3), "nodes": node_counts, "ready_replicas": ready_replicas})

    @staticmethod
    def _node_counts(nodes: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for node in nodes:
            entry = counts.setdefault(node["nodegroup"] or "",
                                      {"total": 0, "ready": 0, "unschedulable": 0, "ready_by_az": {}})
            entry["total"] += 1
            entry["ready"] += bool(node["ready"])
            entry["unschedulable"] += bool(node["unschedulable"])
            if node["ready"]:
                entry["ready_by_az"][node["az"]] = entry["ready_by_az"].get(node["az"], 0) + 1
        return dict(sorted(counts.items()))

    @staticmethod
    def _instance_counts(instances: list[dict[str, Any]]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for instance in instances:
            if instance["state"] in _LIVE_INSTANCE_STATES:
                counts[instance["nodegroup"]] = counts.get(instance["nodegroup"], 0) + 1
        return counts

    def _check_budget(self, key: str, ready: int, min_available: int | None, now: float) -> None:
        """One violation per episode of ready < minAvailable; `ready` is the lowest seen in the episode."""
        open_violation = self._open_violations.get(key)
        if min_available is None or ready >= min_available:
            if open_violation is not None:
                open_violation["until"] = round(now, 3)
                del self._open_violations[key]
            return
        if open_violation is None:
            open_violation = {"workload": key, "time": round(now, 3), "ready": ready,
                              "min_available": min_available, "until": None}
            self._violations.append(open_violation)
            self._open_violations[key] = open_violation
            self._recorder.event("pdb_violation", workload=key, ready=ready, min_available=min_available)
        open_violation["ready"] = min(open_violation["ready"], ready)

    def _add_to_timeline(self, entry: dict[str, Any]) -> None:
        """Keep only samples that differ from the previous one; halve the history when it grows too long."""
        if self._timeline:
            last = self._timeline[-1]
            if last["nodes"] == entry["nodes"] and last["ready_replicas"] == entry["ready_replicas"]:
                return
        self._timeline.append(entry)
        if len(self._timeline) > self._max_timeline:
            # Every other change is dropped, the newest kept: the shape of the whole run survives.
            self._timeline = self._timeline[-1::-2][::-1]
            self._timeline_decimations += 1

    # --------------------------------------------------------------------------------------------- report

    @property
    def samples(self) -> int:
        with self._lock:
            return self._samples

    def report(self, snapshot: dict[str, Any], asg_views: dict[str, dict[str, Any]],
               instances: list[dict[str, Any]] | None = None, extra: dict[str, Any] | None = None
               ) -> dict[str, Any]:
        """The report; the given (fresh) snapshot also counts as a sample."""
        self.sample(snapshot, instances)
        with self._lock:
            nodegroups = {}
            for name, stats in self._nodegroups.items():
                nodegroups[name] = {
                    "node_count_min": stats.nodes.low,
                    "node_count_max": stats.nodes.high,
                    "ready_nodes_min": stats.ready.low,
                    "instance_count_min": stats.instances.low,
                    "instance_count_max": stats.instances.high,
                    "nodes": sorted((self._node_view(n) for n in snapshot["nodes"] if (n["nodegroup"] or "") == name),
                                    key=lambda n: n["name"]),
                    "asg": asg_views.get(name),
                }
            workloads = {
                key: {"kind": w["kind"], "replicas": w["replicas"], "ready": w["ready"],
                      "min_ready": self._min_ready.get(key, w["ready"]),
                      "pdb_min_available": w.get("pdb_min_available")}
                for key, w in sorted(snapshot["workloads"].items())
            }
            report = {
                "scenario": self._scenario["name"],
                "time": round(time.time(), 3),
                "samples": self._samples,
                "nodegroups": nodegroups,
                "workloads": workloads,
                "pdb_violations": [dict(v) for v in self._violations],
                "timeline": list(self._timeline),
                "timeline_decimations": self._timeline_decimations,
            }
        report.update({
            "pods_lost": self._recorder.pods_lost(),
            "pdb_rounds": self._recorder.pdb_rounds(),
            "pod_stops": self._recorder.pod_stops(),
            "node_boots": self._recorder.node_boots(),
            "k8s_requests": self._recorder.k8s_requests(),
            "k8s_request_times": self._recorder.k8s_request_times(),
            "aws_calls": self._recorder.aws_calls(),
            "aws_calls_by_agent": self._recorder.aws_calls_by_agent(),
            "aws_call_times": self._recorder.aws_call_times(),
            "events": self._recorder.events(),
        })
        report.update(extra or {})
        return report

    @staticmethod
    def _node_view(node: dict[str, Any]) -> dict[str, Any]:
        return {key: node.get(key) for key in
                ("name", "az", "instance_id", "ami", "lt_version", "ready", "unschedulable", "labels")}
