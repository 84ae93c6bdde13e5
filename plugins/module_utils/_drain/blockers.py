# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What kept EKS from draining a managed node group (issue 29 item 3, SPEC K3, U8).

EKS's PodEvictionFailure names only the node(s) ("Reached max retries while trying to evict pods from nodes in node
group ...", resourceIds: the node names; aws/containers-roadmap#1282 asks for the pods). The EKS user guide,
"Managed node update behavior", gives the known reasons: "Aggressive PDB is defined on the Pod or there are multiple
PDBs pointing to the same Pod", and a "Deployment tolerating all the taints" whose pods come back. The pods still on
those nodes and their PodDisruptionBudgets are read from the cluster and named as the self-managed drain names the
pods it could not evict (_drain/result.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.api import KubeApi
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.budget_gate import matching_pdbs, no_disruption_reason
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.pods import pod_outlives_node, pod_ref
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.result import describe_failed_pods
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import POD_EVICTION_FAILURE, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import translate_k8s_errors
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import list_all


def eviction_failure_nodes(update: Mapping[str, Any]) -> list[str]:
    """The nodes the update's PodEvictionFailure errors name (DescribeUpdate errors[].resourceIds), in order."""
    names = []
    for error in update.get("errors") or []:
        if error.get("errorCode") == POD_EVICTION_FAILURE:
            names.extend(name for name in error.get("resourceIds") or [] if name not in names)
    return names


def _budget_allows(pdb: Mapping[str, Any]) -> int:
    return int((pdb.get("status") or {}).get("disruptionsAllowed") or 0)


def blocking_entries(pods: Iterable[Mapping[str, Any]], pdbs_by_namespace: Mapping[str, Sequence[Mapping[str, Any]]]
                     ) -> list[dict[str, Any]]:
    """The pods a drain would still move off a node ({pod, reason, pdb}, as a drain's failed entries), each with
    why it is still there: its only PodDisruptionBudget allows no disruption, several budgets select it (the
    Eviction API refuses such a pod), it is still terminating, or none of these (it came back, or was never
    evicted). ``pdbs_by_namespace``: the PodDisruptionBudgets of the pods' namespaces, with their status."""
    entries = []
    for pod in pods:
        if not pod_outlives_node(pod):
            continue
        budgets = pdbs_by_namespace.get(pod["metadata"].get("namespace")) or []
        names = matching_pdbs(pod, budgets)
        by_name = dict((pdb["metadata"]["name"], pdb) for pdb in budgets)
        if len(names) > 1:
            reason = "%d PodDisruptionBudgets select it, and the Eviction API refuses such a pod" % len(names)
        elif names and _budget_allows(by_name[names[0]]) <= 0:
            reason = no_disruption_reason(names[0])
        elif (pod.get("metadata") or {}).get("deletionTimestamp"):
            reason = "still terminating"
        else:
            reason = "still on the node, no PodDisruptionBudget at 0 holds it now"
        entries.append(dict(pod=pod_ref(pod), reason=reason, pdb=",".join(names) or None))
    return sorted(entries, key=lambda entry: entry["pod"])


def blockers_text(by_node: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """One sentence per node EKS named: the pods still on it and what holds them."""
    parts = []
    for node, entries in by_node.items():
        if entries:
            parts.append("node %s: %d pod(s) could not be evicted: %s" % (node, len(entries),
                                                                          describe_failed_pods(entries)))
        else:
            parts.append("node %s: no pod that a drain moves is on it now" % node)
    return "; ".join(parts)


def read_blockers(core_v1: Any, node_names: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """{node: blocking_entries} for each node, from the pods on it and the PodDisruptionBudgets of their
    namespaces (reads only)."""
    api = KubeApi(core_v1)
    found = {}
    with translate_k8s_errors("list the pods on the nodes EKS could not drain"):
        for node in node_names:
            pods, dummy = list_all(api.list_pods, **api.node_pod_selectors(node, None))
            namespaces = sorted(set(pod["metadata"].get("namespace") for pod in pods if pod_outlives_node(pod)))
            found[node] = blocking_entries(pods, dict((namespace, api.pdbs_in(namespace)) for namespace in namespaces))
    return found


def with_blockers(err: UpgradeError, update: Mapping[str, Any], core_v1: Callable[[], Any]) -> UpgradeError:
    """``err`` (a failed update's, failed_update_error) with the pods still on the nodes a PodEvictionFailure
    names, and what holds them (details ``blocking_pods``: {node: entries}); unchanged for another failure.
    ``core_v1()`` gives the Kubernetes client, proven to be the cluster's (SPEC K4) before it is used. EKS's own
    error is kept whatever the cluster answers."""
    nodes = eviction_failure_nodes(update)
    if not nodes:
        return err
    try:
        found = read_blockers(core_v1(), nodes)
    except UpgradeError as read_err:
        return UpgradeError(err.code, "%s. The pods on %s could not be read to name those that blocked the drain: %s"
                            % (err.msg, ", ".join(nodes), read_err), **err.details)
    return UpgradeError(err.code, "%s. Still on the node(s) EKS named: %s" % (err.msg, blockers_text(found)),
                        blocking_pods=found, **err.details)
