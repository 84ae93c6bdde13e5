# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_replace's options and the steps of its loop: node_drain's and asg_instance_terminate's own code
(drain_step, terminate_step) run with one shared Clients, in the action plugin's process (issue 11 item 4).

A StepContext is what those steps take for a module: params (the step module's options, defaults filled by the
same argument spec machinery), check_mode, aws(), core_v1(), warn, log, with_diff; fail_upgrade raises
StepFailed instead of exiting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.eksops.nodegroup.plugins.module_utils import drain_step, terminate_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import AWS_ARGUMENT_SPEC
from ansible_collections.eksops.nodegroup.plugins.module_utils.clients import Clients
from ansible_collections.eksops.nodegroup.plugins.module_utils.cluster_proof import NODE_READY_TIMEOUT_DEFAULT
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.k8s import K8S_ARGUMENT_SPEC
from ansible_collections.eksops.nodegroup.plugins.module_utils.lease import LEASE_OPTION
from ansible_collections.eksops.nodegroup.plugins.module_utils.module import merged_argument_spec
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import NODEGROUP_ARGUMENT_SPEC
from ansible_collections.eksops.nodegroup.plugins.module_utils.replace_loop import Batch, ReplaceLoop, StepFailed

# node_replace's own options; the AWS and Kubernetes ones are added as for every module (merged_argument_spec).
ARGUMENT_SPEC = dict(
    NODEGROUP_ARGUMENT_SPEC,
    batches=dict(type="list", elements="list", required=True),
    node_names=dict(type="dict", default={}),
    delete_options=dict(type="dict", default={}, options=drain_step.DELETE_OPTIONS_SPEC),
    post_drain_wait=drain_step.ARGUMENT_SPEC["post_drain_wait"],
    post_drain_min_wait=drain_step.ARGUMENT_SPEC["post_drain_min_wait"],
    ignore_load_balancer_timeout=drain_step.ARGUMENT_SPEC["ignore_load_balancer_timeout"],
    eviction_concurrency=drain_step.ARGUMENT_SPEC["eviction_concurrency"],
    accept_current_capacity=dict(type="bool", default=False),
    wait_for_replacements=dict(type="bool", default=False),
    wait_timeout=dict(type="int", default=600),
    node_ready_timeout=dict(type="int", default=NODE_READY_TIMEOUT_DEFAULT),
    run_id=dict(type="str"),
    **LEASE_OPTION
)

SHARED_OPTIONS = tuple(AWS_ARGUMENT_SPEC) + tuple(K8S_ARGUMENT_SPEC)


def full_argument_spec() -> dict[str, Any]:
    return merged_argument_spec(ARGUMENT_SPEC, uses_aws=True, uses_k8s=True)


def _validated(spec: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` through the step module's own argument spec (defaults, aliases, types), as its module would."""
    result = ArgumentSpecValidator(merged_argument_spec(spec, uses_aws=True, uses_k8s=True)).validate(dict(params))
    if result.error_messages:
        raise ValueError("; ".join(result.error_messages))
    return result.validated_parameters


def step_params(params: Mapping[str, Any], batch: Batch) -> tuple[dict[str, Any], dict[str, Any]]:
    """(node_drain's params, asg_instance_terminate's) for ``batch``: what batch.yml passed the two modules."""
    shared = dict((name, params[name]) for name in SHARED_OPTIONS if params.get(name) is not None)
    group = dict(cluster_name=params["cluster_name"], nodegroup_name=params["nodegroup_name"],
                 asg_name=params["asg_name"], lease_id=params["lease_id"])
    drain = dict(shared, **group)
    drain.update(instance_ids=batch.instance_ids, state="drain", delete_options=params["delete_options"],
                 post_drain_wait=params["post_drain_wait"], post_drain_min_wait=params["post_drain_min_wait"],
                 ignore_load_balancer_timeout=params["ignore_load_balancer_timeout"],
                 eviction_concurrency=params["eviction_concurrency"], exclude_from_load_balancers=True,
                 run_id=params["run_id"])
    terminate = dict(shared, **group)
    terminate.update(instance_ids=batch.instance_ids, should_decrement_desired_capacity=batch.decrement, wait=True,
                     wait_for_replacements=params["wait_for_replacements"], wait_timeout=params["wait_timeout"],
                     node_ready_timeout=params["node_ready_timeout"],
                     accept_current_capacity=params["accept_current_capacity"])
    return _validated(drain_step.ARGUMENT_SPEC, drain), _validated(terminate_step.ARGUMENT_SPEC, terminate)


class StepContext:
    """The EksopsModule surface drain_step and terminate_step use, for one step's ``params``."""

    def __init__(self, params: Mapping[str, Any], clients: Clients, check_mode: bool, diff: bool,
                 warn: Callable[[str], None], log: Callable[[str], None]) -> None:
        self.params = params
        self.clients = clients
        self.check_mode = check_mode
        self._diff = diff
        self.warn = warn
        self.log = log
        self.lease_heartbeats = clients.lease_heartbeats

    def aws(self, service: str) -> Any:
        return self.clients.aws(service)

    def core_v1(self) -> Any:
        return self.clients.core_v1()

    def with_diff(self, result: dict[str, Any], before: Any, after: Any) -> dict[str, Any]:
        if self._diff:
            result["diff"] = dict(before=before, after=after)
        return result

    def fail_upgrade(self, err: UpgradeError, **result: Any) -> None:
        raise StepFailed(err, result)


def _guarded(step: Callable[..., Any]) -> Callable[..., Any]:
    """An UpgradeError a step raises (module.run would have turned it into fail_json) becomes StepFailed."""
    def call(*args: Any) -> Any:
        try:
            return step(*args)
        except UpgradeError as err:
            raise StepFailed(err) from err
    return call


def replace_loop(params: Mapping[str, Any], clients: Clients, check_mode: bool, diff: bool,
                 warn: Callable[[str], None], log: Callable[[str], None],
                 progress: Callable[[str], None]) -> ReplaceLoop:
    """The loop with node_drain's and asg_instance_terminate's steps. The termination wait overlaps the next
    batch's drain unless the replacements gate the next batch (wait_for_replacements, strategy minimal, U7) or
    nothing is terminated (check mode)."""
    def context(step: dict[str, Any]) -> StepContext:
        return StepContext(step, clients, check_mode, diff, warn, log)

    def drain(batch: Batch) -> Mapping[str, Any]:
        return drain_step.run(context(step_params(params, batch)[0]))

    def start(batch: Batch) -> terminate_step.Termination:
        ctx = context(step_params(params, batch)[1])
        termination = terminate_step.start_termination(ctx)
        termination.context = ctx
        return termination

    def finish(termination: terminate_step.Termination) -> Mapping[str, Any]:
        return terminate_step.finish_termination(termination.context, termination)

    return ReplaceLoop(_guarded(drain), _guarded(start), _guarded(finish), progress,
                       overlap=not (params["wait_for_replacements"] or check_mode),
                       node_names=params["node_names"], total=len(params["batches"]))
