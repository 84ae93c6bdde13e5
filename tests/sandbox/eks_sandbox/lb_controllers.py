# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controllers that put nodes behind the scenario's load balancers (issue 11 item 3), and what the report says
about them.

Two controllers are played, each as its source code decides which nodes a load balancer targets:

- **AWS Load Balancer Controller** (`type: target_group`, instance targets), kubernetes-sigs/aws-load-balancer-
  controller at v2.1.1 and later (checked up to the v3 module, `pkg/backend/endpoint_utils.go` and
  `endpoint_resolver.go` ResolveNodePortEndpoints): a node is a target when the default traffic-proxy selector
  matches it (no `node-role.kubernetes.io/master` label, no `node.kubernetes.io/exclude-from-external-load-balancers`
  label *whatever its value* (selector operator DoesNotExist), no `alpha.service-controller.kubernetes.io/exclude-
  balancer` label, `eks.amazonaws.com/compute-type` not `fargate`), plus the TargetGroupBinding's nodeSelector (the
  scenario's `node_selector`), when IsNodeSuitableAsTrafficProxy holds (no `ToBeDeletedByClusterAutoscaler` taint,
  no `karpenter.sh/disrupted:NoSchedule` taint) and when its Ready condition is True. **A cordoned node stays a
  target**: v2.1.1 (#1688, "remove unschedulable from LB node pool critera") never looks at spec.unschedulable.
  Left out: fail-open (when no node is Ready the controller targets nodes whose Ready is Unknown).
- **In-tree service controller** (`type: classic`), k8s.io/cloud-provider `controllers/service/controller.go`
  with StableLoadBalancerNodeSet (KEP-3458, GA in 1.30): stableNodeSetPredicates = the node is not being deleted,
  has no `node.kubernetes.io/exclude-from-external-load-balancers` label, no `ToBeDeletedByClusterAutoscaler`
  taint; readiness is not a criterion, and since Kubernetes 1.19 (kubernetes/kubernetes#90823: "Service load
  balancers no longer exclude nodes marked unschedulable") neither is a cordon. A node leaves when it is deleted.

Either way the instance (spec.providerID) must be running; a controller deregisters what it no longer selects,
including the instance of a node that is gone. The load balancers' own behaviour (draining for the deregistration
delay) is moto's, as corrected by moto_patches (j) and (k). The controllers work on moto's backends directly under
the AWS lock (their calls are not the collection's, so they are not counted in `aws_calls`) and react within one
controller pass, where the real ones take a few seconds.

The report gets, per load balancer, the registration history of each instance (`registered_at`, `deregistering_at`,
`gone_at`: wall-clock epoch seconds) and `load_balancer_violations`: each instance that was terminated (EC2 left
`running` for shutting-down) while it was still registered with, or draining from, a load balancer.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .aws.moto_patches import classic_draining_instances, draining_targets, registered_at

__all__ = ["LoadBalancerControllers", "EXCLUDE_LABEL", "node_targeted"]

EXCLUDE_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
ALPHA_EXCLUDE_LABEL = "alpha.service-controller.kubernetes.io/exclude-balancer"
MASTER_LABEL = "node-role.kubernetes.io/master"
COMPUTE_TYPE_LABEL = "eks.amazonaws.com/compute-type"
CLUSTER_AUTOSCALER_TAINT = "ToBeDeletedByClusterAutoscaler"
KARPENTER_DISRUPTED_TAINT = "karpenter.sh/disrupted"
_LEFT_RUNNING = ("shutting-down", "terminated", "stopping", "stopped")


def _ready(node: dict[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def node_targeted(balancer_type: str, node: dict[str, Any]) -> bool:
    """Whether the controller of a `target_group` or `classic` load balancer targets this node (before the
    scenario's node group and node selector)."""
    labels = node["metadata"].get("labels") or {}
    taints = node["spec"].get("taints") or []
    if balancer_type == "target_group":
        # aws-load-balancer-controller pkg/backend/endpoint_utils.go: defaultTrafficProxyNodeLabelSelector,
        # IsNodeSuitableAsTrafficProxy; endpoint_resolver.go: filterNodesByReadyConditionStatus(True).
        if any(key in labels for key in (MASTER_LABEL, EXCLUDE_LABEL, ALPHA_EXCLUDE_LABEL)):
            return False
        if labels.get(COMPUTE_TYPE_LABEL) == "fargate":
            return False
        if any(t.get("key") == CLUSTER_AUTOSCALER_TAINT
               or (t.get("key") == KARPENTER_DISRUPTED_TAINT and t.get("effect") == "NoSchedule") for t in taints):
            return False
        return _ready(node)
    # k8s.io/cloud-provider controllers/service/controller.go: nodeNotDeletedPredicate, nodeIncludedPredicate,
    # nodeUnTaintedPredicate (StableLoadBalancerNodeSet).
    if node["metadata"].get("deletionTimestamp"):
        return False
    if EXCLUDE_LABEL in labels:
        return False
    return not any(t.get("key") == CLUSTER_AUTOSCALER_TAINT for t in taints)


class LoadBalancerControllers:
    """Registers and deregisters node instances with the scenario's load balancers; keeps their history.

    `tick(nodes, instances)` runs on the controller loop (nodes: the API server's Node objects; instances:
    AwsSim.instances()); `report()` on the control server's threads."""

    def __init__(self, scenario: dict[str, Any], aws: Any, recorder: Any):
        self.balancers = scenario["load_balancers"]
        self.aws = aws
        self.recorder = recorder
        self._lock = threading.Lock()
        self._history: dict[str, list[dict[str, Any]]] = {b["name"]: [] for b in self.balancers}
        self._open: dict[str, dict[str, dict[str, Any]]] = {b["name"]: {} for b in self.balancers}
        self._violations: list[dict[str, Any]] = []
        self._left_running: set[str] = set()
        self._unsettled = ""

    # --------------------------------------------------------------------------------------------- the loop

    def tick(self, nodes: list[dict[str, Any]], instances: list[dict[str, Any]]) -> None:
        if not self.balancers:
            return
        by_id = {i["instance_id"]: i for i in instances}
        node_of = {}
        for node in nodes:
            provider = node["spec"].get("providerID") or ""
            if provider:
                node_of[provider.rsplit("/", 1)[-1]] = node
        with self.aws.lock:
            now = time.monotonic()
            states = {b["name"]: self._state(b, now) for b in self.balancers}
            with self._lock:
                self._check_terminations(by_id, node_of, states)
            waiting = []
            for balancer in self.balancers:
                registered, draining = states[balancer["name"]]
                wanted = self._wanted(balancer, by_id, node_of)
                added, removed = sorted(wanted - registered), sorted(registered - wanted)
                if added:
                    self._register(balancer, added)
                if removed:
                    self._deregister(balancer, removed)
                if added or removed:
                    states[balancer["name"]] = self._state(balancer, time.monotonic())
                if wanted - states[balancer["name"]][0]:
                    waiting.append(f"load balancer {balancer['name']}: "
                                   f"{len(wanted - states[balancer['name']][0])} instances not registered yet")
            with self._lock:
                for balancer in self.balancers:
                    self._update_history(balancer, *states[balancer["name"]], node_of, time.monotonic())
                self._unsettled = "; ".join(waiting)

    def unsettled(self) -> str:
        """What the controllers still wait for before the cluster counts as settled ("" when settled)."""
        with self._lock:
            return self._unsettled

    def _wanted(self, balancer: dict[str, Any], instances: dict[str, dict[str, Any]],
                node_of: dict[str, dict[str, Any]]) -> set[str]:
        if balancer["type"] == "target_group" and balancer["target_type"] != "instance":
            return set()  # ip targets are pod addresses: not registered with nodes (not modelled)
        wanted = set()
        for instance_id, node in node_of.items():
            instance = instances.get(instance_id)
            if instance is None or instance["state"] != "running":
                continue
            if instance["nodegroup"] not in balancer["nodegroups"]:
                continue
            labels = node["metadata"].get("labels") or {}
            if any(labels.get(k) != v for k, v in balancer["node_selector"].items()):
                continue
            if node_targeted(balancer["type"], node):
                wanted.add(instance_id)
        return wanted

    def _state(self, balancer: dict[str, Any], now: float) -> tuple[set[str], dict[str, tuple[float, float]]]:
        """(registered instance ids, {draining id: (since, until)}) of a load balancer, from moto."""
        seeded = self.aws.load_balancers[balancer["name"]]
        if balancer["type"] == "target_group":
            target_group = self.aws.elbv2.target_groups[seeded["arn"]]
            return set(target_group.targets), draining_targets(target_group, now)
        load_balancer = self.aws.elb.get_load_balancer(balancer["name"])
        return set(load_balancer.instance_ids), classic_draining_instances(load_balancer, now)

    def _owner(self, balancer: dict[str, Any]) -> Any:
        seeded = self.aws.load_balancers[balancer["name"]]
        if balancer["type"] == "target_group":
            return self.aws.elbv2.target_groups[seeded["arn"]]
        return self.aws.elb.get_load_balancer(balancer["name"])

    def _register(self, balancer: dict[str, Any], instance_ids: list[str]) -> None:
        seeded = self.aws.load_balancers[balancer["name"]]
        if balancer["type"] == "target_group":
            self.aws.elbv2.register_targets(seeded["arn"], [{"Id": i, "Port": seeded["port"]} for i in instance_ids])
        else:
            self.aws.elb.register_instances(balancer["name"], instance_ids)
        self.recorder.event("lb_registered", load_balancer=balancer["name"], instances=instance_ids)

    def _deregister(self, balancer: dict[str, Any], instance_ids: list[str]) -> None:
        seeded = self.aws.load_balancers[balancer["name"]]
        if balancer["type"] == "target_group":
            self.aws.elbv2.deregister_targets(seeded["arn"], [{"Id": i, "Port": seeded["port"]} for i in instance_ids])
        else:
            self.aws.elb.deregister_instances(balancer["name"], instance_ids)
        self.recorder.event("lb_deregistered", load_balancer=balancer["name"], instances=instance_ids)

    # --------------------------------------------------------------------------------------------- observations

    @staticmethod
    def _wall(monotonic: float, now_monotonic: float, now_wall: float) -> float:
        return round(now_wall - (now_monotonic - monotonic), 3)

    def _check_terminations(self, instances: dict[str, dict[str, Any]], node_of: dict[str, dict[str, Any]],
                            states: dict[str, tuple[set[str], dict[str, tuple[float, float]]]]) -> None:
        """An instance that left `running` since the last pass: was it registered or draining at that moment?
        Runs before this pass deregisters anything, so `registered` is what it was then."""
        now_mono, now_wall = time.monotonic(), time.time()
        for instance_id, instance in instances.items():
            if instance["state"] not in _LEFT_RUNNING or instance_id in self._left_running:
                continue
            self._left_running.add(instance_id)
            since = self.aws.state_since(instance_id)
            left_at = since if since is not None else now_mono
            for balancer in self.balancers:
                registered, draining = states[balancer["name"]]
                if instance_id in registered:
                    state, until = "registered", None
                elif instance_id in draining and draining[instance_id][0] <= left_at < draining[instance_id][1]:
                    state, until = "draining", draining[instance_id][1]
                else:
                    continue
                node = node_of.get(instance_id)
                violation = {"load_balancer": balancer["name"], "instance_id": instance_id,
                             "node": node["metadata"]["name"] if node is not None else None,
                             "nodegroup": instance["nodegroup"], "state": state,
                             "time": self._wall(left_at, now_mono, now_wall),
                             "draining_until": None if until is None else self._wall(until, now_mono, now_wall)}
                self._violations.append(violation)
                self.recorder.event("lb_violation", **violation)

    def _update_history(self, balancer: dict[str, Any], registered: set[str],
                        draining: dict[str, tuple[float, float]], node_of: dict[str, dict[str, Any]],
                        now_mono: float) -> None:
        now_wall = time.time()
        name = balancer["name"]
        open_entries = self._open[name]
        owner = self._owner(balancer)
        for instance_id in sorted(registered | set(draining)):
            entry = open_entries.get(instance_id)
            if entry is None or (instance_id in registered and entry["deregistering_at"] is not None):
                if entry is not None:  # registered again while it drained: that episode ends now
                    entry["gone_at"] = round(now_wall, 3)
                at = registered_at(owner, instance_id)
                node = node_of.get(instance_id)
                entry = {"instance": instance_id, "node": node["metadata"]["name"] if node is not None else None,
                         "registered_at": self._wall(at, now_mono, now_wall) if at is not None else round(now_wall, 3),
                         "deregistering_at": None, "gone_at": None}
                self._history[name].append(entry)
                open_entries[instance_id] = entry
            if instance_id in draining and entry["deregistering_at"] is None:
                since, until = draining[instance_id]
                entry["deregistering_at"] = self._wall(since, now_mono, now_wall)
                entry["_until"] = until
        for instance_id in [i for i in open_entries if i not in registered and i not in draining]:
            entry = open_entries.pop(instance_id)
            until = entry.pop("_until", None)
            if entry["deregistering_at"] is None:  # deregistered without draining (delay 0, draining disabled)
                entry["deregistering_at"] = round(now_wall, 3)
            entry["gone_at"] = self._wall(until, now_mono, now_wall) if until is not None else round(now_wall, 3)

    # --------------------------------------------------------------------------------------------- report

    def report(self) -> dict[str, Any]:
        """`load_balancers` (per name: type, target_type, deregistration_delay, nodegroups, history) and
        `load_balancer_violations`."""
        with self._lock:
            balancers = {}
            for balancer in self.balancers:
                seeded = self.aws.load_balancers.get(balancer["name"], {})
                balancers[balancer["name"]] = {
                    "type": balancer["type"], "target_type": balancer["target_type"], "arn": seeded.get("arn"),
                    "deregistration_delay": balancer["deregistration_delay"], "nodegroups": balancer["nodegroups"],
                    "history": [{k: v for k, v in entry.items() if not k.startswith("_")}
                                for entry in self._history[balancer["name"]]]}
            return {"load_balancers": balancers,
                    "load_balancer_violations": [dict(v) for v in self._violations]}
