# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bases of the action plugins that do modules' work on the controller, in the task's own process (node_replace,
nodegroup_setup, asg_surge, nodegroup_scale_restore, eks_nodegroup_update; the fleet's fleet_accounts, fleet_targets
and fleet_ring_health; issue 11 item 4, docs/architecture.md says why)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.eksops.nodegroup.plugins.module_utils.host import job_guard
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import HAS_BOTO3, USER_AGENT_EXTRA, warm_service_models
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clients import Clients
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.cluster_proof import prove_cluster
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import kubernetes_import_error
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import release_held
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import error_result, merged_argument_spec
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import run_step

display = Display()

# ansible-playbook's main process imports an action plugin once (its strategy loads the class), then forks a
# worker per task: the service models parsed here are parsed once per run, not once per task (about 0.2 s each).
warm_service_models()


class ControllerAction(ActionBase):
    """Runs on the controller whatever the task's host or delegate_to: the work is API calls only."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def validated_params(self, argument_spec: Mapping[str, Any], **constraints: Any) -> dict[str, Any]:
        """The task's options checked as a module's are (types, defaults, the AWS_* / K8S_AUTH_* fallbacks, read
        from the task's ``environment``), before any change; ``constraints``: mutually_exclusive and the like."""
        self._apply_task_environment()
        validation, _args = self.validate_argument_spec(argument_spec=dict(argument_spec),
                                                        required_by=dict(asg_name="nodegroup_name"), **constraints)
        if not HAS_BOTO3 or kubernetes_import_error() is not None:
            raise AnsibleActionFail("%s runs on the controller, which needs boto3, botocore and kubernetes "
                                    "(requirements.txt) in the Python that runs ansible-playbook"
                                    % self._task.action.rsplit(".", 1)[-1])
        return validation.validated_parameters

    def clients(self, params: Mapping[str, Any], name: str) -> Clients:
        """The one AWS and one Kubernetes client factory of the task, for the module ``name`` (its User-Agent), whose
        Kubernetes client is proven to be ``cluster_name``'s before it is used (SPEC K4)."""
        return Clients(params, "%s/%s" % (USER_AGENT_EXTRA, name), proof=prove_cluster)

    def while_job_lives(self, clients: Clients, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """``work()``'s task result, with the job guard armed (SPEC W5, module_utils/host/job_guard.py): once the job is
        gone, no destructive call starts, the work unwinds through its failure path (JobStopped), and the leases it
        holds are released, so that the relaunch is not refused (the journal, written before each change, says
        where it stopped)."""
        armed = job_guard.arm(lambda: self._release_leases(clients))
        try:
            try:
                result = work()
            except job_guard.JobStopped as stop:
                # The stop signal, raised where no step catches it (between steps, in the action's own code).
                result = dict(changed=False, failed=True, **error_result(stop))
            finally:
                armed.quiet()
            if job_guard.current().gone() is not None:
                self._release_leases(clients)
        finally:
            armed.disarm()
        return result

    def _release_leases(self, clients: Clients) -> None:
        """The job is gone: release the leases this task holds (best effort: a lease left behind lapses)."""
        reason = job_guard.current().gone()
        try:
            released = release_held(clients.lease_heartbeats)
            display.vvvv("%s: the job is gone (%s): released the lease on %s"
                         % (self._task.action, reason, ", ".join(released) or "no group"))
        except UpgradeError as err:
            display.vvvv("%s: the job is gone (%s); the lease lapses by itself: %s" % (self._task.action, reason, err.msg))

    def _apply_task_environment(self) -> None:
        """The task's ``environment`` (templated), as a module's process would see it. The worker process that runs
        the action ends with the task."""
        for env in self._task.environment or []:
            env = self._templar.template(env)
            if isinstance(env, dict):
                os.environ.update((to_text(key), to_text(value)) for key, value in env.items() if value is not None)


class StepAction(ControllerAction):
    """A module of the collection whose work runs on the controller, in the task's process: ``STEP`` is the
    module_utils file that holds it (ARGUMENT_SPEC, CONSTRAINTS and ``run(module)``, which a StepContext serves),
    ``NAME`` the module's name (the AWS User-Agent's). The options are checked as the module's were, and the result
    is the one the module returned."""

    NAME: str
    STEP: ModuleType
    # Whether the step prints progress a person follows (StepContext.progress: shown as they come in
    # ansible-playbook's output and AWX's job output).
    PROGRESS = False
    # Whether the step talks to Kubernetes (the Kubernetes connection options and the cluster proof, SPEC K4).
    USES_K8S = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        name = self.NAME
        params = self.validated_params(merged_argument_spec(self.STEP.ARGUMENT_SPEC, uses_aws=True,
                                                            uses_k8s=self.USES_K8S),
                                       **self.STEP.CONSTRAINTS)

        def log(line: str) -> None:
            display.vvvv("%s: %s" % (name, line))

        clients = self.clients(params, name)
        result.update(self.while_job_lives(clients, lambda: run_step(
            self.STEP.run, params, clients, bool(self._task.check_mode), bool(self._task.diff), log,
            display.display if self.PROGRESS else None)))
        return clients.with_resource_actions(result)
