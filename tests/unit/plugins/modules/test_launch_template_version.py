# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""launch_template_version run in-process against moto (SPEC U1; a conflicting journal is UpgradeTargetConflict)."""

from __future__ import annotations

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import launch_template_version as launch_template_step
from ansible_collections.eksops.nodegroup.plugins.modules import launch_template_version

from ..moto_nodegroup import (
    ASG_NAME,
    CLUSTER,
    LT_NAME,
    NODEGROUP,
    REGION,
    MotoNodegroup,
    mutating,
    publish_eks_ami,
    run_module_in_process,
)

# The world is a terraform-aws-eks group: these tests pin versions behind its back, knowing (SPEC W1; the refusal and
# use_current_launch_template are tested with accept_owner_revert false below).
BASE = dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP, accept_owner_revert=True)


@pytest.fixture
def world():
    with mock_aws():
        yield MotoNodegroup()


@pytest.fixture
def run(capsys):
    def run_it(check=False, diff=False, **args):
        return run_module_in_process(launch_template_version.main, dict(BASE, **args), capsys, check=check,
                                     diff=diff)
    return run_it


def state(world):
    """Everything the module may change."""
    asg = world.asg()
    template = world.ec2.describe_launch_templates(LaunchTemplateIds=[world.lt_id])["LaunchTemplates"][0]
    return dict(asg_version=asg["LaunchTemplate"]["Version"], tags=world.tags(),
                versions=[v["VersionNumber"] for v in world.lt_versions()],
                default=template["DefaultVersionNumber"])


def edit_journal(world, **changes):
    """The journal on the group changed by hand (or by another run)."""
    journal = Journal.from_tags(world.tags())
    write_journal(world.autoscaling, ASG_NAME, journal.replace(**changes), previous=journal)


def journal_tags(world):
    """The journal's set fields, as its tags record them (journal.TAG_GROUPS)."""
    journal = Journal.from_tags(world.tags())
    return {} if journal is None else dict((k, v) for k, v in journal.to_dict().items() if v is not None)


def test_new_image_creates_a_version_pins_the_asg_and_writes_the_journal(world, run):
    """U1."""
    result = run(image_id=world.new_ami, run_id="run-1")
    assert result["changed"] is True, result
    assert result["launch_template"]["asg_name"] == ASG_NAME
    assert result["launch_template"] == dict(
        id=world.lt_id, name=LT_NAME, previous_version=1, version=2, previous_image_id=world.old_ami,
        image_id=world.new_ami, created=True, pinned=True, default_version=1, asg_name=ASG_NAME,
        journal=result["launch_template"]["journal"])
    assert world.asg()["LaunchTemplate"] == {"LaunchTemplateId": world.lt_id, "LaunchTemplateName": LT_NAME,
                                             "Version": "2"}
    [new_version] = [v for v in world.lt_versions() if v["VersionNumber"] == 2]
    assert new_version["LaunchTemplateData"]["ImageId"] == world.new_ami
    assert "from version 1" in new_version["VersionDescription"]
    journal = journal_tags(world)
    assert journal["run_id"] == "run-1" and journal["phase"] == "setup"
    assert (journal["previous_launch_template_version"], journal["target_launch_template_version"]) == ("1", "2")
    assert (journal["launch_template_id"], journal["target_image_id"]) == (world.lt_id, world.new_ami)
    assert result["launch_template"]["journal"]["run_id"] == "run-1"


def test_second_run_changes_nothing(world, run):
    run(image_id=world.new_ami)
    before = state(world)
    again = run(image_id=world.new_ami)
    assert again["changed"] is False, again
    assert (again["launch_template"]["created"], again["launch_template"]["pinned"]) == (False, False)
    assert again["launch_template"]["version"] == 2
    assert state(world) == before


def test_check_mode_reports_the_plan_and_changes_nothing(world, run):
    before = state(world)
    result = run(image_id=world.new_ami, check=True, diff=True)
    assert result["changed"] is True
    assert (result["launch_template"]["created"], result["launch_template"]["version"]) == (True, 2)
    assert result["diff"]["before"]["launch_template_version"] == "1"
    assert result["diff"]["after"]["launch_template_version"] == "2"
    assert result["diff"]["before"]["image_id"] == world.old_ami
    assert result["diff"]["after"]["image_id"] == world.new_ami
    assert state(world) == before


