#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: upgrade_report_file
short_description: Write an upgrade report as JSON, and its picture, to files of the controller
version_added: 0.1.0
description:
  - Writes O(report) (the dict the C(eksops.nodegroup.upgrade_report) filter builds) to O(path) as indented JSON
    with sorted keys, as C(ansible.builtin.to_nice_json) formats it, through a file beside it renamed over it, so
    that a reader never sees half a report.
  - C(playbooks/upgrade_fleet.yml) writes the fleet's report (the C(eksops.nodegroup.fleet_report) filter's) and the
    targets it resolved (C(fleet-targets.json)) with it, with O(timeline) off.
  - Changes nothing when the file already holds that report with that mode.
  - "It runs on the controller, in the process of the task, whatever the task's host or C(delegate_to): the report
    is the controller's own file. C(ansible.builtin.copy) would run two module processes for it."
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  report:
    description:
      - The report.
    type: dict
    required: true
  path:
    description:
      - The file to write; its directory must exist.
    type: path
    required: true
  mode:
    description:
      - The files' permissions, an octal number such as C('0644').
    type: raw
    default: "0644"
  timeline:
    description:
      - Also write the picture of the upgrade beside the report, a self-contained SVG file that a browser opens -
        O(path) with the extension C(.svg) (C(upgrade-report.json) gives C(upgrade-report.svg)).
      - It draws the report's C(timeline) and C(batches) - the phases over time, then a lane per Availability Zone
        with its old and new nodes over time and, per node replaced, its cordon, drain (and PodDisruptionBudget
        wait), termination and the pods it moved. docs/report.md describes them.
    type: bool
    default: true
attributes:
  action:
    support: full
    description: Runs in an action plugin on the controller.
  async:
    support: none
    description: Runs in the task's own process on the controller.
  check_mode:
    support: full
    description: Reports whether the file would change, and writes nothing.
  diff_mode:
    support: full
    description: The file's content before and after.
"""

EXAMPLES = r"""
- name: Write the JSON report
  eksops.nodegroup.upgrade_report_file:
    report: "{{ nodegroup_upgrade_report }}"
    path: /var/log/eksops/upgrade-report.json
"""

RETURN = r"""
report_file:
  description: The file written (or that would be, in check mode).
  returned: success
  type: dict
  contains:
    path:
      description: The file's path.
      returned: success
      type: str
      sample: /var/log/eksops/upgrade-report.json
    size:
      description: The report's size in bytes.
      returned: success
      type: int
      sample: 4096
    timeline:
      description: The picture written beside the report (O(timeline)), its C(path) and C(size); null without it.
      returned: success
      type: dict
      sample: {path: /var/log/eksops/upgrade-report.svg, size: 20480}
"""
