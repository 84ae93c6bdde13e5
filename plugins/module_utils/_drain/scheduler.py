# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Removal jobs and the scheduler that runs them, at most eviction_concurrency at once across a batch (P4)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
import heapq
import itertools
import threading

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.deadlines import Deadline
    from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.node import NodeDrain


class RemovalJob:
    """Removing one pod: one attempt per run(); rescheduled while the outcome says retry."""

    def __init__(self, drain: NodeDrain, pod: dict[str, Any], method: str, deadline: Deadline) -> None:
        self.drain = drain
        self.pod = pod
        self.method = method
        self.deadline = deadline
        self.attempt = 0
        self.server_errors = 0
        self.budget = None
        self.budget_known = False
        self.done = False
        self._running = threading.Lock()

    def run(self) -> float | None:
        """One attempt; returns when to try again (a clock time), or None when done.

        A job parked by the budget gate is queued twice (its fallback retry and the gate's release): the
        second run finds it running or done and does nothing.
        """
        if not self._running.acquire(False):
            return None
        try:
            if self.done:
                return None
            return self.drain.attempt_removal(self)
        finally:
            self._running.release()


class EvictionScheduler:
    """P4: at most ``concurrency`` removal requests in flight across all nodes of a batch.

    Jobs waiting to retry (PDB refusals, Retry-After) hold no worker: they sit in a heap ordered by due time.
    """

    def __init__(self, concurrency: int, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._heap = []
        self._sequence = itertools.count()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name="eksops-evict-%d" % i)
                         for i in range(concurrency)]
        for thread in self._threads:
            thread.daemon = True
            thread.start()

    def submit(self, job: RemovalJob, due: float | None = None) -> None:
        with self._cond:
            heapq.heappush(self._heap, (self._clock.now() if due is None else due, next(self._sequence), job))
            self._cond.notify()

    def cancel(self, predicate: Callable[[RemovalJob], object]) -> list[RemovalJob]:
        """Remove the queued jobs matching ``predicate``; returns them."""
        with self._cond:
            removed = [entry[2] for entry in self._heap if predicate(entry[2])]
            self._heap = [entry for entry in self._heap if not predicate(entry[2])]
            heapq.heapify(self._heap)
        return removed

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._heap = []
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()

    def _next_job(self) -> RemovalJob | None:
        with self._cond:
            while True:
                if self._closed:
                    return None
                if self._heap:
                    wait = self._heap[0][0] - self._clock.now()
                    if wait <= 0:
                        return heapq.heappop(self._heap)[2]
                    self._cond.wait(wait)
                else:
                    self._cond.wait()

    def _work(self) -> None:
        while True:
            job = self._next_job()
            if job is None:
                return
            due = job.run()
            if due is not None:
                self.submit(job, due)


# Pod removal states
PENDING = "pending"
REQUESTED = "requested"   # eviction/delete accepted; waiting for the pod to go
SETTLED_GONE = "gone"
SETTLED_FAILED = "failed"
SETTLED_LEFT = "left"     # Z3 with force: a pod of a workload that comes back, left on the node


class PodRemoval:
    """Where one pod's removal stands (a state above), why it has not succeeded yet, and its job."""

    def __init__(self, pod: dict[str, Any], state: str = PENDING) -> None:
        self.pod = pod
        self.state = state
        self.reason = None
        self.pdb = None
        self.pdb_related = False
        self.job = None
