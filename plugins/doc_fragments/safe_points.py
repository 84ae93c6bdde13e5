# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    # What a run checks at its safe points (module_utils/gates/safe_points.py GATE_ARGUMENT_SPEC, issue 27).
    DOCUMENTATION = r"""
options:
  alarm_names:
    description:
      - CloudWatch alarms (metric or composite) watched at each safe point; while any is in C(ALARM) the run stops
        there with C(AlarmTriggered), naming them and their state reason. A name CloudWatch does not know in the
        region is refused before any change.
    type: list
    elements: str
    default: []
  maintenance_window:
    description:
      - When work may run, weekly. Keys C(days) (C(mon) to C(sun); default every day), C(start) and C(end) (C(HH:MM),
        24-hour; an C(end) at or before C(start) closes the window the next day) and C(time_zone) (IANA, default
        C(UTC)). Work that could not end before the window closes does not start, and the run stops with
        C(MaintenanceWindowClosed), saying when the next window opens. Windows back to back (C(end) equal to
        C(start) on consecutive days) are one, closing when the last of them does; every day, they never close.
    type: dict
  max_duration_seconds:
    description:
      - The run's time budget from O(run_started_at); work that could not end within it does not start
        (C(MaintenanceWindowClosed)).
    type: int
  run_started_at:
    description:
      - When the run started (ISO 8601 UTC, C(2026-11-29T02:00:00Z)), from which O(max_duration_seconds) counts.
        Defaults to when the module started.
    type: str
"""
