# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the nodes of EC2 instances are drained: the check before an instance is terminated (U5: only drained nodes
go), and the nodes of instances, found by providerID through the drain's counted API."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.api import KubeApi
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.cordon import left_pods_mark
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.pods import pod_outlives_node, pod_ref
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import translate_k8s_errors
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import list_all
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import find_instance_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.returning_pods import (
    workload_of,
    workload_ref,
)


def nodes_of_instances(api: KubeApi, instance_ids: Iterable[str], node_selector: str | None = None) -> dict[str, dict[str, Any]]:
    """instances.find_instance_nodes through this engine's counted API."""
    return find_instance_nodes(api.counted(api.core.list_node), instance_ids, node_selector, clock=api.clock)


def resolve_instance_nodes(core_v1: Any, instance_ids: Sequence[str], node_selector: str | None = None) -> tuple[dict[str, str | None], int]:
    """{instance_id: node name or None} and the number of requests made (see nodes_of_instances)."""
    if not instance_ids:
        return {}, 0
    api = KubeApi(core_v1)
    with translate_k8s_errors("find the nodes of instances %s" % ", ".join(instance_ids)):
        nodes = nodes_of_instances(api, instance_ids, node_selector)
    names = dict((instance_id, nodes[instance_id]["metadata"]["name"] if instance_id in nodes else None)
                 for instance_id in instance_ids)
    return names, api.requests_made


def termination_problem(instance_id: str, node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Why the instance of ``node`` must not be terminated yet (a dict naming the node and pods), or None.

    Pods of the workloads a forced drain left on the node because they come back to it (Z3,
    LEFT_PODS_ANNOTATION) go with it.
    """
    cordoned = bool((node.get("spec") or {}).get("unschedulable"))
    left = (left_pods_mark(node) or (None, frozenset()))[1]
    blocking = sorted(pod_ref(pod) for pod in pods if pod_outlives_node(pod)
                      and not (workload_of(pod) and workload_ref(workload_of(pod)) in left))
    if cordoned and not blocking:
        return None
    return dict(instance_id=instance_id, node=node["metadata"]["name"], cordoned=cordoned, pods=blocking)


def termination_problems_message(problems: Iterable[Mapping[str, Any]]) -> str:
    parts = []
    for problem in problems:
        why = []
        if not problem["cordoned"]:
            why.append("is not cordoned")
        if problem["pods"]:
            why.append("still runs %d pod(s) that are not DaemonSet, mirror or finished pods: %s"
                       % (len(problem["pods"]), ", ".join(problem["pods"])))
        parts.append("instance %s: node %s %s" % (problem["instance_id"], problem["node"], " and ".join(why)))
    return "refusing to terminate undrained instances (drain them first with node_drain): %s" % "; ".join(parts)


def undrained_instances(core_v1: Any, instance_ids: Sequence[str], node_selector: str | None = None) -> tuple[list[dict[str, Any]], int]:
    """The termination problems of ``instance_ids`` (see termination_problem), and the requests made."""
    check = termination_check(core_v1, instance_ids, node_selector)
    return check["problems"], check["requests"]


def termination_check(core_v1: Any, instance_ids: Sequence[str], node_selector: str | None = None) -> dict[str, Any]:
    """{problems, nodeless, requests}: the termination problems of ``instance_ids`` (see termination_problem),
    the instances that have no node, and the requests made.

    One node LIST (see nodes_of_instances), then one pod LIST per node found (``spec.nodeName`` field
    selector, P2); an instance without a node has no problem.
    """
    if not instance_ids:
        return dict(problems=[], nodeless=[], requests=0)
    api = KubeApi(core_v1)
    problems = []
    with translate_k8s_errors("check that the nodes of instances %s are drained" % ", ".join(instance_ids)):
        nodes = nodes_of_instances(api, instance_ids, node_selector)
        for instance_id in instance_ids:
            node = nodes.get(instance_id)
            if node is None:
                continue
            pods, _version = list_all(api.list_pods, clock=api.clock,
                                      **api.node_pod_selectors(node["metadata"]["name"], None))
            problem = termination_problem(instance_id, node, pods)
            if problem is not None:
                problems.append(problem)
    return dict(problems=problems, nodeless=[i for i in instance_ids if i not in nodes], requests=api.requests_made)
