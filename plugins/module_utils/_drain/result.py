# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a drain did, per node and in all (D16): the module's return values, its diff and its error."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    LOAD_BALANCER_DEREGISTRATION_TIMEOUT,
    POD_EVICTION_FAILURE,
    UpgradeError,
)

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils.members.returning_pods import Returning


def describe_failed_pods(entries: Iterable[Mapping[str, Any]]) -> str:
    """Pods that could not be evicted ({pod, reason, pdb}), by name, each with why and its PodDisruptionBudget(s)."""
    return ", ".join("%s (%s%s)" % (e["pod"], e["reason"], "; PodDisruptionBudget %s" % e["pdb"] if e["pdb"] else "")
                     for e in sorted(entries, key=lambda e: e["pod"]))


class NodeResult:
    def __init__(self, name: str) -> None:
        self.name = name
        self.cordoned = False
        self.changed = False
        self.evicted = []
        self.deleted = []
        # Issue 27 item 1: the workloads ("Kind namespace/name", workload_of) of the pods evicted or deleted, which
        # node_replace's health gate judges after the batch.
        self.workloads = set()
        self.skipped = []
        self.failed = []
        self.warnings = []
        self.error = None
        self.code = None
        # Issue 27 item 5: the node failed only because drain_timeout ran out with pods still held (no pod refused,
        # none returning to the node): the one failure undrainable_nodes quarantine holds the node for.
        self.timed_out = False
        self.pdb_wait_seconds = 0.0
        self.post_drain_waited = 0.0
        self.load_balancers = []   # B3: the load balancers that held the node's instance after its drain
        # Z3: workloads whose pods came back to the cordoned node (Returning.to_dict()); not evicted again.
        self.returning_workloads = []
        self.before = None
        self.after = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def fail_eviction(self, entries: list[dict[str, Any]], returning: Iterable[Returning], force: bool,
                      expired: bool = False) -> None:
        """U5: the node stays cordoned; ``entries`` ({pod, reason, pdb}) could not be evicted, and the workloads
        ``returning`` to the node (Z3) are named first with what the drain did about them. ``expired``: drain_timeout
        ran out with no pod refused on arrival; the node timed out unless pods were returning to it (issue 27
        item 5)."""
        returning = list(returning)
        self.timed_out = expired and not returning
        self.failed.extend(entries)
        details = describe_failed_pods(entries)
        lead = ""
        for workload in returning:
            if force:
                advice = "its pods were left on the node (force)"
            else:
                advice = ("stopped evicting it, it would never leave (%s, or drain with force to leave its pods to go "
                          "with the node)" % workload.remedy)
            lead += "%s; %s; " % (workload.describe(), advice)
        self.code = POD_EVICTION_FAILURE
        self.error = ("node %s stays cordoned: %s%d pod(s) could not be evicted: %s"
                      % (self.name, lead, len(entries), details))

    def fail_load_balancers(self, still_held: str) -> None:
        """B3: the node is empty, but a load balancer still holds its instance; it stays cordoned, not terminated."""
        self.code = LOAD_BALANCER_DEREGISTRATION_TIMEOUT
        self.error = ("node %s stays cordoned: %s; raise post_drain_wait above the deregistration delay, or set "
                      "ignore_load_balancer_timeout to terminate it anyway" % (self.name, still_held))

    def to_dict(self) -> dict[str, Any]:
        return dict(cordoned=self.cordoned, changed=self.changed, evicted=sorted(self.evicted),
                    deleted=sorted(self.deleted), workloads=sorted(self.workloads), skipped=sorted(self.skipped, key=lambda e: e["pod"]),
                    failed=sorted(self.failed, key=lambda e: e["pod"]), warnings=list(self.warnings),
                    pdb_wait_seconds=round(self.pdb_wait_seconds, 1),
                    post_drain_waited_seconds=round(self.post_drain_waited, 1), load_balancers=list(self.load_balancers),
                    returning_workloads=sorted(self.returning_workloads, key=lambda e: e["workload"]), error=self.error)


class DrainResult:
    def __init__(self, node_names: Iterable[str]) -> None:
        self.nodes = dict((name, NodeResult(name)) for name in node_names)
        self.requests_made = 0

    @property
    def changed(self) -> bool:
        return any(node.changed for node in self.nodes.values())

    @property
    def failed_nodes(self) -> list[str]:
        return sorted(name for name, node in self.nodes.items() if not node.ok)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return dict((name, node.to_dict()) for name, node in self.nodes.items())

    def diff(self) -> dict[str, dict[str, Any]]:
        return dict(before=dict((n, r.before) for n, r in self.nodes.items() if r.before is not None),
                    after=dict((n, r.after) for n, r in self.nodes.items() if r.after is not None))

    def error(self) -> UpgradeError | None:
        """The PodEvictionFailure for the failed nodes (they stay cordoned), or None; LoadBalancerDeregistrationTimeout
        when every failed node was drained and only a load balancer kept it (B3)."""
        failed = self.failed_nodes
        if not failed:
            return None
        codes = set(self.nodes[name].code for name in failed)
        code = LOAD_BALANCER_DEREGISTRATION_TIMEOUT if codes == {LOAD_BALANCER_DEREGISTRATION_TIMEOUT} else POD_EVICTION_FAILURE
        return UpgradeError(code, " | ".join(self.nodes[name].error for name in failed),
                            failed_nodes=failed, nodes=self.to_dict())

    def raise_for_failure(self) -> None:
        err = self.error()
        if err is not None:
            raise err
