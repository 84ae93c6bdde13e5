# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The removal scheduler (_drain/scheduler.py, SPEC P4): at most eviction_concurrency requests in flight across a
batch, retries requeued."""

from __future__ import annotations

import threading
import time

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.scheduler import EvictionScheduler

from ...fakes import FakeCluster, make_pod, node, run_drain


class _CountingJob:
    def __init__(self, tracker, retries):
        self.tracker = tracker
        self.retries = retries
        self.drain = None

    def run(self):
        with self.tracker["lock"]:
            self.tracker["now"] += 1
            self.tracker["peak"] = max(self.tracker["peak"], self.tracker["now"])
        time.sleep(0.01)
        with self.tracker["lock"]:
            self.tracker["now"] -= 1
            self.tracker["runs"] += 1
        if self.retries:
            self.retries -= 1
            return time.monotonic() + 0.05
        with self.tracker["lock"]:
            self.tracker["done"] += 1
        return None


def test_P4_scheduler_bounds_requests_in_flight_and_requeues_retries():
    tracker = {"lock": threading.Lock(), "now": 0, "peak": 0, "runs": 0, "done": 0}
    scheduler = EvictionScheduler(3)
    try:
        for dummy in range(20):
            scheduler.submit(_CountingJob(tracker, retries=2))
        deadline = time.monotonic() + 10
        while tracker["done"] < 20 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        scheduler.close()
    assert tracker["done"] == 20 and tracker["runs"] == 60
    assert tracker["peak"] == 3


def test_P4_eviction_concurrency_bounds_requests_in_flight():
    nodes = [node("node-%d" % i) for i in range(4)]
    pods = [make_pod("p-%d-%d" % (n, i), node="node-%d" % n) for n in range(4) for i in range(10)]
    cluster = FakeCluster(pods, nodes=nodes)
    result = run_drain(cluster, names=[n["metadata"]["name"] for n in nodes], eviction_concurrency=3)
    assert sum(len(n["evicted"]) for n in result.to_dict().values()) == 40
    assert 1 < cluster.peak_in_flight <= 3
