# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter request_rate_problem: the modules' own rule for aws_requests_per_second and k8s_requests_per_second
(module_utils/host/request_budget.py, requests_per_second), for the fleet playbook's checks before any change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.request_budget import requests_per_second

DOCUMENTATION = r"""
---
name: request_rate_problem
short_description: Why the modules would refuse a request budget's rate, before any change
version_added: 0.1.0
description:
  - Checks a rate of requests per second by the rule every module applies to O(parameter) (the one definition of a
    valid rate - a number >= 0, 0 for no bound, as C(1e2) or C(0.5) too) and returns why it is refused, or V(null)
    when it is valid.
  - C(playbooks/upgrade_fleet.yml) refuses with it before its first AWS call, naming the variable (issue 28 item 4).
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  _input:
    description: The rate given.
    type: raw
    required: true
  parameter:
    description: Whose rate it is.
    type: str
    choices: [aws_requests_per_second, k8s_requests_per_second]
    required: true
"""

EXAMPLES = r"""
- name: Refuse a rate the modules would refuse
  ansible.builtin.fail:
    msg: "{{ aws_requests_per_second | eksops.nodegroup.request_rate_problem('aws_requests_per_second') }}"
  when: aws_requests_per_second | eksops.nodegroup.request_rate_problem('aws_requests_per_second') is not none
"""

RETURN = r"""
_value:
  description: Why the rate is refused, or V(null) when it is valid.
  type: str
  sample: "aws_requests_per_second must be a number of requests per second >= 0 (0: no bound), got 'fast'"
"""


def request_rate_problem(rate: Any, parameter: str) -> str | None:
    try:
        requests_per_second(parameter, rate)
    except UpgradeError as err:
        return err.msg
    return None


class FilterModule(object):
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"request_rate_problem": request_rate_problem}