def test_kubernetes_version_resolves_the_same_family(world, run):
    name = publish_eks_ami("1.30", "amazon-linux-2023/x86_64/standard", world.new_ami)
    result = run(kubernetes_version="1.30")
    assert result["launch_template"]["image_id"] == world.new_ami
    assert result["launch_template"]["ssm_parameter"] == name
    assert world.asg()["LaunchTemplate"]["Version"] == "2"


@pytest.mark.parametrize("args, parameter, text", [
    (dict(kubernetes_version="1.99"), "kubernetes_version", "1.99"),
    (dict(kubernetes_version="latest"), "kubernetes_version", "latest"),
    (dict(image_id="ami-00000000000000000"), "image_id", "ami-00000000000000000"),
    (dict(version=9), "launch_template_version", "9"),
    (dict(version=0), "launch_template_version", "1 or more"),  # issue 29 item 4: 0 was read as the current one
    (dict(version=-1), "launch_template_version", "1 or more"),
    (dict(image_id="ami-00000000000000000", asg_name="no-such-asg"), "asg_name", "no-such-asg"),
    (dict(image_id="ami-00000000000000000", nodegroup_name="nope"), "nodegroup_name", "nope"),
    (dict(image_id="ami-00000000000000000", cluster_name="nope"), "cluster_name", "nope"),
])
def test_bad_input_fails_naming_the_problem_and_changes_nothing(world, run, args, parameter, text):
    before = state(world)
    result = run(**args)
    assert result["failed"] is True
    assert result["parameter"] == parameter, result
    assert text in result["msg"]
    assert result["code"] in ("InvalidParameter", "ResourceNotFound")
    assert state(world) == before


def test_k3_a_managed_node_group_is_refused_before_any_change(capsys):
    """K3: EKS owns a managed group's launch template and Auto Scaling group (writing to them makes the group
    DEGRADED with Ec2LaunchTemplateVersionMismatch): refused, naming nodegroup_name, before any write."""
    with mock_aws():
        world = MotoNodegroup(kind="managed")
        before = state(world)
        calls = []
        result = run_module_in_process(launch_template_version.main, dict(BASE, image_id=world.new_ami), capsys,
                                       aws_calls=calls)
        assert state(world) == before
    assert result["failed"] is True and (result["code"], result["parameter"]) == ("InvalidParameter", "nodegroup_name")
    assert result["kind"] == "managed" and NODEGROUP in result["msg"] and world.asg_name in result["msg"]
    assert "DescribeNodegroup" in calls and mutating(calls) == []


@pytest.mark.parametrize("kind, convention", [("self_managed", "cloudformation"), ("self_managed_eksctl", None)])
def test_each_self_managed_kind_gets_its_new_version(capsys, kind, convention):
    with mock_aws():
        world = MotoNodegroup(kind=kind, convention=convention or "terraform")
        result = run_module_in_process(launch_template_version.main, dict(BASE, image_id=world.new_ami), capsys)
        assert result["changed"] is True and result["launch_template"]["asg_name"] == world.asg_name, result
        assert world.asg()["LaunchTemplate"]["Version"] == "2"


def test_kubernetes_version_with_an_unknown_current_family(world, run):
    custom = world.ec2.register_image(Name="my-golden-image")["ImageId"]
    world.ec2.modify_launch_template(LaunchTemplateId=world.lt_id, DefaultVersion="1")
    version = world.add_version(ImageId=custom)
    run(version=version)
    result = run(kubernetes_version="1.30")
    assert result["failed"] and result["parameter"] == "kubernetes_version"
    assert "my-golden-image" in result["msg"] and "image_id" in result["msg"]


def test_target_options_are_exclusive(world, run):
    result = run(image_id=world.new_ami, version=1)
    assert result["failed"] and "mutually exclusive" in result["msg"]
    result = run()
    assert result["failed"] and "one of the following is required" in result["msg"]


