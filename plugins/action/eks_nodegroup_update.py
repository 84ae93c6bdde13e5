# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""eksops.nodegroup.eks_nodegroup_update: start or follow EKS's own update of a managed node group in the task's
process on the controller, printing its progress as it goes, for as long as EKS works (issue 29 item 3, SPEC W4:
following it from a task file that included itself per poll died of RecursionError after about 200 polls), and naming
the pods that kept EKS from draining a node (from the cluster, proven to be cluster_name's, SPEC K4). The work
is module_utils/steps/eks_nodegroup_update.py; plugins/modules/eks_nodegroup_update.py is its documentation and main."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import eks_nodegroup_update as managed_update_step
from ansible_collections.eksops.nodegroup.plugins.plugin_utils.controller_action import StepAction


class ActionModule(StepAction):
    """eks_nodegroup_update on the controller (StepAction), its progress lines shown as they come."""

    NAME = "eks_nodegroup_update"
    STEP = managed_update_step
    PROGRESS = True
