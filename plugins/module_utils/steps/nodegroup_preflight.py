# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight step (SPEC Z1-Z3): nodegroup_preflight's work for its module or the nodegroup_setup action.

``module`` is anything with the EksopsModule surface these functions use: ``params`` (nodegroup_preflight's
options, ARGUMENT_SPEC), ``aws(service)``, ``k8s()``, ``core_v1()`` and ``warn``.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
import re

from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import list_nodegroup_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import pod_outlives_node
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import AUTOSCALER_TAINT, DO_NOT_DISRUPT, disruption_annotation, is_mirror
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import apps_v1, policy_v1, translate_k8s_errors
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import list_all
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.label_selector import selector_matches
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.load_balancers import find_cluster_load_balancers, longer_than
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import (
    NODEGROUP_ARGUMENT_SPEC,
    NodegroupRef,
    find_module_nodegroup,
)

_SLEEP = re.compile(r"\bsleep\s+(\d+)")
# The cluster autoscaler's soft taint on nodes it considers removing (cluster-autoscaler FAQ, "How does scale-down
# work?"); its hard taint, AUTOSCALER_TAINT, is on a node it is deleting now.
AUTOSCALER_CANDIDATE_TAINT = "DeletionCandidateOfClusterAutoscaler"
ARGUMENT_SPEC = dict(NODEGROUP_ARGUMENT_SPEC, post_drain_wait=dict(type="int"),
                     ignore_load_balancer_timeout=dict(type="bool", default=False))

# Checks after which the upgrade must not start: it would fail, or fight the autoscaler, half-way.
BLOCKING_CHECKS = frozenset(["autoscaler_deleting"])


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _ref(obj: dict[str, Any]) -> str:
    return "%s/%s" % (_meta(obj).get("namespace"), _meta(obj).get("name"))


def _finding(check: str, kind: str, obj: dict[str, Any], message: str, nodes: Iterable[str | None] = ()) -> dict[str, Any]:
    """A finding on ``obj``; ``nodes``: the node group's nodes it concerns (the dry run's quarantine preview reads
    them, issue 27 item 5)."""
    return dict(check=check, kind=kind, namespace=_meta(obj).get("namespace"), name=_meta(obj).get("name"),
                message=message, blocking=check in BLOCKING_CHECKS, nodes=sorted(set(n for n in nodes if n)))