def test_existing_journal_for_another_target_fails_without_force(world, run):
    """A journal for another target is UpgradeTargetConflict (not EKS's health issue code); force_new_target
    retargets and keeps the run."""
    run(image_id=world.new_ami, run_id="first")
    edit_journal(world, original_desired_capacity=3)
    before = state(world)
    result = run(version=1)
    assert result["failed"] and result["code"] == "UpgradeTargetConflict"
    assert result["parameter"] == "force_new_target"
    assert "first" in result["msg"] and "version 2" in result["msg"]
    assert state(world) == before
    forced = run(version=1, force_new_target=True)
    assert forced["changed"] is True
    journal = journal_tags(world)
    assert (journal["target_launch_template_version"], journal["run_id"]) == ("1", "first")
    assert journal["original_desired_capacity"] == 3
    assert journal["previous_launch_template_version"] == "1"
    assert world.asg()["LaunchTemplate"]["Version"] == "1"


def test_a_later_phase_journal_for_the_same_target_is_kept(world, run):
    run(image_id=world.new_ami, run_id="r")
    edit_journal(world, phase="upgrade")
    result = run(image_id=world.new_ami)
    assert result["changed"] is False
    assert result["launch_template"]["journal"]["phase"] == "upgrade"


def test_asg_on_latest_alias_gets_pinned_to_the_number(capsys):
    with mock_aws():
        world = MotoNodegroup(lt_version="$Latest")
        result = run_module_in_process(launch_template_version.main, dict(BASE, version=1), capsys)
        assert (result["changed"], result["launch_template"]["pinned"]) == (True, True)
        assert world.asg()["LaunchTemplate"]["Version"] == "1"
        assert result["launch_template"]["journal"]["previous_launch_template_version"] == "1"


def test_pin_asg_false_leaves_the_asg_and_journal_alone(world, run):
    result = run(image_id=world.new_ami, pin_asg=False)
    assert result["changed"] is True and result["launch_template"]["created"] is True
    assert result["launch_template"]["pinned"] is False
    assert world.asg()["LaunchTemplate"]["Version"] == "1"
    assert journal_tags(world) == {}


def test_set_default(world, run):
    result = run(image_id=world.new_ami, set_default=True)
    assert result["launch_template"]["default_version"] == 2
    assert state(world)["default"] == 2
    assert run(image_id=world.new_ami, set_default=True)["changed"] is False


def test_documentation_matches_the_argument_spec():
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec

    from ..module_docs import assert_docs_match_spec

    assert_docs_match_spec(launch_template_version,
                           merged_argument_spec(launch_template_version.ARGUMENT_SPEC, uses_aws=True))


def test_issue10_item24_a_race_refused_by_aws_after_the_journal_is_neither_input_nor_nothing_changed(world, run):
    """The version existed (nothing to create), the journal was written and the processes suspended, then AWS
    refused UpdateAutoScalingGroup with ValidationError in the group's state (a race). Reported as it is: ApiError,
    changed, saying what was done; the role's advice then never says "Nothing was changed"."""
    from unittest import mock

    from botocore.exceptions import ClientError

    from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import translate_aws_errors
    from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError

    world.add_version(ImageId=world.new_ami)
    with pytest.raises(UpgradeError) as refused:
        with translate_aws_errors("point Auto Scaling group %s at launch template version 2" % world.asg_name):
            raise ClientError({"Error": {"Code": "ValidationError", "Message": "Scaling activity in progress"}},
                              "UpdateAutoScalingGroup")
    with mock.patch.object(launch_template_step, "pin_asg_launch_template", side_effect=refused.value):
        failed = run(image_id=world.new_ami)
    assert failed["failed"] is True and failed["changed"] is True, failed
    assert (failed["code"], failed["aws_error_code"]) == ("ApiError", "ValidationError")
    assert "ValidationError: Scaling activity in progress" in failed["msg"]
    assert "before that, this run wrote the upgrade journal; suspended processes AZRebalance" in failed["msg"]
    # No version was created: the result names the group and template only.
    assert failed["launch_template"] == dict(asg_name=world.asg_name, id=world.lt_id)
    assert journal_tags(world)["phase"] == "setup"


def test_failure_after_creating_the_version_reports_it(world, run):
    """A rerun reuses the version; the failed run says it changed something."""
    from unittest import mock

    from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError

    denied = UpgradeError("AccessDenied", "update Auto Scaling group failed: AccessDenied: no",
                          aws_error_code="AccessDenied")
    with mock.patch.object(launch_template_step, "pin_asg_launch_template", side_effect=denied):
        failed = run(image_id=world.new_ami)
    assert failed["failed"] is True and failed["changed"] is True
    assert (failed["code"], failed["launch_template"]["version"]) == ("AccessDenied", 2)
    assert world.asg()["LaunchTemplate"]["Version"] == "1"
    rerun = run(image_id=world.new_ami)
    assert (rerun["launch_template"]["created"], rerun["launch_template"]["version"]) == (False, 2)
    assert world.asg()["LaunchTemplate"]["Version"] == "2"
    assert [v["VersionNumber"] for v in world.lt_versions()] == [1, 2]


