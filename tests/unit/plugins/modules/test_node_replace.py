# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_replace (issue 11 item 4): its documentation matches its argument spec, and each batch's steps get what
roles/upgrade/tasks/batch.yml passed node_drain and asg_instance_terminate (SPEC U5, U7)."""

from __future__ import annotations

from types import SimpleNamespace
from unittest import mock

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace import phase as replace_steps
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import asg_instance_terminate as terminate_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import Batch
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import StepFailed
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.phase import full_argument_spec, step_params
from ansible_collections.eksops.nodegroup.plugins.modules import node_replace

from ..module_docs import assert_docs_match_spec


def params(**overrides):
    args = dict(cluster_name="prod", nodegroup_name="workers", asg_name="workers-asg", batches=[["i-0a"], ["i-0b"]],
                delete_options=dict(wait_timeout=120, force=True), post_drain_wait=5, run_id="run-1",
                lease_id="lease-1", wait_timeout=300, node_ready_timeout=300, region="us-west-2", kubeconfig="/k")
    args.update(overrides)
    result = ArgumentSpecValidator(full_argument_spec()).validate(args)
    assert not result.error_messages
    return result.validated_parameters


def test_the_documentation_matches_the_argument_spec():
    assert_docs_match_spec(node_replace, full_argument_spec())


def test_a_batch_drains_as_node_drain_did_in_batch_yml():
    drain, _terminate = step_params(params(), Batch(["i-0a", "i-0c"]))
    assert (drain["instance_ids"], drain["state"], drain["exclude_from_load_balancers"]) == (["i-0a", "i-0c"], "drain", True)
    assert (drain["cluster_name"], drain["nodegroup_name"], drain["asg_name"]) == ("prod", "workers", "workers-asg")
    assert (drain["lease_id"], drain["run_id"], drain["post_drain_wait"]) == ("lease-1", "run-1", 5)
    assert drain["delete_options"]["wait_timeout"] == 120 and drain["delete_options"]["force"] is True
    assert drain["delete_options"]["ignore_daemonsets"] is True and drain["eviction_concurrency"] == 10
    assert (drain["region"], drain["kubeconfig"]) == ("us-west-2", "/k")


def test_a_batch_terminates_as_asg_instance_terminate_did_in_batch_yml():
    _drain, terminate = step_params(params(wait_for_replacements=True, accept_current_capacity=True), Batch(["i-0a"]))
    assert terminate["instance_ids"] == ["i-0a"] and terminate["should_decrement_desired_capacity"] is False
    assert (terminate["wait"], terminate["wait_for_replacements"], terminate["accept_current_capacity"]) == (True, True, True)
    assert (terminate["wait_timeout"], terminate["node_ready_timeout"], terminate["lease_id"]) == (300, 300, "lease-1")
    assert "run_id" not in terminate and "delete_options" not in terminate


def test_how_a_batch_terminates_comes_with_the_batch():
    _drain, terminate = step_params(params(), Batch(["i-0a"], decrement=True))
    assert terminate["should_decrement_desired_capacity"] is True


def test_a_refused_second_round_names_the_first_rounds_instances_as_accepted():
    """SPEC B1: the decrementing round went; the replacing one was refused. The failure says which went."""
    class Accepted:
        def __init__(self, ids):
            self.instance_ids = ids

    answers = iter([Accepted(["i-0a"]), UpgradeError("UpgradeInProgress", "lease lost")])

    def start_termination(ctx, hooks=None):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        assert ctx.params["should_decrement_desired_capacity"] is True  # the decrementing round first
        return answer

    loop, _next_batch = replace_steps.replace_loop(params(), clients=SimpleNamespace(lease_heartbeats={}), check_mode=False,
                                                   diff=False, warn=[].append, log=lambda line: None,
                                                   progress=[].append, next_batch=lambda state: None, node_names={})
    with mock.patch.object(terminate_step, "start_termination", start_termination):
        with pytest.raises(StepFailed) as failed:
            loop.start(Batch(["i-0a", "i-0b"], decrement_ids=["i-0a"]))
    assert failed.value.error.code == "UpgradeInProgress" and failed.value.accepted == ["i-0a"]


def test_issue26_item2_a_surge_step_launches_for_the_old_instances_it_will_take_and_takes_them_from_the_group():
    """The launch journals the capacity the step's terminations will leave (SPEC C3) from the step's count, as none
    is chosen yet; then the step takes its old instances from the group as the launch left it: the one leaving and
    the one gone from the group first, then where the instances are most (us-west-2a)."""
    steps = [dict(desired_capacity=5, launch=1, instance_ids=["i-0a", "i-0b"]),
             dict(desired_capacity=4, launch=1, instance_ids=["i-0c"])]
    batch = Batch([], decrement=True, desired_capacity=5, launch=1,
                  choose_old=dict(candidates=["i-0a", "i-0b", "i-0c", "i-0d", "i-0g"], count=3, end_size=4,
                                  next_launch=0))
    seen, lines = [], []
    with mock.patch.object(replace_steps.surge_step, "run",
                           side_effect=lambda ctx: seen.append(ctx.params) or dict(surge=dict(new_nodes=[{}]))):
        replace_steps.launch_new_nodes(params(batches=None, steps=steps), batch,
                                       lambda step: SimpleNamespace(params=step), lines.append)
    assert (seen[0]["mode"], seen[0]["desired_capacity"], seen[0]["pending_decrement"]) == ("desired", 5, 3)
    members = [dict(InstanceId=i, AvailabilityZone=zone, LifecycleState=state) for i, zone, state in (
        ("i-0a", "us-west-2b", "InService"), ("i-0b", "us-west-2a", "InService"), ("i-0c", "us-west-2a", "InService"),
        ("i-0d", "us-west-2a", "Terminating"), ("i-0n", "us-west-2b", "Pending"))]
    autoscaling = mock.Mock()
    group = SimpleNamespace(asg_name="workers-asg")
    with mock.patch.object(replace_steps, "describe_asg", return_value=dict(
            Instances=members, AvailabilityZones=["us-west-2a", "us-west-2b"])) as described:
        replace_steps.take_old_instances(SimpleNamespace(aws=lambda service: autoscaling), group, batch, lines.append)
    described.assert_called_once_with(autoscaling, "workers-asg")
    assert (batch.instance_ids, batch.decrement_ids) == (["i-0d", "i-0g", "i-0b"], ["i-0d", "i-0g", "i-0b"])
    assert lines[-1] == ("replacing i-0d, i-0g, i-0b, chosen from the group as the launch left it (instances per "
                         "AZ: us-west-2a 2, us-west-2b 2)")
