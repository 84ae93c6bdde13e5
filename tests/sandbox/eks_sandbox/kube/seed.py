# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scenario's namespaces and workloads as Kubernetes objects (README "workloads")."""

from __future__ import annotations

from typing import Any

from ..conventions import pin_labels
from . import objects

POD_TEMPLATE_CONTAINER_PORT = 8080


def pod_template(workload: dict[str, Any], scenario: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "app", "image": objects.CONTAINER_IMAGE,
        "ports": [{"containerPort": POD_TEMPLATE_CONTAINER_PORT, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }
    spec: dict[str, Any] = {"containers": [container],
                            "terminationGracePeriodSeconds": workload["termination_grace_period_seconds"]}
    if workload["empty_dir"]:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
        container["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
    if workload["tolerate_all"]:
        spec["tolerations"] = [{"operator": "Exists"}]
    node_selector = dict(workload["node_selector"])
    if workload["nodegroup"]:
        nodegroup = next(ng for ng in scenario["nodegroups"] if ng["name"] == workload["nodegroup"])
        node_selector.update(pin_labels(scenario["cluster"]["name"], nodegroup))
    if node_selector:
        spec["nodeSelector"] = node_selector
    metadata: dict[str, Any] = {"labels": dict(workload["labels"])}
    if workload["ignore_sigterm"]:
        metadata["annotations"] = {objects.IGNORE_SIGTERM_ANNOTATION: "true"}
    return {"metadata": metadata, "spec": spec}


def workload_object(workload: dict[str, Any], scenario: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(resource plural, object) for one scenario workload."""
    template = pod_template(workload, scenario)
    metadata = {"name": workload["name"], "namespace": workload["namespace"], "labels": dict(workload["labels"])}
    selector = {"matchLabels": {"app": workload["name"]}}
    if workload["kind"] == "Deployment":
        return "deployments", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
                               "spec": {"replicas": workload["replicas"], "selector": selector,
                                        "template": template}}
    if workload["kind"] == "DaemonSet":
        return "daemonsets", {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": metadata,
                              "spec": {"selector": selector, "template": template}}
    return "pods", {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {**metadata, **template["metadata"],
                                 "labels": {**metadata["labels"], **template["metadata"]["labels"]}},
                    "spec": template["spec"]}


def pdb_objects(workload: dict[str, Any]) -> list[dict[str, Any]]:
    """The workload's PodDisruptionBudget, plus `extra` duplicates selecting the same pods."""
    pdb = workload.get("pdb")
    if not pdb:
        return []
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": workload["name"]}},
                            "unhealthyPodEvictionPolicy": pdb["unhealthy_pod_eviction_policy"]}
    if pdb.get("min_available") is not None:
        spec["minAvailable"] = pdb["min_available"]
    else:
        spec["maxUnavailable"] = pdb["max_unavailable"]
    names = [workload["name"]] + [f"{workload['name']}-extra-{i}" for i in range(1, pdb.get("extra", 0) + 1)]
    return [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
             "metadata": {"name": name, "namespace": workload["namespace"], "labels": {"app": workload["name"]}},
             "spec": objects.clone(spec)} for name in names]