A1 = ["AZRebalance", "AlarmNotification", "ScheduledActions", "ReplaceUnhealthy", "InstanceRefresh"]


def suspended(world):
    return sorted(p["ProcessName"] for p in world.asg().get("SuspendedProcesses", []))


def test_u1_rerun_after_the_pin_reports_the_previous_version_from_the_journal(world, run):
    """U1: a rerun after a crash finds the group on the target already; the version before the upgrade (where a
    rollback goes back to) is the journal's, not the group's current one."""
    run(image_id=world.new_ami, run_id="run-1")
    assert world.asg()["LaunchTemplate"]["Version"] == "2"
    rerun = run(image_id=world.new_ami)
    lt = rerun["launch_template"]
    assert (lt["previous_version"], lt["previous_image_id"]) == (1, world.old_ami)
    assert (lt["version"], lt["image_id"]) == (2, world.new_ami)


def test_a1_processes_are_suspended_and_recorded_before_the_group_is_pinned(world, run):
    """A1: suspended before the group points at the new version (AZRebalance and ReplaceUnhealthy would launch
    or terminate instances in between); one suspended by someone else is not recorded as ours."""
    from unittest import mock

    world.autoscaling.suspend_processes(AutoScalingGroupName=ASG_NAME, ScalingProcesses=["AZRebalance"])
    at_pin = []
    pin = launch_template_step.pin_asg_launch_template

    def spy(*args, **kwargs):
        at_pin.append((suspended(world), journal_tags(world).get("suspended_processes")))
        return pin(*args, **kwargs)

    with mock.patch.object(launch_template_step, "pin_asg_launch_template", side_effect=spy):
        result = run(image_id=world.new_ami, diff=True)
    assert not result.get("failed"), result
    assert at_pin == [(sorted(A1), ["AlarmNotification", "ScheduledActions", "ReplaceUnhealthy", "InstanceRefresh"])]
    assert result["launch_template"]["journal"]["suspended_processes"] == [
        "AlarmNotification", "ScheduledActions", "ReplaceUnhealthy", "InstanceRefresh"]
    assert result["diff"]["before"]["suspended_processes"] == ["AZRebalance"]
    assert result["diff"]["after"]["suspended_processes"] == sorted(A1)
    assert run(image_id=world.new_ami)["changed"] is False


def test_a1_a_crash_between_the_journal_and_the_suspension_is_resumed(world, run):
    """A1 and the resume rule: the journal records the processes first; a rerun suspends what it records."""
    from unittest import mock

    from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError

    from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api

    with mock.patch.object(autoscaling_api, "suspend_processes",
                           side_effect=UpgradeError("AccessDenied", "suspend processes: AccessDenied")):
        failed = run(image_id=world.new_ami)
    assert failed["failed"] is True
    assert journal_tags(world)["suspended_processes"] == A1
    assert suspended(world) == [] and world.asg()["LaunchTemplate"]["Version"] == "1"
    rerun = run(image_id=world.new_ami)
    assert rerun["changed"] is True and not rerun.get("failed"), rerun
    assert suspended(world) == sorted(A1) and world.asg()["LaunchTemplate"]["Version"] == "2"
    assert rerun["launch_template"]["journal"]["suspended_processes"] == A1


def test_pin_asg_false_suspends_nothing(world, run):
    run(image_id=world.new_ami, pin_asg=False)
    assert suspended(world) == []


def test_bad_suspend_processes_changes_nothing(world, run):
    before = state(world)
    result = run(image_id=world.new_ami, suspend_processes=["Terminate"])
    assert result["failed"] is True and result["parameter"] == "suspend_processes"
    assert state(world) == before


