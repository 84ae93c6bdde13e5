# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module fleet_ring_health's body (issue 28 item 2): the fleet's judgement of a ring after its bake, at once - each
node group read against the fleet's target by nodegroup_info's own code (steps/nodegroup_info.py) and each
cluster's Deployments and StatefulSets through workload_health's (phases/fleet_bake.py, the upgrade's health gate),
each in a thread with its own credentials and Kubernetes context. One module process per node group and per
cluster, one after the other, took 4-51 s before every ring (docs/performance.md, "The fleet"). Read-only."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import API_ERROR
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clients import Clients
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import SHARED_OPTIONS, run_step, validated
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.cluster_proof import prove_cluster
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases import fleet_bake
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.health_gate import GATE_OPTIONS
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import nodegroup_info

# Where each node group and cluster is, as the fleet plan gives them (plan/fleet.py, bake_nodegroups and
# bake_clusters): each its own, never the task's (module_defaults set the task's to the host that runs it).
_WHERE = dict(
    region=dict(type="str", required=True),
    profile=dict(type="str"),
    kubeconfig=dict(type="path"),
    context=dict(type="str"),
)
ARGUMENT_SPEC = dict(
    nodegroups=dict(type="list", elements="dict", default=[], options=dict(
        _WHERE, name=dict(type="str", required=True), cluster_name=dict(type="str", required=True),
        nodegroup_name=dict(type="str", required=True), asg_name=dict(type="str"))),
    clusters=dict(type="list", elements="dict", default=[], options=dict(
        _WHERE, cluster_name=dict(type="str", required=True))),
    targets=dict(type="dict", default={}),
    health_gate_timeout=GATE_OPTIONS["health_gate_timeout"],
    where=fleet_bake.ARGUMENT_SPEC["where"],
)
CONSTRAINTS: dict[str, Any] = {}
# Threads at once: a ring's node groups and clusters, up to this many (their calls wait on the network).
MAX_THREADS = 8


def _item_params(module: Any, item: Mapping[str, Any], spec: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """The options of one node group's or cluster's step: the task's connection options (an endpoint, TLS, the
    request budgets), the item's region, profile, kubeconfig and context in place of the task's - one the item
    leaves unset falls back as in the node group's own tasks (AWS_PROFILE, K8S_AUTH_KUBECONFIG, K8S_AUTH_CONTEXT,
    then none) - and ``options``, through the step's own argument spec. Its AWS calls are the task's
    resource_actions already (debug_botocore_endpoint_logs: one handler of the botocore logger for the process)."""
    params = dict((name, module.params[name]) for name in SHARED_OPTIONS if module.params.get(name) is not None
                  and name not in _WHERE and name != "debug_botocore_endpoint_logs")
    params.update((name, item[name]) for name in _WHERE if item.get(name) is not None)
    params.update(options)
    return validated(spec, params)


def _judged(module: Any, item: Mapping[str, Any], spec: Mapping[str, Any], step: Callable[[Any], dict[str, Any]],
            **options: Any) -> dict[str, Any]:
    """``step``'s result with clients of its own (a failure: ``failed``, ``msg``, ``code``). Whatever it raises is
    this item's failure (ApiError), not the ring's: the others are still judged, and the fleet's report says why."""
    try:
        params = _item_params(module, item, spec, **options)
        clients = Clients(params, module.clients.user_agent, proof=prove_cluster)
        return run_step(step, params, clients, module.check_mode, False, module.log)
    except Exception as err:  # pylint: disable=broad-except
        return dict(changed=False, failed=True, code=API_ERROR, msg="%s: %s" % (type(err).__name__, err))


def _read_nodegroup(module: Any, item: Mapping[str, Any]) -> dict[str, Any]:
    """nodegroup_info's reading of a node group, against its image_id in ``targets`` when the fleet gave one."""
    target = module.params["targets"].get(item["name"]) or {}
    result = _judged(module, item, nodegroup_info.ARGUMENT_SPEC,
                     lambda context: dict(nodegroup=nodegroup_info.describe_nodegroup(context)),
                     cluster_name=item["cluster_name"], nodegroup_name=item["nodegroup_name"],
                     asg_name=item["asg_name"], target=target.get("value") if target.get("option") == "image_id" else None)
    return dict(result, name=item["name"])


def _judge_cluster(module: Any, item: Mapping[str, Any]) -> dict[str, Any]:
    """workload_health's judgement of a cluster's workloads."""
    result = _judged(module, item, fleet_bake.ARGUMENT_SPEC, fleet_bake.run, cluster_name=item["cluster_name"],
                     health_gate_timeout=module.params["health_gate_timeout"], where=module.params["where"])
    return dict(result, cluster_name=item["cluster_name"])


def run(module: Any) -> dict[str, Any]:
    """The task result: nothing changed; ``ring``: ``nodegroups`` and ``clusters``, each item's result in the order
    given. Once the job is gone (the job guard's JobStopped, raised here) the reads still under way are not waited
    for: they change nothing."""
    nodegroups, clusters = module.params["nodegroups"], module.params["clusters"]
    pool = ThreadPoolExecutor(max_workers=max(1, min(MAX_THREADS, len(nodegroups) + len(clusters))))
    try:
        reads = [pool.submit(_read_nodegroup, module, item) for item in nodegroups]
        healths = [pool.submit(_judge_cluster, module, item) for item in clusters]
        return dict(changed=False, ring=dict(nodegroups=[read.result() for read in reads],
                                             clusters=[health.result() for health in healths]))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
