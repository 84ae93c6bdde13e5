# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Injected faults: decides, request by request, whether the sandbox misbehaves (schema: README "faults").

Each fault has a trigger: `after_seconds` (counted from when the faults are armed) and either `count` (the
first N matching occasions) or `probability` (drawn from one generator seeded by the scenario's `seed`, so a
scenario replays the same way); with neither, every matching occasion. An autoscaler fault fires once.

The runtime builds `Faults(..., armed=False)` and arms it when the sandbox is settled, so seeding (the first
launches, the first watches) never consumes a fault meant for the test. Built directly (e.g. in a unit test),
a `Faults` is armed at once.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any, Callable

from .scenario.schema import normalize_fault

__all__ = ["Faults"]


class _Fault:
    def __init__(self, spec: dict[str, Any]):
        self.spec = spec
        self.fired = 0


class Faults:
    """Thread-safe fault decisions for the API server, moto and the controllers."""

    def __init__(self, fault_specs: list[dict[str, Any]], seed: int = 0, *, armed: bool = True,
                 clock: Callable[[], float] = time.monotonic):
        self._faults = [_Fault(normalize_fault(spec, f"faults[{i}]")) for i, spec in enumerate(fault_specs)]
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._clock = clock
        self._armed_at: float | None = clock() if armed else None

    def arm(self) -> None:
        """Start the faults' clock (after_seconds counts from here); before this no fault fires."""
        with self._lock:
            if self._armed_at is None:
                self._armed_at = self._clock()

    @property
    def armed(self) -> bool:
        with self._lock:
            return self._armed_at is not None

    def fired_counts(self) -> list[dict[str, Any]]:
        """Each fault spec with how often it fired (for the report)."""
        with self._lock:
            return [{**fault.spec, "fired": fault.fired} for fault in self._faults]

    def _fires(self, fault: _Fault) -> bool:
        """Whether this matching occasion triggers the fault; call with the lock held."""
        if self._armed_at is None or self._clock() - self._armed_at < fault.spec["after_seconds"]:
            return False
        count, probability = fault.spec.get("count"), fault.spec.get("probability")
        if count is not None and fault.fired >= count:
            return False
        if probability is not None and self._random.random() >= probability:
            return False
        fault.fired += 1
        return True

    def _first_firing(self, fault_type: str, matches: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
        with self._lock:
            for fault in self._faults:
                if fault.spec["type"] == fault_type and matches(fault.spec) and self._fires(fault):
                    return fault.spec
        return None

    def k8s_error(self, verb: str, resource: str) -> tuple[int, float | None] | None:
        """(status, retry_after seconds or None) to answer this request with, or None to serve it."""
        spec = self._first_firing(
            "k8s_error", lambda s: s["verb"] in ("*", verb) and s["resource"] in ("*", resource))
        if spec is None:
            return None
        return spec["status"], spec["retry_after"]

    def watch_drop_after(self) -> float | None:
        """Seconds after which a newly opened watch stream must be closed, or None to keep it open."""
        spec = self._first_firing("watch_drop", lambda s: True)
        return None if spec is None else float(spec["every_seconds"])

    def watch_gone(self) -> bool:
        """Whether to answer this watch with 410 Gone."""
        return self._first_firing("watch_gone", lambda s: True) is not None

    def aws_error(self, action: str) -> str | None:
        """The AWS error code to answer this call with, or None to serve it."""
        spec = self._first_firing("aws_error", lambda s: s["action"] in ("*", action))
        return None if spec is None else spec["code"]

    def launch_failure(self, az: str) -> str | None:
        """The error code that makes this launch in `az` fail, or None to launch."""
        spec = self._first_firing("launch_failure", lambda s: s["availability_zone"] == az)
        return None if spec is None else spec["code"]

    def instance_not_visible(self) -> float | None:
        """Seconds a just-launched instance stays unknown to DescribeInstances (EC2's eventual consistency), or
        None; asked once per launch."""
        spec = self._first_firing("instance_not_visible", lambda s: True)
        return None if spec is None else float(spec["seconds"])

    def never_join(self, az: str) -> bool:
        """Whether an instance that just booted in `az` never registers its node (asked once per instance)."""
        return self._first_firing(
            "never_join", lambda s: s["availability_zone"] in (None, az)) is not None

    def autoscaler_increase(self, nodegroup: str, old_nodes_gone: bool) -> int:
        """How much the simulated cluster autoscaler raises the group's desired capacity now (each fault once)."""
        increase = 0
        with self._lock:
            for fault in self._faults:
                spec = fault.spec
                if spec["type"] != "autoscaler" or spec["nodegroup"] != nodegroup or fault.fired:
                    continue
                if spec["when"] == "old_nodes_gone" and not old_nodes_gone:
                    continue
                if self._fires(fault):
                    increase += spec["increase_by"]
        return increase
