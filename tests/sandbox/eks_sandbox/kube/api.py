# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the API server does with each verb, independent of HTTP: get, list (selectors, paging), create,
update, patch and delete (graceful pod deletion, preconditions, propagation, finalizers)."""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
import time
import uuid
from collections import OrderedDict
from typing import Any

from . import errors, objects
from .patch import apply_patch
from .resources import NAMESPACES, PODS, ResourceType
from .selectors import parse_field_selector, parse_label_selector
from .store import Key, Store, key_of
from .timefmt import rfc3339

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_SNAPSHOT_TTL_SECONDS = 300.0
_MAX_SNAPSHOTS = 64
_IMMUTABLE_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class _Snapshot:
    def __init__(self, rv: int, remaining: list[dict[str, Any]]):
        self.rv = rv
        self.remaining = remaining
        self.created = time.monotonic()


class Api:
    def __init__(self, store: Store):
        self.store = store
        self._snapshots: OrderedDict[str, _Snapshot] = OrderedDict()
        self._snapshots_lock = threading.Lock()

    # -- get / list --

    def get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.store.get(rt, namespace, name)
        if obj is None:
            raise errors.not_found(rt, name)
        return obj

    def list(self, rt: ResourceType, namespace: str | None, *, label_selector: str | None = None,
             field_selector: str | None = None, limit: int | None = None,
             continue_token: str | None = None) -> dict[str, Any]:
        if continue_token:
            rv, items, remaining = self._continue(continue_token, limit)
        else:
            labels = parse_label_selector(label_selector)
            fields = parse_field_selector(field_selector, rt.field_getters, rt.kind)
            with self.store.lock:
                rv = self.store.resource_version
                candidates = self._candidates(rt, namespace, labels, fields)
            matching = [obj for obj in candidates
                        if labels.matches(obj["metadata"].get("labels")) and fields.matches(obj)]
            matching.sort(key=key_of)
            items, remaining = (matching[:limit], matching[limit:]) if limit else (matching, [])
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if remaining:
            meta["continue"] = self._save_snapshot(rv, remaining)
            meta["remainingItemCount"] = len(remaining)
        return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": items}

    def _candidates(self, rt, namespace, labels, fields) -> list[dict[str, Any]]:
        if rt is PODS:
            keys: set[Key] | None = None
            node = fields.equal_value("spec.nodeName")
            if node is not None:
                keys = self.store.pod_keys_on_node(node)
            pairs = labels.equalities()
            if pairs and (keys is None or len(keys) > 50):
                by_label = self.store.pod_keys_with_labels(namespace, pairs)
                keys = by_label if keys is None else keys & by_label
            if keys is not None:
                found = (self.store.get(PODS, ns, name) for ns, name in keys
                         if namespace is None or ns == namespace)
                return [obj for obj in found if obj is not None]
        return self.store.items(rt, namespace)

    def _save_snapshot(self, rv: int, remaining: list[dict[str, Any]]) -> str:
        snapshot_id = uuid.uuid4().hex
        with self._snapshots_lock:
            self._snapshots[snapshot_id] = _Snapshot(rv, remaining)
            now = time.monotonic()
            while self._snapshots and (len(self._snapshots) > _MAX_SNAPSHOTS or
                                       now - next(iter(self._snapshots.values())).created > _SNAPSHOT_TTL_SECONDS):
                self._snapshots.popitem(last=False)
        start = key_of(remaining[0])
        token = {"rv": rv, "start": "/".join(start), "id": snapshot_id}
        return base64.urlsafe_b64encode(json.dumps(token).encode()).decode().rstrip("=")

    def _continue(self, token: str, limit: int | None) -> tuple[int, list, list]:
        try:
            decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            snapshot_id = decoded["id"]
        except (ValueError, KeyError, TypeError, binascii.Error):
            raise errors.bad_request("continue key is not valid: incorrect encoded start resourceVersion") from None
        with self._snapshots_lock:
            snapshot = self._snapshots.pop(snapshot_id, None)
        if snapshot is None or time.monotonic() - snapshot.created > _SNAPSHOT_TTL_SECONDS:
            raise errors.expired("The provided continue parameter is too old to display a consistent list result. "
                                 "You can start a new list without the continue parameter.")
        remaining = snapshot.remaining
        items, rest = (remaining[:limit], remaining[limit:]) if limit else (remaining, [])
        return snapshot.rv, items, rest

    # -- create --

    def create(self, rt: ResourceType, namespace: str | None, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        self._check_type(rt, body)
        obj = objects.clone(body)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        for field in ("uid", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
                      "creationTimestamp"):
            meta.pop(field, None)
        if rt.namespaced:
            body_namespace = meta.get("namespace")
            if body_namespace and namespace and body_namespace != namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                         "sent on the request")
            meta["namespace"] = namespace or body_namespace or "default"
        else:
            meta.pop("namespace", None)
        with self.store.lock:
            if not meta.get("name"):
                if not meta.get("generateName"):
                    raise errors.invalid(rt, "", "metadata.name: Required value: name or generateName is required")
                meta["name"] = self._generate_name(rt, meta.get("namespace", ""), meta["generateName"])
            name = meta["name"]
            if len(name) > 253 or not _NAME_RE.match(name):
                raise errors.invalid(rt, name, f"metadata.name: Invalid value: {name!r}: a lowercase RFC 1123 "
                                               "subdomain must consist of lower case alphanumeric characters, "
                                               "'-' or '.'")
            if rt.namespaced:
                ns_obj = self.store.get(NAMESPACES, "", meta["namespace"])
                if ns_obj is None:
                    raise errors.not_found(NAMESPACES, meta["namespace"])
                if objects.is_terminating(ns_obj):
                    raise errors.ApiError(403, f'{rt.plural} "{name}" is forbidden: unable to create new content '
                                               f'in namespace {meta["namespace"]} because it is being terminated')
            if self.store.get(rt, meta.get("namespace", ""), name) is not None:
                raise errors.already_exists(rt, name)
            if rt is PODS and not (obj.get("spec") or {}).get("containers"):
                raise errors.invalid(rt, name, "spec.containers: Required value")
            objects.DEFAULTERS[rt.plural](obj)
            return self.store.insert(rt, obj)

    def _generate_name(self, rt: ResourceType, namespace: str, prefix: str) -> str:
        while True:
            name = prefix + uuid.uuid4().hex[:5]
            if self.store.get(rt, namespace, name) is None:
                return name

    @staticmethod
    def _check_type(rt: ResourceType, body: dict[str, Any]) -> None:
        if body.get("kind") not in (None, "", rt.kind) or body.get("apiVersion") not in (None, "", rt.api_version):
            raise errors.bad_request(f"the object provided is unrecognized (must be of type {rt.kind}): "
                                     f"{body.get('apiVersion')}/{body.get('kind')}")

    # -- update / patch --

    def update(self, rt: ResourceType, namespace: str, name: str, body: Any,
               subresource: str | None = None) -> dict[str, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
            raise errors.bad_request("the body of the request must be an object with metadata")
        self._check_type(rt, body)
        if body["metadata"].get("name", name) != name:
            raise errors.bad_request("the name of the object does not match the name on the URL")
        with self.store.lock:
            current = self.get(rt, namespace, name)
            wanted_rv = body["metadata"].get("resourceVersion")
            if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
                raise errors.modified_conflict(rt, name)
            return self._store_update(rt, current, objects.clone(body), subresource)

    def patch(self, rt: ResourceType, namespace: str, name: str, patch: Any, content_type: str,
              subresource: str | None = None) -> dict[str, Any]:
        with self.store.lock:
            current = self.get(rt, namespace, name)
            patched = apply_patch(current, patch, content_type)
            if not isinstance(patched.get("metadata"), dict):
                raise errors.invalid(rt, name, "metadata: Required value")
            if patched["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                raise errors.modified_conflict(rt, name)
            if patched["metadata"].get("name") != name:
                raise errors.invalid(rt, name, "metadata.name: Invalid value: field is immutable")
            return self._store_update(rt, current, patched, subresource)

    def _store_update(self, rt: ResourceType, current: dict[str, Any], new: dict[str, Any],
                      subresource: str | None) -> dict[str, Any]:
        name = current["metadata"]["name"]
        new["apiVersion"], new["kind"] = rt.api_version, rt.kind
        meta = new["metadata"] = dict(new["metadata"])
        if rt.namespaced and meta.get("namespace", current["metadata"]["namespace"]) != \
                current["metadata"]["namespace"]:
            raise errors.invalid(rt, name, "metadata.namespace: Invalid value: field is immutable")
        meta["name"] = name
        if rt.namespaced:
            meta["namespace"] = current["metadata"]["namespace"]
        for field in _IMMUTABLE_META:
            if field in current["metadata"]:
                meta[field] = current["metadata"][field]
            else:
                meta.pop(field, None)
        if subresource == "status":
            # A status write changes the status only.
            new = {**current, "status": new.get("status", {})}
        elif "status" in rt.subresources:
            if "status" in current:
                new["status"] = current["status"]
            else:
                new.pop("status", None)
        bump = rt.has_generation and new.get("spec") != current.get("spec")
        if new == {**current, "metadata": {**current["metadata"], "resourceVersion":
                                           new["metadata"].get("resourceVersion")}}:
            return current  # nothing changed: no new resourceVersion, no event (as the API server)
        stored = self.store.replace(rt, new, bump_generation=bump)
        if objects.is_terminating(stored) and not stored["metadata"].get("finalizers") and rt is not PODS:
            return self.store.remove(rt, stored["metadata"].get("namespace", ""), name)
        if rt is PODS and objects.is_terminating(stored) and not stored["metadata"].get("finalizers") \
                and not stored["spec"].get("nodeName"):
            return self.store.remove(rt, stored["metadata"]["namespace"], name)
        return stored

    # -- delete --

    def delete(self, rt: ResourceType, namespace: str, name: str, options: dict[str, Any] | None = None,
               *, pod_condition: dict[str, Any] | None = None) -> dict[str, Any]:
        """Delete per DeleteOptions: preconditions, gracePeriodSeconds (pods), propagationPolicy.
        `pod_condition` (eviction) is added to the pod's status as part of the same deletion."""
        options = options or {}
        with self.store.lock:
            current = self.get(rt, namespace, name)
            self.check_preconditions(rt, current, options)
            if pod_condition is not None:
                status = dict(current.get("status") or {})
                status["conditions"] = objects.set_condition(status.get("conditions"), pod_condition)
                current = self.store.replace(rt, {**current, "status": status})
            policy = options.get("propagationPolicy") or ("Orphan" if options.get("orphanDependents") else None)
            if policy not in (None, "Orphan", "Background", "Foreground"):
                raise errors.bad_request(f"propagationPolicy: Unsupported value: {policy!r}")
            if policy == "Orphan":
                self._orphan_dependents(current["metadata"]["uid"])
            if rt is NAMESPACES:
                return self._delete_namespace(current)
            if rt is PODS:
                grace = self._pod_grace_period(current, options.get("gracePeriodSeconds"))
                if grace > 0 or current["metadata"].get("finalizers"):
                    return self._mark_terminating(rt, current, grace)
            if policy == "Foreground" and self.store.dependents(current["metadata"]["uid"]):
                return self._mark_terminating(rt, current, 0, extra_finalizer="foregroundDeletion")
            if current["metadata"].get("finalizers"):
                return self._mark_terminating(rt, current, 0)
            return self.store.remove(rt, namespace, name)

    @staticmethod
    def check_preconditions(rt: ResourceType, current: dict[str, Any], options: dict[str, Any]) -> None:
        preconditions = options.get("preconditions") or {}
        meta = current["metadata"]
        if preconditions.get("uid") and preconditions["uid"] != meta["uid"]:
            raise errors.precondition_conflict(rt, meta["name"], "uid", preconditions["uid"], meta["uid"])
        if preconditions.get("resourceVersion") and preconditions["resourceVersion"] != meta["resourceVersion"]:
            raise errors.precondition_conflict(rt, meta["name"], "resourceVersion",
                                               preconditions["resourceVersion"], meta["resourceVersion"])

    @staticmethod
    def _pod_grace_period(pod: dict[str, Any], requested: Any) -> int:
        if requested is not None:
            try:
                grace = int(requested)
            except (TypeError, ValueError):
                raise errors.bad_request(f"gracePeriodSeconds: invalid value {requested!r}") from None
        else:
            grace = int(pod["spec"].get("terminationGracePeriodSeconds", 30))
        # As the API server: a pod no kubelet runs (unbound or finished) goes at once.
        if not pod["spec"].get("nodeName") or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        existing = pod["metadata"].get("deletionGracePeriodSeconds")
        return max(0, grace if existing is None else min(grace, existing))

    def _mark_terminating(self, rt: ResourceType, current: dict[str, Any], grace: int,
                          extra_finalizer: str | None = None) -> dict[str, Any]:
        meta = dict(current["metadata"])
        if meta.get("deletionTimestamp") and meta.get("deletionGracePeriodSeconds", 0) <= grace \
                and not extra_finalizer:
            return current
        meta["deletionTimestamp"] = rfc3339(time.time() + grace)
        meta["deletionGracePeriodSeconds"] = grace
        if extra_finalizer and extra_finalizer not in (meta.get("finalizers") or []):
            meta["finalizers"] = [*(meta.get("finalizers") or []), extra_finalizer]
        return self.store.replace(rt, {**current, "metadata": meta})

    def _orphan_dependents(self, owner_uid: str) -> None:
        for dep_rt, (ns, dep_name) in self.store.dependents(owner_uid):
            dependent = self.store.get(dep_rt, ns, dep_name)
            refs = [r for r in dependent["metadata"].get("ownerReferences") or () if r.get("uid") != owner_uid]
            meta = {**dependent["metadata"], "ownerReferences": refs}
            if not refs:
                del meta["ownerReferences"]
            self.store.replace(dep_rt, {**dependent, "metadata": meta})

    def _delete_namespace(self, namespace_obj: dict[str, Any]) -> dict[str, Any]:
        from .resources import ALL
        name = namespace_obj["metadata"]["name"]
        for rt in ALL:
            if rt.namespaced:
                for obj in self.store.items(rt, name):
                    self.store.remove(rt, name, obj["metadata"]["name"])
        return self.store.remove(NAMESPACES, "", name)

    def remove_finalizer(self, rt: ResourceType, obj: dict[str, Any], finalizer: str) -> None:
        """Drop one finalizer; an object being deleted with no finalizer left goes away."""
        meta = dict(obj["metadata"])
        meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != finalizer]
        if not meta["finalizers"]:
            del meta["finalizers"]
            if meta.get("deletionTimestamp") and rt is not PODS:
                self.store.remove(rt, meta.get("namespace", ""), meta["name"])
                return
        self.store.replace(rt, {**obj, "metadata": meta})
