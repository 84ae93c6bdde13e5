"""Scenario loading: strict validation and defaults, exactly the schema in tests/sandbox/README.md.

`load_scenario` returns a plain dict with every key of the schema present (defaults filled), so the rest of
the sandbox reads keys without `.get()`. Any unknown key, wrong type or dangling reference raises
`ScenarioError` naming the key path (e.g. ``workloads[2].pdb.min_available``).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import os
import re
from typing import Any, Callable

import yaml

__all__ = ["ScenarioError", "load_scenario", "normalize_fault", "generated_ami_id", "FAULT_TYPES"]


class ScenarioError(ValueError):
    """A scenario does not match the schema; the message starts with the offending key path."""


_MISSING = object()

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
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
UNHEALTHY_POD_EVICTION_POLICIES = ("IfHealthyBudget", "AlwaysAllow")
K8S_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "*")
AUTOSCALER_TRIGGERS = ("after_seconds", "old_nodes_gone")
# SPEC K1: who made the node group decides its tags, its launch template's user data and so its node labels.
NODEGROUP_KINDS = ("managed", "self_managed_eksctl", "self_managed")
MANAGED_LAUNCH_TEMPLATES = ("eks", "custom")
SELF_MANAGED_CONVENTIONS = ("terraform", "cloudformation")
UPDATE_STRATEGIES = ("DEFAULT", "MINIMAL")
# AMI families, as the SSM public parameters name them (plus bottlerocket/<arch>).
_AMI_FAMILY = re.compile(r"^(amazon-linux-2(-gpu|-arm64)?|amazon-linux-2023/(x86_64|arm64)/[a-z]+|"
                         r"bottlerocket/(x86_64|arm64))$")
_RELEASE_DATE = re.compile(r"-v(\d{8})$")

_AMI_ID = re.compile(r"^ami-[0-9a-f]{8}([0-9a-f]{9})?$")
_PERCENT = re.compile(r"^(100|[1-9]?[0-9])%$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class _Section:
    """Reads one mapping of the scenario, remembering which keys were consumed."""

    def __init__(self, raw: Any, path: str):
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise ScenarioError(f"{path or 'scenario'}: expected a mapping, got {_type_name(raw)}")
        for key in raw:
            if not isinstance(key, str):
                raise ScenarioError(f"{path or 'scenario'}: keys must be strings, got {key!r}")
        self.raw = raw
        self.path = path
        self._known: set[str] = set()

    def path_of(self, key: str) -> str:
        return _join(self.path, key)

    def has(self, key: str) -> bool:
        return key in self.raw

    def _take(self, key: str, default: Any, required: bool) -> Any:
        self._known.add(key)
        if key not in self.raw:
            if required:
                raise ScenarioError(f"{self.path_of(key)}: required")
            return default
        return self.raw[key]

    def string(self, key: str, default: Any = _MISSING, *, required: bool = False,
               choices: tuple[str, ...] | None = None) -> Any:
        value = self._take(key, default, required)
        if value is default and not required:
            return value
        if not isinstance(value, str) or not value:
            hint = " (quote version numbers: \"1.30\", not 1.30)" if isinstance(value, float) else ""
            raise ScenarioError(f"{self.path_of(key)}: expected a non-empty string, got {value!r}{hint}")
        if choices is not None and value not in choices:
            raise ScenarioError(f"{self.path_of(key)}: must be one of {', '.join(choices)}; got {value!r}")
        return value

    def optional_string(self, key: str) -> str | None:
        value = self._take(key, None, False)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise ScenarioError(f"{self.path_of(key)}: expected a non-empty string or null, got {value!r}")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self._take(key, default, False)
        if not isinstance(value, bool):
            raise ScenarioError(f"{self.path_of(key)}: expected true or false, got {value!r}")
        return value

    def integer(self, key: str, default: Any = _MISSING, *, required: bool = False, minimum: int | None = 0,
                maximum: int | None = None) -> Any:
        value = self._take(key, default, required)
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(f"{self.path_of(key)}: expected an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise ScenarioError(f"{self.path_of(key)}: must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise ScenarioError(f"{self.path_of(key)}: must be <= {maximum}, got {value}")
        return value

    def number(self, key: str, default: Any = _MISSING, *, required: bool = False, positive: bool = False,
               maximum: float | None = None) -> Any:
        value = self._take(key, default, required)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ScenarioError(f"{self.path_of(key)}: expected a number, got {value!r}")
        if value < 0 or (positive and value == 0):
            raise ScenarioError(f"{self.path_of(key)}: must be {'> 0' if positive else '>= 0'}, got {value}")
        if maximum is not None and value > maximum:
            raise ScenarioError(f"{self.path_of(key)}: must be <= {maximum}, got {value}")
        return value

    def string_map(self, key: str) -> dict[str, str]:
        value = self._take(key, None, False)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ScenarioError(f"{self.path_of(key)}: expected a mapping of strings, got {_type_name(value)}")
        for k, v in value.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ScenarioError(
                    f"{_join(self.path_of(key), str(k))}: keys and values must be strings "
                    f"(quote numbers and booleans), got {v!r}")
        return dict(value)

    def items(self, key: str) -> list[tuple[str, Any]]:
        """The list under `key` (default empty) as (path, item) pairs."""
        value = self._take(key, None, False)
        if value is None:
            return []
        if not isinstance(value, list):
            raise ScenarioError(f"{self.path_of(key)}: expected a list, got {_type_name(value)}")
        return [(_join(self.path_of(key), i), item) for i, item in enumerate(value)]

    def section(self, key: str) -> "_Section":
        return _Section(self._take(key, None, False), self.path_of(key))

    def raw_value(self, key: str, default: Any = None) -> Any:
        return self._take(key, default, False)

    def finish(self) -> None:
        unknown = [k for k in self.raw if k not in self._known]
        if unknown:
            raise ScenarioError(f"{self.path_of(unknown[0])}: unknown key")


def generated_ami_id(name: str) -> str:
    """A stable AMI id for an AMI declared without one: "ami-" + 17 hex chars of a hash of its name."""
    return "ami-" + hashlib.sha256(name.encode()).hexdigest()[:17]


def default_release_version(ami_name: str, kubernetes_version: str) -> str:
    """EKS's release version of an AMI ("1.30.0-20240615"): the AMI's build date is the -vYYYYMMDD suffix of
    the EKS optimized AMI names (amazon-eks-node-al2023-x86_64-standard-1.30-v20240615)."""
    match = _RELEASE_DATE.search(ami_name)
    build = match.group(1) if match else hashlib.sha256(ami_name.encode()).hexdigest()[:8]
    return f"{kubernetes_version}.0-{build}"


def _int_or_percent(value: Any, path: str) -> int | str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ScenarioError(f"{path}: expected an integer or \"NN%\", got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ScenarioError(f"{path}: must be >= 0, got {value}")
        return value
    if not _PERCENT.match(value):
        raise ScenarioError(f"{path}: expected an integer or a percentage such as \"50%\", got {value!r}")
    return value


# ----------------------------------------------------------------------------------------------------- faults

def _fault_trigger(spec: _Section, allow_rate: bool = True) -> dict[str, Any]:
    """The trigger keys every fault shares: after_seconds, and probability or count (not both)."""
    trigger = {"after_seconds": spec.number("after_seconds", 0)}
    if not allow_rate:
        return trigger
    probability = spec.raw_value("probability")
    count = spec.raw_value("count")
    # A normalized spec carries both keys, one of them None, so normalizing is idempotent.
    if probability is not None and count is not None:
        raise ScenarioError(f"{spec.path_of('count')}: give probability or count, not both")
    if probability is not None:
        probability = spec.number("probability", maximum=1.0)
    if count is not None:
        count = spec.integer("count", minimum=1)
    trigger["probability"] = probability
    trigger["count"] = count
    return trigger


def _k8s_error(spec: _Section) -> dict[str, Any]:
    status = spec.integer("status", 429, minimum=400, maximum=599)
    retry_after = spec.raw_value("retry_after")
    if retry_after is not None:
        retry_after = spec.number("retry_after")
    return {"verb": spec.string("verb", "*", choices=K8S_VERBS),
            "resource": spec.string("resource", "*"),
            "status": status, "retry_after": retry_after, **_fault_trigger(spec)}


def _watch_drop(spec: _Section) -> dict[str, Any]:
    return {"every_seconds": spec.number("every_seconds", 20, positive=True), **_fault_trigger(spec)}


def _watch_gone(spec: _Section) -> dict[str, Any]:
    return _fault_trigger(spec)


def _aws_error(spec: _Section) -> dict[str, Any]:
    return {"action": spec.string("action", "*"), "code": spec.string("code", "Throttling"),
            **_fault_trigger(spec)}


def _launch_failure(spec: _Section) -> dict[str, Any]:
    return {"availability_zone": spec.string("availability_zone", required=True),
            "code": spec.string("code", "InsufficientInstanceCapacity"), **_fault_trigger(spec)}


def _instance_not_visible(spec: _Section) -> dict[str, Any]:
    return {"seconds": spec.number("seconds", 2, positive=True), **_fault_trigger(spec)}


def _never_join(spec: _Section) -> dict[str, Any]:
    return {"availability_zone": spec.optional_string("availability_zone"), **_fault_trigger(spec)}


def _autoscaler(spec: _Section) -> dict[str, Any]:
    return {"nodegroup": spec.string("nodegroup", required=True),
            "increase_by": spec.integer("increase_by", 1, minimum=1),
            "when": spec.string("when", "after_seconds", choices=AUTOSCALER_TRIGGERS),
            **_fault_trigger(spec, allow_rate=False)}


_FAULT_FIELDS: dict[str, Callable[[_Section], dict[str, Any]]] = {
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
    """One fault spec, validated, with defaults filled (cross-references to AZs/node groups not checked)."""
    spec = _Section(raw, path)
    fault_type = spec.string("type", required=True, choices=FAULT_TYPES)
    fault = {"type": fault_type, **_FAULT_FIELDS[fault_type](spec)}
    spec.finish()
    return fault


# ----------------------------------------------------------------------------------------------------- scenario

def _load_raw(path_or_dict: Any) -> dict:
    if isinstance(path_or_dict, dict):
        return copy.deepcopy(path_or_dict)
    if isinstance(path_or_dict, (str, os.PathLike)):
        try:
            with open(path_or_dict, encoding="utf-8") as handle:
                data = yaml.safe_load(handle)
        except OSError as exc:
            raise ScenarioError(f"scenario: cannot read {os.fspath(path_or_dict)}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ScenarioError(f"scenario: {os.fspath(path_or_dict)} is not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise ScenarioError(f"scenario: {os.fspath(path_or_dict)} must hold a mapping, got {_type_name(data)}")
        return data
    raise ScenarioError(f"scenario: expected a file path or a mapping, got {_type_name(path_or_dict)}")


def _cluster(top: _Section, scenario_name: str) -> dict[str, Any]:
    section = top.section("cluster")
    cluster = {"name": section.string("name", scenario_name),
               "kubernetes_version": section.string("kubernetes_version", "1.30"),
               "tls": section.boolean("tls", True)}
    section.finish()
    return cluster


@functools.lru_cache(maxsize=1)
def _known_regions() -> frozenset[str]:
    import botocore.session  # only here: loading botocore's endpoint data takes a moment

    return frozenset(botocore.session.get_session().get_available_regions("ec2"))


def _check_region(top: _Section, region: str) -> None:
    if region not in _known_regions():
        raise ScenarioError(f"{top.path_of('region')}: {region!r} is not an AWS region moto can serve")


def _availability_zones(top: _Section, region: str) -> list[str]:
    items = top.items("availability_zones")
    if not top.has("availability_zones"):
        return [f"{region}{suffix}" for suffix in "abc"]
    if not items:
        raise ScenarioError("availability_zones: at least one availability zone is required")
    zones = []
    for path, zone in items:
        if not isinstance(zone, str) or not zone.startswith(region):
            raise ScenarioError(f"{path}: expected an availability zone of {region}, got {zone!r}")
        if zone in zones:
            raise ScenarioError(f"{path}: duplicate availability zone {zone}")
        zones.append(zone)
    return zones


def _timings(top: _Section) -> dict[str, float]:
    section = top.section("timings")
    timings = {key: section.number(key, default, positive=key in _POSITIVE_TIMINGS)
               for key, default in DEFAULT_TIMINGS.items()}
    section.finish()
    return timings


def _amis(top: _Section) -> list[dict[str, Any]]:
    amis = []
    for path, raw in top.items("amis"):
        section = _Section(raw, path)
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
                                f"amazon-linux-2023/<arch>/<variant> or bottlerocket/<arch>, got {ami['family']!r}")
        if ami["release_version"] is None:
            ami["release_version"] = default_release_version(name, ami["kubernetes_version"])
        if ami["recommended"] is not None:
            ami["recommended"] = section.boolean("recommended", True)
        section.finish()
        for dummy, other in amis:
            if other["name"] == name:
                raise ScenarioError(f"{section.path_of('name')}: duplicate AMI name {name}")
            if other["id"] == ami["id"]:
                raise ScenarioError(f"{section.path_of('id')}: duplicate AMI id {ami['id']}")
        amis.append((path, ami))
    return _resolve_recommended(amis)


def _resolve_recommended(amis: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """`recommended` defaults to true for the only AMI of its version and family; one SSM parameter holds one id."""
    by_parameter: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for dummy, ami in amis:
        by_parameter.setdefault((ami["kubernetes_version"], ami["family"]), []).append(ami)
    taken: set[tuple[str, str]] = set()
    for path, ami in amis:
        parameter = (ami["kubernetes_version"], ami["family"])
        if ami["recommended"] is None:
            ami["recommended"] = len(by_parameter[parameter]) == 1
        if not ami["recommended"]:
            continue
        if parameter in taken:
            raise ScenarioError(
                f"{path}.recommended: only one AMI per kubernetes_version and family can be recommended "
                f"({ami['kubernetes_version']} {ami['family']})")
        taken.add(parameter)
    return [ami for dummy, ami in amis]


def _taints(section: _Section) -> list[dict[str, str]]:
    taints = []
    for path, raw in section.items("taints"):
        taint_section = _Section(raw, path)
        value = taint_section.raw_value("value")
        if value is not None and not isinstance(value, str):
            raise ScenarioError(f"{path}.value: expected a string, got {value!r}")
        taints.append({"key": taint_section.string("key", required=True), "value": value or "",
                       "effect": taint_section.string("effect", "NoSchedule", choices=TAINT_EFFECTS)})
        taint_section.finish()
    return taints


def _nodegroups(top: _Section, zones: list[str], amis: list[dict[str, Any]]) -> list[dict[str, Any]]:
    nodegroups = []
    for path, raw in top.items("nodegroups"):
        section = _Section(raw, path)
        name = section.string("name", required=True)
        if any(ng["name"] == name for ng in nodegroups):
            raise ScenarioError(f"{section.path_of('name')}: duplicate node group name {name}")
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
                     "kind": section.string("kind", "self_managed", choices=NODEGROUP_KINDS)}
        nodegroup.update(_kind_settings(section, nodegroup["kind"]))
        section.finish()
        if not nodegroup["min_size"] <= nodegroup["desired_capacity"] <= nodegroup["max_size"]:
            raise ScenarioError(
                f"{path}: min_size <= desired_capacity <= max_size must hold, got "
                f"{nodegroup['min_size']} / {nodegroup['desired_capacity']} / {nodegroup['max_size']}")
        nodegroups.append(nodegroup)
    return nodegroups


def _kind_settings(section: _Section, kind: str) -> dict[str, Any]:
    """launch_template and update_config (managed), convention (self_managed): null where the kind has none."""
    for key, owner in (("launch_template", "managed"), ("update_config", "managed"), ("convention", "self_managed")):
        # The loaded form carries every key, null where the kind has none: loading it again must give the same.
        if section.raw_value(key) is not None and kind != owner:
            raise ScenarioError(f"{section.path_of(key)}: only a node group of kind {owner} takes {key}")
    if kind == "managed":
        return {"launch_template": section.string("launch_template", "eks", choices=MANAGED_LAUNCH_TEMPLATES),
                "update_config": _update_config(section.section("update_config")), "convention": None}
    return {"launch_template": None, "update_config": None,
            "convention": section.string("convention", "terraform", choices=SELF_MANAGED_CONVENTIONS)
            if kind == "self_managed" else None}


def _update_config(section: _Section) -> dict[str, Any]:
    """EKS's NodegroupUpdateConfig: maxUnavailable (default 1) or maxUnavailablePercentage, and updateStrategy."""
    # The loaded form carries both keys, one of them null: loading it again must give the same.
    count, percentage = section.raw_value("max_unavailable"), section.raw_value("max_unavailable_percentage")
    if count is not None and percentage is not None:
        raise ScenarioError(f"{section.path}: give max_unavailable or max_unavailable_percentage, not both")
    if percentage is not None:
        percentage = section.integer("max_unavailable_percentage", minimum=1, maximum=100)
    config = {"max_unavailable": None if percentage is not None
              else section.integer("max_unavailable", 1, minimum=1, maximum=100) if count is not None else 1,
              "max_unavailable_percentage": percentage,
              "update_strategy": section.string("update_strategy", "DEFAULT", choices=UPDATE_STRATEGIES)}
    section.finish()
    return config