def test_a_downgrade_is_refused_before_any_change_unless_allowed(world, run):
    """Issue 10 item 19: an older Kubernetes AMI than the nodes run replaced every node without a word."""
    run(image_id=world.new_ami, run_id="up")  # the group now launches the 1.30 AMI; its upgrade is done:
    world.autoscaling.delete_tags(Tags=[dict(ResourceId=ASG_NAME, ResourceType="auto-scaling-group", Key=key)
                                        for key in world.tags() if key.startswith("eksops.nodegroup/")])
    before = state(world)
    refused = run(image_id=world.old_ami)
    assert refused["failed"] and refused["parameter"] == "image_id" and "allow_downgrade" in refused["msg"], refused
    assert state(world) == before
    allowed = run(image_id=world.old_ami, allow_downgrade=True)
    assert not allowed.get("failed") and allowed["changed"], allowed


def test_a_target_newer_than_the_control_plane_is_refused_before_any_change(world, run):
    """SPEC K6: the fixture's control plane is on 1.30."""
    newer = world.ec2.register_image(Name="amazon-eks-node-al2023-x86_64-standard-1.31-v20241109")["ImageId"]
    before = state(world)
    refused = run(image_id=newer)
    assert refused["failed"] and refused["parameter"] == "image_id" and "control plane" in refused["msg"], refused
    assert state(world) == before


JOURNAL_DENIED = ("User: arn:aws:sts::123456789012:assumed-role/upgrader/run is not authorized to perform: "
                  "autoscaling:CreateOrUpdateTags on resource: autoScalingGroup:%s" % ASG_NAME)


def test_issue12_an_aws_error_writing_the_journal_fails_with_a_code_not_a_traceback(world, capsys):
    """Issue 12 (SPEC U8): AWS refuses the journal's CreateOrUpdateTags after the new version was created. The
    module fails with AccessDenied and a message naming the journal's tags and the group (no Python traceback),
    says what it did before (changed), and the group is not pointed at a version no journal records."""
    result = run_module_in_process(launch_template_version.main, dict(BASE, image_id=world.new_ami), capsys,
                                   aws_errors={"CreateOrUpdateTags": ("AccessDenied", JOURNAL_DENIED)})
    assert result["failed"] is True and result["changed"] is True, result
    assert (result["code"], result["aws_error_code"], result["aws_operation"]) == (
        "AccessDenied", "AccessDenied", "CreateOrUpdateTags")
    assert result["msg"].startswith("set tags eksops.nodegroup/run, "), result["msg"]
    assert "on Auto Scaling group %s failed: AccessDenied: %s" % (ASG_NAME, JOURNAL_DENIED) in result["msg"]
    assert "before that, this run created launch template version 2" in result["msg"]
    assert "exception" not in result and "Traceback" not in result["msg"]
    assert world.asg()["LaunchTemplate"]["Version"] == "1"
    assert journal_tags(world) == {}


def test_issue12_a_journal_write_refused_before_any_change_fails_with_a_code(world, capsys):
    """The version exists already, so the journal is the first write: the failure says nothing was changed."""
    version = world.add_version(ImageId=world.new_ami)
    result = run_module_in_process(launch_template_version.main, dict(BASE, version=version), capsys,
                                   aws_errors={"CreateOrUpdateTags": ("AccessDenied", JOURNAL_DENIED)})
    assert result["failed"] is True and not result.get("changed"), result
    assert result["code"] == "AccessDenied" and "set tags eksops.nodegroup/run" in result["msg"]
    assert "before that" not in result["msg"]
    assert world.asg()["LaunchTemplate"]["Version"] == "1"
    assert journal_tags(world) == {}


# ------------------------------------------------------------------------------ issue 29 items 1 and 2 (W1, W2)

@pytest.mark.parametrize("kind, convention, tool", [("self_managed", "terraform", "terraform-aws-eks"),
                                                    ("self_managed", "cloudformation", "CloudFormation"),
                                                    ("self_managed_eksctl", "terraform", "eksctl")])
@pytest.mark.parametrize("target", ["image_id", "launch_template_version"])
def test_issue29_item1_a_version_pinned_behind_its_owners_back_is_refused_before_any_change(
        capsys, kind, convention, tool, target):
    """W1: the owner's next apply would revert the version and replace the nodes undrained: refused, naming the
    target's parameter, the owner and its workflow, with nothing written."""
    with mock_aws():
        world = MotoNodegroup(kind=kind, convention=convention)
        args = dict(image_id=world.new_ami) if target == "image_id" else dict(version=world.add_version(
            ImageId=world.new_ami))
        before = state(world)
        calls = []
        result = run_module_in_process(launch_template_version.main, dict(BASE, accept_owner_revert=False, **args),
                                       capsys, aws_calls=calls)
        assert state(world) == before
    assert result["failed"] and (result["code"], result["parameter"]) == ("OwnedByInfrastructureAsCode", target)
    assert result["owner"]["tool"] == tool and world.asg_name in result["msg"]
    assert "accept_owner_revert=true" in result["msg"] and result["msg"].endswith("Nothing was changed.")
    assert mutating(calls) == []


