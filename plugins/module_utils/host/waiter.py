# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one waiter shape (issue 26 item 5), after kubernetes.core's plugins/module_utils/k8s/waiter.py (a Waiter
given a predicate, one wait loop, one clock): a named predicate judged on what a poll or a watch sees, until it
holds or the deadline passes.

The predicates live with what they judge and are named for it: ``instances_gone`` (nodegroup/termination.py),
``update_finished`` (managed/update.py), NewNodeValidation and ReplacementsReady (the new nodes or the replacements
are Ready: steps/asg_surge.py, steps/asg_instance_terminate.py). AWS is polled with a Backoff (SPEC W4, issue 11
item 4: at most once a second); pods and nodes are watched (LIST+WATCH, kube/watch.py, SPEC P1). A wait makes no
destructive call and catches nothing: a stopped job (host/job_guard.py, SPEC W5) unwinds it like any failure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host import clock as clocks
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import list_then_watch

_UNSEEN = object()


class Backoff:
    """The pauses between polls: ``first`` seconds, then ``factor`` times longer each time, up to ``cap``."""

    def __init__(self, first: float, cap: float, factor: float = 2.0) -> None:
        self.first = first
        self.cap = cap
        self.factor = factor

    @classmethod
    def every(cls, seconds: float) -> Backoff:
        """The same pause each time."""
        return cls(seconds, seconds, 1.0)

    def delays(self) -> Iterator[float]:
        delay = min(self.first, self.cap)
        while True:
            yield delay
            delay = min(self.cap, delay * self.factor)


class Waiter:
    """Wait until ``predicate`` holds of what is seen, for ``timeout`` seconds of ``clock`` (default
    SYSTEM_CLOCK) from now. One Waiter may wait several times (a poll, then another) against its one deadline,
    which ``extend`` may move later (termination hooks hold an instance)."""

    def __init__(self, predicate: Callable[[Any], object], timeout: float, clock: Any = None) -> None:
        self.predicate = predicate
        self.clock = clock or clocks.SYSTEM_CLOCK
        self.started = self.clock.now()
        self.deadline = self.started + timeout

    def remaining(self) -> float:
        return max(0.0, self.deadline - self.clock.now())

    def extend(self, deadline: float) -> None:
        """Wait until ``deadline`` (a time of the clock) when it is later than the deadline so far."""
        self.deadline = max(self.deadline, deadline)

    def poll(self, read: Callable[[], Any], backoff: Backoff, seen: Any = _UNSEEN,
             pace: Callable[[Any], float] | None = None,
             on_timeout: Callable[[Any], UpgradeError] | None = None) -> tuple[bool, Any]:
        """``read()`` until the predicate holds of what it returns (``seen``: what was read already, judged first);
        between reads a pause of ``backoff`` (at least ``pace(seen)`` when given), never past the deadline.
        Returns (held, the last thing read); at the deadline, raises ``on_timeout(last)`` when given."""
        delays = backoff.delays()
        if seen is _UNSEEN:
            seen = read()
        while not self.predicate(seen):
            remaining = self.deadline - self.clock.now()
            if remaining <= 0:
                if on_timeout is not None:
                    raise on_timeout(seen)
                return False, seen
            delay = next(delays)
            if pace is not None:
                delay = max(delay, pace(seen))
            self.clock.sleep(min(delay, remaining))
            seen = read()
        return True, seen

    def list_then_watch(self, list_func: Callable[..., Any], view: Callable[[dict[Any, Any]], Any],
                        interrupted: Callable[[], bool] = lambda: False, **kwargs: Any) -> tuple[bool, Any]:
        """LIST+WATCH with ``list_func`` (handed on to kube/watch.py's list_then_watch, with ``waker``, ``listed`` and
        the list's selectors in ``kwargs``) until the predicate holds of ``view(objects)``, ``interrupted()`` (a
        source polled beside the watch failed: the caller raises its error) or the deadline. Returns (held, the
        objects last seen, by (namespace, name))."""
        held, objects = list_then_watch(
            list_func, timeout=self.remaining(), clock=self.clock,
            condition=lambda objects: interrupted() or self.predicate(view(objects)), **kwargs)
        return held and not interrupted(), objects
