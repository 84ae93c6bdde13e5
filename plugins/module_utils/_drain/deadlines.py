# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time in a drain: the node's deadline (D14), the wait after a forced delete, the time PDBs held pods back."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any
import threading

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.pods import pod_grace
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import SYSTEM_CLOCK, Clock


# After a forced delete, how long beyond the pods' grace period we wait for them to go.
FORCE_WAIT_SLACK_SECONDS = 30


class Deadline:
    """D14: one deadline per node, shared by eviction retries and the wait for deletion."""

    def __init__(self, start: float, timeout: float) -> None:
        self.expires_at = start + timeout

    def remaining(self, now: float) -> float:
        return max(0.0, self.expires_at - now)

    def expired(self, now: float) -> bool:
        return now >= self.expires_at

    def next_attempt(self, now: float, delay: float) -> float:
        """When to retry after ``delay``: never later than the deadline (the attempt then times out)."""
        return min(now + max(0.0, delay), self.expires_at)


class PdbWaitTracker:
    """Time during which at least one pod was held back by a PodDisruptionBudget (the union of the pods'
    blocked intervals: two pods blocked at once count once), measured on ``clock``.

    A pod is blocked from a PDB refusal (or the budget gate holding it) until ``release``: its removal was
    accepted, or it failed. Blocking an already blocked pod does not restart its interval.
    """

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._blocked = set()
        self._since = None
        self._closed_seconds = 0.0

    def block(self, key: Hashable) -> None:
        with self._lock:
            if not self._blocked:
                self._since = self._clock.now()
            self._blocked.add(key)

    def release(self, key: Hashable) -> None:
        with self._lock:
            if key not in self._blocked:
                return
            self._blocked.discard(key)
            if not self._blocked:
                self._closed_seconds += max(0.0, self._clock.now() - self._since)
                self._since = None

    def seconds(self) -> float:
        """The blocked time so far, including a still open interval."""
        with self._lock:
            if self._blocked:
                return self._closed_seconds + max(0.0, self._clock.now() - self._since)
            return self._closed_seconds


def force_wait_seconds(pods: Iterable[Mapping[str, Any]], grace_period: int) -> int:
    """How long to wait for force-deleted pods: their longest grace period plus slack."""
    if grace_period >= 0:
        longest = grace_period
    else:
        longest = max([pod_grace(pod) for pod in pods] or [0])
    return longest + FORCE_WAIT_SLACK_SECONDS