def test_issue29_item1_the_owners_workflow_rolls_onto_the_version_it_applied_without_touching_the_group(world, run):
    """W1: after terraform applied the new AMI (a new default version, the group pointed at it, its refresh off),
    use_current_launch_template targets that version: nothing created, pinned or suspended here; the journal is
    left to the later phases."""
    version = world.add_version(ImageId=world.new_ami)
    world.ec2.modify_launch_template(LaunchTemplateId=world.lt_id, DefaultVersion=str(version))
    world.autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=world.asg_name, LaunchTemplate=dict(LaunchTemplateId=world.lt_id, Version=str(version)))
    before = state(world)
    result = run(use_current_launch_template=True, accept_owner_revert=False, diff=True)
    assert not result.get("failed"), result
    assert result["changed"] is False and state(world) == before
    template = result["launch_template"]
    assert (template["version"], template["image_id"], template["created"], template["pinned"]) == (
        version, world.new_ami, False, False)
    assert result["diff"]["before"]["launch_template_version"] == result["diff"]["after"]["launch_template_version"]


def test_issue29_item1_use_current_leaves_a_latest_reference_as_the_owner_wrote_it(capsys):
    """W1: CloudFormation and hand-made groups may follow $Latest: the reference is not turned into a number."""
    with mock_aws():
        world = MotoNodegroup(lt_version="$Latest", convention="cloudformation")
        version = world.add_version(ImageId=world.new_ami)
        result = run_module_in_process(launch_template_version.main, dict(
            BASE, accept_owner_revert=False, use_current_launch_template=True), capsys)
        assert world.asg()["LaunchTemplate"]["Version"] == "$Latest"
    assert not result.get("failed"), result
    assert result["launch_template"]["version"] == version and result["launch_template"]["pinned"] is False


def test_issue29_item1_use_current_excludes_the_other_targets(world, run):
    result = run(use_current_launch_template=True, image_id=world.new_ami)
    assert result["failed"] and "mutually exclusive" in result["msg"]


@pytest.mark.parametrize("status, refused", [("Pending", True), ("InProgress", True), ("Cancelling", True),
                                             ("RollbackInProgress", True), ("Baking", True), ("Successful", False),
                                             ("Cancelled", False), ("Failed", False)])
def test_issue29_item2_an_active_instance_refresh_is_refused_before_any_change(
        world, run, monkeypatch, status, refused):
    """W2: an active refresh (even one a suspended process pauses) replaces nodes without a drain."""
    from .. import moto_nodegroup

    monkeypatch.setattr(moto_nodegroup, "INSTANCE_REFRESHES", [
        dict(InstanceRefreshId="r-1", AutoScalingGroupName=world.asg_name, Status=status, PercentageComplete=40)])
    before = state(world)
    result = run(image_id=world.new_ami)
    if refused:
        assert result["failed"] and result["code"] == "InstanceRefreshInProgress", result
        assert result["instance_refresh"] == dict(id="r-1", status=status, percentage_complete=40)
        assert "cancel-instance-refresh" in result["msg"] and state(world) == before
    else:
        assert not result.get("failed") and result["changed"], result


@pytest.mark.parametrize("extra_tags, refused", [(39, False), (40, True)])
def test_issue29_item2_w3_the_tag_budget_is_checked_before_any_change(capsys, extra_tags, refused):
    """W3: the journal (seven tags, journal.TAG_GROUPS, but a failed health gate's record, issue 27 item 1, only
    while a gate failed: lease.check_tag_budget counts it then), the lease and a pause request (issue 27 item 3)
    take up to 8 tags; the group has 3 of its own here, plus these: 42 of its own leave room, 43 do not (with one
    tag per journal field, 31 did not)."""
    with mock_aws():
        world = MotoNodegroup(asg_tags=dict(("team/tag-%02d" % index, "x") for index in range(extra_tags)))
        before = state(world)
        result = run_module_in_process(launch_template_version.main, dict(BASE, image_id=world.new_ami), capsys)
        if refused:
            assert state(world) == before
    if refused:
        assert result["failed"] and result["code"] == "TagLimitExceeded", result
        assert (result["tags"], result["tags_needed"], result["tag_limit"]) == (43, 8, 50)
        assert "Remove at least 1 of its tags" in result["msg"] and result["msg"].endswith("Nothing was changed.")
    else:
        assert not result.get("failed") and result["changed"], result


