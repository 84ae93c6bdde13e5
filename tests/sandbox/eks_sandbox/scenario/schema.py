# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scenario schema, exactly as tests/sandbox/README.md documents it: vocabularies, default timings, and one
reader per entry (the cluster, the timings, an AMI, a node group, a workload, a fault) that validates it on its
own and returns it with every default filled, so the rest of the sandbox reads keys without `.get()`.

A loaded scenario loads again to the same: where two keys exclude each other the loaded form carries both, one
of them null, and the readers accept that. Checks that need the whole scenario (duplicate names, what a workload
or a fault refers to, recommended AMIs) are the loader's (`loader.py`).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Callable

from ..bootstrap import TAINT_EFFECTS
from .fields import ScenarioError, Section

__all__ = ["DEFAULT_TIMINGS", "FAULT_TYPES", "generated_ami_id", "default_release_version", "check_zone",
           "read_cluster", "read_timings", "read_ami", "read_nodegroup", "read_workload", "read_load_balancer",
           "normalize_fault", "LOAD_BALANCER_TYPES", "TARGET_TYPES"]

DEFAULT_TIMINGS = {
    "instance_pending_seconds": 0.5,
    "instance_shutdown_seconds": 0.5,
    "node_boot_seconds": 1.5,
    "node_removal_seconds": 0.5,
    "pod_start_seconds": 0.5,
    "grace_period_scale": 0.02,
    "controller_interval_seconds": 0.1,
    "sample_interval_seconds": 0.1,
    # EKS's managed node update (eks_sandbox/eks/update.py); the real values are in the comments.
    "eks_drain_timeout_seconds": 5.0,        # EKS: 15 min ("If the Pods don't leave the node within 15 minutes")
    "eks_post_drain_wait_seconds": 0.5,      # EKS: 60 s ("It cordons the node ... and waits for 60 seconds")
    "eks_node_ready_timeout_seconds": 15.0,  # EKS: 15 min for a new node to join (awsdocs/amazon-eks-user-guide#842)
}
# Intervals drive sleep loops: zero would spin a core.
_POSITIVE_TIMINGS = {"controller_interval_seconds", "sample_interval_seconds"}

WORKLOAD_KINDS = ("Deployment", "DaemonSet", "Pod")
UNHEALTHY_POD_EVICTION_POLICIES = ("IfHealthyBudget", "AlwaysAllow")
K8S_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "*")
AUTOSCALER_TRIGGERS = ("after_seconds", "old_nodes_gone")
# SPEC K1: who made the node group decides its tags, its launch template's user data and so its node labels.
NODEGROUP_KINDS = ("managed", "self_managed_eksctl", "self_managed")
# eks: EKS's own template; custom: the user's template, EKS adds the AMI and merges its user data; custom_ami: the
# user's template names the AMI too (amiType CUSTOM) and carries the whole bootstrap (eks/creation.py).
MANAGED_LAUNCH_TEMPLATES = ("eks", "custom", "custom_ami")
SELF_MANAGED_CONVENTIONS = ("terraform", "cloudformation")
UPDATE_STRATEGIES = ("DEFAULT", "MINIMAL")
# InstancesDistribution.SpotAllocationStrategy's values (API reference); the sandbox models none of their pricing.
SPOT_ALLOCATION_STRATEGIES = ("price-capacity-optimized", "capacity-optimized", "capacity-optimized-prioritized",
                              "lowest-price")
# AMI families, as the SSM public parameters name them (plus bottlerocket/<arch> and windows/<core|full>-<year>).
_AMI_FAMILY = re.compile(r"^(amazon-linux-2(-gpu|-arm64)?|amazon-linux-2023/(x86_64|arm64)/[a-z]+|"
                         r"bottlerocket/(x86_64|arm64)|windows/(core|full)-(2019|2022|2025))$")
