# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.fleet import bake_problem

DOCUMENTATION = r"""
---
name: fleet_bake_problem
short_description: What is wrong with a node group of a fleet's previous ring after the bake
version_added: 0.1.0
description:
  - C(playbooks/upgrade_fleet.yml) (issue 28 item 2) reads the previous ring's node groups with
    M(eksops.nodegroup.nodegroup_info) after C(fleet_bake_seconds), before a ring's first wave. A group is healthy
    when every instance is in service on the target with its node registered, Ready and schedulable.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  _input:
    description:
      - One result of the looped M(eksops.nodegroup.nodegroup_info) task (C(item) - the host); a result without
        C(nodegroup) (the read failed) is a problem, with its C(msg).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Stop when a node group of the previous ring is unhealthy
  ansible.builtin.fail:
    msg: "{{ fleet_bake.results | map('eksops.nodegroup.fleet_bake_problem') | select | join('; ') }}"
  when: fleet_bake.results | map('eksops.nodegroup.fleet_bake_problem') | select | list | length > 0
"""

RETURN = r"""
_value:
  description: The problems, prefixed with the host (C(prod/apps - node ip-10-0-1-1 cordoned)), or an empty string.
  type: str
"""


class FilterModule(object):
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"fleet_bake_problem": bake_problem}
