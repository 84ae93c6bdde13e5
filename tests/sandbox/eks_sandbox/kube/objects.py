# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Builders and defaulting for the objects the sandbox creates: complete enough for the strict pydantic
models of the kubernetes python client (every required field present)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .timefmt import rfc3339

IGNORE_SIGTERM_ANNOTATION = "sandbox.eksops.io/ignore-sigterm"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
CONTAINER_IMAGE = "public.ecr.aws/nginx/nginx:1.27"


def clone(obj: Any) -> Any:
    """A deep copy of JSON data (faster than copy.deepcopy)."""
    return json.loads(json.dumps(obj))


def condition(type_: str, status: bool | str, reason: str | None = None, message: str | None = None,
              *, probe: bool = False) -> dict[str, Any]:
    now = rfc3339()
    cond = {"type": type_, "status": status if isinstance(status, str) else ("True" if status else "False"),
            "lastTransitionTime": now}
    if probe:
        cond["lastProbeTime"] = None
    if reason is not None:
        cond["reason"] = reason
    if message is not None:
        cond["message"] = message
    return cond


def set_condition(conditions: list[dict[str, Any]] | None, new: dict[str, Any]) -> list[dict[str, Any]]:
    """A new list with `new` replacing the condition of the same type (keeping its transition time when the
    status did not change)."""
    result = []
    replaced = False
    for cond in conditions or []:
        if cond.get("type") == new["type"]:
            if cond.get("status") == new["status"] and cond.get("lastTransitionTime"):
                new = {**new, "lastTransitionTime": cond["lastTransitionTime"]}
            result.append(new)
            replaced = True
        else:
            result.append(cond)
    if not replaced:
        result.append(new)
    return result


def owner_reference(owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def template_hash(template: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return "".join(c for c in digest if c in "bcdfghjklmnpqrstvwxz2456789")[:10]


def pod_is_ready(pod: dict[str, Any]) -> bool:
    for cond in pod.get("status", {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def is_terminating(obj: dict[str, Any]) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


# -- defaulting of objects created through the API --

def _default_container(container: dict[str, Any]) -> None:
    container.setdefault("imagePullPolicy", "IfNotPresent")
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})


def default_pod_spec(spec: dict[str, Any]) -> None:
    for container in spec.get("containers") or []:
        _default_container(container)
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)


def default_pod(pod: dict[str, Any]) -> None:
    spec = pod.setdefault("spec", {})
    default_pod_spec(spec)
    status = pod.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", "BestEffort")
    if spec.get("nodeName") and status["phase"] == "Pending":
        status["conditions"] = set_condition(status.get("conditions"), condition("PodScheduled", True,
                                                                                 probe=True))


def _default_selector_and_template(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    template = spec.setdefault("template", {})
    template.setdefault("metadata", {})
    default_pod_spec(template.setdefault("spec", {}))


def default_deployment(obj: dict[str, Any]) -> None:
    _default_selector_and_template(obj)
    spec = obj["spec"]
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    spec.setdefault("strategy", {"type": "RollingUpdate",
                                 "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    obj.setdefault("status", {})


def default_replicaset(obj: dict[str, Any]) -> None:
    _default_selector_and_template(obj)
    obj["spec"].setdefault("replicas", 1)
    obj.setdefault("status", {"replicas": 0})
    obj["status"].setdefault("replicas", 0)


def default_daemonset(obj: dict[str, Any]) -> None:
    _default_selector_and_template(obj)
    obj["spec"].setdefault("revisionHistoryLimit", 10)
    obj["spec"].setdefault("updateStrategy", {"type": "RollingUpdate",
                                              "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    status = obj.setdefault("status", {})
    for field in ("currentNumberScheduled", "desiredNumberScheduled", "numberMisscheduled", "numberReady"):
        status.setdefault(field, 0)


def default_statefulset(obj: dict[str, Any]) -> None:
    """The API server's defaults for apps/v1 StatefulSet (kubernetes pkg/apis/apps/v1/defaults.go
    SetDefaults_StatefulSet)."""
    _default_selector_and_template(obj)
    spec = obj["spec"]
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    spec.setdefault("revisionHistoryLimit", 10)
    obj.setdefault("status", {"replicas": 0, "availableReplicas": 0})


def default_pdb(obj: dict[str, Any]) -> None:
    obj.setdefault("spec", {})
    status = obj.setdefault("status", {})
    for field in ("currentHealthy", "desiredHealthy", "disruptionsAllowed", "expectedPods", "observedGeneration"):
        status.setdefault(field, 0)


def default_namespace(obj: dict[str, Any]) -> None:
    obj.setdefault("spec", {"finalizers": ["kubernetes"]})
    obj.setdefault("status", {})["phase"] = "Active"


def default_node(obj: dict[str, Any]) -> None:
    obj.setdefault("spec", {})
    status = obj.setdefault("status", {})
    status.setdefault("nodeInfo", node_info("amd64", "v1.30.0", "Amazon Linux 2023", obj["metadata"]["name"]))
    status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 10250}})


def default_event(obj: dict[str, Any]) -> None:
    obj.setdefault("involvedObject", {})
    obj.setdefault("reportingComponent", "")
    obj.setdefault("reportingInstance", "")


DEFAULTERS = {"pods": default_pod, "deployments": default_deployment, "replicasets": default_replicaset,
              "daemonsets": default_daemonset, "statefulsets": default_statefulset, "poddisruptionbudgets": default_pdb,
              "namespaces": default_namespace, "nodes": default_node, "events": default_event}


# -- nodes --

def node_info(architecture: str, kubelet_version: str, os_image: str, seed: str,
              operating_system: str = "linux") -> dict[str, str]:
    digest = hashlib.sha256(seed.encode()).hexdigest()
    system_uuid = f"ec2{digest[3:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
    return {"architecture": architecture, "bootID": f"{digest[32:40]}-{digest[40:44]}-{digest[44:48]}-"
                                                    f"{digest[48:52]}-{digest[52:64]}",
            "containerRuntimeVersion": "containerd://1.7.22", "kernelVersion": "6.1.112-122.189.amzn2023.x86_64",
            "kubeProxyVersion": kubelet_version, "kubeletVersion": kubelet_version, "machineID": digest[:32],
            "operatingSystem": operating_system, "osImage": os_image, "systemUUID": system_uuid}


def node_conditions(ready: bool, reason: str, message: str, *, unknown: bool = False) -> list[dict[str, Any]]:
    now = rfc3339()
    pressure = [("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available")]
    conditions = [{"type": t, "status": "Unknown" if unknown else "False", "reason": r, "message": m,
                   "lastHeartbeatTime": now, "lastTransitionTime": now} for t, r, m in pressure]
    conditions.append({"type": "Ready", "status": "Unknown" if unknown else ("True" if ready else "False"),
                       "reason": reason, "message": message, "lastHeartbeatTime": now, "lastTransitionTime": now})
    return conditions


def node_ready(node: dict[str, Any]) -> bool:
    for cond in node.get("status", {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False
