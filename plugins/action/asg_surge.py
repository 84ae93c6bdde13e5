# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""eksops.nodegroup.asg_surge: raise the Auto Scaling group's sizes and wait for the new nodes (the scale-up phase,
the launches of a surge step), in the task's process on the controller rather than a module process (issue 11 item
4; docs/architecture.md says why). The work is module_utils/steps/asg_surge.py; plugins/modules/asg_surge.py is its
documentation."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import asg_surge as surge_step
from ansible_collections.eksops.nodegroup.plugins.plugin_utils.controller_action import StepAction


class ActionModule(StepAction):
    """asg_surge on the controller (StepAction)."""

    NAME = "asg_surge"
    STEP = surge_step
