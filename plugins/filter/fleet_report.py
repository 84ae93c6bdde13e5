# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.fleet_report import fleet_report as report_fleet

DOCUMENTATION = r"""
---
name: fleet_report
short_description: The report of a fleet upgrade - one row per node group
version_added: 0.1.0
description:
  - C(playbooks/upgrade_fleet.yml) (issue 28 item 2) ends with this report, written as JSON and given to AWX with
    C(set_stats). Each row is one node group of the plan, from the report role C(eksops.nodegroup.nodegroup_upgrade)
    made of its run (docs/report.md), or C(not_started) when its wave never ran.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  _input:
    description:
      - The fleet's plan (filter C(eksops.nodegroup.fleet_plan)).
    type: dict
    required: true
  hostvars:
    description:
      - C(hostvars); a host's C(nodegroup_upgrade_report) and C(nodegroup_upgrade_report_file) (the files its run
        wrote - the JSON report and its timeline picture) are read, when its run set them, and
        C(fleet_upgrade_error) (C({code, msg})), what the playbook recorded of a run that failed before its report.
    type: dict
    required: true
  ran:
    description:
      - The current wave's number - the waves up to it have ended (those before it only, with O(bake_halt)).
    type: int
    required: true
  max_fail_percentage:
    description:
      - C(fleet_max_fail_percentage), to judge whether a wave's failures stop the later waves.
    type: int
    required: true
  inventory_hosts:
    description:
      - Every host of the inventory (C(groups.all)); those that are node groups (with C(cluster_name) and
        C(nodegroup_name)) and not in the plan get a row C(left_out).
    type: list
    elements: str
    default: []
  bake_halt:
    description:
      - Why the bake before wave O(ran) + 1 stops the fleet - C({wave, ring, code, reason}) - or null.
    type: dict
  dry_run:
    description:
      - A dry run (check mode), whose waves ran in one batch - every wave counts as run, none halts the others.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Build the fleet's report
  ansible.builtin.set_fact:
    fleet_report: "{{ fleet_plan | eksops.nodegroup.fleet_report(hostvars, fleet_step.wave, 0, groups.all) }}"
  run_once: true
"""

RETURN = r"""
_value:
  description:
    - C(status) - C(running) (waves left), C(succeeded) (every node group did), C(partial) (every node group of the
      play did, and node groups of the inventory were left out), C(planned) (a dry run, C(--check)), C(halted)
      (the fleet stopped before its last wave) or C(failed) (the last wave failed, or failures within
      C(fleet_max_fail_percentage)); C(halt) - null, or why the fleet stops, C({wave, ring, code, reason});
      C(halted_at) - null, or the halt's C(wave), C(ring) and C(failed) hosts; C(waves) - each wave that ran,
      C({wave, ring, size, failed, stops}); C(max_fail_percentage); C(counts) - rows by status; C(rows) - one per
      node group in the plan's order, then the C(left_out) ones, each C(host), C(ring), C(wave),
      C(cluster_name), C(nodegroup_name), C(status), C(started_at), C(finished_at), C(total_seconds),
      C(phase_seconds), C(pods_evicted), C(error_code), C(error), C(report_path) and C(timeline_path).
  type: dict
"""


def fleet_report(plan: Mapping[str, Any], hostvars: Mapping[str, Any], ran: Any, max_fail_percentage: Any,
                 inventory_hosts: Sequence[str] = (), bake_halt: Mapping[str, Any] | None = None,
                 dry_run: bool = False) -> dict[str, Any]:
    reports = {}
    paths = {}
    for name in plan["hosts"]:
        variables = hostvars[name]
        # A run that failed before the role built its report (an input refused) is failed all the same.
        failed = variables.get("fleet_upgrade_error")
        reports[name] = variables.get("nodegroup_upgrade_report") or (
            dict(status="failed", error=failed) if failed else None)
        written = (variables.get("nodegroup_upgrade_report_file") or {}).get("report_file") or {}
        paths[name] = dict(report_path=written.get("path"), timeline_path=(written.get("timeline") or {}).get("path"))
    left_out = dict((name, dict(cluster_name=hostvars[name].get("cluster_name"),
                                nodegroup_name=hostvars[name].get("nodegroup_name")))
                    for name in inventory_hosts if name not in reports
                    and hostvars[name].get("cluster_name") and hostvars[name].get("nodegroup_name"))
    return report_fleet(plan, reports, paths, int(ran), int(max_fail_percentage), left_out, bake_halt, bool(dry_run))


class FilterModule(object):
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"fleet_report": fleet_report}
