# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The setup phase in one process (issue 11 item 4): the three modules' steps in order, each refusal before the
launch template step (the phase's only change), and the K5 read only when that step changed nothing."""

from __future__ import annotations

from types import SimpleNamespace
from unittest import mock

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import launch_template_version as launch_template_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import nodegroup_info as nodegroup_describe
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import nodegroup_preflight as preflight_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases import setup as setup_phase
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import StepFailed
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import StepContext


def params(**overrides):
    args = dict(cluster_name="prod", nodegroup_name="workers", kubernetes_version="1.30", region="us-west-2",
                kubeconfig="/k", lease_id="lease-1", post_drain_wait=30)
    args.update(overrides)
    result = ArgumentSpecValidator(merged_argument_spec(setup_phase.ARGUMENT_SPEC, uses_aws=True, uses_k8s=True)
                                   ).validate(args)
    assert not result.error_messages
    return result.validated_parameters


def nodegroup(kind="self_managed", journal=None):
    return dict(kind=kind, asg_name="workers-asg", journal=journal,
                asg=dict(min_size=3, max_size=6, desired_capacity=3, availability_zones=["us-west-2a", "us-west-2b"]),
                launch_template=dict(id="lt-1", version="4"),
                instances=[dict(ready=True), dict(ready=False)], old_instances=["i-0a"])


def finding(check="no_pdb", blocking=False):
    return dict(check=check, message="%s found" % check, blocking=blocking)


def preflight(*findings):
    return dict(warnings_found=list(findings), blocking=[f for f in findings if f["blocking"]], pods_examined=7,
                pods_to_move={})


def template(created=True, journal=None):
    return dict(changed=created, launch_template=dict(version=5, created=created, journal=journal))


class Steps:
    """The three modules' steps, answering as told and recording the options each step got, in order."""

    def __init__(self, group=None, report=None, step=None, target_old=()):
        self.calls = []
        self.group, self.report, self.step, self.target_old = group or nodegroup(), report or preflight(), step, target_old

    FOUND = object()  # the node group the discovery finds (find_module_nodegroup)

    def describe(self, context, group=None):
        assert group is self.FOUND or context.params["target"] is not None, "the group found is described"
        self.calls.append(("describe", dict(context.params)))
        if context.params["target"] is not None:
            return dict(self.group, old_instances=list(self.target_old))
        return self.group

    def preflight(self, context, group=None):
        assert group is self.FOUND, "the preflight examines the group the discovery found, not read again"
        self.calls.append(("preflight", dict(context.params)))
        return dict(changed=False, preflight=self.report)

    def launch_template(self, context):
        self.calls.append(("launch_template", dict(context.params)))
        if isinstance(self.step, Exception):
            raise self.step
        return self.step or template()

    def run(self, **overrides):
        lines = []
        context = StepContext(params(**overrides), SimpleNamespace(lease_heartbeats={}), False, False, [].append,
                              lambda line: None)
        phase = setup_phase.SetupPhase(context, lines.append)
        with mock.patch.object(setup_phase, "find_module_nodegroup", lambda context: self.FOUND), \
                mock.patch.object(nodegroup_describe, "describe_nodegroup", self.describe), \
                mock.patch.object(preflight_step, "run", self.preflight), \
                mock.patch.object(launch_template_step, "run", self.launch_template):
            try:
                return phase.run(), lines
            except StepFailed as failed:
                return failed, lines

    def names(self):
        return [name for name, _options in self.calls]


def test_the_steps_run_in_order_with_the_options_the_role_gave_the_modules():
    steps = Steps()
    result, lines = steps.run(max_unavailable=2, run_id="run-1")
    assert steps.names() == ["describe", "preflight", "launch_template"]
    describe, check, change = (options for _name, options in steps.calls)
    assert (describe["update_strategy"], describe["max_unavailable"], describe["max_surge"]) == ("default", 2, None)
    assert "lease_id" not in describe or describe["lease_id"] is None
    assert (check["asg_name"], check["post_drain_wait"]) == ("workers-asg", 30)
    assert (change["asg_name"], change["pin_asg"], change["kubernetes_version"]) == ("workers-asg", True, "1.30")
    assert (change["lease_id"], change["run_id"], change["region"]) == ("lease-1", "run-1", "us-west-2")
    assert result["changed"] is True and result["setup"]["launch_template"]["version"] == 5
    assert result["setup"]["on_target"] is False
    assert lines[0].startswith("Node group workers is a self-managed node group")
    assert "Launch template lt-1 version 4 (2 instances, 1 nodes Ready)" in lines
    assert lines[-1] == "Preflight: no warnings for the 7 pods on the node group."


def test_surge_strategy_checks_max_surge_and_minimal_plans_minimal():
    steps = Steps()
    steps.run(update_strategy="surge", max_surge=3)
    assert steps.calls[0][1]["max_surge"] == 3 and steps.calls[0][1]["update_strategy"] == "default"
    steps = Steps()
    steps.run(update_strategy="minimal", max_surge=3)
    assert steps.calls[0][1]["max_surge"] is None and steps.calls[0][1]["update_strategy"] == "minimal"


def test_k5_a_group_on_the_target_already_is_read_again_against_the_target_and_said_to_be():
    steps = Steps(step=template(created=False))
    result, _lines = steps.run()
    assert steps.names() == ["describe", "preflight", "launch_template", "describe"]
    assert steps.calls[-1][1]["target"] == "5" and result["setup"]["on_target"] is True
    assert result["changed"] is False


def test_k5_an_upgrade_under_way_is_not_on_target_and_not_read_again():
    steps = Steps(step=template(created=False, journal=dict(run_id="run-0")))
    result, _lines = steps.run()
    assert steps.names() == ["describe", "preflight", "launch_template"] and result["setup"]["on_target"] is False


def test_k3_a_managed_group_is_only_read():
    steps = Steps(group=nodegroup(kind="managed"))
    result, _lines = steps.run(release_version="1.30.0-20240101")
    assert steps.names() == ["describe", "preflight"]
    assert steps.calls[1][1]["post_drain_wait"] is None  # EKS drains it, with its own wait
    assert result["changed"] is False and result["setup"]["launch_template"] is None


def test_a_release_version_for_a_self_managed_group_is_refused_before_the_preflight():
    steps = Steps()
    failed, _lines = steps.run(kubernetes_version=None, release_version="1.30.0-20240101")
    assert steps.names() == ["describe"]
    assert (failed.error.code, failed.error.details["parameter"]) == ("InvalidParameter", "release_version")
    assert failed.error.msg.endswith("Nothing was changed.") and failed.result["changed"] is False
    assert failed.result["setup"]["nodegroup"]["asg_name"] == "workers-asg"


def test_a_blocking_finding_stops_before_the_launch_template_step_and_the_report_is_shown_first():
    steps = Steps(report=preflight(finding(), finding("autoscaler_deleting", blocking=True)))
    failed, lines = steps.run()
    assert steps.names() == ["describe", "preflight"]
    assert failed.error.code == "PreflightBlocked"
    assert failed.error.msg == "autoscaler_deleting found Nothing was changed."
    assert lines[-3:] == ["Preflight: 2 warning(s) for the 7 pods on the node group:", "- no_pdb found",
                          "- autoscaler_deleting found"]
    assert failed.result["setup"]["preflight"]["pods_examined"] == 7


@pytest.mark.parametrize("stop, stopped", [(True, True), (False, False)])
def test_warnings_stop_the_upgrade_only_when_told(stop, stopped):
    steps = Steps(report=preflight(finding()))
    outcome, _lines = steps.run(fail_on_preflight_warnings=stop)
    assert ("launch_template" not in steps.names()) is stopped
    if stopped:
        assert outcome.error.code == "InvalidParameter" and "parameter" not in outcome.error.details


def test_a_step_error_fails_the_phase_with_what_was_found():
    steps = Steps(step=UpgradeError("UpgradeTargetConflict", "another run", parameter="force_new_target"))
    failed, _lines = steps.run()
    assert failed.error.code == "UpgradeTargetConflict" and failed.result["changed"] is False
    assert failed.result["setup"]["preflight"] is not None and failed.result["setup"]["launch_template"] is None


def test_a_launch_template_step_that_failed_after_a_change_says_it_changed():
    done = dict(asg_name="workers-asg", id="lt-1", version=5, created=True)
    steps = Steps(step=StepFailed(UpgradeError("AccessDenied", "pin refused"), dict(changed=True, launch_template=done)))
    failed, _lines = steps.run()
    assert failed.error.code == "AccessDenied" and failed.result["changed"] is True
    assert failed.result["setup"]["launch_template"] == done


def test_issue29_item1_the_owners_workflow_is_refused_for_a_managed_group_before_the_preflight():
    """W1, K3: use_current_launch_template names a self-managed group's own version; EKS runs a managed one's."""
    steps = Steps(group=nodegroup(kind="managed"))
    failed, _lines = steps.run(kubernetes_version=None, use_current_launch_template=True)
    assert steps.names() == ["describe"]
    assert (failed.error.code, failed.error.details["parameter"]) == ("InvalidParameter",
                                                                      "use_current_launch_template")
    assert failed.error.msg.endswith("Nothing was changed.")


def test_issue29_item1_the_owners_workflow_and_the_accepted_revert_reach_the_launch_template_step():
    steps = Steps()
    steps.run(kubernetes_version=None, use_current_launch_template=True, accept_owner_revert=True)
    change = steps.calls[2][1]
    assert (change["use_current_launch_template"], change["accept_owner_revert"]) == (True, True)
    assert change["kubernetes_version"] is None
