# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain's Kubernetes calls: counted, retried (P3), cached per run, and run side by side (P4)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
import datetime
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.eksops.nodegroup.plugins.module_utils.host import job_guard
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import not_found
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import (
    apps_v1,
    policy_v1,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import SYSTEM_CLOCK, Clock
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import (
    list_all,
    read_body,
    read_json,
    retry_api_call,
)

try:
    from kubernetes.client import (
        CoreV1Event,
        V1DeleteOptions,
        V1EventSource,
        V1Eviction,
        V1ObjectMeta,
        V1ObjectReference,
        V1Preconditions,
    )
    from kubernetes.client.exceptions import ApiException
except ImportError:  # pragma: no cover - modules report the missing library through EksopsModule
    ApiException = CoreV1Event = V1DeleteOptions = V1EventSource = None
    V1Eviction = V1ObjectMeta = V1ObjectReference = V1Preconditions = None


EVENT_COMPONENT = "eksops-nodegroup"
EVENT_NAMESPACE = "default"
# Nodes cordoned (GET, PATCH, Event) at once: a batch of 100 nodes one at a time took about a minute.
NODE_CONCURRENCY = 10

_T = TypeVar("_T")
_R = TypeVar("_R")


class KubeApi:
    """The engine's API calls, counted (requests_made), with retries (P3) and per-run caches.

    Token refresh (P5) is the ApiClient's refresh_api_key_hook: every request asks the Configuration for
    its auth header, so nothing here caches credentials.
    """

    def __init__(self, core_v1: Any, clock: Clock = SYSTEM_CLOCK) -> None:
        self.core = core_v1
        self.policy = policy_v1(core_v1.api_client)
        self.apps = apps_v1(core_v1.api_client)
        self.clock = clock
        self._lock = threading.Lock()
        self._requests = 0
        self._daemonsets = {}
        self._pdbs = {}

    @property
    def requests_made(self) -> int:
        return self._requests

    def counted(self, fn: Callable[..., _R]) -> Callable[..., _R]:
        def call(*args: Any, **kwargs: Any) -> _R:
            with self._lock:
                self._requests += 1
            return fn(*args, **kwargs)
        return call

    def _call(self, fn: Callable[..., _R], *args: Any, **kwargs: Any) -> _R:
        return retry_api_call(self.counted(fn), *args, clock=self.clock, **kwargs)

    def get_node(self, name: str) -> dict[str, Any]:
        try:
            return read_json(self._call(self.core.read_node, name, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                raise not_found("names", "node %s was not found" % name, node=name)
            raise

    def patch_node(self, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        return read_json(self._call(self.core.patch_node, name, patch, _content_type="application/merge-patch+json",
                                    _preload_content=False))

    @property
    def list_pods(self) -> Callable[..., Any]:
        return self.counted(self.core.list_pod_for_all_namespaces)

    def node_pod_selectors(self, node_name: str, pod_selectors: str | None) -> dict[str, str]:
        kwargs = dict(field_selector="spec.nodeName=%s" % node_name)
        if pod_selectors:
            kwargs["label_selector"] = pod_selectors
        return kwargs

    def remove_pod(self, pod: Mapping[str, Any], method: str, grace_period: int) -> None:
        """One eviction (policy/v1, D11) or DELETE, with the pod's UID as precondition and the grace period (D12)."""
        metadata = pod["metadata"]
        # SPEC W5: no eviction or forced deletion starts once the job is gone.
        job_guard.check("%s pod %s/%s" % ("evict" if method == "evict" else "delete", metadata["namespace"],
                                          metadata["name"]))
        delete_options = V1DeleteOptions(preconditions=V1Preconditions(uid=metadata["uid"]))
        if grace_period >= 0:
            delete_options.grace_period_seconds = grace_period
        call = self.counted(self.core.create_namespaced_pod_eviction if method == "evict"
                            else self.core.delete_namespaced_pod)
        if method == "evict":
            body = V1Eviction(api_version="policy/v1", kind="Eviction",
                              metadata=V1ObjectMeta(name=metadata["name"], namespace=metadata["namespace"]),
                              delete_options=delete_options)
        else:
            body = delete_options
        read_body(call(metadata["name"], metadata["namespace"], body=body, _preload_content=False))

    def daemonset_exists(self, namespace: str, name: str) -> bool:
        key = (namespace, name)
        with self._lock:
            if key in self._daemonsets:
                return self._daemonsets[key]
        try:
            read_body(self._call(self.apps.read_namespaced_daemon_set, name, namespace, _preload_content=False))
            exists = True
        except ApiException as exc:
            if exc.status != 404:
                raise
            exists = False
        with self._lock:
            self._daemonsets[key] = exists
        return exists

    def pdbs_in(self, namespace: str) -> list[dict[str, Any]]:
        with self._lock:
            if namespace in self._pdbs:
                return self._pdbs[namespace]
        items, _version = list_all(self.counted(self.policy.list_namespaced_pod_disruption_budget), clock=self.clock,
                                   namespace=namespace)
        with self._lock:
            self._pdbs[namespace] = items
        return items

    def record_event(self, node: Mapping[str, Any], reason: str, message: str, event_type: str = "Normal",
                     log: Callable[[str], None] | None = None) -> None:
        """A core/v1 Event on the Node; best effort (an event must never fail a drain)."""
        metadata = node.get("metadata") or {}
        now = datetime.datetime.now(datetime.timezone.utc)
        event = CoreV1Event(
            metadata=V1ObjectMeta(name="%s.%x" % (metadata.get("name"), time.time_ns()), namespace=EVENT_NAMESPACE),
            involved_object=V1ObjectReference(api_version="v1", kind="Node", name=metadata.get("name"),
                                              uid=metadata.get("uid")),
            reason=reason, message=message[:1024], type=event_type, count=1, first_timestamp=now,
            last_timestamp=now, source=V1EventSource(component=EVENT_COMPONENT),
            reporting_component=EVENT_COMPONENT, reporting_instance=EVENT_COMPONENT)
        try:
            # Retried like an idempotent call (a pooled connection the server closed after a watch fails the
            # first attempt): a repeat of a create the server did serve is a 409 on the event's unique name.
            read_body(self._call(self.core.create_namespaced_event, EVENT_NAMESPACE, event, _preload_content=False))
        except Exception as exc:  # pylint: disable=broad-except
            if log is not None:
                log("could not record event %s on node %s: %s" % (reason, metadata.get("name"), exc))


def in_parallel(fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
    """``[fn(item) for item in items]``, at most NODE_CONCURRENCY calls at once (P4); the first error is raised."""
    if len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(NODE_CONCURRENCY, len(items)), thread_name_prefix="eksops-node") as pool:
        return list(pool.map(fn, items))
