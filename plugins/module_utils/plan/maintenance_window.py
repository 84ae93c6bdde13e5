# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""When work may start (issue 27 item 4): a weekly maintenance window and a run's time budget (pure).

``maintenance_window`` is {days, start, end, time_zone}: the window opens at ``start`` (HH:MM, local time of the IANA
``time_zone``, default UTC) on each of ``days`` (mon..sun, default every day) and closes at ``end``; an ``end`` at or
before ``start`` closes it the next day (22:00-04:00), as Karpenter's disruption budgets' schedules and AKS's
maintenance configurations let a window cross midnight. Local times are read as the zone's clock shows them on that
day, so a window keeps its wall-clock hours across daylight saving changes (a start that the spring change skips
opens at the first instant after it, zoneinfo's fold=0 reading).

Windows back to back are one open span: a window that ends as the next one opens (every day 00:00-00:00; sat and
sun 22:00-22:00, open from Saturday 22:00 to Monday 22:00) or after it (a daylight saving change can make the
next day's window open before this one's wall-clock end) does not close in between, so work may run across the
seam. Windows of every day that end where the next one opens are always open (no close).

``max_duration_seconds`` bounds the run from its start. A piece of work (a batch, a phase) may start only when it
can end before the earlier of the two (``deadline``), given what it is expected to take (``StartVerdict``): the
most its timeouts allow (``batch_bound_seconds``, ``work_bound_seconds``) until the run has seen how long its
batches take.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
import datetime
import re

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.workload_health import any_batch_gated

try:
    import zoneinfo
except ImportError:  # Python < 3.9: no controller Python ansible-core supports, but the sanity tests import it
    zoneinfo = None

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_HH_MM = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
# Far enough to meet the next opening of any window: every window opens at least once a week.
_DAYS_AHEAD = 8
# Where length_seconds reads the wall clock's week.
_A_MONDAY = datetime.date(2024, 1, 1)


class WindowSpecError(ValueError):
    """A maintenance_window that cannot be read; ``field`` names its key."""

    def __init__(self, field: str, msg: str) -> None:
        super().__init__(msg)
        self.field = field


@dataclass(frozen=True)
class MaintenanceWindow:
    """A weekly window: opens on ``days`` (0 = Monday) at ``start``, lasts until ``end`` (the next day when ``end``
    is not after ``start``), in ``zone``."""

    days: tuple[int, ...]
    start: datetime.time
    end: datetime.time
    zone: datetime.tzinfo
    zone_name: str

    def _occurrence(self, day: datetime.date) -> tuple[datetime.datetime, datetime.datetime] | None:
        """(opens, closes) as UTC datetimes of the window that opens on local ``day``, or None (not one of days)."""
        if day.weekday() not in self.days:
            return None
        opens = datetime.datetime.combine(day, self.start, tzinfo=self.zone)
        end_day = day if self.end > self.start else day + datetime.timedelta(days=1)
        closes = datetime.datetime.combine(end_day, self.end, tzinfo=self.zone)
        return opens.astimezone(datetime.timezone.utc), closes.astimezone(datetime.timezone.utc)

    def _span_closes(self, day: datetime.date, closes: datetime.datetime) -> datetime.datetime | None:
        """When the open span of the window that opens on local ``day`` and closes at ``closes`` ends: the windows
        of the following days that open by the time it closes (back to back) extend it. None: it never closes (the
        walk met a week of windows back to back, which repeats every week)."""
        for ahead in range(1, _DAYS_AHEAD):
            following = self._occurrence(day + datetime.timedelta(days=ahead))
            if following is None or following[0] > closes:
                return closes
            closes = max(closes, following[1])
        return None

    def open_at(self, now: datetime.datetime) -> tuple[datetime.datetime, datetime.datetime | None] | None:
        """(opened, closes) of the window open at ``now`` (aware), else None; ``closes`` is the end of its open
        span (windows back to back merged; None: always open). Yesterday's window may still be open (one that
        crosses midnight)."""
        today = now.astimezone(self.zone).date()
        for day in (today - datetime.timedelta(days=1), today):
            occurrence = self._occurrence(day)
            if occurrence is not None and occurrence[0] <= now < occurrence[1]:
                return occurrence[0], self._span_closes(day, occurrence[1])
        return None

    def next_opening(self, now: datetime.datetime) -> datetime.datetime:
        """When the next window opens after ``now`` (UTC)."""
        today = now.astimezone(self.zone).date()
        for ahead in range(_DAYS_AHEAD):
            occurrence = self._occurrence(today + datetime.timedelta(days=ahead))
            if occurrence is not None and occurrence[0] > now:
                return occurrence[0]
        raise AssertionError("a window with days opens within a week")

    def length_seconds(self) -> int | None:
        """How long the window stays open at most, its windows back to back merged, by the clock on the wall (a
        daylight saving change aside: read in a week of UTC); None: always open."""
        wall = replace(self, zone=datetime.timezone.utc)
        longest = 0
        for weekday in self.days:
            day = _A_MONDAY + datetime.timedelta(days=weekday)
            opens, closes = wall._occurrence(day)
            closes = wall._span_closes(day, closes)
            if closes is None:
                return None
            longest = max(longest, int((closes - opens).total_seconds()))
        return longest

    def describe(self) -> str:
        return "%s %s-%s %s" % (",".join(DAYS[d] for d in self.days) if len(self.days) < 7 else "every day",
                                self.start.strftime("%H:%M"), self.end.strftime("%H:%M"), self.zone_name)


def _hh_mm(spec: Mapping[str, Any], field: str) -> datetime.time:
    value = spec.get(field)
    match = _HH_MM.match(str(value or "").strip())
    if match is None:
        raise WindowSpecError(field, "maintenance_window.%s must be a time HH:MM (24-hour), got %r" % (field, value))
    return datetime.time(int(match.group(1)), int(match.group(2)))


def parse_window(spec: Mapping[str, Any]) -> MaintenanceWindow:
    """The window ``spec`` describes; WindowSpecError names the key that is wrong."""
    unknown = sorted(set(spec) - {"days", "start", "end", "time_zone"})
    if unknown:
        raise WindowSpecError(unknown[0], "maintenance_window takes days, start, end and time_zone, got %s"
                              % ", ".join(unknown))
    days = spec.get("days") or list(DAYS)
    if isinstance(days, str):
        days = [days]
    wrong = [d for d in days if str(d).lower()[:3] not in DAYS]
    if wrong:
        raise WindowSpecError("days", "maintenance_window.days must be days of the week (%s), got %s"
                              % (", ".join(DAYS), ", ".join(str(d) for d in wrong)))
    start, end = _hh_mm(spec, "start"), _hh_mm(spec, "end")
    name = spec.get("time_zone") or "UTC"
    try:
        zone = zoneinfo.ZoneInfo(name)
    except Exception:  # pylint: disable=broad-except  # zoneinfo raises ValueError, KeyError or its own error
        raise WindowSpecError("time_zone", "maintenance_window.time_zone must be an IANA time zone such as "
                              "Europe/Paris or UTC, got %r" % name) from None
    return MaintenanceWindow(tuple(sorted({DAYS.index(str(d).lower()[:3]) for d in days})), start, end, zone, name)


# Why work may not start (StartVerdict.stopped_by).
OUTSIDE_WINDOW = "outside_window"
WINDOW_CLOSES = "window_closes"
RUN_BUDGET_ENDS = "max_duration"


@dataclass(frozen=True)
class StartVerdict:
    """Whether work may start now: ``stopped_by`` None when it may, else why (OUTSIDE_WINDOW, WINDOW_CLOSES,
    RUN_BUDGET_ENDS); ``deadline``: when it must end by (the window's close or the run's budget, the earlier; None:
    unbounded or outside the window); ``next_opening``: the next window's opening when the window stops it (none
    when it is max_duration_seconds, which no later window extends)."""

    stopped_by: str | None
    deadline: datetime.datetime | None
    next_opening: datetime.datetime | None = None

    @property
    def allowed(self) -> bool:
        return self.stopped_by is None


def start_verdict(now: datetime.datetime, expected_seconds: float, window: MaintenanceWindow | None,
                  budget_end: datetime.datetime | None) -> StartVerdict:
    """May work expected to take ``expected_seconds`` start at ``now``, inside ``window`` (None: any time) and
    before ``budget_end`` (the run's start plus max_duration_seconds; None: unbounded)?"""
    closes = None
    if window is not None:
        occurrence = window.open_at(now)
        if occurrence is None:
            return StartVerdict(OUTSIDE_WINDOW, None, window.next_opening(now))
        closes = occurrence[1]
    ends = [moment for moment in (closes, budget_end) if moment is not None]
    deadline = min(ends) if ends else None
    if deadline is None or now + datetime.timedelta(seconds=max(0.0, expected_seconds)) <= deadline:
        return StartVerdict(None, deadline)
    if deadline == closes:
        # The next window after this span: those before it closes are back to back with it.
        return StartVerdict(WINDOW_CLOSES, deadline, window.next_opening(closes))
    return StartVerdict(RUN_BUDGET_ENDS, deadline)


def batch_bound_seconds(drain_timeout: int, post_drain_wait: int, termination_timeout: int, launch_timeout: int = 0,
                        gate_seconds: int = 0) -> int:
    """The longest a batch may take before it fails: a surge step's launch first (``launch_timeout``: its new nodes
    Ready), its drain, the post-drain wait, its termination wait, then its soak and health gate (``gate_seconds``,
    issue 27 item 1)."""
    return launch_timeout + drain_timeout + post_drain_wait + termination_timeout + gate_seconds


def gate_bound_seconds(batch_soak_seconds: int, canary: bool, canary_soak_seconds: int, zone_order: bool,
                       health_gate_timeout: int) -> int:
    """The longest soak and health gate a batch may wait out: none when no batch is gated (any_batch_gated: no
    soak, no canary, no zone order), else the longer soak and the gate's timeout."""
    if not any_batch_gated(batch_soak_seconds, canary, zone_order):
        return 0
    return max(batch_soak_seconds, canary_soak_seconds if canary else 0) + health_gate_timeout


# What follows each of the wrapper role's safe points before a phase (work_bound_seconds).
WORK_AFTER = ("start", "scale_up", "scale_down")


def work_bound_seconds(after: str, surge: bool, drain_timeout: int, post_drain_wait: int, node_ready_timeout: int,
                       gate_seconds: int) -> int:
    """The longest the work after the wrapper's safe point ``after`` may take before it reaches the next safe point
    (WORK_AFTER): before the upgrade starts and before the scale-up, the scale-up (none for the surge strategy) and
    the first batch or surge step, so that a run never scales a group up without time for one batch; before the
    scale-down, the drain and termination of a surplus node."""
    if after == "scale_down":
        return drain_timeout + post_drain_wait + node_ready_timeout
    first = batch_bound_seconds(drain_timeout, post_drain_wait, node_ready_timeout,
                                node_ready_timeout if surge else 0, gate_seconds)
    return first if surge else node_ready_timeout + first
