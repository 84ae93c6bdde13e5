# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.maintenance_window import (
    WORK_AFTER,
    gate_bound_seconds,
    work_bound_seconds,
)

DOCUMENTATION = r"""
---
name: work_bound
short_description: The longest the work after one of the upgrade's safe points may take
version_added: 0.1.0
description:
  - Role C(eksops.nodegroup.nodegroup_upgrade) checks, before the upgrade starts and before each phase, that the
    work that follows can end inside the maintenance window and the run's time budget (issue 27 item 4). This
    filter says how long that work may take at most, from the run's timeouts, by the rule node_replace applies to
    each batch (module_utils/plan/maintenance_window.py).
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  _input:
    description:
      - The run's settings - C(strategy) (C(surge) or another), C(drain_timeout), C(post_drain_wait),
        C(node_ready_timeout), C(batch_soak_seconds), C(canary), C(canary_soak_seconds), C(batch_order),
        C(health_gate_timeout).
    type: dict
    required: true
  after:
    description:
      - The safe point - C(start) (before the upgrade starts), C(scale_up) or C(scale_down) (before the phase). The
        first two count the scale-up and the first batch or surge step; C(scale_down) a surplus node's drain and
        termination.
    type: str
    required: true
    choices: [start, scale_up, scale_down]
"""

EXAMPLES = r"""
- name: Check the safe point before the scale-up
  eksops.nodegroup.upgrade_gate:
    cluster_name: prod
    nodegroup_name: workers
    where: before phase scale_up
    expected_seconds: "{{ run_settings | eksops.nodegroup.work_bound('scale_up') }}"
    max_duration_seconds: 14400
"""

RETURN = r"""
_value:
  description: Seconds.
  type: int
  sample: 2700
"""


def work_bound(work: Mapping[str, Any], after: str) -> int:
    if after not in WORK_AFTER:
        raise ValueError("work_bound: after must be one of %s, got %r" % (", ".join(WORK_AFTER), after))
    gate = gate_bound_seconds(int(work["batch_soak_seconds"]), boolean(work["canary"], strict=False), int(work["canary_soak_seconds"]),
                              work["batch_order"] == "zone", int(work["health_gate_timeout"]))
    return work_bound_seconds(after, work["strategy"] == "surge", int(work["drain_timeout"]),
                              int(work["post_drain_wait"]), int(work["node_ready_timeout"]), gate)


class FilterModule(object):
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"work_bound": work_bound}
