# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Discovery documents (/version, /api, /apis, ...): the legacy JSON forms, which kubectl falls back to
when the server does not offer aggregated discovery."""

from __future__ import annotations

from typing import Any

from . import resources
from .resources import ResourceType


def version_info(kubernetes_version: str) -> dict[str, str]:
    major, dummy, minor = kubernetes_version.partition(".")
    return {"major": major, "minor": f"{minor}+", "gitVersion": f"v{kubernetes_version}.0-eks-sandbox",
            "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
            "buildDate": "2024-01-01T00:00:00Z", "goVersion": "go1.22.0", "compiler": "gc",
            "platform": "linux/amd64"}


def _resource_entries(rt: ResourceType) -> list[dict[str, Any]]:
    entries = [{"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced, "kind": rt.kind,
                "verbs": list(rt.verbs), "shortNames": list(rt.short_names)}]
    if "status" in rt.subresources:
        entries.append({"name": f"{rt.plural}/status", "singularName": "", "namespaced": rt.namespaced,
                        "kind": rt.kind, "verbs": ["get", "patch", "update"]})
    if "eviction" in rt.subresources:
        entries.append({"name": f"{rt.plural}/eviction", "singularName": "", "namespaced": rt.namespaced,
                        "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
    return entries


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    kinds = [rt for rt in resources.ALL if rt.group == group and rt.version == version]
    if not kinds:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": [entry for rt in kinds for entry in _resource_entries(rt)]}


def core_versions(server_address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def group(name: str) -> dict[str, Any] | None:
    versions = resources.GROUP_VERSIONS.get(name)
    if not name or not versions:
        return None
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": name, "versions": entries,
            "preferredVersion": entries[0]}


def group_list() -> dict[str, Any]:
    groups = [group(name) for name in resources.GROUP_VERSIONS if name]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [g for g in groups if g]}
