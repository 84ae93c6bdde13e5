# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""eksops.nodegroup.nodegroup_setup: the setup phase (discovery, preflight, launch template version) in one process
on the controller (issue 11 item 4; docs/architecture.md says why).

The work is nodegroup_info's, nodegroup_preflight's and launch_template_version's own code, in order, by
module_utils/phases/setup.py; this file only validates the options, shows what was found through Display
(ansible-playbook's output and AWX's job output) and builds the task result as the modules build theirs.
"""

from __future__ import annotations

from ansible.utils.display import Display

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.setup import (
    ARGUMENT_SPEC,
    TARGET_OPTIONS,
    SetupPhase,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import run_step
from ansible_collections.eksops.nodegroup.plugins.plugin_utils.controller_action import ControllerAction

display = Display()


class ActionModule(ControllerAction):
    """The setup phase on the controller (ControllerAction)."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        params = self.validated_params(
            merged_argument_spec(ARGUMENT_SPEC, uses_aws=True, uses_k8s=True),
            mutually_exclusive=[["max_unavailable", "max_unavailable_percentage"], TARGET_OPTIONS])
        clients = self.clients(params, "nodegroup_setup")
        result.update(self.while_job_lives(clients, lambda: run_step(
            lambda context: SetupPhase(context, display.display).run(), params, clients,
            bool(self._task.check_mode), bool(self._task.diff), lambda line: None)))
        return clients.with_resource_actions(result)
