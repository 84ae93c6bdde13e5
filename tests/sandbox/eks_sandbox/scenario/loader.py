# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Loading a scenario: read the YAML file (or take a mapping), validate it section by section against the schema
(`schema.py`), and check what only the whole scenario shows: the region, duplicate names, what a workload or a
fault refers to, and which AMI is the recommended one.

`load_scenario` returns a plain dict with every key of the schema present (defaults filled). Any unknown key,
wrong type or dangling reference raises `ScenarioError` naming the key path (e.g.
``workloads[2].pdb.min_available``).
"""

from __future__ import annotations

import copy
import functools
import os
from typing import Any, Iterable

import yaml

from .fields import ScenarioError, Section, join_path, type_name
from .schema import (check_zone, normalize_fault, read_ami, read_cluster, read_load_balancer, read_nodegroup, read_timings,
                     read_workload)

__all__ = ["load_scenario", "cluster_scenarios"]


def load_scenario(path_or_dict: Any) -> dict[str, Any]:
    """Validate a scenario (YAML file path or mapping) and return it with every default filled.

    A scenario with `clusters:` describes several clusters (README "Several clusters"): its loaded form has the
    shared keys (name, seed, timings, amis, faults) and `clusters`, each entry with every key; cluster_scenarios
    gives each cluster's single-cluster loaded form, which the simulators read.
    """
    top = Section(_load_raw(path_or_dict), "")
    name = top.string("name", required=True)
    shared = {"name": name, "seed": top.integer("seed", 0, minimum=None),
              "timings": read_timings(top.section("timings")), "amis": _amis(top)}
    if not top.has("clusters"):
        scenario = {**shared, **_cluster_part(top, shared, read_cluster(top.section("cluster"), name))}
        scenario["faults"] = _faults(top, scenario["availability_zones"], scenario["nodegroups"])
        top.finish()
        return {key: scenario[key] for key in _SINGLE_CLUSTER_KEYS}
    for key in _PER_CLUSTER_KEYS:
        if top.has(key):
            raise ScenarioError(f"{top.path_of(key)}: not allowed with clusters (give it per cluster)")
    clusters: list[dict[str, Any]] = []
    for path, raw in top.items("clusters"):
        section = Section(raw, path)
        cluster = _cluster_part(section, shared, read_cluster(section, name, finish=False))
        _check_unique(section.path_of("name"), "cluster name", cluster["cluster"]["name"],
                      (c["cluster"]["name"] for c in clusters))
        section.finish()
        clusters.append(cluster)
    if not clusters:
        raise ScenarioError("clusters: at least one cluster is required")
    faults = _faults(top, [z for c in clusters for z in c["availability_zones"]],
                     [ng for c in clusters for ng in c["nodegroups"]])
    top.finish()
    return {**shared, "faults": faults,
            "clusters": [{**c.pop("cluster"), **c} for c in clusters]}


# The loaded form of one cluster, in this order (what every simulator reads); _PER_CLUSTER_KEYS are the keys a
# multi-cluster scenario gives per cluster instead (its clusters[] entries take name, kubernetes_version and tls
# flat, in place of cluster:).
_SINGLE_CLUSTER_KEYS = ("name", "region", "seed", "cluster", "availability_zones", "timings", "amis", "nodegroups",
                        "workloads", "faults", "load_balancers")
_PER_CLUSTER_KEYS = ("region", "cluster", "availability_zones", "nodegroups", "workloads", "load_balancers")


def cluster_scenarios(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    """The single-cluster loaded forms of a loaded scenario: itself, or one per entry of `clusters` (with the shared
    keys; its faults are the whole scenario's)."""
    if "clusters" not in scenario:
        return [scenario]
    parts = []
    for entry in scenario["clusters"]:
        cluster = {key: entry[key] for key in ("name", "kubernetes_version", "tls")}
        merged = {**scenario, **entry, "name": scenario["name"], "cluster": cluster}
        parts.append({key: merged[key] for key in _SINGLE_CLUSTER_KEYS})
    return parts


def _cluster_part(section: Section, shared: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
    """What one cluster's section holds: its region and zones, node groups, workloads and load balancers."""
    region = section.string("region", "us-west-2")
    _check_region(section, region)
    zones = _availability_zones(section, region)
    nodegroups = _nodegroups(section, zones, shared["amis"])
    return {"region": region, "cluster": cluster, "availability_zones": zones, "nodegroups": nodegroups,
            "workloads": _workloads(section, nodegroups), "load_balancers": _load_balancers(section, nodegroups)}


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
            raise ScenarioError(f"scenario: {os.fspath(path_or_dict)} must hold a mapping, got {type_name(data)}")
        return data
    raise ScenarioError(f"scenario: expected a file path or a mapping, got {type_name(path_or_dict)}")


@functools.lru_cache(maxsize=1)
def _known_regions() -> frozenset[str]:
    import botocore.session  # only here: loading botocore's endpoint data takes a moment

    return frozenset(botocore.session.get_session().get_available_regions("ec2"))


def _check_region(top: Section, region: str) -> None:
    if region not in _known_regions():
        raise ScenarioError(f"{top.path_of('region')}: {region!r} is not an AWS region moto can serve")


def _availability_zones(top: Section, region: str) -> list[str]:
    items = top.items("availability_zones")
    if not top.has("availability_zones"):
        return [f"{region}{suffix}" for suffix in "abc"]
    if not items:
        raise ScenarioError(f"{top.path_of('availability_zones')}: at least one availability zone is required")
    zones = []
    for path, zone in items:
        if not isinstance(zone, str) or not zone.startswith(region):
            raise ScenarioError(f"{path}: expected an availability zone of {region}, got {zone!r}")
        if zone in zones:
            raise ScenarioError(f"{path}: duplicate availability zone {zone}")
        zones.append(zone)
    return zones


def _check_unique(path: str, what: str, value: str, taken: Iterable[str]) -> None:
    if value in taken:
        raise ScenarioError(f"{path}: duplicate {what} {value}")


def _nodegroup_named(path: str, name: str, nodegroups: list[dict[str, Any]]) -> dict[str, Any]:
    """The node group a workload or a fault names."""
    nodegroup = next((ng for ng in nodegroups if ng["name"] == name), None)
    if nodegroup is None:
        raise ScenarioError(f"{path}: no node group named {name!r}")
    return nodegroup


def _amis(top: Section) -> list[dict[str, Any]]:
    amis: list[tuple[str, dict[str, Any]]] = []
    for path, raw in top.items("amis"):
        ami = read_ami(Section(raw, path))
        for dummy, other in amis:  # AMI by AMI: the first one it repeats decides which key is named
            _check_unique(join_path(path, "name"), "AMI name", ami["name"], (other["name"],))
            _check_unique(join_path(path, "id"), "AMI id", ami["id"], (other["id"],))
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


def _nodegroups(top: Section, zones: list[str], amis: list[dict[str, Any]]) -> list[dict[str, Any]]:
    nodegroups: list[dict[str, Any]] = []
    for path, raw in top.items("nodegroups"):
        section = Section(raw, path)
        # The name first: a copied node group is reported as a duplicate before anything else in it.
        _check_unique(section.path_of("name"), "node group name", section.string("name", required=True),
                      (ng["name"] for ng in nodegroups))
        nodegroups.append(read_nodegroup(section, zones, amis))
    return nodegroups


def _workloads(top: Section, nodegroups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    workloads: list[dict[str, Any]] = []
    for path, raw in top.items("workloads"):
        workload = read_workload(Section(raw, path))
        if workload["nodegroup"] is not None:
            pinned = _nodegroup_named(join_path(path, "nodegroup"), workload["nodegroup"], nodegroups)
            if pinned["kind"] == "self_managed" and not pinned["labels"]:
                raise ScenarioError(f"{path}.nodegroup: node group {pinned['name']} (kind self_managed) "
                                    "sets no node label to pin to; give it labels")
        _check_unique(join_path(path, "name"), "workload", f"{workload['namespace']}/{workload['name']}",
                      (f"{w['namespace']}/{w['name']}" for w in workloads))
        workloads.append(workload)
    return workloads


def _faults(top: Section, zones: list[str], nodegroups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    faults = []
    for path, raw in top.items("faults"):
        fault = normalize_fault(raw, path)
        if fault["type"] in ("launch_failure", "never_join") and fault["availability_zone"] is not None:
            check_zone(join_path(path, "availability_zone"), fault["availability_zone"], zones)
        if fault["type"] == "autoscaler":
            _nodegroup_named(join_path(path, "nodegroup"), fault["nodegroup"], nodegroups)
        faults.append(fault)
    return faults


def _load_balancers(top: Section, nodegroups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cluster's load balancers; `nodegroups` defaults to every node group (the loaded form is a list)."""
    balancers: list[dict[str, Any]] = []
    for path, raw in top.items("load_balancers"):
        balancer = read_load_balancer(Section(raw, path))
        # Target group names are unique per account and region, Classic ELB names too (each in its own namespace).
        _check_unique(join_path(path, "name"), f"{balancer['type']} name", balancer["name"],
                      (b["name"] for b in balancers if b["type"] == balancer["type"]))
        if balancer["nodegroups"] is None:
            balancer["nodegroups"] = [ng["name"] for ng in nodegroups]
        for i, name in enumerate(balancer["nodegroups"]):
            _nodegroup_named(f"{join_path(path, 'nodegroups')}[{i}]", name, nodegroups)
        balancers.append(balancer)
    return balancers
