# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""eksops.nodegroup.fleet_ring_health: the fleet's judgement of a ring after its bake, in the task's process on the
controller rather than a module process per node group and cluster (issue 28 item 2; docs/architecture.md says
why). The work is module_utils/phases/fleet_ring_health.py; plugins/modules/fleet_ring_health.py is its
documentation."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.module_utils.phases import fleet_ring_health
from ansible_collections.eksops.nodegroup.plugins.plugin_utils.controller_action import StepAction


class ActionModule(StepAction):
    """fleet_ring_health on the controller (StepAction)."""

    NAME = "fleet_ring_health"
    STEP = fleet_ring_health