def test_issue29_item4_an_ami_the_instance_type_cannot_run_is_refused_before_any_change(world, run):
    """An arm64 AMI for an x86_64 group (m5.large) was accepted; EC2 refuses every launch, found 15 minutes in."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ec2.models import ec2_backends

    arm = world.ec2.register_image(Name="amazon-eks-node-al2023-arm64-standard-1.30-v20240615")["ImageId"]
    ec2_backends[DEFAULT_ACCOUNT_ID][REGION].amis[arm].architecture = "arm64"  # moto's RegisterImage drops it
    before = state(world)
    result = run(image_id=arm)
    assert result["failed"] and (result["code"], result["parameter"]) == ("InvalidParameter", "image_id"), result
    assert (result["image_architecture"], result["instance_types"]) == ("arm64", ["m5.large"])
    assert "EC2 would refuse every launch" in result["msg"] and state(world) == before


def test_issue29_item4_the_instance_types_are_the_template_s_and_its_own_overrides():
    overrides = [{"InstanceType": "m6g.large"},
                 {"InstanceType": "c5.large", "LaunchTemplateSpecification": {"LaunchTemplateId": "lt-x86", "Version": "1"}},
                 {"InstanceType": "c6g.large", "ImageId": "ami-own"}, {"InstanceRequirements": {}}]
    asg = {"MixedInstancesPolicy": {"LaunchTemplate": {
        "LaunchTemplateSpecification": {"LaunchTemplateId": "lt-main", "Version": "3"}, "Overrides": overrides}}}
    assert launch_template_step.group_instance_types(asg, {"InstanceType": "m6g.xlarge"}) == ["m6g.large",
                                                                                              "m6g.xlarge"]
    # An override that names the group's own template launches the target too.
    overrides.append({"InstanceType": "m7g.large", "LaunchTemplateSpecification": {"LaunchTemplateId": "lt-main"}})
    assert launch_template_step.group_instance_types(asg, {}) == ["m6g.large", "m7g.large"]
    assert launch_template_step.group_instance_types({}, {}) == []


def test_issue29_item2_a_group_with_a_warm_pool_is_refused_before_any_change(world, run):
    """W2: a scale-out draws warm instances of the old configuration first; the surge would be old nodes."""
    world.autoscaling.put_warm_pool(AutoScalingGroupName=world.asg_name, MinSize=1, PoolState="Stopped")
    before = state(world)
    result = run(image_id=world.new_ami)
    assert result["failed"] and result["code"] == "WarmPoolPresent", result
    assert "delete-warm-pool" in result["msg"] and result["msg"].endswith("Nothing was changed.")
    assert state(world) == before


def test_issue29_item4_an_ami_whose_bootstrap_the_user_data_is_not_for_is_refused_before_any_change(world, run):
    """An AL2023 AMI (nodeadm) on a template whose user data runs AL2's bootstrap.sh ran a full upgrade whose nodes
    never joined, found only when the new nodes' wait timed out."""
    import base64

    al2_user_data = base64.b64encode(b"#!/bin/bash\n/etc/eks/bootstrap.sh demo\n").decode()
    version = world.add_version(UserData=al2_user_data)
    # The group on a version with AL2 user data beside its AL2023 AMI, as a hand edit left it.
    world.autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=world.asg_name, LaunchTemplate=dict(LaunchTemplateId=world.lt_id, Version=str(version)))
    before = state(world)
    result = run(image_id=world.new_ami)
    assert result["failed"] and (result["code"], result["parameter"]) == ("InvalidParameter", "image_id"), result
    assert (result["image_os"], result["user_data_os"]) == ("Amazon Linux 2023", "Amazon Linux 2")
    assert "would never join" in result["msg"] and state(world) == before


