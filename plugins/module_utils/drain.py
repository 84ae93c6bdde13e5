# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain engine's facade (SPEC section 3, D1-D16, with P2-P5, C1, U4, U5, Z3): what the modules call.

- ``drain_nodes(core_v1, node_names, options, *, log=None) -> DrainResult``: cordon every node, then drain them
  side by side (the composition below, as kubectl's pkg/drain/default.go);
- ``cordon_nodes``, ``uncordon_nodes``, ``read_nodes``, ``parse_cordon_mark`` (which run cordoned a node): from
  ``_drain/cordon.py``;
- ``DrainOptions``: the options with their SPEC names and defaults; ``is_mirror`` (D6) and ``pod_outlives_node``,
  for the preflight;
- ``termination_check`` and its kin (``_drain/drained.py``): whether instances' nodes are drained, checked before
  their termination (U5), and the nodes of instances (``resolve_instance_nodes``);
- ``with_blockers`` (``_drain/blockers.py``): the pods and PodDisruptionBudgets that kept EKS's own drain of a
  managed group from a node its PodEvictionFailure names.

The rooms, one concern each, in ``_drain/``: ``options`` (what is asked), ``pods`` (reading a pod), ``filters``
(which pods go, D3-D10), ``cordon`` (D1, U4, C1), ``eviction`` (what an answer means, D13), ``deadlines`` (D14),
``budget_gate`` (pacing by the PDBs, S5), ``scheduler`` (the removal jobs, P4), ``node`` (one node, D2-D16),
``post_drain`` (the wait before a termination, U5, B3), ``result`` (D16), ``api`` (the calls), ``drained`` (the
check before a termination) and ``blockers`` (what held EKS's drain).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any
from concurrent.futures import ThreadPoolExecutor
import threading

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.api import KubeApi
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.budget_gate import BudgetGate
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.cordon import (
    AUTOSCALER_TAINT,
    cordon,
    cordon_nodes,
    parse_cordon_mark,
    read_nodes,
    uncordon_nodes,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.eviction import (
    PDB_RETRY_SECONDS,
    SERVER_ERROR_RETRIES,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.node import NodeDrain
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.options import (
    DEFAULT_OPTIONS,
    DrainOptions,
    noop_log,
    validate_names,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.blockers import with_blockers
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.drained import (
    resolve_instance_nodes,
    termination_check,
    termination_problems_message,
    undrained_instances,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.pods import DO_NOT_DISRUPT, disruption_annotation, is_mirror, pod_outlives_node
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.result import DrainResult
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.scheduler import EvictionScheduler
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import translate_k8s_errors
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.load_balancers import ClusterLoadBalancers


class _Engine:
    """What the drains of one batch share: the API, the options, the log, the removal scheduler and the gate."""

    def __init__(self, api: KubeApi, options: DrainOptions, log: Callable[[str], None],
                 pdb_retry_seconds: float = PDB_RETRY_SECONDS, server_error_retries: int = SERVER_ERROR_RETRIES,
                 load_balancers: ClusterLoadBalancers | None = None,
                 on_emptied: Callable[[], None] | None = None, node_count: int = 0) -> None:
        self.api = api
        self.options = options
        self.log = log
        self.load_balancers = load_balancers
        self.pdb_retry_seconds = pdb_retry_seconds
        self.server_error_retries = server_error_retries
        self.scheduler = None
        self.gate = None
        self.on_emptied = on_emptied
        self._emptied = set()
        self._node_count = node_count
        self._lock = threading.Lock()

    def emptied(self, name: str) -> None:
        """Node ``name`` is empty and its post-drain wait begins; once every node being drained is, ``on_emptied``
        is called, once (issue 11 item 4: node_replace reads what the next batch needs meanwhile)."""
        if self.on_emptied is None:
            return
        with self._lock:
            first_time = len(self._emptied) < self._node_count
            self._emptied.add(name)
            every_node = len(self._emptied) == self._node_count
        if first_time and every_node:
            self.on_emptied()

    def start(self) -> None:
        """The scheduler (P4) and, for evictions, the budget gate (S5); none in check mode."""
        if self.options.check_mode:
            return
        self.scheduler = EvictionScheduler(self.options.eviction_concurrency, clock=self.api.clock)
        if not self.options.disable_eviction:
            self.gate = BudgetGate(self.api, self.scheduler, self.log, retry_seconds=self.pdb_retry_seconds)

    def stop(self) -> None:
        if self.gate is not None:
            self.gate.stop()
        if self.scheduler is not None:
            self.scheduler.close()


def _run_side_by_side(drains: list[NodeDrain]) -> None:
    """Every NodeDrain at once; the first error any of them raised is raised."""
    with ThreadPoolExecutor(max_workers=len(drains), thread_name_prefix="eksops-drain") as pool:
        futures = [pool.submit(drain.run) for drain in drains]
        errors = [future.exception() for future in futures]
    for error in errors:
        if error is not None:
            raise error


def drain_nodes(core_v1: Any, node_names: Iterable[str] | None, options: DrainOptions | Mapping[str, Any] | None, *,
                log: Callable[[str], None] | None = None, pdb_retry_seconds: float = PDB_RETRY_SECONDS,
                server_error_retries: int = SERVER_ERROR_RETRIES,
                load_balancers: ClusterLoadBalancers | None = None,
                on_emptied: Callable[[], None] | None = None) -> DrainResult:
    """Cordon all ``node_names`` (D1), then drain them concurrently (D2-D16). Returns a DrainResult.

    Raises UpgradeError before touching anything for bad options, unknown nodes and nodes the cluster
    autoscaler is deleting (C1). Pod-level failures do not raise: the DrainResult records them per node
    (the node stays cordoned) and ``result.raise_for_failure()`` turns them into a PodEvictionFailure.
    In check mode nothing is changed and the result lists what would be evicted, deleted, skipped or refused.
    ``pdb_retry_seconds`` and ``server_error_retries``: D13's PDB retry interval and 500 retries (tests shorten them).
    ``load_balancers``: the cluster's (B3); each drained node's instance is waited out of them before the drain ends.
    Without them the post-drain wait is fixed. ``on_emptied``: called once, from a drain's thread, when every node is
    empty and waits out its post-drain wait (never when a node fails first, nor in check mode).
    """
    options = DrainOptions.coerce(options)
    names = validate_names(node_names)
    log = log or noop_log
    api = KubeApi(core_v1)
    engine = _Engine(api, options, log, pdb_retry_seconds, server_error_retries, load_balancers, on_emptied, len(names))
    result = DrainResult(names)
    with translate_k8s_errors("drain nodes"):
        cordoned = cordon(api, names, options.run_id, options.exclude_from_load_balancers, options.check_mode, log)
        for name in names:
            result.nodes[name] = cordoned[name][1]
        engine.start()
        try:
            _run_side_by_side([NodeDrain(engine, *cordoned[name]) for name in names])
        finally:
            engine.stop()
    result.requests_made = api.requests_made
    return result


__all__ = [
    "DEFAULT_OPTIONS", "DrainOptions", "DrainResult", "drain_nodes", "cordon_nodes", "uncordon_nodes", "read_nodes", "is_mirror",
    "parse_cordon_mark",
    "AUTOSCALER_TAINT", "pod_outlives_node", "resolve_instance_nodes", "termination_check",
    "termination_problems_message", "undrained_instances", "with_blockers", "DO_NOT_DISRUPT", "disruption_annotation",
]
