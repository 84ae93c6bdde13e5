# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""WATCH: the initial state (or the events after a resourceVersion), then live events from the resource's
event log, filtered by namespace and selectors, with bookmarks and a deadline."""

from __future__ import annotations

import threading
import time
from typing import Any, Iterator

from . import errors
from .resources import ResourceType
from .selectors import FieldSelector, LabelSelector
from .store import Store, WatchEvent

# How often an idle watch that asked for bookmarks gets one (the API server does it about once a minute).
BOOKMARK_INTERVAL_SECONDS = 1.0
_WAIT_SLICE_SECONDS = 0.5


class WatchStream:
    """Opened (validating the resourceVersion) by the constructor; `events()` yields watch event dicts."""

    def __init__(self, store: Store, rt: ResourceType, namespace: str | None, labels: LabelSelector,
                 fields: FieldSelector, resource_version: str | None, allow_bookmarks: bool,
                 deadline: float, stop: threading.Event):
        self.store, self.rt, self.namespace = store, rt, namespace
        self.labels, self.fields = labels, fields
        self.allow_bookmarks, self.deadline, self.stop = allow_bookmarks, deadline, stop
        self._initial: list[dict[str, Any]] = []
        with store.lock:
            if resource_version in (None, "", "0"):
                self.cursor = store.resource_version
                self._initial = [{"type": "ADDED", "object": obj} for obj in store.items(rt, namespace)
                                 if self._matches(obj)]
            else:
                try:
                    self.cursor = int(resource_version)
                except ValueError:
                    raise errors.bad_request(f"invalid resourceVersion {resource_version!r}") from None
                store.log(rt).after(self.cursor)  # 410 now, before the stream starts

    def _matches(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        if self.namespace is not None and obj["metadata"].get("namespace") != self.namespace:
            return False
        return self.labels.matches(obj["metadata"].get("labels")) and self.fields.matches(obj)

    def _translate(self, event: WatchEvent) -> dict[str, Any] | None:
        """As the API server filters a watch: an object moving into the selection is ADDED, out of it DELETED."""
        now_in = self._matches(event.obj)
        was_in = event.type == "MODIFIED" and self._matches(event.old)
        if event.type == "MODIFIED" and now_in != was_in:
            return {"type": "ADDED" if now_in else "DELETED", "object": event.obj}
        return {"type": event.type, "object": event.obj} if now_in else None

    def events(self) -> Iterator[dict[str, Any]]:
        yield from self._initial
        self._initial = []
        log = self.store.log(self.rt)
        last_sent = time.monotonic()
        while not self.stop.is_set():
            now = time.monotonic()
            if now >= self.deadline:
                return
            try:
                with self.store.lock:
                    batch = log.after(self.cursor)
                    if not batch:
                        wait = min(self.deadline - now, _WAIT_SLICE_SECONDS)
                        if self.allow_bookmarks:
                            wait = max(0.0, min(wait, last_sent + BOOKMARK_INTERVAL_SECONDS - now))
                        log.changed.wait(wait)
                        batch = log.after(self.cursor)
                    # Everything of this resource up to the current resourceVersion is in `batch` now.
                    self.cursor = self.store.resource_version
            except errors.ApiError as gone:  # this watcher fell behind the retained window
                yield {"type": "ERROR", "object": gone.status()}
                return
            for event in batch:
                translated = self._translate(event)
                if translated is not None:
                    last_sent = time.monotonic()
                    yield translated
            if self.allow_bookmarks and time.monotonic() - last_sent >= BOOKMARK_INTERVAL_SECONDS:
                last_sent = time.monotonic()
                yield {"type": "BOOKMARK", "object": {"kind": self.rt.kind, "apiVersion": self.rt.api_version,
                                                      "metadata": {"resourceVersion": str(self.cursor)}}}
