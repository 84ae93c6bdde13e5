# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time in a drain (_drain/deadlines.py): the node's deadline (D14), the wait after a forced delete, and the time
PDBs held pods back (counted once for pods blocked together)."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain import deadlines, pods as drain_pods
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.deadlines import (
    Deadline,
    PdbWaitTracker,
    force_wait_seconds,
)

from ...fakes import FakeClock, make_pod


def test_D14_deadline_arithmetic():
    deadline = Deadline(100.0, 900)
    assert deadline.remaining(400.0) == 600.0 and deadline.remaining(2000.0) == 0.0
    assert not deadline.expired(999.9) and deadline.expired(1000.0)
    assert deadline.next_attempt(500.0, 5.0) == 505.0
    assert deadline.next_attempt(998.0, 5.0) == 1000.0   # the last retry lands on the deadline, not after


def test_pdb_wait_is_zero_when_nothing_was_blocked():
    clock = FakeClock()
    tracker = PdbWaitTracker(clock)
    clock.sleep(30)
    tracker.release(("default", "web-0"))   # releasing a pod that was never blocked counts nothing
    assert tracker.seconds() == 0.0


def test_pdb_wait_counts_overlapping_blocked_pods_once():
    clock = FakeClock()
    tracker = PdbWaitTracker(clock)
    tracker.block("web-0")
    clock.sleep(2)
    tracker.block("web-1")     # both blocked from here ...
    clock.sleep(3)
    tracker.block("web-0")     # ... a repeated refusal does not restart web-0's interval
    tracker.release("web-0")
    clock.sleep(5)
    tracker.release("web-1")   # blocked 0-10 in all, not 5 + 8
    assert tracker.seconds() == 10.0
    clock.sleep(20)            # nothing blocked: the clock stands still
    tracker.block("web-2")
    clock.sleep(4)
    tracker.release("web-2")
    assert tracker.seconds() == 14.0


def test_pdb_wait_stops_when_the_blocked_pod_is_evicted_and_runs_while_it_is_not():
    clock = FakeClock()
    tracker = PdbWaitTracker(clock)
    tracker.block("web-0")
    clock.sleep(4)
    assert tracker.seconds() == 4.0   # still blocked: the open interval counts up to now
    tracker.release("web-0")          # eviction accepted
    clock.sleep(60)
    assert tracker.seconds() == 4.0


def test_force_wait_covers_the_longest_grace_period():
    pods = [make_pod("a", grace=10), make_pod("b", grace=120), make_pod("c")]
    assert force_wait_seconds(pods, -1) == 120 + deadlines.FORCE_WAIT_SLACK_SECONDS
    assert force_wait_seconds([make_pod("c")], -1) == drain_pods.DEFAULT_POD_GRACE_SECONDS + deadlines.FORCE_WAIT_SLACK_SECONDS
    assert force_wait_seconds(pods, 0) == deadlines.FORCE_WAIT_SLACK_SECONDS
