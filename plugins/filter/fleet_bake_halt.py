# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.fleet_bake_verdict import bake_halt

DOCUMENTATION = r"""
---
name: fleet_bake_halt
short_description: Whether the bake before a fleet's ring stops the fleet, and why
version_added: 0.1.0
description:
  - C(playbooks/upgrade_fleet.yml) (issue 28 item 2) reads the previous ring's node groups and judges their
    clusters' workloads with M(eksops.nodegroup.fleet_ring_health) after C(fleet_bake_seconds), before a ring's
    first wave. A node group is healthy when every instance is in service
    on the fleet's target with its node registered, Ready and schedulable.
  - The halt's code is C(HealthGateFailed) when something was judged unhealthy, else that of the first read that
    failed (C(AccessDenied), C(ClusterUnreachable), ...).
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  _input:
    description:
      - The result of the M(eksops.nodegroup.fleet_ring_health) task. A node group without C(nodegroup) (its read
        failed), a cluster without C(health), or a result without C(ring) (the task failed) is a problem, with its
        C(msg) and C(code).
    type: dict
    required: true
  step:
    description:
      - The wave's step of the plan (C(wave), C(ring), C(bake_ring)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Decide whether the bake stops the fleet
  ansible.builtin.set_fact:
    fleet_bake_halt: "{{ fleet_ring | eksops.nodegroup.fleet_bake_halt(fleet_step) }}"
  run_once: true
"""

RETURN = r"""
_value:
  description:
    - Null when the previous ring is healthy, else C({wave, ring, code, reason}), the reason naming each problem
      prefixed with its host or cluster (C(prod/apps - node ip-10-0-1-1 cordoned)).
  type: dict
"""


class FilterModule(object):
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"fleet_bake_halt": bake_halt}
