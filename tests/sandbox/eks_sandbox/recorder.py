# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What happened in the sandbox: API request counts, AWS calls, lost pods and notable events.

Every method is called from server threads and the controller loop at once, so all state sits behind one lock.
Times are wall-clock epoch seconds (what a test compares with its own time.time()).
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from typing import Any

__all__ = ["Recorder", "RATE_BUCKET_SECONDS"]

# Request times are counted per tenth of a second (issue 28 item 4): enough to read a peak rate over any 1 s or 10 s
# window to within a tenth of a second, and small (an hour of requests without a quiet tenth: 36000 counts).
RATE_BUCKET_SECONDS = 0.1
# Of each key's counts only the newest are kept, as with events: a sandbox left running must not grow without bound.
MAX_RATE_BUCKETS = 36000


def _count_in_bucket(buckets: dict[str, int], now: float) -> None:
    """One request at ``now`` into ``buckets`` ({tenth of a second since the epoch: requests}); the caller holds the
    lock."""
    key = str(int(now / RATE_BUCKET_SECONDS))
    buckets[key] = buckets.get(key, 0) + 1
    if len(buckets) > MAX_RATE_BUCKETS:
        del buckets[next(iter(buckets))]


class _Timings:
    """Running totals of one kind of timed event (budget rounds, pod stops, node boots): how many, their seconds,
    the sandbox's own reaction seconds within them, and the largest reaction."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self.reaction = 0.0
        self.largest = 0.0

    def add(self, seconds: float, reaction_seconds: float) -> None:
        self.count += 1
        self.seconds += seconds
        self.reaction += reaction_seconds
        self.largest = max(self.largest, reaction_seconds)

    @classmethod
    def merged(cls, parts: list[_Timings]) -> _Timings:
        total = cls()
        for part in parts:
            total.count += part.count
            total.seconds += part.seconds
            total.reaction += part.reaction
            total.largest = max(total.largest, part.largest)
        return total

    def view(self, count_name: str) -> dict[str, Any]:
        """The totals as a report shows them, the count under ``count_name``."""
        return {count_name: self.count, "seconds": round(self.seconds, 3),
                "reaction_seconds": round(self.reaction, 3), "reaction_seconds_max": round(self.largest, 3)}


class Recorder:
    """Thread-safe counters and logs read by the observer's report."""

    def __init__(self, max_events: int = 5000):
        self._lock = threading.Lock()
        self._k8s_requests: Counter[str] = Counter()
        self._aws_calls: Counter[str] = Counter()
        self._aws_calls_by_agent: Counter[str] = Counter()
        # When the requests came (issue 28 item 4): the API server's, and the AWS calls by the region they were
        # signed for ({tenth of a second since the epoch: requests}).
        self._k8s_request_times: dict[str, int] = {}
        self._aws_call_times: dict[str, dict[str, int]] = {}
        self._pods_lost: list[dict[str, Any]] = []
        # Only the newest events are kept: a long run with a chatty fault must not grow without bound.
        self._events: deque[dict[str, Any]] = deque(maxlen=max_events)
        self._events_dropped = 0
        # PodDisruptionBudget "<ns>/<name>" -> its rounds (pdb_round)
        self._pdb_rounds: dict[str, _Timings] = {}
        # The pods stopped (pod_stop), and per node [stops, last reaction]
        self._pod_stops = _Timings()
        self._pod_stops_by_node: dict[str, list[float]] = {}
        # The nodes booted (node_boot), and each instance's reaction
        self._node_boots = _Timings()
        self._node_boots_by_instance: dict[str, float] = {}

    def k8s_request(self, user_agent: str, verb: str, resource: str, status: int) -> None:
        key = f"{user_agent or '-'} {verb} {resource} {status}"
        with self._lock:
            self._k8s_requests[key] += 1
            _count_in_bucket(self._k8s_request_times, time.time())

    def aws_call(self, action: str, error_code: str | None, user_agent: str = "", region: str | None = None) -> None:
        """One AWS call; also counted by the caller's application, the last token of its User-Agent (botocore
        appends a client's user_agent_extra there), so a test can tell the collection's calls from its own; and
        timed by the region its signature names ("-": unsigned)."""
        key = f"{action} {error_code or 'OK'}"
        agent = user_agent.split()[-1] if user_agent.strip() else "-"
        with self._lock:
            self._aws_calls[key] += 1
            self._aws_calls_by_agent[f"{agent} {key}"] += 1
            _count_in_bucket(self._aws_call_times.setdefault(region or "-", {}), time.time())

    def pod_lost(self, namespace: str, name: str, node: str) -> None:
        entry = {"pod": f"{namespace}/{name}", "node": node, "time": round(time.time(), 3)}
        with self._lock:
            self._pods_lost.append(entry)
        self.event("pod_lost", pod=entry["pod"], node=node)

    def pdb_round(self, pdb: str, seconds: float, reaction_seconds: float) -> None:
        """One round of a disruption budget: it was used up, and `seconds` later allowed a disruption again, of
        which `reaction_seconds` were the sandbox's own reaction beyond pod_start_seconds."""
        with self._lock:
            self._pdb_rounds.setdefault(pdb, _Timings()).add(seconds, reaction_seconds)

    def pod_stop(self, seconds: float, reaction_seconds: float, node: str = "") -> None:
        """One pod the kubelet of ``node`` stopped: `seconds` from its deletion to its removal, of which
        `reaction_seconds` were the sandbox's own reaction beyond the stop itself (its grace period, or the quick
        stop). Stops come in the order clients see them (the end of a pass); of one pass's stops on a node the
        largest reaction is the node's last."""
        with self._lock:
            self._pod_stops.add(seconds, reaction_seconds)
            if node:
                by_node = self._pod_stops_by_node.setdefault(node, [0, 0.0])
                by_node[0] += 1
                by_node[1] = reaction_seconds

    def node_boot(self, seconds: float, reaction_seconds: float, instance_id: str) -> None:
        """One instance's node registered Ready: `seconds` from the instance's launch, of which `reaction_seconds`
        were the sandbox's own reaction beyond instance_pending_seconds + node_boot_seconds."""
        with self._lock:
            self._node_boots.add(seconds, reaction_seconds)
            self._node_boots_by_instance[instance_id] = reaction_seconds

    def event(self, kind: str, **fields: Any) -> None:
        entry = {"time": round(time.time(), 3), "kind": kind, **fields}
        with self._lock:
            if len(self._events) == self._events.maxlen:
                self._events_dropped += 1
            self._events.append(entry)

    def k8s_requests(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._k8s_requests.items()))

    def aws_calls(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._aws_calls.items()))

    def aws_calls_by_agent(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._aws_calls_by_agent.items()))

    def k8s_request_times(self) -> dict[str, int]:
        """The API server's requests per tenth of a second: {tenth of a second since the epoch (str): requests}."""
        with self._lock:
            return dict(self._k8s_request_times)

    def aws_call_times(self) -> dict[str, dict[str, int]]:
        """The AWS calls per tenth of a second, by region: {region: {tenth of a second since the epoch: calls}}."""
        with self._lock:
            return {region: dict(buckets) for region, buckets in sorted(self._aws_call_times.items())}

    def pods_lost(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(entry) for entry in self._pods_lost]

    def pdb_rounds(self) -> dict[str, Any]:
        """The budget rounds so far, in all and per budget: `rounds`, and the running totals `seconds` and
        `reaction_seconds` (a caller subtracts two reports' totals to get a run's), `reaction_seconds_max`."""
        with self._lock:
            total = _Timings.merged(list(self._pdb_rounds.values())).view("rounds")
            by_pdb = {pdb: totals.view("rounds") for pdb, totals in sorted(self._pdb_rounds.items())}
        return {**total, "by_pdb": by_pdb}

    def pod_stops(self) -> dict[str, Any]:
        """The pods the kubelet stopped so far: `stops`, and the running totals `seconds` and `reaction_seconds` (a
        caller subtracts two reports' totals to get a run's), `reaction_seconds_max`."""
        with self._lock:
            totals = self._pod_stops.view("stops")
            by_node = {node: list(entry) for node, entry in sorted(self._pod_stops_by_node.items())}
        return {**totals,
                "by_node": {node: {"stops": int(count), "last_reaction_seconds": round(last, 3)}
                            for node, (count, last) in by_node.items()}}

    def node_boots(self) -> dict[str, Any]:
        """The nodes booted so far: `boots`, the running totals `seconds` and `reaction_seconds`,
        `reaction_seconds_max`, and each instance's reaction (`by_instance`)."""
        with self._lock:
            totals = self._node_boots.view("boots")
            by_instance = dict(sorted(self._node_boots_by_instance.items()))
        return {**totals,
                "by_instance": {instance_id: round(value, 3) for instance_id, value in by_instance.items()}}

    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(entry) for entry in self._events]

    def events_dropped(self) -> int:
        with self._lock:
            return self._events_dropped
