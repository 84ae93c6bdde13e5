# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""eksops.nodegroup.nodegroup_scale_restore: remove the surplus nodes and restore the group (the scale-down phase),
in the task's process on the controller rather than a module process (issue 11 item 4; docs/architecture.md says
why). The work is module_utils/steps/nodegroup_scale_restore.py; plugins/modules/nodegroup_scale_restore.py is its documentation."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import nodegroup_scale_restore as restore_step
from ansible_collections.eksops.nodegroup.plugins.plugin_utils.controller_action import StepAction


class ActionModule(StepAction):
    """nodegroup_scale_restore on the controller (StepAction)."""

    NAME = "nodegroup_scale_restore"
    STEP = restore_step
