# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The three PATCH flavours of the API server: JSON patch (RFC 6902), merge patch (RFC 7386) and
strategic merge patch (lists merged by the merge keys Kubernetes declares for them)."""

from __future__ import annotations

import copy
from typing import Any

from .errors import ApiError, bad_request

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Field name -> merge key of the object lists Kubernetes merges element by element (patchMergeKey).
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
    "volumeMounts": "mountPath", "volumeDevices": "devicePath", "env": "name", "ports": "containerPort",
    "conditions": "type", "addresses": "type", "ownerReferences": "uid", "imagePullSecrets": "name",
    "hostAliases": "ip", "topologySpreadConstraints": "topologyKey", "resourceClaims": "name",
    "containerStatuses": "name", "initContainerStatuses": "name", "podIPs": "ip",
}
# Lists of scalars that a strategic merge patch unites instead of replacing (patchStrategy=merge).
MERGED_SCALAR_LISTS = {"finalizers"}


def apply_patch(original: dict[str, Any], patch: Any, content_type: str) -> dict[str, Any]:
    """Return the patched copy of `original` (which is left untouched)."""
    if content_type == JSON_PATCH:
        if not isinstance(patch, list):
            raise bad_request("json patch must be a list of operations")
        return json_patch(original, patch)
    if not isinstance(patch, dict):
        raise bad_request("patch body must be a JSON object")
    if content_type == MERGE_PATCH:
        return merge_patch(original, patch)
    if content_type == STRATEGIC_MERGE_PATCH:
        return strategic_merge_patch(original, patch)
    raise ApiError(415, f"the body of the request was in an unknown format - accepted media types include: "
                        f"{JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH}")


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: dict[str, Any]) -> Any:
    return _smp_dict(copy.deepcopy(target) if isinstance(target, dict) else {}, patch)


def _smp_dict(result: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return {}
    retain_keys = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            result[key] = _smp_dict(current if isinstance(current, dict) else {}, value)
        elif isinstance(value, list):
            result[key] = _smp_list(key, result.get(key), value)
        else:
            result[key] = value
    if retain_keys is not None:
        for key in list(result):
            if key not in retain_keys:
                del result[key]
    return result


def _smp_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    current = current if isinstance(current, list) else []
    if field in MERGED_SCALAR_LISTS:
        merged = list(current)
        merged.extend(v for v in patch if v not in merged)
        return merged
    merge_key = MERGE_KEYS.get(field)
    if merge_key is None or not all(isinstance(item, dict) for item in patch):
        return [item for item in copy.deepcopy(patch) if not (isinstance(item, dict) and "$patch" in item)]
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [item for item in copy.deepcopy(patch) if item.get("$patch") != "replace"]
    merged = list(current)
    for item in patch:
        key_value = item.get(merge_key)
        position = next((i for i, existing in enumerate(merged)
                         if isinstance(existing, dict) and existing.get(merge_key) == key_value), None)
        if item.get("$patch") == "delete":
            if position is not None:
                del merged[position]
        elif position is None:
            merged.append(_smp_dict({}, item))
        else:
            merged[position] = _smp_dict(merged[position], item)
    return merged


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"json patch: invalid path {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _resolve(doc: Any, parts: list[str], path: str) -> Any:
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            raise bad_request(f"json patch: path {path!r} does not exist")
    return doc


def _add(doc: Any, parts: list[str], value: Any, path: str) -> Any:
    if not parts:
        return value
    parent = _resolve(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise bad_request(f"json patch: invalid array index in {path!r}")
    else:
        raise bad_request(f"json patch: path {path!r} does not exist")
    return doc


def _remove(doc: Any, parts: list[str], path: str) -> Any:
    if not parts:
        raise bad_request("json patch: cannot remove the whole document")
    parent = _resolve(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise bad_request(f"json patch: path {path!r} does not exist")


def json_patch(original: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    doc: Any = copy.deepcopy(original)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation or "path" not in operation:
            raise bad_request(f"json patch: malformed operation {operation!r}")
        op, path = operation["op"], operation["path"]
        parts = _pointer(path)
        if op in ("add", "replace", "test") and "value" not in operation:
            raise bad_request(f"json patch: {op} at {path!r} needs a value")
        if op == "add":
            doc = _add(doc, parts, copy.deepcopy(operation["value"]), path)
        elif op == "remove":
            _remove(doc, parts, path)
        elif op == "replace":
            _resolve(doc, parts, path)
            if parts:
                _remove(doc, parts, path)
            doc = _add(doc, parts, copy.deepcopy(operation["value"]), path)
        elif op in ("move", "copy"):
            source = _pointer(operation.get("from", ""))
            value = copy.deepcopy(_resolve(doc, source, operation.get("from", "")))
            if op == "move":
                _remove(doc, source, operation.get("from", ""))
            doc = _add(doc, parts, value, path)
        elif op == "test":
            if _resolve(doc, parts, path) != operation["value"]:
                raise ApiError(422, f"json patch: test operation failed at {path!r}")
        else:
            raise bad_request(f"json patch: unknown operation {op!r}")
    if not isinstance(doc, dict):
        raise bad_request("json patch: result is not an object")
    return doc
