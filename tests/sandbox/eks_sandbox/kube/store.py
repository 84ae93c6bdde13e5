# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The object store: one lock, one global resourceVersion (as etcd), per-resource event logs for watches,
and the indexes the controllers and field-selected LISTs need so that nothing scans every pod.

Stored objects are never changed in place: every write stores a new dict (nested parts may be shared with
the previous version, and are never mutated either). So a LIST page, a watch event or a controller may hold
on to an object and serialise it outside the lock.
"""

from __future__ import annotations

import bisect
import threading
import time
import uuid
from collections import deque
from typing import Any, Iterable, NamedTuple

from . import resources
from .errors import expired
from .resources import PODS, ResourceType
from .timefmt import rfc3339

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return meta.get("namespace") or "", meta["name"]


def controller_uid(obj: dict[str, Any]) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return ref.get("uid")
    return None


class WatchEvent(NamedTuple):
    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    obj: dict[str, Any]
    old: dict[str, Any] | None


class EventLog:
    """The recent events of one resource type; at least `retain` of them are kept."""

    def __init__(self, lock: threading.RLock, retain: int):
        self.changed = threading.Condition(lock)
        self._retain = retain
        self._rvs: list[int] = []
        self._events: list[WatchEvent] = []
        self.compacted_rv = 0  # events up to this resourceVersion are gone

    def append(self, event: WatchEvent) -> None:
        self._rvs.append(event.rv)
        self._events.append(event)
        if len(self._events) > 2 * self._retain:  # trim in bulk: amortised O(1) per event
            drop = len(self._events) - self._retain
            self.compacted_rv = self._rvs[drop - 1]
            del self._rvs[:drop]
            del self._events[:drop]
        self.changed.notify_all()

    def after(self, rv: int) -> list[WatchEvent]:
        """Events newer than `rv`; 410 Expired when some of them were already dropped."""
        if rv < self.compacted_rv:
            raise expired(f"too old resource version: {rv} ({self.compacted_rv})")
        return self._events[bisect.bisect_right(self._rvs, rv):]


class Store:
    def __init__(self, retain_events: int = 10000):
        self.lock = threading.RLock()
        self._objects: dict[str, dict[Key, dict[str, Any]]] = {rt.plural: {} for rt in resources.ALL}
        self._logs = {rt.plural: EventLog(self.lock, retain_events) for rt in resources.ALL}
        self._rv = 0
        self._uids: dict[str, tuple[ResourceType, Key]] = {}
        # owner uid -> dependents (resource type, key) holding an ownerReference to it
        self._dependents: dict[str, set[tuple[ResourceType, Key]]] = {}
        self._pods_by_node: dict[str, set[Key]] = {}
        self._pods_by_label: dict[tuple[str, str, str], set[Key]] = {}
        self._pods_by_controller: dict[str, set[Key]] = {}
        self.pending_pods: set[Key] = set()
        # terminating pod -> time.monotonic() when its graceful deletion began
        self.terminating_pods: dict[Key, float] = {}
        # PodDisruptionBudget uid -> time.monotonic() of each eviction that spent one of its disruptions and has
        # not been made good yet, oldest first: the eviction handler appends, the disruption controller takes
        # them off as the budget allows disruptions again and records the rounds (Controllers).
        self.budget_spent: dict[str, deque[float]] = {}
        # resourceVersion of the last write touching: a resource type ("kind", plural), the pods of a namespace
        # ("ns", ns), of a label ("label", ns, key, value) or of a controller ("controller", uid). Controllers
        # compare these to skip work whose inputs did not change.
        self._changed_at: dict[tuple, int] = {}

    # -- reads (call with the lock held when consistency across calls matters) --

    @property
    def resource_version(self) -> int:
        return self._rv

    def get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects[rt.plural].get((namespace if rt.namespaced else "", name))

    def items(self, rt: ResourceType, namespace: str | None = None) -> list[dict[str, Any]]:
        objects = self._objects[rt.plural]
        if namespace is None or not rt.namespaced:
            return list(objects.values())
        return [obj for (ns, dummy), obj in objects.items() if ns == namespace]

    def count(self, rt: ResourceType) -> int:
        return len(self._objects[rt.plural])

    def by_uid(self, uid: str) -> dict[str, Any] | None:
        found = self._uids.get(uid)
        return None if found is None else self._objects[found[0].plural].get(found[1])

    def uid_exists(self, uid: str) -> bool:
        return uid in self._uids

    def dependents(self, owner_uid: str) -> list[tuple[ResourceType, Key]]:
        return list(self._dependents.get(owner_uid, ()))

    def owner_uids(self) -> list[str]:
        return list(self._dependents)

    def pod_keys_on_node(self, node_name: str) -> set[Key]:
        return self._pods_by_node.get(node_name, set())

    def pod_keys_of_controller(self, uid: str) -> set[Key]:
        return self._pods_by_controller.get(uid, set())

    def pod_keys_with_labels(self, namespace: str | None, pairs: Iterable[tuple[str, str]]) -> set[Key] | None:
        """Keys of pods carrying all `pairs` (namespace None: any); None when `pairs` is empty (no narrowing)."""
        result: set[Key] | None = None
        for label, value in pairs:
            if namespace is None:
                found = {k for (ns, l, v), keys in self._pods_by_label.items() if l == label and v == value
                         for k in keys}
            else:
                found = self._pods_by_label.get((namespace, label, value), set())
            result = set(found) if result is None else result & found
            if not result:
                return set()
        return result

    def changed_at(self, what: tuple) -> int:
        return self._changed_at.get(what, 0)

    def log(self, rt: ResourceType) -> EventLog:
        return self._logs[rt.plural]

    # -- writes (each takes the lock; callers composing several writes hold it around them) --

    def insert(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a new object, filling uid, creationTimestamp, generation and resourceVersion."""
        with self.lock:
            self._rv += 1
            meta = obj["metadata"] = dict(obj["metadata"])
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", rfc3339())
            if rt.has_generation:
                meta["generation"] = 1
            meta["resourceVersion"] = str(self._rv)
            key = key_of(obj)
            self._objects[rt.plural][key] = obj
            self._uids[meta["uid"]] = (rt, key)
            self._index(rt, key, None, obj)
            self._logs[rt.plural].append(WatchEvent(self._rv, "ADDED", obj, None))
            return obj

    def replace(self, rt: ResourceType, obj: dict[str, Any], *, bump_generation: bool = False) -> dict[str, Any]:
        """Store a new version of an existing object (a new dict; the stored one stays untouched)."""
        with self.lock:
            key = key_of(obj)
            old = self._objects[rt.plural][key]
            self._rv += 1
            meta = obj["metadata"] = dict(obj["metadata"])
            if rt.has_generation:
                meta["generation"] = old["metadata"].get("generation", 1) + (1 if bump_generation else 0)
            meta["resourceVersion"] = str(self._rv)
            self._objects[rt.plural][key] = obj
            self._index(rt, key, old, obj)
            self._logs[rt.plural].append(WatchEvent(self._rv, "MODIFIED", obj, old))
            return obj

    def remove(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        with self.lock:
            key = (namespace if rt.namespaced else "", name)
            old = self._objects[rt.plural].pop(key)
            self._rv += 1
            self._uids.pop(old["metadata"]["uid"], None)
            self._index(rt, key, old, None)
            # The DELETED event carries the object as it was, with the deletion's resourceVersion.
            gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(self._rv)}}
            self._logs[rt.plural].append(WatchEvent(self._rv, "DELETED", gone, old))
            return gone

    # -- indexes --

    def _index(self, rt: ResourceType, key: Key, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        self._changed_at[("kind", rt.plural)] = self._rv
        old_owners = {ref.get("uid") for ref in (old["metadata"].get("ownerReferences") or ())} if old else set()
        new_owners = {ref.get("uid") for ref in (new["metadata"].get("ownerReferences") or ())} if new else set()
        for uid in old_owners - new_owners:
            _discard(self._dependents, uid, (rt, key))
        for uid in new_owners - old_owners:
            self._dependents.setdefault(uid, set()).add((rt, key))
        if rt is PODS:
            self._index_pod(key, old, new)

    def _index_pod(self, key: Key, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        namespace = key[0]
        rv = self._rv
        changed = self._changed_at
        changed[("ns", namespace)] = rv
        for obj in (old, new):
            if obj is not None:
                for label, value in (obj["metadata"].get("labels") or {}).items():
                    changed[("label", namespace, label, value)] = rv
                uid = controller_uid(obj)
                if uid:
                    changed[("controller", uid)] = rv
        old_node = (old["spec"].get("nodeName") or "") if old else None
        new_node = (new["spec"].get("nodeName") or "") if new else None
        if old_node != new_node:
            if old_node is not None:
                _discard(self._pods_by_node, old_node, key)
            if new_node is not None:
                self._pods_by_node.setdefault(new_node, set()).add(key)
        old_labels = set((old["metadata"].get("labels") or {}).items()) if old else set()
        new_labels = set((new["metadata"].get("labels") or {}).items()) if new else set()
        for label, value in old_labels - new_labels:
            _discard(self._pods_by_label, (namespace, label, value), key)
        for label, value in new_labels - old_labels:
            self._pods_by_label.setdefault((namespace, label, value), set()).add(key)
        old_controller = controller_uid(old) if old else None
        new_controller = controller_uid(new) if new else None
        if old_controller != new_controller:
            if old_controller:
                _discard(self._pods_by_controller, old_controller, key)
            if new_controller:
                self._pods_by_controller.setdefault(new_controller, set()).add(key)
        if new is not None and new.get("status", {}).get("phase") == "Pending" \
                and not new["metadata"].get("deletionTimestamp"):
            self.pending_pods.add(key)
        else:
            self.pending_pods.discard(key)
        if new is not None and new["metadata"].get("deletionTimestamp"):
            self.terminating_pods.setdefault(key, time.monotonic())
        else:
            self.terminating_pods.pop(key, None)


def _discard(index: dict, index_key: Any, value: Any) -> None:
    values = index.get(index_key)
    if values is not None:
        values.discard(value)
        if not values:
            del index[index_key]
