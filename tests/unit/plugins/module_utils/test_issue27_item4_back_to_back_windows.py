# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 4, back-to-back maintenance windows: a window that ends as the next one opens (start == end on
consecutive days; or, across a daylight saving change, after it) does not close in between, and one that does so
every day never closes. Before, a batch crossing the seam stopped with "the maintenance window closes", and a
window 00:00-00:00 every day was refused as too short for a batch longer than 24 hours."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.gates.safe_points import SafePoints
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import maintenance_window as windows

from .test_issue27_safe_points import at

# 2026-11-28 is a Saturday: Saturday's and Sunday's windows, a day each, from Saturday 22:00 to Monday 22:00.
WEEKEND = dict(days=["sat", "sun"], start="22:00", end="22:00")


def test_issue27_item4_back_to_back_windows_let_a_batch_cross_their_seam():
    gates = SafePoints([], windows.parse_window(WEEKEND), None, now=lambda: at("2026-11-29 21:30"))
    assert gates.check_time("before batch 2", 3600) == at("2026-11-30 22:00")


def test_issue27_item4_back_to_back_windows_close_at_the_end_of_their_span_and_the_next_opening_follows_it():
    verdict = windows.start_verdict(at("2026-11-30 21:30"), 3600, windows.parse_window(WEEKEND), None)
    # The next opening is not Sunday 22:00, inside the span that just closed, but the next Saturday's.
    assert verdict == windows.StartVerdict(windows.WINDOW_CLOSES, at("2026-11-30 22:00"), at("2026-12-05 22:00"))


def test_issue27_item4_back_to_back_windows_every_day_are_always_open():
    window = windows.parse_window(dict(start="00:00", end="00:00"))
    assert window.open_at(at("2026-11-28 23:30")) == (at("2026-11-28 00:00"), None)
    assert window.length_seconds() is None
    gates = SafePoints([], window, None, now=lambda: at("2026-11-28 23:30"))
    assert gates.check_time("before batch 2", 30 * 3600) is None
    budgeted = SafePoints.from_params(dict(maintenance_window=dict(start="00:00", end="00:00"),
                                           max_duration_seconds=7200, run_started_at="2026-11-28T23:00:00Z"),
                                      now=lambda: at("2026-11-28 23:30"))
    assert budgeted.check_time("before batch 2", 5400) == at("2026-11-29 01:00")


def test_issue27_item4_back_to_back_windows_give_the_room_of_their_span():
    """check_room: a window is too short only when its whole span is (48 hours here, not a day)."""
    assert windows.parse_window(WEEKEND).length_seconds() == 48 * 3600
    gates = SafePoints.from_params(dict(maintenance_window=WEEKEND), now=lambda: at("2026-11-28 22:00"))
    assert gates.check_time("before the upgrade starts", 30 * 3600) == at("2026-11-30 22:00")
    with pytest.raises(UpgradeError) as refused:
        gates.check_time("before the upgrade starts", 49 * 3600)
    assert refused.value.details["parameter"] == "maintenance_window" and "leaves 172800 s" in refused.value.msg


@pytest.mark.parametrize("now, opened, closes", [
    # Europe/Paris leaves summer time on Sunday 2026-10-25: Saturday 02:00 is 00:00 UTC, Sunday 02:00 (the first,
    # summer time) 00:00 UTC, Monday 02:00 01:00 UTC.
    ("2026-10-24 23:30", "2026-10-24 00:00", "2026-10-26 01:00"),
    # It enters summer time on Sunday 2026-03-29: Saturday 02:00 is 01:00 UTC, Sunday's 02:00 (skipped) read as
    # winter time 01:00 UTC, Monday 02:00 00:00 UTC.
    ("2026-03-28 23:30", "2026-03-28 01:00", "2026-03-30 00:00"),
])
def test_issue27_item4_back_to_back_windows_across_a_daylight_saving_change(now, opened, closes):
    window = windows.parse_window(dict(days=["sat", "sun"], start="02:00", end="02:00", time_zone="Europe/Paris"))
    assert window.open_at(at(now)) == (at(opened), at(closes))


def test_issue27_item4_back_to_back_windows_a_daylight_saving_change_makes_the_next_window_open_first():
    """03:00 to 02:30 the next day: on 2026-03-29 Saturday's window ends at 02:30 winter time (01:30 UTC, the hour
    is skipped) after Sunday's opened at 03:00 summer time (01:00 UTC): one span until Monday 02:30 (00:30 UTC). On
    2026-10-25 the hour repeated leaves a gap: Saturday's closes at 02:30 summer time (00:30 UTC), Sunday's opens at
    03:00 winter time (02:00 UTC)."""
    window = windows.parse_window(dict(days=["sat", "sun"], start="03:00", end="02:30", time_zone="Europe/Paris"))
    assert window.open_at(at("2026-03-29 01:15")) == (at("2026-03-28 02:00"), at("2026-03-30 00:30"))
    assert window.open_at(at("2026-10-25 00:15")) == (at("2026-10-24 01:00"), at("2026-10-25 00:30"))
    assert window.open_at(at("2026-10-25 01:15")) is None
