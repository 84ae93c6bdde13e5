"""Server-side printing (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`), which `kubectl get` asks for:
the usual columns for nodes and pods, name and age for everything else."""

from __future__ import annotations

import time
from typing import Any, Callable

from . import objects
from .timefmt import parse_rfc3339


def _age(obj: dict[str, Any]) -> str:
    created = obj["metadata"].get("creationTimestamp")
    seconds = int(time.time() - parse_rfc3339(created)) if created else 0
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * 2:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _node_row(node: dict[str, Any]) -> list[Any]:
    status = "Ready" if objects.node_ready(node) else "NotReady"
    if node["spec"].get("unschedulable"):
        status += ",SchedulingDisabled"
    roles = ",".join(sorted(k.split("/", 1)[1] for k in node["metadata"].get("labels") or {}
                            if k.startswith("node-role.kubernetes.io/"))) or "<none>"
    return [node["metadata"]["name"], status, roles, _age(node),
            node.get("status", {}).get("nodeInfo", {}).get("kubeletVersion", "")]


def _pod_row(pod: dict[str, Any]) -> list[Any]:
    containers = pod["spec"].get("containers") or []
    statuses = pod.get("status", {}).get("containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    phase = "Terminating" if objects.is_terminating(pod) else pod.get("status", {}).get("phase", "Unknown")
    restarts = sum(s.get("restartCount", 0) for s in statuses)
    return [pod["metadata"]["name"], f"{ready}/{len(containers)}", phase, restarts, _age(pod)]


def _column(name: str, type_: str = "string", priority: int = 0) -> dict[str, Any]:
    return {"name": name, "type": type_, "format": "name" if name == "Name" else "", "description": name,
            "priority": priority}


_LAYOUTS: dict[str, tuple[list[dict[str, Any]], Callable[[dict[str, Any]], list[Any]]]] = {
    "nodes": ([_column("Name"), _column("Status"), _column("Roles"), _column("Age"), _column("Version")],
              _node_row),
    "pods": ([_column("Name"), _column("Ready"), _column("Status"), _column("Restarts", "integer"),
              _column("Age")], _pod_row),
}


def wants_table(accept: str | None) -> bool:
    return bool(accept) and "as=Table" in accept


def to_table(plural: str, items: list[dict[str, Any]], list_meta: dict[str, Any]) -> dict[str, Any]:
    columns, row = _LAYOUTS.get(plural, ([_column("Name"), _column("Age")],
                                         lambda obj: [obj["metadata"]["name"], _age(obj)]))
    rows = [{"cells": row(obj), "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                           "metadata": obj["metadata"]}} for obj in items]
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "columnDefinitions": columns,
            "rows": rows}
