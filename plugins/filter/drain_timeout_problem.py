# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.drain_limits import check_drain_timeout

DOCUMENTATION = r"""
---
name: drain_timeout_problem
short_description: Why the modules would refuse a drain timeout, before any change
version_added: 0.1.0
description:
  - Checks a drain timeout in seconds by the rule the modules apply when they drain (the one definition of a valid
    C(drain_timeout)) and returns why it is refused, or V(null) when it is valid.
  - Role C(eksops.nodegroup.nodegroup_upgrade) refuses with it before its first AWS call, naming the playbook's
    variable (issue 26 item 6).
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  _input:
    description: The drain timeout, in seconds.
    type: int
    required: true
"""

EXAMPLES = r"""
- name: Refuse a drain timeout the modules would refuse
  ansible.builtin.fail:
    msg: "{{ drain_timeout | int | eksops.nodegroup.drain_timeout_problem }}"
  when: drain_timeout | int | eksops.nodegroup.drain_timeout_problem is not none
"""

RETURN = r"""
_value:
  description: Why the drain timeout is refused, or V(null) when it is valid.
  type: str
  sample: drain_timeout must be at least 1 second, got 0
"""


def drain_timeout_problem(seconds: int) -> str | None:
    try:
        check_drain_timeout(int(seconds))
    except UpgradeError as err:
        return err.msg
    return None


class FilterModule(object):
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"drain_timeout_problem": drain_timeout_problem}
