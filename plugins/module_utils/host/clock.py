# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one clock (issue 26 item 5): monotonic time for waits and deadlines, wall-clock time for what a person or the
journal reads, and sleeping. Everything that waits takes a Clock (default SYSTEM_CLOCK, looked up when it is used,
so a test replaces it in one place); the unit tests' FakeClock (tests/unit/plugins/fakes.py) is its fake.

The wall-clock forms are UTC: ``utc_now`` (an aware datetime), ``utc_now_iso``/``parse_utc_iso`` (the journal's
started_at, a lease's expiry, an instance's launch_time: ISO 8601 to the second, Z suffix) and ``clock_time`` (a
progress line's HH:MM:SSZ).
"""

from __future__ import annotations

import datetime
import time

ISO_LAYOUT = "%Y-%m-%dT%H:%M:%SZ"


class Clock:
    """``now()``: monotonic seconds, for deadlines and intervals; ``time()``: wall-clock seconds since the epoch;
    ``sleep(seconds)`` (nothing for none or less)."""

    def now(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


SYSTEM_CLOCK = Clock()


def utc_now() -> datetime.datetime:
    """Now, as an aware UTC datetime."""
    return datetime.datetime.now(datetime.timezone.utc)


def utc_now_iso(moment: datetime.datetime | None = None) -> str:
    """``moment`` (default now) as an ISO 8601 UTC timestamp with a Z suffix, to the second."""
    moment = moment or utc_now()
    return moment.astimezone(datetime.timezone.utc).strftime(ISO_LAYOUT)


def parse_utc_iso(value: str | None) -> datetime.datetime | None:
    """A timestamp as utc_now_iso writes it as an aware datetime, or None when there is none or it is not one."""
    if not value:
        return None
    try:
        return datetime.datetime.strptime(value, ISO_LAYOUT).replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None


def clock_time(epoch: float) -> str:
    """Wall-clock time of a progress line, UTC, to the second."""
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%H:%M:%SZ")
