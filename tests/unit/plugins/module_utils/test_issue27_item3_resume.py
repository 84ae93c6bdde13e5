# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 3: the upgrade playbook run again resumes a paused upgrade. Its setup phase withdraws the pause
request, and says so, only after it holds the group's lease: a second run refused with UpgradeInProgress leaves the
request for the live run it was asked of."""

from __future__ import annotations

from unittest import mock

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UPGRADE_IN_PROGRESS, StepFailed, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.pause import PAUSE_TAG
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases import setup as setup_phase

from .test_setup_phase import Steps, nodegroup, template

ASG = {"AutoScalingGroupName": "workers-asg", "Tags": [dict(Key=PAUSE_TAG, Value="2026-11-28T21:00:00Z alice")]}


def paused_group(kind="self_managed"):
    group = nodegroup(kind=kind, journal=dict(run_id="run-0", phase="upgrade", target_launch_template_version="5"))
    group["asg"]["tags"] = {PAUSE_TAG: "2026-11-28T21:00:00Z alice"}
    return group


def run_setup(steps, claim=None):
    calls = []

    def claimed(context, autoscaling, asg):
        calls.append(("claim", context.params["lease_id"], asg["AutoScalingGroupName"]))
        if claim is not None:
            raise claim

    def cleared(autoscaling, asg):
        calls.append(("clear", asg["AutoScalingGroupName"]))
    with mock.patch.object(setup_phase, "describe_asg", lambda autoscaling, name: dict(ASG)), \
            mock.patch.object(setup_phase, "claim", claimed), mock.patch.object(setup_phase, "clear_pause", cleared), \
            mock.patch.object(setup_phase.StepContext, "aws", lambda self, service: service):
        outcome, lines = steps.run()
    return outcome, lines, calls


def test_issue27_item3_a_rerun_resumes_the_paused_upgrade_once_it_holds_the_lease():
    steps = Steps(group=paused_group(), step=template(created=False, journal=dict(run_id="run-0")))
    result, lines, calls = run_setup(steps)
    assert calls == [("claim", "lease-1", "workers-asg"), ("clear", "workers-asg")]
    assert result["changed"] is True
    assert result["setup"]["resumed_pause"] == dict(requested=True, requested_at="2026-11-28T21:00:00Z",
                                                    requested_by="alice")
    assert lines[-1].startswith("Resuming a paused upgrade: the pause asked at 2026-11-28T21:00:00Z by alice is "
                                "withdrawn")


def test_issue27_item3_a_run_refused_by_the_live_runs_lease_leaves_the_request():
    steps = Steps(group=paused_group(), step=template(created=False, journal=dict(run_id="run-0")))
    failed, lines, calls = run_setup(steps, claim=UpgradeError(UPGRADE_IN_PROGRESS, "another run"))
    assert isinstance(failed, StepFailed) and failed.error.code == UPGRADE_IN_PROGRESS
    assert [call[0] for call in calls] == ["claim"]
    assert not any(line.startswith("Resuming") for line in lines)


def test_issue27_item3_no_request_no_claim_of_its_own():
    steps = Steps(step=template(created=False, journal=dict(run_id="run-0")))
    result, _lines, calls = run_setup(steps)
    assert calls == [] and result["setup"]["resumed_pause"] is None and result["changed"] is False


def test_issue27_item3_a_managed_group_has_no_request_to_withdraw():
    steps = Steps(group=paused_group(kind="managed"))
    result, _lines, calls = run_setup(steps)
    assert calls == [] and result["setup"]["resumed_pause"] is None


def test_issue27_item3_resume_line_in_check_mode():
    request = setup_phase.parse_pause("2026-11-28T21:00:00Z")
    line = setup_phase.resume_line(request, "workers-asg", True)
    assert "the pause asked at 2026-11-28T21:00:00Z would be withdrawn" in line
