# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""eksops.nodegroup.fleet_targets: every node group's target, read once per region, in the task's process on the
controller rather than a module process (the fleet's plan play, before its first wave: issue 28, docs/performance.md
"The fleet"). The work is module_utils/steps/fleet_targets.py; plugins/modules/fleet_targets.py is its documentation."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import fleet_targets as fleet_targets_step
from ansible_collections.eksops.nodegroup.plugins.plugin_utils.controller_action import StepAction


class ActionModule(StepAction):
    """fleet_targets on the controller (StepAction); AWS only."""

    NAME = "fleet_targets"
    STEP = fleet_targets_step
    USES_K8S = False
