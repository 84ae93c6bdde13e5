# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""eksops.nodegroup.upgrade_error: fail the task with an UpgradeError, its code and the parameter it names as data.

The roles' own refusals and failures (a check of a variable's value, a managed node group's missing surge
parameters, old instances left, EKS's update followed too long) fail as the modules do (module.error_result): the
role's failure handling and the report read ``code`` and ``parameter`` from the task's result rather than from the
message (issue 26 item 3). plugins/modules/upgrade_error.py is its documentation.
"""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import CODES, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import error_result
from ansible_collections.eksops.nodegroup.plugins.plugin_utils.controller_action import ControllerAction

ARGUMENT_SPEC = dict(
    code=dict(type="str", required=True, choices=list(CODES)),
    msg=dict(type="str", required=True),
    parameter=dict(type="str"),
)


class ActionModule(ControllerAction):
    """Fails, on the controller, with ``code``, ``msg`` and ``parameter`` (when given)."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        validation, _args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        params = validation.validated_parameters
        details = {} if params["parameter"] is None else dict(parameter=params["parameter"])
        result.update(changed=False, failed=True, **error_result(UpgradeError(params["code"], params["msg"], **details)))
        return result
