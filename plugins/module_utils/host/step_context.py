# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a module's own code needs to run as a step of an action plugin (node_replace, nodegroup_setup): the
module's options checked by its own argument spec, and a StepContext with the EksopsModule surface over the
action's one Clients (issue 11 item 4).

A StepContext gives params (the step module's options, defaults filled by the same argument spec machinery; for
node_replace's steps, which take typed options built once, node_replace's own, read for the run's lease and
accept_current_capacity), check_mode, aws(), k8s(), core_v1(), warn, log and with_diff; fail_upgrade raises
StepFailed instead of exiting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clients import Clients
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import ClientsSurface, error_result, merged_argument_spec
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import StepFailed

SHARED_OPTIONS = tuple(merged_argument_spec({}, uses_aws=True, uses_k8s=True))


def validated(spec: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` through the step module's own argument spec (defaults, aliases, types), as its module would."""
    result = ArgumentSpecValidator(merged_argument_spec(spec, uses_aws=True, uses_k8s=True)).validate(dict(params))
    if result.error_messages:
        raise ValueError("; ".join(result.error_messages))
    return result.validated_parameters


def group_options(params: Mapping[str, Any], lease: bool = True) -> dict[str, Any]:
    """The AWS and Kubernetes options and those naming the node group (and the lease), for a step's params."""
    options = dict((name, params[name]) for name in SHARED_OPTIONS if params.get(name) is not None)
    options.update(cluster_name=params["cluster_name"], nodegroup_name=params["nodegroup_name"],
                   asg_name=params["asg_name"])
    if lease:
        options["lease_id"] = params["lease_id"]
    return options


class StepContext(ClientsSurface):
    """The EksopsModule surface the steps (drain_step, terminate_step, preflight_step, launch_template_step,
    nodegroup_describe, surge_step, restore_step) use, for one step's ``params``."""

    def __init__(self, params: Mapping[str, Any], clients: Clients, check_mode: bool, diff: bool,
                 warn: Callable[[str], None], log: Callable[[str], None],
                 progress: Callable[[str], None] | None = None) -> None:
        self.params = params
        self.clients = clients
        self.check_mode = check_mode
        self._diff = diff
        self.warn = warn
        self.log = log
        # Lines a person follows as they come (an action's job output); None when nobody reads them (a module).
        self.progress = progress
        self.lease_heartbeats = clients.lease_heartbeats

    def with_params(self, params: Mapping[str, Any]) -> StepContext:
        """The context of another step of the same work: its own ``params``, the same clients, modes and output."""
        return StepContext(params, self.clients, self.check_mode, self._diff, self.warn, self.log, self.progress)

    def fail_upgrade(self, err: UpgradeError, **result: Any) -> None:
        raise StepFailed(err, result)


def run_step(step: Callable[[StepContext], dict[str, Any]], params: Mapping[str, Any], clients: Clients,
             check_mode: bool, diff: bool, log: Callable[[str], None],
             progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """A module's work, ``step(context)``, with a StepContext over ``clients``, as EksopsModule.run runs it in the
    module's process: the result it returns, or after an UpgradeError what the step had done, failed, with the
    error's msg, code and details (error_result); the warnings under ``warnings``. The run's lease heartbeats stop
    with it."""
    warnings = []
    try:
        result = step(StepContext(params, clients, check_mode, diff, warnings.append, log, progress))
    except StepFailed as failure:
        result = dict(failure.result, failed=True)
        result.update(error_result(failure.error))
    except UpgradeError as err:
        result = dict(changed=False, failed=True)
        result.update(error_result(err))
    finally:
        clients.stop_lease_heartbeats()
    if warnings:
        result["warnings"] = warnings
    return result
