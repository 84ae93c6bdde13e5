# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workload controllers: Deployment (one ReplicaSet per pod template; an older template's ReplicaSet is scaled
to zero), ReplicaSet, DaemonSet, and the garbage collector for objects whose owner is gone."""

from __future__ import annotations

from typing import Any, Callable

from . import objects
from .api import Api
from .resources import DAEMONSETS, DEPLOYMENTS, PODS, REPLICASETS, STATEFULSETS, ResourceType
from .selectors import from_label_selector_object
from .store import Key

# The tolerations the DaemonSet controller adds to its pods, so they run on cordoned and failing nodes too.
DAEMONSET_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def _active(pod: dict[str, Any] | None) -> bool:
    return pod is not None and not objects.is_terminating(pod) \
        and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")


def tolerates(tolerations: list[dict[str, Any]] | None, taint: dict[str, Any]) -> bool:
    for toleration in tolerations or ():
        if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists":
            if not toleration.get("key") or toleration["key"] == taint.get("key"):
                return True
        elif toleration.get("key") == taint.get("key") and \
                (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def node_taints(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The taints that keep pods off a node (a cordon counts as the unschedulable taint)."""
    taints = [t for t in node["spec"].get("taints") or () if t.get("effect") in ("NoSchedule", "NoExecute")]
    if node["spec"].get("unschedulable") and not any(
            t.get("key") == "node.kubernetes.io/unschedulable" for t in taints):
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    return taints


def fits_node(pod_spec: dict[str, Any], node: dict[str, Any]) -> bool:
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    return all(tolerates(pod_spec.get("tolerations"), taint) for taint in node_taints(node))


def pod_from_template(template: dict[str, Any], owner: dict[str, Any], name_prefix: str) -> dict[str, Any]:
    pod = objects.clone({"metadata": template.get("metadata") or {}, "spec": template.get("spec") or {}})
    meta = pod["metadata"]
    meta.pop("name", None)
    meta["generateName"] = name_prefix
    meta["namespace"] = owner["metadata"]["namespace"]
    meta["ownerReferences"] = [objects.owner_reference(owner)]
    return pod