def mixed_policy(world, overrides, spot=True):
    """The group's template behind a mixed instances policy with ``overrides``, half spot above one on-demand node,
    as terraform-aws-eks's mixed_instances_policy and eksctl's instancesDistribution write it."""
    distribution = dict(OnDemandBaseCapacity=1, OnDemandPercentageAboveBaseCapacity=50 if spot else 100,
                        SpotAllocationStrategy="price-capacity-optimized")
    world.autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=world.asg_name, MixedInstancesPolicy=dict(
            LaunchTemplate=dict(LaunchTemplateSpecification=dict(LaunchTemplateId=world.lt_id, Version="1"),
                                Overrides=overrides),
            InstancesDistribution=distribution))


def test_issue29_item2_a_mixed_instances_group_with_weights_is_refused_before_any_change(world, run):
    """W2: with WeightedCapacity the group's sizes count capacity units; a surge sized in nodes would not be."""
    mixed_policy(world, [dict(InstanceType="m5.large", WeightedCapacity="2"),
                         dict(InstanceType="m5.xlarge", WeightedCapacity="4")])
    before = state(world)
    result = run(image_id=world.new_ami)
    assert result["failed"] and result["code"] == "MixedInstancesUnsupported", result
    assert result["weighted_capacity"] == ["m5.large=2", "m5.xlarge=4"]
    assert "capacity units" in result["msg"] and result["msg"].endswith("Nothing was changed.")
    assert state(world) == before


def test_issue29_item2_a_spot_mixed_instances_group_of_plain_overrides_upgrades(world, run):
    """Overrides of instance types only (weights of 1 included) launch the group's template: the upgrade goes."""
    mixed_policy(world, [dict(InstanceType="m5.large", WeightedCapacity="1"),
                         dict(InstanceType="m5a.large", WeightedCapacity="1")])
    result = run(image_id=world.new_ami)
    assert not result.get("failed") and result["changed"], result


def test_issue29_item2_a_new_version_is_refused_while_an_override_launches_its_own_template(world, run):
    """W2: an override with a template of its own (the Graviton types' AMI, "Specify a different launch template for an
    instance type") keeps its AMI when the group's template gets a new version: its nodes would never be upgraded."""
    arm = world.ec2.create_launch_template(LaunchTemplateName="workers-arm", LaunchTemplateData=dict(
        ImageId=world.old_ami, InstanceType="m6g.large"))["LaunchTemplate"]["LaunchTemplateId"]
    mixed_policy(world, [dict(InstanceType="m5.large"), dict(
        InstanceType="m6g.large", LaunchTemplateSpecification=dict(LaunchTemplateId=arm, Version="$Latest"))])
    before = state(world)
    result = run(image_id=world.new_ami, accept_owner_revert=True)
    assert result["failed"] and (result["code"], result["parameter"]) == ("MixedInstancesUnsupported", "image_id")
    assert result["overrides"] == ["m6g.large (launch template %s version $Latest)" % arm]
    assert "use_current_launch_template=true" in result["msg"] and state(world) == before
    # The owner's workflow: each template carries its AMI, and the nodes are rolled onto what the group launches.
    assert not run(use_current_launch_template=True).get("failed")


def test_issue29_the_diff_says_which_ami_comes_from_a_resolve_ssm_parameter():
    """Issue 29 item 4: the diff shows the AMI a resolve:ssm: version resolves to, the parameter beside it, and that
    a version this run creates names the target AMI's id (no parameter)."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.launch_template_version import image_aliases
    from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.launch_templates import IMAGE_ALIAS

    current = {"VersionNumber": 2, "LaunchTemplateData": {"ImageId": "ami-0a"}, IMAGE_ALIAS: "resolve:ssm:/p"}
    created = image_aliases({}, {}, dict(create=True, target_version=3), True, current, current, None)
    assert (created["before"]["image_alias"], created["after"]["image_alias"]) == ("resolve:ssm:/p", None)
    kept = image_aliases({}, {}, dict(create=False, target_version=2), False, current, current, None)
    assert kept["after"]["image_alias"] == "resolve:ssm:/p"
    plain = {"VersionNumber": 2, "LaunchTemplateData": {"ImageId": "ami-0a"}}
    assert image_aliases({}, {}, dict(create=True, target_version=3), True, plain, plain, None) == dict(
        before={}, after={})
