# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet and node lifecycle side: EC2 instances become Nodes after booting, stopped instances' Nodes go
NotReady, lose their pods and are removed; cordoned nodes carry the unschedulable taint.

A node is what its instance's bootstrap makes it, as on AWS: the kubelet registers with the cluster its user
data names (an instance bootstrapped for another cluster, or with no bootstrap at all, never joins), with the
labels, taints and max pods of its user data (eks_sandbox.bootstrap) plus the well-known labels the kubelet
and the AWS cloud provider set (kubernetes.io/hostname, topology.kubernetes.io/zone and region,
node.kubernetes.io/instance-type, kubernetes.io/arch and os). Nothing else: the node-group labels exist only
where the node group's tool writes them into the user data.
"""

from __future__ import annotations

import re
from typing import Any

from ..bootstrap import OS_AL2, OS_BOTTLEROCKET, OS_WINDOWS, os_of_ami_family, parse_user_data
from . import objects
from .api import Api
from .resources import NODES, PODS

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
# The kubelet's Ready condition (kubernetes pkg/kubelet/nodestatus/setters.go ReadyCondition): True with
# "KubeletReady" / "kubelet is posting ready status", or False with "KubeletNotReady" and the kubelet's runtime and
# network errors as the message. A node whose container runtime has loaded no CNI configuration yet: containerd's
# CRI Status reports NetworkReady false, reason "NetworkPluginNotReady", message "Network plugin returns error: "
# and go-cni's ErrCNINotInitialized "cni plugin not initialized" (containerd internal/cri/server/status.go,
# containerd/go-cni errors.go); the kubelet's updateRuntimeUp turns it into "container runtime network not ready: "
# and RuntimeCondition.String() "%s=%t reason:%s message:%s" (pkg/kubelet/kubelet.go,
# pkg/kubelet/container/runtime.go). EKS user guide "Troubleshoot problems with Amazon EKS clusters and nodes",
# "Container runtime network not ready", shows the same kubelet line.
KUBELET_READY = ("KubeletReady", "kubelet is posting ready status")
CNI_NOT_INITIALIZED = ("KubeletNotReady", "container runtime network not ready: NetworkReady=false "
                       "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized")
_STOPPED_STATES = ("shutting-down", "terminated", "stopping", "stopped")
_IP_IN_NAME = re.compile(r"^ip-(\d+)-(\d+)-(\d+)-(\d+)")
_CPU_BY_SIZE = {"nano": 2, "micro": 2, "small": 2, "medium": 2, "large": 2, "xlarge": 4, "2xlarge": 8,
                "4xlarge": 16, "8xlarge": 32, "12xlarge": 48, "16xlarge": 64, "24xlarge": 96}


def _internal_ip(dns_name: str) -> str:
    match = _IP_IN_NAME.match(dns_name)
    return ".".join(match.groups()) if match else "10.0.0.1"


def _taint(key: str, effect: str) -> dict[str, Any]:
    return {"key": key, "effect": effect, "timeAdded": objects.rfc3339()} if effect == "NoExecute" \
        else {"key": key, "effect": effect}


def _not_ready_taints() -> list[dict[str, Any]]:
    """A node whose Ready condition is False: node.kubernetes.io/not-ready NoSchedule, which the TaintNodesAtCreation
    admission plugin puts on every new Node (plugin/pkg/admission/nodetaint/admission.go) and the node lifecycle
    controller keeps while Ready is False (nodeConditionToTaintKeyStatusMap), and NoExecute with its timeAdded, which
    the controller adds for Ready False (NotReadyTaintTemplate, processTaintBaseEviction; kubernetes
    pkg/controller/nodelifecycle/node_lifecycle_controller.go). Both go once Ready is True (markNodeAsReachable and
    the NoSchedule tainting pass)."""
    return [_taint(NOT_READY_TAINT, "NoSchedule"), _taint(NOT_READY_TAINT, "NoExecute")]


def _with_taints(node: dict[str, Any], add: list[dict[str, Any]], remove_keys: set[str]) -> dict[str, Any] | None:
    """`node` with taints added/removed, or None when nothing changes."""
    taints = [t for t in node["spec"].get("taints") or [] if t.get("key") not in remove_keys]
    present = {(t.get("key"), t.get("effect")) for t in taints}
    taints.extend(t for t in add if (t["key"], t["effect"]) not in present)
    if taints == (node["spec"].get("taints") or []):
        return None
    spec = {**node["spec"], "taints": taints}
    if not taints:
        del spec["taints"]
    return {**node, "spec": spec}


class NodeLifecycle:
    def __init__(self, api: Api, scenario: dict[str, Any], recorder, faults):
        self.api = api
        self.store = api.store
        self.recorder = recorder
        self.faults = faults
        self.cluster_name = scenario["cluster"]["name"]
        self.timings = scenario["timings"]
        self.region = scenario["region"]
        self.amis = {ami["id"]: ami for ami in scenario["amis"]}
        self._never_joins: dict[str, str] = {}  # instance id -> why its kubelet never registers
        self._running_since: dict[str, float] = {}
        self._stopped_since: dict[str, float] = {}
        self._node_of_instance: dict[str, str] = {}
        self._lost_pods: set[str] = set()  # uids already reported lost
        self._booted: list[tuple[str, float]] = []  # this pass's nodes registered Ready (sync)
        self.gone_nodes: set[str] = set()  # nodes whose instance stopped (no kubelet any more)
        # never_ready AMIs whose nodes this cluster's CNI initializes since an update (update_cni).
        self._cni_supports: set[str] = set()
        self._cni_written: set[str] = set()  # never_ready nodes whose CNI configuration an update wrote

    def sync(self, instances: list[dict[str, Any]], now: float) -> list[tuple[str, float]]:
        """One pass; returns (instance id, launch time) of the instances whose node registered Ready in it."""
        self._booted = []
        listed = set()
        for instance in instances:
            instance_id = instance["instance_id"]
            listed.add(instance_id)
            if instance["state"] == "running" and instance_id not in self._stopped_since:
                since = self._running_since.setdefault(instance_id, now)
                if instance_id not in self._node_of_instance and instance_id not in self._never_joins \
                        and now - since >= self.timings["node_boot_seconds"]:
                    self._register(instance)
            elif instance["state"] in _STOPPED_STATES:
                self._stopped(instance_id, now)
        for instance_id in list(self._node_of_instance):
            if instance_id not in listed:
                self._stopped(instance_id, now)
        for instance_id in [i for i in self._running_since if i not in listed]:
            del self._running_since[instance_id]
        for instance_id in [i for i in self._stopped_since if i not in listed and i not in self._node_of_instance]:
            del self._stopped_since[instance_id]
        for instance_id in [i for i in self._never_joins if i not in listed]:
            del self._never_joins[instance_id]
        self._sync_network_ready()
        self._sync_cordon_taints()
        return self._booted

    def _register(self, instance: dict[str, Any]) -> None:
        boot = parse_user_data(instance.get("user_data") or "")
        why_not = self._join_refusal(instance, boot)
        if why_not:
            self._never_joins[instance["instance_id"]] = why_not
            self.recorder.event("node_never_joined", instance_id=instance["instance_id"],
                                nodegroup=instance.get("nodegroup"), reason=why_not)
            return
        name = instance["private_dns_name"]
        self._node_of_instance[instance["instance_id"]] = name
        if self.store.get(NODES, "", name) is not None:
            return
        node = self.store.insert(NODES, self.build_node(instance, boot))
        self.recorder.event("node_registered", node=name, instance_id=instance["instance_id"],
                            nodegroup=instance["nodegroup"])
        if objects.node_ready(node) and instance.get("launched_at") is not None:
            self._booted.append((instance["instance_id"], instance["launched_at"]))

    def update_cni(self, ami_name: str, instances: list[dict[str, Any]]) -> list[str]:
        """The cluster's VPC CNI add-on updated to a release that initializes on the nodes of never_ready AMI
        `ami_name`, as EKS's UpdateAddon for vpc-cni (or `kubectl apply` of a newer aws-k8s-cni.yaml) does: the
        aws-node DaemonSet's pods restart on every node (EKS user guide "Assign IPs to Pods with the Amazon VPC CNI",
        "Updating the Amazon VPC CNI (Amazon EKS add-on)" and "(self-managed add-on)"), and each new aws-node
        starts ipamd, then writes /etc/cni/net.d/10-aws.conflist, "the trigger to Kubelet that that particular CNI
        plugin is ready" (aws/amazon-vpc-cni-k8s cmd/aws-vpc-cni/main.go). The AMI is unchanged. The nodes of that
        AMI already registered turn Ready at the kubelet's next pass (_sync_network_ready) and those registering
        later boot Ready. Not modelled: the rollout's pace (the DaemonSet's rolling update, its maxUnavailable) and
        aws-node's own pods (the sandbox runs no aws-node DaemonSet). Returns what changed."""
        ids = [ami_id for ami_id, ami in self.amis.items() if ami["name"] == ami_name and ami.get("never_ready")]
        if not ids:
            raise ValueError(f"no AMI {ami_name!r} whose nodes never get Ready in cluster {self.cluster_name}")
        self._cni_supports.update(ids)
        done = [f"cluster {self.cluster_name}: the VPC CNI updated; aws-node initializes on the nodes of {ami_name}"]
        for instance in instances:
            name = self._node_of_instance.get(instance["instance_id"])
            node = self.store.get(NODES, "", name) if name and instance["image_id"] in ids else None
            if node is None or objects.node_ready(node) or name in self.gone_nodes:
                continue
            self._cni_written.add(name)
            done.append(f"node {name}: aws-node wrote /etc/cni/net.d/10-aws.conflist; "
                        "the kubelet reports Ready at its next pass")
        return done

    def _sync_network_ready(self) -> None:
        """The kubelet of each node whose CNI configuration an update wrote (update_cni): its runtime's network is
        ready, so the kubelet posts Ready (only the Ready condition changes, its lastTransitionTime with it; the
        other conditions keep theirs: pkg/kubelet/nodestatus/setters.go), and the node lifecycle controller lifts
        the not-ready taints (_not_ready_taints)."""
        for name in sorted(self._cni_written):
            self._cni_written.discard(name)
            node = self.store.get(NODES, "", name)
            if node is None or name in self.gone_nodes:
                continue
            now = objects.rfc3339()
            ready = {"type": "Ready", "status": "True", "reason": KUBELET_READY[0], "message": KUBELET_READY[1],
                     "lastHeartbeatTime": now, "lastTransitionTime": now}
            updated = {**node, "status": {**node["status"],
                                          "conditions": objects.set_condition(node["status"]["conditions"], ready)}}
            self.store.replace(NODES, _with_taints(updated, [], {NOT_READY_TAINT}) or updated)
            self.recorder.event("node_ready", node=name, reason="CNI configuration written (update-cni)")

    def _join_refusal(self, instance: dict[str, Any], boot) -> str:
        """Why this instance's kubelet never registers a node ("" when it does)."""
        if boot.cluster_name is None:
            return "its user data runs no EKS bootstrap"
        if boot.cluster_name != self.cluster_name:
            return f"its user data bootstraps it for cluster {boot.cluster_name}, not {self.cluster_name}"
        ami = self.amis.get(instance["image_id"])
        ami_os = os_of_ami_family(ami["family"]) if ami else boot.os
        if boot.os != ami_os:
            # Each AMI runs its own bootstrap (awslabs/amazon-eks-ami): AL2's cloud-init runs /etc/eks/bootstrap.sh and
            # ignores NodeConfig parts; on AL2023 nodeadm reads only NodeConfig, and bootstrap.sh errors out
            # (templates/al2023/runtime/rootfs/etc/eks/bootstrap.sh); Bottlerocket reads only its TOML settings.
            return f"its user data is for {boot.os}'s bootstrap, but its AMI runs {ami_os}'s"
        if self.faults is not None and self.faults.never_join(instance["availability_zone"]):
            return "injected fault never_join: the kubelet never reaches the API server"
        return ""

    def build_node(self, instance: dict[str, Any], boot=None) -> dict[str, Any]:
        boot = boot or parse_user_data(instance.get("user_data") or "")
        ami = self.amis.get(instance["image_id"], {})
        name = instance["private_dns_name"]
        zone = instance["availability_zone"]
        version = ami.get("kubernetes_version", "1.30")
        kubelet_version = f"v{version}.0-eks-sandbox"
        family = ami.get("family", "amazon-linux-2023/x86_64/standard")
        arm = "arm64" in family
        labels = {
            **boot.labels,
            # The kubelet's own labels (kubernetes pkg/kubelet/kubelet_node_status.go: runtime.GOOS, GOARCH).
            "kubernetes.io/hostname": name, "kubernetes.io/os": "windows" if boot.os == OS_WINDOWS else "linux",
            "kubernetes.io/arch": "arm64" if arm else "amd64",
            "topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": self.region,
            "node.kubernetes.io/instance-type": instance["instance_type"],
        }
        taints = [{"key": t["key"], "value": t.get("value") or "", "effect": t["effect"]} for t in boot.taints]
        if ami.get("never_ready") and instance["image_id"] not in self._cni_supports:
            taints.extend(_not_ready_taints())
            conditions = objects.node_conditions(False, *CNI_NOT_INITIALIZED)
        else:
            conditions = objects.node_conditions(True, *KUBELET_READY)
        cpu = _CPU_BY_SIZE.get(instance["instance_type"].rsplit(".", 1)[-1], 2)
        max_pods = str(boot.max_pods or 110)
        capacity = {"cpu": str(cpu), "memory": f"{cpu * 4 * 1024 * 1024}Ki", "pods": max_pods,
                    "ephemeral-storage": "83873772Ki", "hugepages-2Mi": "0"}
        allocatable = {**capacity, "cpu": f"{cpu * 1000 - 70}m", "memory": f"{cpu * 4 * 1024 * 1024 - 700000}Ki"}
        ip = _internal_ip(name)
        spec: dict[str, Any] = {"providerID": f"aws:///{zone}/{instance['instance_id']}"}
        if taints:
            spec["taints"] = taints
        os_image = {OS_AL2: "Amazon Linux 2", OS_BOTTLEROCKET: "Bottlerocket OS 1.20.3 (aws-k8s-%s)" % version,
                    OS_WINDOWS: "Windows Server 2022 Datacenter"}.get(boot.os, "Amazon Linux 2023.6.20241111")
        return {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels,
                         "annotations": {"alpha.kubernetes.io/provided-node-ip": ip,
                                         "node.alpha.kubernetes.io/ttl": "0",
                                         "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": spec,
            "status": {
                "capacity": capacity, "allocatable": allocatable, "conditions": conditions,
                "addresses": [{"type": "InternalIP", "address": ip}, {"type": "InternalDNS", "address": name},
                              {"type": "Hostname", "address": name}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": objects.node_info("arm64" if arm else "amd64", kubelet_version, os_image,
                                              instance["instance_id"], labels["kubernetes.io/os"]),
                "images": [],
            },
        }

    def _stopped(self, instance_id: str, now: float) -> None:
        first = instance_id not in self._stopped_since
        since = self._stopped_since.setdefault(instance_id, now)
        name = self._node_of_instance.get(instance_id)
        if name is None:
            return
        node = self.store.get(NODES, "", name)
        if node is None:
            del self._node_of_instance[instance_id]
            self.gone_nodes.discard(name)
            return
        if first or name not in self.gone_nodes:
            self._node_lost(node)
        if now - since >= self.timings["node_removal_seconds"]:
            self._remove_node(node)
            del self._node_of_instance[instance_id]
            self.gone_nodes.discard(name)

    def _node_lost(self, node: dict[str, Any]) -> None:
        """The instance stopped: the kubelet is gone, so the Node turns NotReady and its pods die."""
        name = node["metadata"]["name"]
        self.gone_nodes.add(name)
        status = {**node["status"], "conditions": objects.node_conditions(
            False, "NodeStatusUnknown", "Kubelet stopped posting node status.", unknown=True)}
        updated = {**node, "status": status}
        updated = _with_taints(updated, [_taint(UNREACHABLE_TAINT, "NoSchedule"),
                                         _taint(UNREACHABLE_TAINT, "NoExecute")], set()) or updated
        self.store.replace(NODES, updated)
        self.recorder.event("node_not_ready", node=name, reason="instance stopped")
        for key in list(self.store.pod_keys_on_node(name)):
            pod = self.store.get(PODS, *key)
            self._report_lost(pod, name)
            if objects.pod_is_ready(pod):
                pod_status = dict(pod["status"])
                pod_status["conditions"] = objects.set_condition(
                    objects.set_condition(pod_status.get("conditions"),
                                          objects.condition("Ready", False, "NodeNotReady", probe=True)),
                    objects.condition("ContainersReady", False, "NodeNotReady", probe=True))
                self.store.replace(PODS, {**pod, "status": pod_status})

    def _report_lost(self, pod: dict[str, Any], node_name: str) -> None:
        uid = pod["metadata"]["uid"]
        if uid in self._lost_pods or self._dies_with_node(pod):
            return
        self._lost_pods.add(uid)
        self.recorder.pod_lost(pod["metadata"]["namespace"], pod["metadata"]["name"], node_name)

    def _dies_with_node(self, pod: dict[str, Any]) -> bool:
        """DaemonSet and mirror pods belong to their node: their end with it is no loss."""
        if objects.MIRROR_ANNOTATION in (pod["metadata"].get("annotations") or {}):
            return True
        return any(ref.get("controller") and ref.get("kind") == "DaemonSet"
                   for ref in pod["metadata"].get("ownerReferences") or ())

    def _remove_node(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        for key in list(self.store.pod_keys_on_node(name)):
            pod = self.store.get(PODS, *key)
            self._report_lost(pod, name)
            self._lost_pods.discard(pod["metadata"]["uid"])
            self.store.remove(PODS, *key)
        self.store.remove(NODES, "", name)
        self.recorder.event("node_removed", node=name)

    def _sync_cordon_taints(self) -> None:
        for node in self.store.items(NODES):
            has_taint = any(t.get("key") == UNSCHEDULABLE_TAINT for t in node["spec"].get("taints") or ())
            if bool(node["spec"].get("unschedulable")) != has_taint:
                updated = _with_taints(node, [_taint(UNSCHEDULABLE_TAINT, "NoSchedule")], set()) \
                    if node["spec"].get("unschedulable") else _with_taints(node, [], {UNSCHEDULABLE_TAINT})
                if updated is not None:
                    self.store.replace(NODES, updated)
