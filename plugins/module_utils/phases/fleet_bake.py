# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module workload_health's body (issue 28 item 2; a phase, as it runs the replace phase's gate): the upgrade's
health gate (phases/replace/health_gate.py HealthGate, issue 27 item 1) over every Deployment and StatefulSet of a
cluster (or of the namespaces given), for the fleet's bake between two rings: wait until all are healthy, within
health_gate_timeout, or fail with HealthGateFailed naming each and why. Read-only."""

from __future__ import annotations

from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import NOT_FOUND, UpgradeError, invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import utc_now_iso
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import apps_v1, translate_k8s_errors
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import list_all
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.health_gate import GATE_OPTIONS, HealthGate

ARGUMENT_SPEC = dict(
    cluster_name=dict(type="str", required=True),
    namespaces=dict(type="list", elements="str"),
    health_gate_timeout=GATE_OPTIONS["health_gate_timeout"],
    where=dict(type="str", default="the health gate"),
)


def workload_refs(apps: Any, namespaces: list[str] | None, cluster_name: str) -> list[str]:
    """``Kind namespace/name`` of every Deployment and StatefulSet of ``namespaces`` (None: of the cluster). Every
    EKS API server serves apps/v1 deployments and statefulsets: a 404 on their list means the request reached
    something else (another server, a path a proxy rewrote), an error rather than "no workload of that kind"."""
    refs = []
    for kind, every, namespaced in (("Deployment", apps.list_deployment_for_all_namespaces, apps.list_namespaced_deployment),
                                    ("StatefulSet", apps.list_stateful_set_for_all_namespaces,
                                     apps.list_namespaced_stateful_set)):
        try:
            with translate_k8s_errors("list the cluster's %ss for the health gate" % kind):
                items = list_all(every)[0] if namespaces is None else [
                    item for namespace in namespaces for item in list_all(namespaced, namespace=namespace)[0]]
        except UpgradeError as err:
            if err.code == NOT_FOUND:
                raise UpgradeError(NOT_FOUND, "%s: the API server reached does not serve apps/v1 %ss, which every "
                                   "EKS cluster's does - is the kubeconfig context (kube_context, the cluster's ARN) "
                                   "or the server's address that of cluster %s?" % (err.msg, kind, cluster_name),
                                   **err.details)
            raise
        refs.extend("%s %s/%s" % (kind, item["metadata"]["namespace"], item["metadata"]["name"]) for item in items)
    return sorted(refs)


def run(module: Any) -> dict[str, Any]:
    """The task result: nothing changed; ``health``: the workloads judged and when all were healthy."""
    params = module.params
    if params["health_gate_timeout"] < 1:
        raise invalid_parameter("health_gate_timeout", "health_gate_timeout must be >= 1, got %d"
                                % params["health_gate_timeout"])
    apps = apps_v1(module.k8s())
    refs = workload_refs(apps, params["namespaces"], params["cluster_name"])
    if not module.check_mode:
        HealthGate(module.core_v1(), apps, 0, params["health_gate_timeout"]).wait(params["where"], refs)
    return dict(changed=False, health=dict(workloads=refs, healthy_at=None if module.check_mode else utc_now_iso()))
