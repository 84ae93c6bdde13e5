# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One pass of every controller (what KubeSim.tick runs), in dependency order."""

from __future__ import annotations

import time
from typing import Any

from . import disruption
from .api import Api
from .nodes import NodeLifecycle
from .pods import PodLifecycle
from .resources import PDBS
from .workloads import WorkloadControllers


class Controllers:
    def __init__(self, api: Api, scenario: dict[str, Any], cloud, recorder, faults=None):
        self.api = api
        self.store = api.store
        self.cloud = cloud
        self.nodes = NodeLifecycle(api, scenario, recorder, faults)

        def gone():
            return self.nodes.gone_nodes

        self.workloads = WorkloadControllers(api, gone)
        self.pods = PodLifecycle(api, scenario["timings"], gone)
        self.recorder = recorder
        self._pod_start_seconds = scenario["timings"]["pod_start_seconds"]
        self._boot_seconds = scenario["timings"]["instance_pending_seconds"] + scenario["timings"]["node_boot_seconds"]
        self._pdb_inputs: dict[str, tuple] = {}
        self._rounds_ended: list[tuple[str, float]] = []  # this pass's budget rounds: (pdb, oldest eviction)

    def tick(self) -> None:
        # The cloud's own lock is taken (and released) before the store's: never the other way round.
        instances = self.cloud.instances()
        now = time.monotonic()
        self._rounds_ended = []
        with self.store.lock:
            booted = self.nodes.sync(instances, now)
            self.workloads.sync()
            stopped = self.pods.sync(now)
            self._sync_disruption_budgets()
        # What the pass did is seen by clients (watches, reads) once it releases the store: the measurements of
        # what the world took end here, not when the pass read its clock.
        visible = time.monotonic()
        for pdb, oldest in self._rounds_ended:
            seconds = visible - oldest
            self.recorder.pdb_round(pdb, seconds, max(0.0, seconds - self._pod_start_seconds))
        # Measured, not modelled (issue 11 item 4): the stop itself, and what the kubelet took beyond it by acting on
        # its next pass; benchmarks/upgrade.py charges the latter to its ideal schedule. In increasing reaction, so
        # that a node's last recorded stop of the pass is its largest.
        for since, stop, node in sorted(stopped, key=lambda entry: visible - entry[0] - entry[1]):
            self.recorder.pod_stop(visible - since, visible - since - stop, node)
        # Likewise a boot: from the instance's launch to its node Ready, and what EC2 and the kubelet took beyond
        # instance_pending_seconds + node_boot_seconds by acting on their passes.
        for instance_id, launched_at in booted:
            self.recorder.node_boot(visible - launched_at, visible - launched_at - self._boot_seconds, instance_id)

    def _sync_disruption_budgets(self) -> None:
        wall = time.time()
        synced: dict[str, tuple] = {}
        scale_inputs = tuple(self.store.changed_at(("kind", plural))
                             for plural in ("deployments", "replicasets", "daemonsets", "statefulsets"))
        for pdb in self.store.items(PDBS):
            uid = pdb["metadata"]["uid"]
            key = (pdb["metadata"]["resourceVersion"], self._pods_changed_at(pdb), scale_inputs)
            # disruptedPods entries expire with time, so a PDB holding some is always recomputed.
            if self._pdb_inputs.get(uid) != key or (pdb.get("status") or {}).get("disruptedPods"):
                status = disruption.compute_status(self.store, pdb, wall)
                if status != pdb.get("status"):
                    self._record_rounds(pdb, status)
                    pdb = self.store.replace(PDBS, {**pdb, "status": status})
                key = (pdb["metadata"]["resourceVersion"], *key[1:])
            synced[uid] = key
        self._pdb_inputs = synced
        for uid in [uid for uid in self.store.budget_spent if uid not in synced]:
            del self.store.budget_spent[uid]

    def _record_rounds(self, pdb: dict[str, Any], status: dict[str, Any]) -> None:
        """Measure what the world takes per budget round (issue 11 item 4): when the budget allows disruptions
        again, as many of the evictions that spent it as it now allows more are made good, oldest first (the
        ReplicaSet controller replaces pods in the order they went, and the kubelet starts each after the same
        pod_start_seconds). When the budget was used up, that is a round: from the oldest of those evictions to
        now, and the part of it beyond pod_start_seconds is the sandbox's reaction (the ReplicaSet controller,
        scheduler, kubelet and this controller each acting on their next pass). Nothing is modelled here: the
        figure is read off what the controllers did."""
        uid = pdb["metadata"]["uid"]
        spent = self.store.budget_spent.get(uid)
        if not spent:
            return
        before = (pdb.get("status") or {}).get("disruptionsAllowed", 0)
        made_good = [spent.popleft() for dummy in range(min(len(spent), status["disruptionsAllowed"] - before))]
        if made_good and before == 0:
            # Recorded when the pass releases the store (tick). The reaction is at least 0: a pass reads its clock
            # before it takes the store's lock, so an eviction answered in between has its replacement's start
            # counted from a moment just before the eviction.
            self._rounds_ended.append((f"{pdb['metadata']['namespace']}/{pdb['metadata']['name']}", made_good[0]))
        if status["currentHealthy"] >= status["expectedPods"] and not status.get("disruptedPods"):
            spent.clear()  # every pod is back: nothing is left to make good (e.g. after pods lost with a node)

    def _pods_changed_at(self, pdb: dict[str, Any]) -> int:
        """When a pod the PDB may select last changed (by its matchLabels, else by its namespace)."""
        namespace = pdb["metadata"]["namespace"]
        selector = pdb["spec"].get("selector") or {}
        match_labels = selector.get("matchLabels") or {}
        if not match_labels or selector.get("matchExpressions"):
            return self.store.changed_at(("ns", namespace))
        return min(self.store.changed_at(("label", namespace, k, str(v))) for k, v in match_labels.items())
