# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The wait between an empty node and its termination (U5; SPEC B3, issue 11 item 3).

When the cluster's load balancers are known, the node's instance is waited out of every one that holds it: the
wait ends as soon as none holds it and ``post_drain_min_wait`` has passed (default 0), and ends held when one
still holds it after ``post_drain_wait``. When none was found (or none was looked for), nothing better is known
than a fixed wait: ``post_drain_min_wait``, by default ``post_drain_wait``. Nor is it for a load balancer whose
targets the credentials may not read (partial IAM): the wait then lasts ``post_drain_wait``, with a warning naming
it. Pods that land on the node meanwhile are the caller's (the wait only says how long to watch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.waiter import Backoff
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.load_balancers import describe_holders

# How often the load balancers are asked while an instance is held: at most once a second, backing off to 5 s
# (issue 11 item 4: watches and polls, never sleeps; DescribeTargetHealth shares the ELB API's rate limits).
FIRST_POLL_SECONDS = 1.0
POLL_BACKOFF = 1.5
MAX_POLL_SECONDS = 5.0


class PostDrainWait:
    """One node's post-drain wait: ``next_slice()`` says how long to watch before asking again, None at the end;
    then ``holders`` lists the load balancers that still hold the instance (empty: the node may go)."""

    def __init__(self, options: Any, balancers: Any, instance_id: str | None, clock: Any) -> None:
        self.clock = clock
        self.started = clock.now()
        self.maximum = float(options.post_drain_wait)
        self.instance_id = instance_id
        self.balancers = balancers if balancers is not None and balancers.found and instance_id else None
        if balancers is None:
            self._fixed_because = "the cluster's load balancers were not looked up"
        elif not balancers.found:
            self._fixed_because = "no load balancer of the cluster was found"
        else:
            self._fixed_because = "the node names no EC2 instance"
        minimum = options.post_drain_min_wait
        if minimum is None:
            minimum = 0 if self.balancers is not None else options.post_drain_wait
        self.minimum = min(float(minimum), self.maximum)
        self.holders = []
        self.held_by = set()   # every load balancer seen holding the instance during the wait
        self._next_check = self.started
        self._intervals = Backoff(FIRST_POLL_SECONDS, MAX_POLL_SECONDS, POLL_BACKOFF).delays()

    def describe(self) -> str:
        if self.balancers is None:
            return "empty; waiting %d s, a fixed wait: %s" % (self.minimum, self._fixed_because)
        return "empty; waiting for instance %s to leave the cluster's load balancers (%s), %d-%d s" % (
            self.instance_id, self.balancers.describe(), self.minimum, self.maximum)

    @property
    def waited(self) -> float:
        return self.clock.now() - self.started

    def next_slice(self) -> float | None:
        """Seconds to watch the node before calling again, or None: the wait is over."""
        now = self.clock.now()
        elapsed = now - self.started
        # At the bound an answer up to MAX_POLL_SECONDS old would fail a node that has just been let go: ask again.
        if self.balancers is not None and (now >= self._next_check or (elapsed >= self.maximum and self.holders)):
            self.holders = self.balancers.holding([self.instance_id]).get(self.instance_id, [])
            self.held_by.update(holder["name"] for holder in self.holders)
            if self.balancers.unreadable:
                # Who that load balancer holds is unknown: nothing better than the fixed wait is known.
                self.minimum = self.maximum
            self._next_check = now + next(self._intervals)
        if elapsed >= self.maximum or (elapsed >= self.minimum and not self.holders):
            return None
        ends = [self.maximum, self.minimum if elapsed < self.minimum else self.maximum]
        if self.holders:
            ends.append(self._next_check - self.started)
        return max(0.0, min(ends) - elapsed)

    def run(self, watch: Callable[[float], Any], log: Callable[[str], None]) -> Any:
        """Call ``watch(seconds)``, which watches the node and returns what arrived on it (None: nothing), until the
        wait is over; returns what arrived, or None."""
        seconds = self.next_slice()
        if seconds is not None:
            log(self.describe())
        while seconds is not None:
            arrived = watch(seconds)
            if arrived is not None:
                return arrived
            seconds = self.next_slice()
        return None

    def settle(self, result: Any, ignore_timeout: bool) -> bool:
        """Record the wait in the node's ``result``; False (the node failed, B3) when a load balancer still holds the
        instance, unless ``ignore_timeout`` (then a warning says so)."""
        result.post_drain_waited = self.waited
        result.load_balancers = sorted(self.held_by)
        if self.balancers is not None and self.balancers.unreadable:
            result.warnings.append("who %s hold could not be read (%s): instance %s waited the whole post_drain_wait="
                                   "%d s for them instead (docs/iam-policy.json lists the permissions)" % (
                                       ", ".join(sorted(self.balancers.unreadable)),
                                       "; ".join(sorted(set(self.balancers.unreadable.values()))),
                                       self.instance_id, self.maximum))
        if not self.holders:
            return True
        still_held = "instance %s is still registered with or draining from %s after post_drain_wait=%d s" % (
            self.instance_id, describe_holders(self.holders), self.maximum)
        if ignore_timeout:
            result.warnings.append("%s; terminated anyway (ignore_load_balancer_timeout)" % still_held)
            return True
        result.fail_load_balancers(still_held)
        return False
