#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: upgrade_gate
short_description: Check an upgrade's safe point - alarms, a pause request, the maintenance window
version_added: 0.1.0
description:
  - Read-only. Checks, once, what an upgrade checks at each of its safe points (issue 27), so that a playbook can
    check them between two phases as M(eksops.nodegroup.node_replace) checks them before each batch.
  - Fails with C(AlarmTriggered) while a CloudWatch alarm of O(alarm_names) is in C(ALARM); with C(UpgradePaused)
    when someone asked the run to pause (tag C(eksops.nodegroup/pause) on a self-managed group's Auto Scaling
    group, playbooks/pause_upgrade.yml); with C(MaintenanceWindowClosed) when work expected to take
    O(expected_seconds) could not end inside O(maintenance_window) or O(max_duration_seconds), saying when the next
    window opens. C(UpgradePaused) and C(MaintenanceWindowClosed) set C(stopped=true) in the result - the run
    stopped as asked or as its time ran out - and the wrapper role ends such a run without failing the job.
  - An EKS managed node group's Auto Scaling group is EKS's (SPEC K3) and carries no pause request; EKS offers no
    pause of its update.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  where:
    description:
      - The safe point, for the messages (C(before phase scale_up)).
    type: str
    required: true
  expected_seconds:
    description:
      - How long the work after this safe point could take; it may start only when it can end inside the window
        and the run's time budget.
    type: int
    default: 0
  check_pause:
    description:
      - Whether to read the group's pause request. The upgrade role checks the safe point before its setup phase
        without it, because a new run of the upgrade playbook resumes a paused upgrade.
    type: bool
    default: true
extends_documentation_fragment:
  - eksops.nodegroup.nodegroup
  - eksops.nodegroup.safe_points
  - eksops.nodegroup.aws
  - eksops.nodegroup.aws.validate_certs
  - eksops.nodegroup.attributes.aws_group
  - eksops.nodegroup.attributes.read_only
notes:
  - Needs C(autoscaling:DescribeAutoScalingGroups), C(eks:DescribeNodegroup) to find the group, and
    C(cloudwatch:DescribeAlarms) when O(alarm_names) is set.
seealso:
  - module: eksops.nodegroup.node_replace
"""

EXAMPLES = r"""
- name: Stop before the scale-down when an alarm fires or the window closes
  eksops.nodegroup.upgrade_gate:
    cluster_name: prod
    nodegroup_name: workers
    where: before phase scale_down
    expected_seconds: 1200
    alarm_names: [api-5xx-rate]
    maintenance_window:
      days: [sat, sun]
      start: "22:00"
      end: "04:00"
      time_zone: Europe/Paris
"""

RETURN = r"""
gate:
  description: The safe point, checked.
  returned: success
  type: dict
  contains:
    where:
      description: O(where).
      type: str
    checked_at:
      description: When it was checked (ISO 8601 UTC).
      type: str
    deadline:
      description: When the work after it must end by - the window's close or the run's budget, the earlier; null
        when neither bounds it.
      type: str
    alarms:
      description: The alarms checked (none in C(ALARM)).
      type: list
      elements: str
"""

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.upgrade_gate import ARGUMENT_SPEC, run


def main() -> None:
    module = EksopsModule(ARGUMENT_SPEC, uses_aws=True, supports_check_mode=True)
    module.run(lambda: run(module))


if __name__ == "__main__":
    main()
