# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DOCUMENTATION = r"""
---
name: unset
short_description: Whether a variable was left unset (null, or an empty string)
version_added: 0.1.0
description:
  - True for V(null) and for an empty string, false for anything else (V(0) and V(false) included).
  - The collection's optional variables are null when unset. Before ansible-core 2.19, a template whose value is
    null renders as an empty string, unless it is a bare C({{ name }}) of a variable that holds null. So a playbook's
    C(max_unavailable) handed to a role as C(nodegroup_upgrade_max_unavailable), then on to a phase role as
    C(setup_max_unavailable), arrives as an empty string, which means unset there; this test says so in one place.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  _input:
    description: The value of the variable.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Pass max_unavailable only when it was set
  eksops.nodegroup.asg_surge:
    max_unavailable: "{{ omit if scale_up_max_unavailable is eksops.nodegroup.unset else scale_up_max_unavailable }}"
"""

RETURN = r"""
_value:
  description: Whether the value is null or an empty string.
  type: bool
"""


def unset(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value == "")


class TestModule(object):
    def tests(self) -> dict[str, Callable[[Any], bool]]:
        return {"unset": unset}