def _nodegroup_zones(section: _Section, zones: list[str]) -> list[str]:
    raw = section.raw_value("availability_zones", "all")
    if raw == "all":
        return list(zones)
    path = section.path_of("availability_zones")
    if not isinstance(raw, list) or not raw:
        raise ScenarioError(f"{path}: expected \"all\" or a non-empty list of the cluster's availability zones")
    for i, zone in enumerate(raw):
        if zone not in zones:
            raise ScenarioError(f"{path}[{i}]: {zone!r} is not one of the cluster's availability_zones")
    if len(set(raw)) != len(raw):
        raise ScenarioError(f"{path}: duplicate availability zone")
    return list(raw)


def _pdb(workload: _Section) -> dict[str, Any] | None:
    if workload.raw_value("pdb") is None:
        return None
    section = workload.section("pdb")
    # The loaded form carries both keys, one of them null: loading it again must give the same.
    has_min = section.raw_value("min_available") is not None
    has_max = section.raw_value("max_unavailable") is not None
    if has_min == has_max:
        raise ScenarioError(f"{section.path}: give exactly one of min_available and max_unavailable")
    pdb = {"min_available": None, "max_unavailable": None}
    key = "min_available" if has_min else "max_unavailable"
    pdb[key] = _int_or_percent(section.raw_value(key), section.path_of(key))
    pdb["unhealthy_pod_eviction_policy"] = section.string(
        "unhealthy_pod_eviction_policy", "IfHealthyBudget", choices=UNHEALTHY_POD_EVICTION_POLICIES)
    pdb["extra"] = section.integer("extra", 0)
    section.finish()
    return pdb


