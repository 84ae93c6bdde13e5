# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resource types the simulated API server serves, and how their field selectors read an object."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


def _path_getter(path: str) -> Callable[[dict], str]:
    parts = path.split(".")

    def get(obj: dict) -> str:
        value: Any = obj
        for part in parts:
            value = value.get(part) if isinstance(value, dict) else None
            if value is None:
                return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    return get


@dataclass(frozen=True)
class ResourceType:
    plural: str
    singular: str
    kind: str
    group: str
    version: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ("create", "delete", "get", "list", "patch", "update", "watch")
    subresources: tuple[str, ...] = ("status",)
    has_generation: bool = False
    extra_fields: tuple[str, ...] = ()
    field_getters: dict[str, Callable[[dict], str]] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        names = ("metadata.name", "metadata.namespace") + self.extra_fields
        object.__setattr__(self, "field_getters", {name: _path_getter(name) for name in names})

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def qualified(self) -> str:
        """How error messages name the resource: `pods`, `deployments.apps`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


NAMESPACES = ResourceType("namespaces", "namespace", "Namespace", "", "v1", False, ("ns",),
                          extra_fields=("status.phase",))
NODES = ResourceType("nodes", "node", "Node", "", "v1", False, ("no",), extra_fields=("spec.unschedulable",))
PODS = ResourceType("pods", "pod", "Pod", "", "v1", True, ("po",), subresources=("status", "eviction"),
                    extra_fields=("spec.nodeName", "status.phase", "spec.restartPolicy", "spec.schedulerName",
                                  "spec.serviceAccountName", "status.podIP"))
EVENTS = ResourceType("events", "event", "Event", "", "v1", True, ("ev",), subresources=(),
                      extra_fields=("involvedObject.kind", "involvedObject.name", "involvedObject.namespace",
                                    "involvedObject.uid", "reason", "type", "source"))
DEPLOYMENTS = ResourceType("deployments", "deployment", "Deployment", "apps", "v1", True, ("deploy",),
                           has_generation=True)
REPLICASETS = ResourceType("replicasets", "replicaset", "ReplicaSet", "apps", "v1", True, ("rs",),
                           has_generation=True)
DAEMONSETS = ResourceType("daemonsets", "daemonset", "DaemonSet", "apps", "v1", True, ("ds",),
                          has_generation=True)
# apps/v1 StatefulSet (Kubernetes API reference, "StatefulSet v1 apps"; short name sts, subresource status).
STATEFULSETS = ResourceType("statefulsets", "statefulset", "StatefulSet", "apps", "v1", True, ("sts",),
                            has_generation=True)
PDBS = ResourceType("poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", "policy", "v1", True,
                    ("pdb",), has_generation=True)

ALL = (NAMESPACES, NODES, PODS, EVENTS, DEPLOYMENTS, REPLICASETS, DAEMONSETS, STATEFULSETS, PDBS)
BY_GROUP_VERSION: dict[tuple[str, str, str], ResourceType] = {(rt.group, rt.version, rt.plural): rt for rt in ALL}
GROUP_VERSIONS: dict[str, list[str]] = {}
for _rt in ALL:
    GROUP_VERSIONS.setdefault(_rt.group, [])
    if _rt.version not in GROUP_VERSIONS[_rt.group]:
        GROUP_VERSIONS[_rt.group].append(_rt.version)


def lookup(group: str, version: str, plural: str) -> ResourceType | None:
    return BY_GROUP_VERSION.get((group, version, plural))
