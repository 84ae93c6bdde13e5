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
        self._pdb_inputs: dict[str, tuple] = {}

    def tick(self) -> None:
        # The cloud's own lock is taken (and released) before the store's: never the other way round.
        instances = self.cloud.instances()
        now = time.monotonic()
        with self.store.lock:
            self.nodes.sync(instances, now)
            self.workloads.sync()
            self.pods.sync(now)
            self._sync_disruption_budgets()

    def _sync_disruption_budgets(self) -> None:
        wall = time.time()
        synced: dict[str, tuple] = {}
        scale_inputs = tuple(self.store.changed_at(("kind", plural))
                             for plural in ("deployments", "replicasets", "daemonsets"))
        for pdb in self.store.items(PDBS):
            uid = pdb["metadata"]["uid"]
            key = (pdb["metadata"]["resourceVersion"], self._pods_changed_at(pdb), scale_inputs)
            # disruptedPods entries expire with time, so a PDB holding some is always recomputed.
            if self._pdb_inputs.get(uid) != key or (pdb.get("status") or {}).get("disruptedPods"):
                status = disruption.compute_status(self.store, pdb, wall)
                if status != pdb.get("status"):
                    pdb = self.store.replace(PDBS, {**pdb, "status": status})
                key = (pdb["metadata"]["resourceVersion"], *key[1:])
            synced[uid] = key
        self._pdb_inputs = synced

    def _pods_changed_at(self, pdb: dict[str, Any]) -> int:
        """When a pod the PDB may select last changed (by its matchLabels, else by its namespace)."""
        namespace = pdb["metadata"]["namespace"]
        selector = pdb["spec"].get("selector") or {}
        match_labels = selector.get("matchLabels") or {}
        if not match_labels or selector.get("matchExpressions"):
            return self.store.changed_at(("ns", namespace))
        return min(self.store.changed_at(("label", namespace, k, str(v))) for k, v in match_labels.items())