def node_findings(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Findings on the node group's nodes (raw dicts): the cluster autoscaler removing or about to remove one
    (SPEC C1, issue 10 item 5: found only after the surge, the run failed half-way)."""
    findings = []
    for node in sorted(nodes, key=lambda n: _meta(n).get("name")):
        taints = dict((t.get("key"), t) for t in (node.get("spec") or {}).get("taints") or [])
        name = _meta(node).get("name")
        if AUTOSCALER_TAINT in taints:
            findings.append(_finding(
                "autoscaler_deleting", "Node", node,
                "Node %s carries the %s taint: the cluster autoscaler is draining it and will terminate its "
                "instance, lowering the group's desired capacity. The upgrade does not start while it does: wait "
                "until the node is gone (or the autoscaler gave it up), or pause the autoscaler's scale-down, then "
                "rerun." % (name, AUTOSCALER_TAINT), [name]))
        elif AUTOSCALER_CANDIDATE_TAINT in taints:
            findings.append(_finding(
                "autoscaler_candidate", "Node", node,
                "Node %s carries the %s taint: the cluster autoscaler may remove it soon, and the upgrade would "
                "stop with ClusterAutoscalerActive if it does." % (name, AUTOSCALER_CANDIDATE_TAINT), [name]))
        annotation = disruption_annotation(node, asks=(DO_NOT_DISRUPT,))
        if annotation is not None:
            findings.append(_finding(
                "do_not_disrupt", "Node", node,
                "Node %s is annotated %s: its drain refuses to evict its pods (PodEvictionFailure naming the "
                "annotation) unless force, which evicts them." % (name, annotation), [name]))
    return findings


def _pdb_blocks_every_eviction(pdb: dict[str, Any], replicas: int) -> bool:
    spec = pdb.get("spec") or {}
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if max_unavailable is not None:
        return str(max_unavailable) in ("0", "0%")
    if min_available is None:
        return False
    if isinstance(min_available, str) and min_available.endswith("%"):
        return min_available == "100%"
    return int(min_available) >= replicas


def _prestop_sleep_seconds(container: dict[str, Any]) -> int | None:
    exec_action = (((container.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {})
    match = _SLEEP.search(" ".join(exec_action.get("command") or []))
    return int(match.group(1)) if match else None


def _controlled(pod: dict[str, Any]) -> bool:
    return any(ref.get("controller") for ref in _meta(pod).get("ownerReferences") or [])


def pod_findings(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """Findings on one pod (SPEC Z1, Z2; issue 27 item 6): no controller, a preStop hook longer than the grace
    period, an annotation that asks not to disrupt it."""
    findings = []
    nodes = [(pod.get("spec") or {}).get("nodeName")]
    if not _controlled(pod) and not is_mirror(pod):
        findings.append(_finding("unmanaged_pod", "Pod", pod,
                                 "Pod %s has no controller: only force removes it, and nothing recreates it."
                                 % _ref(pod), nodes))
    annotation = disruption_annotation(pod) if pod_outlives_node(pod) else None
    if annotation is not None:
        findings.append(_finding(
            "do_not_disrupt", "Pod", pod,
            "Pod %s is annotated %s: its node's drain refuses to evict it (PodEvictionFailure naming it) "
            "unless force, which evicts it." % (_ref(pod), annotation), nodes))
    spec = pod.get("spec") or {}
    grace = spec.get("terminationGracePeriodSeconds", 30)
    for container in spec.get("containers") or []:
        sleep = _prestop_sleep_seconds(container)
        if sleep is not None and sleep >= grace:
            findings.append(_finding(
                "prestop_exceeds_grace", "Pod", pod,
                "Pod %s: the preStop hook of container %s sleeps %d s, not less than its grace period of %d s; "
                "it is killed before the hook ends." % (_ref(pod), container.get("name"), sleep, grace), nodes))
    return findings


def preflight_findings(pods: list[dict[str, Any]], deployments: list[dict[str, Any]],
                       pdbs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Findings (SPEC Z1-Z3) for the Deployments with pods in ``pods`` and for ``pods`` themselves (raw dicts)."""
    findings = []
    by_namespace = {}
    for pod in pods:
        by_namespace.setdefault(_meta(pod).get("namespace"), []).append(
            (_meta(pod).get("labels") or {}, (pod.get("spec") or {}).get("nodeName")))
        findings.extend(pod_findings(pod))

    for deployment in sorted(deployments, key=_ref):
        namespace = _meta(deployment).get("namespace")
        spec = deployment.get("spec") or {}
        selector = spec.get("selector")
        # The nodes of the group its pods run on.
        nodes = [node for labels, node in by_namespace.get(namespace, []) if selector_matches(selector, labels)]
        if not nodes:
            continue
        replicas = spec.get("replicas", 1)
        template = spec.get("template") or {}
        template_labels = _meta(template).get("labels") or {}
        budgets = sorted((pdb for pdb in pdbs if _meta(pdb).get("namespace") == namespace
                          and selector_matches((pdb.get("spec") or {}).get("selector"), template_labels)),
                         key=_ref)
        name = _ref(deployment)
        if replicas == 1:
            findings.append(_finding("single_replica", "Deployment", deployment,
                                     "Deployment %s has 1 replica: it is unavailable while its node drains." % name, nodes))
        elif not budgets:
            findings.append(_finding("no_pdb", "Deployment", deployment,
                                     "Deployment %s (%d replicas) has no PodDisruptionBudget: all its pods on a "
                                     "batch of nodes may be evicted at once." % (name, replicas), nodes))
        if len(budgets) > 1:
            findings.append(_finding("multiple_pdbs", "Deployment", deployment,
                                     "Deployment %s is selected by %d PodDisruptionBudgets (%s): every eviction "
                                     "fails, the drain fails with PodEvictionFailure unless force."
                                     % (name, len(budgets), ", ".join(_meta(b).get("name") for b in budgets)), nodes))
        for budget in budgets:
            if _pdb_blocks_every_eviction(budget, replicas):
                findings.append(_finding("blocking_pdb", "PodDisruptionBudget", budget,
                                         "PodDisruptionBudget %s never allows an eviction of Deployment %s (%d "
                                         "replicas): the drain fails with PodEvictionFailure unless force."
                                         % (_ref(budget), name, replicas), nodes))
        tolerations = (template.get("spec") or {}).get("tolerations") or []
        if any(t.get("operator") == "Exists" and not t.get("key") for t in tolerations):
            findings.append(_finding("tolerates_all", "Deployment", deployment,
                                     "Deployment %s tolerates every taint, the cordon's too: whether its evicted "
                                     "pods land back on the cordoned node is the scheduler's choice. If they do, the "
                                     "drain stops evicting them and fails with PodEvictionFailure unless force; if "
                                     "the scheduler places them elsewhere, the drain succeeds." % name, nodes))
    return findings


def load_balancer_findings(module: Any, asg: dict[str, Any]) -> list[dict[str, Any]]:
    """C(load_balancer_delay) (SPEC B3): the cluster's load balancers holding the group's instances that drain them
    for longer than post_drain_wait; blocking unless ignore_load_balancer_timeout. Best effort: a load balancer API
    that fails is a warning, not a failed preflight."""
    seconds = module.params["post_drain_wait"]
    if seconds is None:
        return []
    try:
        balancers = find_cluster_load_balancers(module.aws, module.params["cluster_name"], module.warn, asg)
        held = balancers.holding([i["InstanceId"] for i in asg.get("Instances", [])]) if balancers else {}
    except UpgradeError as err:
        module.warn("the load balancers holding the group's instances could not be compared with post_drain_wait: %s"
                    % err.msg)
        return []
    if balancers and balancers.unreadable:
        module.warn("who %s hold could not be read (%s): a node they may hold waits the whole post_drain_wait (%d s) "
                    "after its drain" % (", ".join(sorted(balancers.unreadable)),
                                         "; ".join(sorted(set(balancers.unreadable.values()))), seconds))
    go_on = module.params["ignore_load_balancer_timeout"]
    return [dict(check="load_balancer_delay", kind=holder["kind"], namespace=None, name=holder["name"],
                 blocking=not go_on, nodes=[],
                 message="The %s %s drains deregistered instances for %d s, longer than post_drain_wait (%d s): %s"
                         % (holder["kind"], holder["name"], holder["delay_seconds"], seconds,
                            "nodes it still holds are terminated anyway (ignore_load_balancer_timeout)." if go_on else
                            "a node it still holds %d s after its drain would fail with "
                            "LoadBalancerDeregistrationTimeout. Raise post_drain_wait to at least %d s (the wait ends as "
                            "soon as the load balancer lets the node go, so a longer bound costs nothing), or set "
                            "ignore_load_balancer_timeout." % (seconds, holder["delay_seconds"])))
            for holder in longer_than(held, seconds)]


# How many nodes' pods are listed at once (P4: bounded; one LIST per node, P2).
POD_LISTS_AT_ONCE = 10


def run(module: Any, group: NodegroupRef | None = None) -> dict[str, Any]:
    """nodegroup_preflight's report; ``group``: the node group when the caller found it (else found here)."""
    group = group or find_module_nodegroup(module)
    core = module.core_v1()
    nodes = list_nodegroup_nodes(core, group)

    def node_pods(node: Any) -> list[dict[str, Any]]:
        return list_all(core.list_pod_for_all_namespaces, field_selector="spec.nodeName=%s" % node.metadata.name)[0]

    with translate_k8s_errors("list the pods, Deployments and PodDisruptionBudgets of node group %s"
                              % module.params["nodegroup_name"]):
        pods = []
        pods_to_move = {}
        # One LIST per node, several at once: in series they took 7 ms a node on the sandbox (issue 11 item 4).
        with ThreadPoolExecutor(max_workers=POD_LISTS_AT_ONCE, thread_name_prefix="eksops-preflight") as pool:
            for node, listed in zip(nodes, pool.map(node_pods, nodes)):
                pods.extend(listed)
                pods_to_move[node.metadata.name] = sum(1 for pod in listed if pod_outlives_node(pod))
        deployments, _version = list_all(apps_v1(module.k8s()).list_deployment_for_all_namespaces)
        pdbs, _version = list_all(policy_v1(module.k8s()).list_pod_disruption_budget_for_all_namespaces)
    findings = node_findings([node.raw for node in nodes]) + preflight_findings(pods, deployments, pdbs)
    findings += load_balancer_findings(module, group.asg)
    return dict(changed=False, preflight=dict(warnings_found=findings, blocking=[f for f in findings if f["blocking"]],
                                              pods_examined=len(pods), pods_to_move=pods_to_move))
