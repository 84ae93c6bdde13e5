#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: upgrade_error
short_description: Fail a task with one of the collection's error codes, and the parameter it names, as data
version_added: 0.1.0
description:
  - Fails the task as the collection's modules fail, with C(msg), C(code) and, when given, C(parameter) in its
    result. The roles use it for their own refusals and failures instead of C(ansible.builtin.fail), so that
    a C(rescue) reads the code from C(ansible_failed_result.code) rather than from the message.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  code:
    description:
      - The error's code, one of the collection's (plugins/module_utils/errors.py); EKS's codes where one fits
        (C(InvalidParameter), C(NodeCreationFailure), ...).
    type: str
    required: true
    choices:
      - NodeCreationFailure
      - PodEvictionFailure
      - AsgInstanceLaunchFailures
      - InstanceLimitExceeded
      - InsufficientFreeAddresses
      - AccessDenied
      - ClusterUnreachable
      - InvalidParameter
      - ResourceNotFound
      - ClusterAutoscalerActive
      - LoadBalancerDeregistrationTimeout
      - UpgradeTargetConflict
      - LaunchTemplateVersionChanged
      - PreflightBlocked
      - InstanceRefreshInProgress
      - OwnedByInfrastructureAsCode
      - WarmPoolPresent
      - ReplacesInstancesItself
      - TagLimitExceeded
      - MixedInstancesUnsupported
      - AwsUnreachable
      - ApiError
      - WaitTimeout
      - UpgradeInProgress
      - JobStopped
      - OldInstancesLeft
      - UpgradePaused
      - MaintenanceWindowClosed
      - AlarmTriggered
      - NodesQuarantined
      - HealthGateFailed
      - FleetWaveFailed
  msg:
    description:
      - What failed and what to do, without the code (the result carries it beside the message).
    type: str
    required: true
  parameter:
    description:
      - The variable the error is about, as the playbooks name it (C(drain_timeout)), when one is at fault.
    type: str
attributes:
  action:
    support: full
    description: The failure is the action plugin's own, on the controller; no module runs.
  async:
    support: none
    description: Fails at once.
  check_mode:
    support: full
    description: Fails in check mode too.
  diff_mode:
    support: none
    description: Changes nothing.
"""

EXAMPLES = r"""
- name: Refuse a drain timeout shorter than a second
  eksops.nodegroup.upgrade_error:
    code: InvalidParameter
    parameter: drain_timeout
    msg: drain_timeout must be at least 1 second, got {{ drain_timeout }}. Nothing was changed.
  when: drain_timeout | int < 1
"""

RETURN = r"""
code:
  description: The error's code, O(code).
  returned: failure
  type: str
  sample: InvalidParameter
parameter:
  description: The variable the error is about, O(parameter), when given.
  returned: failure
  type: str
  sample: drain_timeout
"""