class WorkloadControllers:
    def __init__(self, api: Api, gone_nodes: Callable[[], set[str]]):
        self.api = api
        self.store = api.store
        self._gone_nodes = gone_nodes
        self._synced_inputs: dict[str, tuple] = {}  # object uid -> the inputs of its last sync

    def sync(self) -> None:
        self._collect_garbage()
        synced: dict[str, tuple] = {}
        store = self.store
        for rt, sync, inputs in (
                (DEPLOYMENTS, self._sync_deployment,
                 lambda obj: (store.changed_at(("kind", "replicasets")),)),
                (REPLICASETS, self._sync_replicaset,
                 lambda obj: (store.changed_at(("controller", obj["metadata"]["uid"])),)),
                (STATEFULSETS, self._sync_statefulset,
                 lambda obj: (store.changed_at(("controller", obj["metadata"]["uid"])),)),
                (DAEMONSETS, self._sync_daemonset,
                 lambda obj: (store.changed_at(("controller", obj["metadata"]["uid"])),
                              store.changed_at(("kind", "nodes")), len(self._gone_nodes())))):
            for obj in store.items(rt):
                if objects.is_terminating(obj):
                    continue
                uid = obj["metadata"]["uid"]
                key = (obj["metadata"]["resourceVersion"], *inputs(obj))
                if self._synced_inputs.get(uid) != key:
                    sync(obj)
                synced[uid] = key
        self._synced_inputs = synced

    def _write_status(self, rt: ResourceType, obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        if (obj.get("status") or {}) == status:
            return obj
        return self.store.replace(rt, {**obj, "status": status})

    def _pods(self, owner_uid: str) -> list[tuple[Key, dict[str, Any]]]:
        return [(key, self.store.get(PODS, *key)) for key in self.store.pod_keys_of_controller(owner_uid)]

    # -- Deployment --

    def _sync_deployment(self, deployment: dict[str, Any]) -> None:
        meta, spec = deployment["metadata"], deployment["spec"]
        template = spec.get("template") or {}
        pod_hash = objects.template_hash(template)
        owned = [self.store.get(rt, *key) for rt, key in self.store.dependents(meta["uid"]) if rt is REPLICASETS]
        owned = [rs for rs in owned if rs is not None]
        replicas = int(spec.get("replicas", 1))
        current = next((rs for rs in owned
                        if (rs["metadata"].get("labels") or {}).get("pod-template-hash") == pod_hash), None)
        if current is None:
            current = self._create_replicaset(deployment, pod_hash, replicas)
            owned.append(current)
        for rs in owned:
            wanted = replicas if rs is current else 0
            if int(rs["spec"].get("replicas", 0)) != wanted:
                self.store.replace(REPLICASETS, {**rs, "spec": {**rs["spec"], "replicas": wanted}},
                                   bump_generation=True)
        ready = available = total = 0
        for rs in owned:
            rs_status = rs.get("status") or {}
            total += rs_status.get("replicas", 0)
            ready += rs_status.get("readyReplicas", 0)
            available += rs_status.get("availableReplicas", 0)
        updated = (current.get("status") or {}).get("replicas", 0)
        status: dict[str, Any] = {"observedGeneration": meta.get("generation", 1), "replicas": total,
                                  "updatedReplicas": updated, "readyReplicas": ready,
                                  "availableReplicas": available}
        unavailable = max(0, replicas - available)
        if unavailable:
            status["unavailableReplicas"] = unavailable
        max_unavailable = ((spec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxUnavailable", "25%")
        allowed_down = int(max_unavailable[:-1]) * replicas // 100 if isinstance(max_unavailable, str) \
            else int(max_unavailable)
        has_minimum = available >= replicas - allowed_down
        old_conditions = (deployment.get("status") or {}).get("conditions")
        conditions = objects.set_condition(old_conditions, objects.condition(
            "Available", has_minimum, "MinimumReplicasAvailable" if has_minimum else "MinimumReplicasUnavailable",
            "Deployment has minimum availability." if has_minimum else
            "Deployment does not have minimum availability."))
        conditions = objects.set_condition(conditions, objects.condition(
            "Progressing", True, "NewReplicaSetAvailable",
            f'ReplicaSet "{current["metadata"]["name"]}" has successfully progressed.'))
        for cond in conditions:
            cond.setdefault("lastUpdateTime", cond["lastTransitionTime"])
        status["conditions"] = conditions
        self._write_status(DEPLOYMENTS, deployment, status)

    def _create_replicaset(self, deployment: dict[str, Any], pod_hash: str, replicas: int) -> dict[str, Any]:
        meta, spec = deployment["metadata"], deployment["spec"]
        template = objects.clone(spec.get("template") or {})
        template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = pod_hash
        selector = objects.clone(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})["pod-template-hash"] = pod_hash
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": f"{meta['name']}-{pod_hash}", "namespace": meta["namespace"],
                           "labels": template["metadata"]["labels"],
                           "annotations": {"deployment.kubernetes.io/desired-replicas": str(replicas),
                                           "deployment.kubernetes.io/revision": "1"},
                           "ownerReferences": [objects.owner_reference(deployment)]},
              "spec": {"replicas": replicas, "selector": selector, "template": template}}
        objects.default_replicaset(rs)
        return self.store.insert(REPLICASETS, rs)

    # -- ReplicaSet --

    def _sync_replicaset(self, rs: dict[str, Any]) -> None:
        meta = rs["metadata"]
        active = [(key, pod) for key, pod in self._pods(meta["uid"]) if _active(pod)]
        wanted = int(rs["spec"].get("replicas", 1))
        if len(active) < wanted:
            for dummy in range(wanted - len(active)):
                pod = pod_from_template(rs["spec"].get("template") or {}, rs, f"{meta['name']}-")
                created = self.api.create(PODS, meta["namespace"], pod)
                active.append(((meta["namespace"], created["metadata"]["name"]), created))
        elif len(active) > wanted:
            # Prefer removing pods that do the least: unbound, then not ready, then the youngest.
            ranked = sorted(active, key=lambda kp: (bool(kp[1]["spec"].get("nodeName")),
                                                    objects.pod_is_ready(kp[1]),
                                                    kp[1]["metadata"]["creationTimestamp"]), reverse=False)
            for key, _pod in ranked[:len(active) - wanted]:
                self.api.delete(PODS, key[0], key[1])
            active = [(key, self.store.get(PODS, *key)) for key, dummy in ranked[len(active) - wanted:]]
        ready = sum(1 for dummy, pod in active if objects.pod_is_ready(pod))
        selector = from_label_selector_object(rs["spec"].get("selector"))
        labeled = sum(1 for dummy, pod in active if selector.matches(pod["metadata"].get("labels")))
        status: dict[str, Any] = {"replicas": len(active), "fullyLabeledReplicas": labeled,
                                  "readyReplicas": ready, "availableReplicas": ready,
                                  "observedGeneration": meta.get("generation", 1)}
        self._write_status(REPLICASETS, rs, status)

    # -- StatefulSet --

    def _sync_statefulset(self, sts: dict[str, Any]) -> None:
        """kubernetes pkg/controller/statefulset (stateful_set_control.go): pod <name>-<ordinal> for each ordinal
        below spec.replicas, recreated under its name once gone (an eviction); OrderedReady creates one at a time,
        each once the ones before are Ready, Parallel all at once; surplus ordinals deleted from the highest; under
        RollingUpdate, a pod of an older revision is deleted, highest ordinal first, once every pod is Ready.
        Revisions are the template's hash (a ControllerRevision's name, <name>-<hash>, not served here)."""
        meta, spec = sts["metadata"], sts["spec"]
        replicas, ordered = int(spec.get("replicas", 1)), spec.get("podManagementPolicy") != "Parallel"
        update = f"{meta['name']}-{objects.template_hash(spec.get('template') or {})}"
        pods = {pod["metadata"]["name"]: pod for dummy, pod in self._pods(meta["uid"])}
        for ordinal in range(replicas):
            name = f"{meta['name']}-{ordinal}"
            if name not in pods:
                pods[name] = self._create_stateful_pod(sts, ordinal, update)
            if ordered and not (_active(pods[name]) and objects.pod_is_ready(pods[name])):
                break
        surplus = sorted((p for p in pods.values() if int(p["metadata"]["name"].rsplit("-", 1)[1]) >= replicas
                          and _active(p)), key=lambda p: -int(p["metadata"]["name"].rsplit("-", 1)[1]))
        for pod in surplus[:1] if ordered else surplus:
            self.api.delete(PODS, meta["namespace"], pod["metadata"]["name"])
        active = [pod for pod in pods.values() if _active(pod)]
        revision = {pod["metadata"]["name"]: (pod["metadata"].get("labels") or {}).get("controller-revision-hash")
                    for pod in active}
        ready = sum(1 for pod in active if objects.pod_is_ready(pod))
        old = sorted((name for name, rev in revision.items() if rev != update), key=lambda n: -int(n.rsplit("-", 1)[1]))
        if old and ready == len(active) == replicas and (spec.get("updateStrategy") or {}).get("type") != "OnDelete":
            self.api.delete(PODS, meta["namespace"], old[0])
        current = (sts.get("status") or {}).get("currentRevision") or update
        current = update if not old and len(active) == replicas else current
        status = {"observedGeneration": meta.get("generation", 1), "replicas": len(active), "readyReplicas": ready,
                  "availableReplicas": ready, "currentReplicas": sum(1 for rev in revision.values() if rev == current),
                  "updatedReplicas": sum(1 for rev in revision.values() if rev == update),
                  "currentRevision": current, "updateRevision": update, "collisionCount": 0}
        self._write_status(STATEFULSETS, sts, status)

    def _create_stateful_pod(self, sts: dict[str, Any], ordinal: int, revision: str) -> dict[str, Any]:
        """A StatefulSet's pod: its stable name and hostname, the labels the controller adds (kubernetes
        pkg/controller/statefulset/stateful_set_utils.go newVersionedStatefulSetPod)."""
        name = f"{sts['metadata']['name']}-{ordinal}"
        pod = pod_from_template(sts["spec"].get("template") or {}, sts, "")
        del pod["metadata"]["generateName"]
        pod["metadata"]["name"] = name
        pod["metadata"].setdefault("labels", {}).update({
            "controller-revision-hash": revision, "statefulset.kubernetes.io/pod-name": name,
            "apps.kubernetes.io/pod-index": str(ordinal)})
        pod["spec"]["hostname"] = name
        if sts["spec"].get("serviceName"):
            pod["spec"]["subdomain"] = sts["spec"]["serviceName"]
        return self.api.create(PODS, sts["metadata"]["namespace"], pod)

    # -- DaemonSet --

    def _sync_daemonset(self, ds: dict[str, Any]) -> None:
        from .resources import NODES
        meta = ds["metadata"]
        template = objects.clone(ds["spec"].get("template") or {})
        pod_spec = template.setdefault("spec", {})
        pod_spec["tolerations"] = (pod_spec.get("tolerations") or []) + [
            t for t in DAEMONSET_TOLERATIONS if t not in (pod_spec.get("tolerations") or [])]
        gone = self._gone_nodes()
        eligible = {node["metadata"]["name"] for node in self.store.items(NODES)
                    if node["metadata"]["name"] not in gone and fits_node(pod_spec, node)}
        by_node: dict[str, dict[str, Any]] = {}
        for key, pod in self._pods(meta["uid"]):
            if not _active(pod):
                continue
            node_name = pod["spec"].get("nodeName") or ""
            if node_name in eligible and node_name not in by_node:
                by_node[node_name] = pod
            elif node_name not in gone:
                self.api.delete(PODS, *key)
        for node_name in sorted(eligible - set(by_node)):
            pod = pod_from_template(template, ds, f"{meta['name']}-")
            pod["spec"]["nodeName"] = node_name
            by_node[node_name] = self.api.create(PODS, meta["namespace"], pod)
        ready = sum(1 for pod in by_node.values() if objects.pod_is_ready(pod))
        status = {"currentNumberScheduled": len(by_node), "desiredNumberScheduled": len(eligible),
                  "numberMisscheduled": 0, "numberReady": ready, "numberAvailable": ready,
                  "updatedNumberScheduled": len(by_node), "observedGeneration": meta.get("generation", 1)}
        unavailable = len(eligible) - ready
        if unavailable:
            status["numberUnavailable"] = unavailable
        self._write_status(DAEMONSETS, ds, status)

    # -- garbage collector --

    def _collect_garbage(self) -> None:
        for owner_uid in self.store.owner_uids():
            if self.store.uid_exists(owner_uid):
                continue
            for rt, key in self.store.dependents(owner_uid):
                dependent = self.store.get(rt, *key)
                if dependent is None or objects.is_terminating(dependent):
                    continue
                owners = [ref.get("uid") for ref in dependent["metadata"].get("ownerReferences") or ()]
                if not any(self.store.uid_exists(uid) for uid in owners):
                    self.api.delete(rt, *key)
        for rt in (DEPLOYMENTS, REPLICASETS, DAEMONSETS, STATEFULSETS):
            for owner in self.store.items(rt):
                if "foregroundDeletion" not in (owner["metadata"].get("finalizers") or ()):
                    continue
                dependents = self.store.dependents(owner["metadata"]["uid"])
                for dep_rt, key in dependents:
                    dependent = self.store.get(dep_rt, *key)
                    if dependent is not None and not objects.is_terminating(dependent):
                        self.api.delete(dep_rt, *key, {"propagationPolicy": "Foreground"})
                if not dependents:
                    self.api.remove_finalizer(rt, owner, "foregroundDeletion")