_RELEASE_DATE = re.compile(r"-v(\d{8})$")
_BOTTLEROCKET_VERSION = re.compile(r"^bottlerocket-.*-v(\d+\.\d+\.\d+-[0-9a-f]+)$")
# Windows_Server-2022-English-Core-EKS_Optimized-1.31-2024.11.12: the release "1.31-2024.11.12" ("Retrieve Windows
# AMI version information": k8s_major_version.k8s_minor_version-release_date; eksctl pkg/ami/auto_resolver.go
# looks the AMIs up by that name).
_WINDOWS_RELEASE = re.compile(r"^Windows_Server-.*-EKS_Optimized-(\d+\.\d+-\d{4}\.\d{2}\.\d{2})$")
_AMI_ID = re.compile(r"^ami-[0-9a-f]{8}([0-9a-f]{9})?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def generated_ami_id(name: str) -> str:
    """A stable AMI id for an AMI declared without one: "ami-" + 17 hex chars of a hash of its name."""
    return "ami-" + hashlib.sha256(name.encode()).hexdigest()[:17]


def default_release_version(ami_name: str, kubernetes_version: str) -> str:
    """EKS's release version of an AMI ("1.30.0-20240615"): the AMI's build date is the -vYYYYMMDD suffix of
    the EKS optimized AMI names (amazon-eks-node-al2023-x86_64-standard-1.30-v20240615). A Bottlerocket AMI's is
    the Bottlerocket version ("1.20.3-5d9ac849", from bottlerocket-aws-k8s-1.30-x86_64-v1.20.3-5d9ac849), which
    is what SSM's .../latest/image_version publishes and a Bottlerocket node group's releaseVersion reports
    (eksctl-io/eksctl pkg/ami/ssm_resolver.go MakeManagedSSMParameterName: the managed upgrade compares them);
    a Windows AMI's is the end of its name (_WINDOWS_RELEASE)."""
    bottlerocket = _BOTTLEROCKET_VERSION.search(ami_name) or _WINDOWS_RELEASE.search(ami_name)
    if bottlerocket:
        return bottlerocket.group(1)
    match = _RELEASE_DATE.search(ami_name)
    build = match.group(1) if match else hashlib.sha256(ami_name.encode()).hexdigest()[:8]
    return f"{kubernetes_version}.0-{build}"


def check_zone(path: str, zone: Any, zones: list[str]) -> None:
    """A node group's or a fault's availability zone must be one of the cluster's."""
    if zone not in zones:
        raise ScenarioError(f"{path}: {zone!r} is not one of the cluster's availability_zones")


# ----------------------------------------------------------------------------------------------------- cluster

def read_cluster(section: Section, scenario_name: str, finish: bool = True) -> dict[str, Any]:
    """The cluster: `cluster:` of a single-cluster scenario, or (finish=False: the entry has more keys) one entry
    of `clusters:`, whose name is required."""
    cluster = {"name": section.string("name", scenario_name, required=not finish),
               "kubernetes_version": section.string("kubernetes_version", "1.30"),
               "tls": section.boolean("tls", True)}
    if finish:
        section.finish()
    return cluster


def read_timings(section: Section) -> dict[str, float]:
    timings = {key: section.number(key, default, positive=key in _POSITIVE_TIMINGS)
               for key, default in DEFAULT_TIMINGS.items()}
    section.finish()
    return timings


def read_ami(section: Section) -> dict[str, Any]:
    """One AMI; `recommended` stays None when not given (the loader decides it from the other AMIs)."""
    name = section.string("name", required=True)
    ami_id = section.optional_string("id")
    if ami_id is not None and not _AMI_ID.match(ami_id):
        raise ScenarioError(f"{section.path_of('id')}: expected \"ami-\" and 8 or 17 hex digits, got {ami_id!r}")
    ami = {"name": name, "id": ami_id or generated_ami_id(name),
           "kubernetes_version": section.string("kubernetes_version", required=True),
           "family": section.string("family", "amazon-linux-2023/x86_64/standard"),
           "release_version": section.optional_string("release_version"),
           "never_ready": section.boolean("never_ready", False),
           "recommended": section.raw_value("recommended")}
    if not _AMI_FAMILY.match(ami["family"]):
        raise ScenarioError(f"{section.path_of('family')}: expected amazon-linux-2[-gpu|-arm64], "
                            f"amazon-linux-2023/<arch>/<variant>, bottlerocket/<arch> or windows/<core|full>-<year>, "
                            f"got {ami['family']!r}")
    if ami["release_version"] is None:
        ami["release_version"] = default_release_version(name, ami["kubernetes_version"])
    if ami["recommended"] is not None:
        ami["recommended"] = section.boolean("recommended", True)
    section.finish()
    return ami


# ----------------------------------------------------------------------------------------------------- node groups

def read_nodegroup(section: Section, zones: list[str], amis: list[dict[str, Any]]) -> dict[str, Any]:
    """One node group, its AMI (named or by id) one of `amis`, its zones some of the cluster's `zones`."""
    name = section.string("name", required=True)
    ami_ref = section.string("ami", required=True)
    ami = next((a for a in amis if ami_ref in (a["name"], a["id"])), None)
    if ami is None:
        raise ScenarioError(f"{section.path_of('ami')}: no AMI named {ami_ref!r} in amis")
    nodegroup = {"name": name, "ami": ami["name"],
                 "instance_type": section.string("instance_type", "m5.large"),
                 "availability_zones": _nodegroup_zones(section, zones),
                 "min_size": section.integer("min_size", 3),
                 "max_size": section.integer("max_size", 12),
                 "desired_capacity": section.integer("desired_capacity", 6),
                 "max_pods": section.integer("max_pods", 110, minimum=1),
                 "labels": section.string_map("labels"),
                 "taints": _taints(section),
                 "tags": section.string_map("tags"),
                 "kind": section.string("kind", "self_managed", choices=NODEGROUP_KINDS)}
    nodegroup.update(_kind_settings(section, nodegroup["kind"]))
    nodegroup["mixed_instances"] = _mixed_instances(section, nodegroup["kind"], amis)
    section.finish()
    if not nodegroup["min_size"] <= nodegroup["desired_capacity"] <= nodegroup["max_size"]:
        raise ScenarioError(
            f"{section.path}: min_size <= desired_capacity <= max_size must hold, got "
            f"{nodegroup['min_size']} / {nodegroup['desired_capacity']} / {nodegroup['max_size']}")
    return nodegroup


def _nodegroup_zones(section: Section, zones: list[str]) -> list[str]:
    raw = section.raw_value("availability_zones", "all")
    if raw == "all":
        return list(zones)
    path = section.path_of("availability_zones")
    if not isinstance(raw, list) or not raw:
        raise ScenarioError(f"{path}: expected \"all\" or a non-empty list of the cluster's availability zones")
    for i, zone in enumerate(raw):
        check_zone(f"{path}[{i}]", zone, zones)
    if len(set(raw)) != len(raw):
        raise ScenarioError(f"{path}: duplicate availability zone")
    return list(raw)


def _taints(section: Section) -> list[dict[str, str]]:
    taints = []
    for path, raw in section.items("taints"):
        taint_section = Section(raw, path)
        value = taint_section.raw_value("value")
        if value is not None and not isinstance(value, str):
            raise ScenarioError(f"{path}.value: expected a string, got {value!r}")
        taints.append({"key": taint_section.string("key", required=True), "value": value or "",
                       "effect": taint_section.string("effect", "NoSchedule", choices=TAINT_EFFECTS)})
        taint_section.finish()
    return taints


def _kind_settings(section: Section, kind: str) -> dict[str, Any]:
    """launch_template and update_config (managed), convention (self_managed): null where the kind has none."""
    for key, owner in (("launch_template", "managed"), ("update_config", "managed"), ("convention", "self_managed")):
        if section.raw_value(key) is not None and kind != owner:
            raise ScenarioError(f"{section.path_of(key)}: only a node group of kind {owner} takes {key}")
    if kind == "managed":
        return {"launch_template": section.string("launch_template", "eks", choices=MANAGED_LAUNCH_TEMPLATES),
                "update_config": _update_config(section.section("update_config")), "convention": None}
    return {"launch_template": None, "update_config": None,
            "convention": section.string("convention", "terraform", choices=SELF_MANAGED_CONVENTIONS)
            if kind == "self_managed" else None}


def _mixed_instances(section: Section, kind: str, amis: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A self-managed group's MixedInstancesPolicy, as terraform-aws-eks's mixed_instances_policy and eksctl's
    instancesDistribution write it: overrides (instance type, optional weighted_capacity and ami: the override's own
    ImageId) in priority order, and the On-Demand / Spot distribution (aws/mixed_instances.py)."""
    if section.raw_value("mixed_instances") is None:
        return None
    if kind == "managed":
        raise ScenarioError(f"{section.path_of('mixed_instances')}: EKS makes a managed group's policy itself")
    mixed = section.section("mixed_instances")
    overrides = []
    for path, raw in mixed.items("overrides"):
        override = Section(raw, path)
        entry = {"instance_type": override.string("instance_type", required=True),
                 "weighted_capacity": override.integer("weighted_capacity", None, minimum=1, maximum=999),
                 "ami": override.optional_string("ami")}
        if entry["ami"] is not None and not any(entry["ami"] == a["name"] for a in amis):
            raise ScenarioError(f"{override.path_of('ami')}: no AMI named {entry['ami']!r} in amis")
        override.finish()
        overrides.append(entry)
    if not overrides:
        raise ScenarioError(f"{mixed.path_of('overrides')}: give at least one instance type")
    policy = {"overrides": overrides,
              "on_demand_base_capacity": mixed.integer("on_demand_base_capacity", 0),
              "on_demand_percentage_above_base_capacity": mixed.integer(
                  "on_demand_percentage_above_base_capacity", 100, maximum=100),
              "spot_allocation_strategy": mixed.string("spot_allocation_strategy", "price-capacity-optimized",
                                                       choices=SPOT_ALLOCATION_STRATEGIES)}
    mixed.finish()
    return policy


def _update_config(section: Section) -> dict[str, Any]:
    """EKS's NodegroupUpdateConfig: maxUnavailable (default 1) or maxUnavailablePercentage, and updateStrategy."""
    if section.raw_value("max_unavailable") is not None and section.raw_value("max_unavailable_percentage") is not None:
        raise ScenarioError(f"{section.path}: give max_unavailable or max_unavailable_percentage, not both")
    percentage = section.integer("max_unavailable_percentage", None, minimum=1, maximum=100)
    count = section.integer("max_unavailable", None, minimum=1, maximum=100)
    config = {"max_unavailable": None if percentage is not None else 1 if count is None else count,
              "max_unavailable_percentage": percentage,
              "update_strategy": section.string("update_strategy", "DEFAULT", choices=UPDATE_STRATEGIES)}
    section.finish()
    return config


# ----------------------------------------------------------------------------------------------------- workloads

def read_workload(section: Section) -> dict[str, Any]:
    """One workload; its `nodegroup`, if any, is the loader's to check."""
    kind = section.string("kind", required=True, choices=WORKLOAD_KINDS)
    name = section.string("name", required=True)
    namespace = section.string("namespace", "default")
    for key, value in (("name", name), ("namespace", namespace)):
        if len(value) > 63 or not _DNS_LABEL.match(value):
            raise ScenarioError(f"{section.path_of(key)}: not a valid DNS label: {value!r}")
    if kind == "Deployment":
        replicas = section.integer("replicas", 1)
    elif section.raw_value("replicas") is not None:  # the loaded form has replicas: null
        raise ScenarioError(f"{section.path_of('replicas')}: only a Deployment has replicas")
    else:
        replicas = None
    pods_per_node = section.integer("pods_per_node", None)
    if pods_per_node is not None and kind != "DaemonSet":
        raise ScenarioError(f"{section.path_of('pods_per_node')}: only a DaemonSet takes pods_per_node")
    workload = {"kind": kind, "name": name, "namespace": namespace, "replicas": replicas,
                "labels": section.string_map("labels"),
                "pdb": _pdb(section),
                "empty_dir": section.boolean("empty_dir", False),
                "termination_grace_period_seconds": section.integer("termination_grace_period_seconds", 30),
                "ignore_sigterm": section.boolean("ignore_sigterm", False),
                "tolerate_all": section.boolean("tolerate_all", False),
                "node_selector": section.string_map("node_selector"),
                "nodegroup": section.optional_string("nodegroup"),
                "pods_per_node": pods_per_node}
    section.finish()
    workload["labels"].setdefault("app", name)
    if workload["labels"]["app"] != name:
        raise ScenarioError(f"{section.path_of('labels')}.app: the app label is always the workload name")
    return workload


def _pdb(workload: Section) -> dict[str, Any] | None:
    if workload.raw_value("pdb") is None:
        return None
    section = workload.section("pdb")
    has_min = section.raw_value("min_available") is not None
    has_max = section.raw_value("max_unavailable") is not None
    if has_min == has_max:
        raise ScenarioError(f"{section.path}: give exactly one of min_available and max_unavailable")
    pdb: dict[str, Any] = {"min_available": None, "max_unavailable": None}
    key = "min_available" if has_min else "max_unavailable"
    pdb[key] = section.int_or_percent(key)
    pdb["unhealthy_pod_eviction_policy"] = section.string(
        "unhealthy_pod_eviction_policy", "IfHealthyBudget", choices=UNHEALTHY_POD_EVICTION_POLICIES)
    pdb["extra"] = section.integer("extra", 0)
    section.finish()
    return pdb


# ----------------------------------------------------------------------------------------------------- load balancers

# target_group: an ELBv2 target group (and its Network Load Balancer) made by the AWS Load Balancer Controller;
# classic: a Classic ELB made by the in-tree service controller (cloud-provider-aws). See eks_sandbox/lb_controllers.py.
LOAD_BALANCER_TYPES = ("target_group", "classic")
TARGET_TYPES = ("instance", "ip")
# ELBv2 CreateTargetGroup: "up to 32 alphanumeric characters or hyphens, and must not begin or end with a hyphen";
# CreateLoadBalancer (Classic): the same 32-character rule for LoadBalancerName.
_LB_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?$")
# ELBv2 target group attribute deregistration_delay.timeout_seconds: "0-3600 seconds. The default value is 300
# seconds"; Classic ELB ConnectionDraining.Timeout: 1-3600 (its default, 300, applies only when enabled).
DEREGISTRATION_DELAY_DEFAULT = 300
_SERVICE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def read_load_balancer(section: Section) -> dict[str, Any]:
    """One load balancer of the cluster; the node groups it names are the loader's to check."""
    name = section.string("name", required=True)
    if not _LB_NAME.match(name):
        raise ScenarioError(f"{section.path_of('name')}: up to 32 letters, digits or hyphens, not beginning or "
                            f"ending with a hyphen; got {name!r}")
    lb_type = section.string("type", "target_group", choices=LOAD_BALANCER_TYPES)
    if lb_type == "classic":
        if section.raw_value("target_type") is not None:
            raise ScenarioError(f"{section.path_of('target_type')}: only a target_group takes target_type")
        target_type = None
        # cloud-provider-aws creates Classic ELBs with connection draining disabled unless the Service's
        # aws-load-balancer-connection-draining-enabled annotation says otherwise: null = disabled.
        delay = section.integer("deregistration_delay", None, minimum=1, maximum=3600)
    else:
        target_type = section.string("target_type", "instance", choices=TARGET_TYPES)
        delay = section.integer("deregistration_delay", DEREGISTRATION_DELAY_DEFAULT, minimum=0, maximum=3600)
    service = section.string("service", f"default/{name.lower()}")
    if not _SERVICE.match(service):
        raise ScenarioError(f"{section.path_of('service')}: expected <namespace>/<name> of DNS labels, got {service!r}")
    nodegroups = section.raw_value("nodegroups")
    if nodegroups is not None and (not isinstance(nodegroups, list)
                                   or not all(isinstance(n, str) and n for n in nodegroups)):
        raise ScenarioError(f"{section.path_of('nodegroups')}: expected a list of node group names, got {nodegroups!r}")
    balancer = {"name": name, "type": lb_type, "target_type": target_type, "deregistration_delay": delay,
                "service": service,
                "node_port": section.integer("node_port", 30080, minimum=30000, maximum=32767),
                "nodegroups": list(nodegroups) if nodegroups is not None else None,
                "node_selector": section.string_map("node_selector")}
    section.finish()
    return balancer


# ----------------------------------------------------------------------------------------------------- faults

def _fault_trigger(spec: Section, allow_rate: bool = True) -> dict[str, Any]:
    """The trigger keys every fault shares: after_seconds, and probability or count (not both)."""
    trigger = {"after_seconds": spec.number("after_seconds", 0)}
    if not allow_rate:
        return trigger
    if spec.raw_value("probability") is not None and spec.raw_value("count") is not None:
        raise ScenarioError(f"{spec.path_of('count')}: give probability or count, not both")
    trigger["probability"] = spec.number("probability", None, maximum=1.0)
    trigger["count"] = spec.integer("count", None, minimum=1)
    return trigger


def _k8s_error(spec: Section) -> dict[str, Any]:
    status = spec.integer("status", 429, minimum=400, maximum=599)
    retry_after = spec.number("retry_after", None)
    return {"verb": spec.string("verb", "*", choices=K8S_VERBS),
            "resource": spec.string("resource", "*"),
            "status": status, "retry_after": retry_after, **_fault_trigger(spec)}


def _watch_drop(spec: Section) -> dict[str, Any]:
    return {"every_seconds": spec.number("every_seconds", 20, positive=True), **_fault_trigger(spec)}


def _watch_gone(spec: Section) -> dict[str, Any]:
    return _fault_trigger(spec)


def _aws_error(spec: Section) -> dict[str, Any]:
    return {"action": spec.string("action", "*"), "code": spec.string("code", "Throttling"),
            **_fault_trigger(spec)}


def _launch_failure(spec: Section) -> dict[str, Any]:
    return {"availability_zone": spec.string("availability_zone", required=True),
            "code": spec.string("code", "InsufficientInstanceCapacity"), **_fault_trigger(spec)}


def _instance_not_visible(spec: Section) -> dict[str, Any]:
    return {"seconds": spec.number("seconds", 2, positive=True), **_fault_trigger(spec)}


def _never_join(spec: Section) -> dict[str, Any]:
    return {"availability_zone": spec.optional_string("availability_zone"), **_fault_trigger(spec)}


def _autoscaler(spec: Section) -> dict[str, Any]:
    return {"nodegroup": spec.string("nodegroup", required=True),
            "increase_by": spec.integer("increase_by", 1, minimum=1),
            "when": spec.string("when", "after_seconds", choices=AUTOSCALER_TRIGGERS),
            **_fault_trigger(spec, allow_rate=False)}


_FAULT_FIELDS: dict[str, Callable[[Section], dict[str, Any]]] = {
    "k8s_error": _k8s_error,
    "watch_drop": _watch_drop,
    "watch_gone": _watch_gone,
    "aws_error": _aws_error,
    "launch_failure": _launch_failure,
    "never_join": _never_join,
    "instance_not_visible": _instance_not_visible,
    "autoscaler": _autoscaler,
}
FAULT_TYPES = tuple(_FAULT_FIELDS)


def normalize_fault(raw: Any, path: str = "faults[0]") -> dict[str, Any]:
    """One fault spec, validated, with defaults filled (what its zone or node group names is the loader's to
    check)."""
    spec = Section(raw, path)
    fault_type = spec.string("type", required=True, choices=FAULT_TYPES)
    fault = {"type": fault_type, **_FAULT_FIELDS[fault_type](spec)}
    spec.finish()
    return fault
