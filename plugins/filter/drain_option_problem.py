# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import DrainOptions
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError

DOCUMENTATION = r"""
---
name: drain_option_problem
short_description: What the drain engine refuses in drain options, before any change
version_added: 0.1.0
description:
  - Checks drain options, named as the drain engine names them (C(drain_timeout), C(post_drain_wait),
    C(eviction_concurrency), ...), by the rule the modules apply when they drain (the one definition of a valid
    value), and returns the first refused option with the engine's message, or V(null) when all are valid.
  - Role C(eksops.nodegroup.nodegroup_upgrade) refuses with it before its first AWS call, naming the playbook's
    variable (issue 26 item 6).
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  _input:
    description: The drain options to check, by their drain engine names.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Refuse a drain timeout the drain engine would refuse
  ansible.builtin.fail:
    msg: "{{ drain_problem.message }}"
  vars:
    drain_problem: "{{ {'drain_timeout': drain_timeout | int} | eksops.nodegroup.drain_option_problem }}"
  when: drain_problem is not none
"""

RETURN = r"""
_value:
  description: The first refused option (C(parameter)) and why (C(message)), or V(null) when every option is valid.
  type: dict
  sample: {parameter: drain_timeout, message: drain_timeout must be at least 1 second, got 0}
"""


def drain_option_problem(options: Mapping[str, Any]) -> dict[str, str] | None:
    try:
        DrainOptions(**dict(options))
    except UpgradeError as err:
        return dict(parameter=err.details.get("parameter"), message=err.msg)
    return None


class FilterModule(object):
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"drain_option_problem": drain_option_problem}
