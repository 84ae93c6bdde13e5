# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable, Mapping

DOCUMENTATION = r"""
---
name: phase_ended
short_description: The upgrade's phase times, with the phase that ends now
version_added: 0.1.0
description:
  - Returns the seconds per phase of a node-group upgrade with one more phase, timed from O(started) to O(now)
    and rounded to a tenth of a second.
  - Role C(eksops.nodegroup.nodegroup_upgrade) keeps its phase times with it, at the end of each phase and when
    a phase fails; the report gives them as C(phase_seconds).
author:
  - eksops.nodegroup maintainers (@eksops)
positional: phase, started, now
options:
  _input:
    description: The seconds of the phases that ended before, by phase name.
    type: dict
    required: true
  phase:
    description: The phase that ends.
    type: str
    required: true
  started:
    description: When the phase started, in seconds since the epoch.
    type: float
    required: true
  now:
    description: When the phase ends, in seconds since the epoch.
    type: float
    required: true
"""

EXAMPLES = r"""
- name: Record the time of the phase
  ansible.builtin.set_fact:
    phase_seconds: "{{ phase_seconds | eksops.nodegroup.phase_ended(phase, phase_clock, now().timestamp()) }}"
"""

RETURN = r"""
_value:
  description: The phase times given, and O(phase) with its seconds (replaced if it was there).
  type: dict
  sample: {setup: 3.2, scale_up: 95.7}
"""


def phase_ended(phase_seconds: Mapping[str, float], phase: str, started: float | str, now: float | str) -> dict[str, float]:
    times = dict(phase_seconds)
    times[phase] = round(float(now) - float(started), 1)
    return times


class FilterModule(object):
    def filters(self) -> dict[str, Callable[..., dict[str, float]]]:
        return {"phase_ended": phase_ended}