def _workloads(top: _Section, nodegroups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    workloads = []
    for path, raw in top.items("workloads"):
        section = _Section(raw, path)
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
        if workload["nodegroup"] is not None:
            pinned = next((ng for ng in nodegroups if ng["name"] == workload["nodegroup"]), None)
            if pinned is None:
                raise ScenarioError(f"{section.path_of('nodegroup')}: no node group named {workload['nodegroup']!r}")
            if pinned["kind"] == "self_managed" and not pinned["labels"]:
                raise ScenarioError(f"{section.path_of('nodegroup')}: node group {pinned['name']} (kind self_managed) "
                                    "sets no node label to pin to; give it labels")
        if any((w["namespace"], w["name"]) == (namespace, name) for w in workloads):
            raise ScenarioError(f"{section.path_of('name')}: duplicate workload {namespace}/{name}")
        workloads.append(workload)
    return workloads


def _faults(top: _Section, zones: list[str], nodegroups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    faults = []
    for path, raw in top.items("faults"):
        fault = normalize_fault(raw, path)
        if fault["type"] in ("launch_failure", "never_join") and fault["availability_zone"] is not None \
                and fault["availability_zone"] not in zones:
            raise ScenarioError(f"{path}.availability_zone: {fault['availability_zone']!r} "
                                "is not one of the cluster's availability_zones")
        if fault["type"] == "autoscaler" and not any(ng["name"] == fault["nodegroup"] for ng in nodegroups):
            raise ScenarioError(f"{path}.nodegroup: no node group named {fault['nodegroup']!r}")
        faults.append(fault)
    return faults


def load_scenario(path_or_dict: Any) -> dict[str, Any]:
    """Validate a scenario (YAML file path or mapping) and return it with every default filled."""
    top = _Section(_load_raw(path_or_dict), "")
    name = top.string("name", required=True)
    region = top.string("region", "us-west-2")
    _check_region(top, region)
    zones = _availability_zones(top, region)
    scenario: dict[str, Any] = {
        "name": name,
        "region": region,
        "seed": top.integer("seed", 0, minimum=None),
        "cluster": _cluster(top, name),
        "availability_zones": zones,
        "timings": _timings(top),
    }
    scenario["amis"] = _amis(top)
    scenario["nodegroups"] = _nodegroups(top, zones, scenario["amis"])
    scenario["workloads"] = _workloads(top, scenario["nodegroups"])
    scenario["faults"] = _faults(top, zones, scenario["nodegroups"])
    top.finish()
    return scenario
