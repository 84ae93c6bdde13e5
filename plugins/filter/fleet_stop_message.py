# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.fleet_report import stop_message

DOCUMENTATION = r"""
---
name: fleet_stop_message
short_description: Why a fleet's node group fails its host, and whether the later waves start
version_added: 0.1.0
description:
  - C(playbooks/upgrade_fleet.yml) (issue 28 item 2) fails the host of a node group that did not end on target with
    C(FleetWaveFailed) and this message - what the node group ended as, how many of its wave did not end on target,
    and whether that is more than C(fleet_max_fail_percentage), so that Ansible starts no later wave.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  _input:
    description:
      - The fleet's report (filter C(eksops.nodegroup.fleet_report)).
    type: dict
    required: true
  host:
    description:
      - The node group's host.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Stop the fleet when the node group did not end on target
  ansible.builtin.fail:
    msg: "{{ fleet_report | eksops.nodegroup.fleet_stop_message(inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: The message.
  type: str
"""


class FilterModule(object):
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"fleet_stop_message": stop_message}
