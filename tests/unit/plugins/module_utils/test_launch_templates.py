# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Launch templates: the plan of launch_template_version (SPEC U1) and the lookups that name their parameter."""

from __future__ import annotations


import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import launch_templates as lts
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal


DATA = {"ImageId": "ami-old", "InstanceType": "m5.large", "UserData": "x"}


def lt_version(number, **data):
    return {"VersionNumber": number, "LaunchTemplateData": dict(DATA, **data)}


def test_new_image_creates_a_version_from_the_current_one():
    plan = lts.plan_launch_template_version("1", lt_version(1), lt_version(1), "ami-new")
    assert plan == dict(source_version=1, target_version=2, create=True, pin=True, image_id="ami-new",
                        previous_image_id="ami-old")


def test_source_is_the_asg_version_not_latest():
    plan = lts.plan_launch_template_version("2", lt_version(2), lt_version(5, InstanceType="m6i.large"), "ami-new")
    assert (plan["source_version"], plan["target_version"], plan["create"]) == (2, 6, True)


def test_asg_already_on_the_target_changes_nothing():
    plan = lts.plan_launch_template_version("2", lt_version(2, ImageId="ami-new"), lt_version(2, ImageId="ami-new"),
                                            "ami-new")
    assert (plan["create"], plan["pin"], plan["target_version"]) == (False, False, 2)


def test_asg_on_latest_alias_is_pinned_to_the_number():
    plan = lts.plan_launch_template_version("$Latest", lt_version(4, ImageId="ami-new"),
                                            lt_version(4, ImageId="ami-new"), "ami-new")
    assert (plan["create"], plan["pin"], plan["target_version"]) == (False, True, 4)


def test_latest_already_holding_the_new_image_is_reused():
    """A rerun after a crash between create and pin must not create a second version."""
    plan = lts.plan_launch_template_version("1", lt_version(1), lt_version(2, ImageId="ami-new"), "ami-new")
    assert (plan["create"], plan["pin"], plan["target_version"]) == (False, True, 2)


def test_latest_with_other_changes_is_not_reused():
    plan = lts.plan_launch_template_version("1", lt_version(1), lt_version(2, ImageId="ami-new", UserData="y"),
                                            "ami-new")
    assert (plan["create"], plan["target_version"]) == (True, 3)


def test_named_version():
    named = lt_version(7, ImageId="ami-seven")
    plan = lts.plan_launch_template_version("3", lt_version(3), lt_version(9), named=named)
    assert (plan["create"], plan["pin"], plan["target_version"], plan["image_id"]) == (False, True, 7, "ami-seven")
    assert lts.plan_launch_template_version("7", named, lt_version(9), named=named)["pin"] is False


def test_plan_needs_a_target():
    with pytest.raises(ValueError):
        lts.plan_launch_template_version("1", lt_version(1), lt_version(1))


def test_journal_conflict():
    journal = Journal(phase="upgrade", launch_template_id="lt-1", target_launch_template_version="2")
    assert not lts.journal_conflict(None, "lt-1", 2)
    assert not lts.journal_conflict(journal, "lt-1", 2)
    assert lts.journal_conflict(journal, "lt-1", 3)
    assert lts.journal_conflict(journal, "lt-2", 2)


def test_launch_template_and_image_lookups_name_the_parameter(world):
    assert lts.describe_lt_version(world.ec2, world.lt_id, 1)["LaunchTemplateData"]["ImageId"] == world.old_ami
    with pytest.raises(UpgradeError) as raised:
        lts.describe_lt_version(world.ec2, world.lt_id, 42, parameter="version")
    assert (raised.value.code, raised.value.details["parameter"]) == ("ResourceNotFound", "version")
    assert "42" in raised.value.msg
    assert lts.describe_image(world.ec2, world.new_ami)["ImageId"] == world.new_ami
    with pytest.raises(UpgradeError) as raised:
        lts.describe_image(world.ec2, "ami-00000000000000000")
    assert (raised.value.code, raised.value.details["parameter"]) == ("ResourceNotFound", "image_id")
    assert lts.resolve_launch_template_id(world.ec2, {"id": None, "name": world.lt_name}) == world.lt_id


def test_target_lt_version_is_the_named_one_else_the_asgs(world):
    """U1: the version new nodes run; a missing named version names its option, a missing ASG one asg_name."""
    assert lts.target_lt_version(world.ec2, world.lt_id, "1") == (1, world.old_ami)
    assert lts.target_lt_version(world.ec2, world.lt_id, "99", named=1, parameter="target") == (1, world.old_ami)
    for named, parameter in ((99, "target"), (None, "asg_name")):
        with pytest.raises(UpgradeError) as raised:
            lts.target_lt_version(world.ec2, world.lt_id, "99", named=named, parameter="target")
        assert (raised.value.code, raised.value.details["parameter"]) == ("ResourceNotFound", parameter)


def test_pin_asg_launch_template(world):
    version = world.add_version(ImageId=world.new_ami)
    try:
        lts.pin_asg_launch_template(world.autoscaling, world.asg(), world.lt_id, version)
        assert world.asg()["LaunchTemplate"]["Version"] == str(version)
    finally:
        lts.pin_asg_launch_template(world.autoscaling, world.asg(), world.lt_id, 1)


class VersionsAnswering:
    """An EC2 client whose DescribeLaunchTemplateVersions answers one version whose ImageId is ``image_id``, resolved to
    ``resolved`` with ResolveAlias (as EC2 does for a resolve:ssm: parameter); records each call's ResolveAlias."""

    def __init__(self, image_id, resolved):
        self.image_id, self.resolved, self.calls = image_id, resolved, []

    def describe_launch_template_versions(self, LaunchTemplateId, Versions, ResolveAlias):
        self.calls.append(ResolveAlias)
        image_id = self.resolved if ResolveAlias else self.image_id
        return {"LaunchTemplateVersions": [{"VersionNumber": 3, "LaunchTemplateId": LaunchTemplateId,
                                            "LaunchTemplateData": dict(DATA, ImageId=image_id)}]}


def test_issue29_a_template_whose_image_id_is_resolve_ssm_is_read_as_the_ami_it_resolves_to():
    """Issue 29 item 4: the version's AMI is the one its parameter resolves to now (what the next launch runs), the
    parameter kept beside it; an AMI id costs one call."""
    ec2 = VersionsAnswering("resolve:ssm:/aws/service/eks/optimized-ami/1.29/x/recommended/image_id", "ami-0a")
    described = lts.describe_lt_version(ec2, "lt-1", "$Latest")
    assert lts.lt_version_image(described) == "ami-0a" and ec2.calls == [False, True]
    assert described[lts.IMAGE_ALIAS] == "resolve:ssm:/aws/service/eks/optimized-ami/1.29/x/recommended/image_id"
    plain = VersionsAnswering("ami-0b", "ami-0b")
    described = lts.describe_lt_version(plain, "lt-1", 3)
    assert lts.lt_version_image(described) == "ami-0b" and lts.IMAGE_ALIAS not in described and plain.calls == [False]


def test_issue29_a_version_created_from_a_resolve_ssm_one_names_the_target_ami():
    """The plan from a resolved version: another AMI creates a version (written with the AMI id, SourceVersion the
    current one); the AMI the parameter resolves to already needs no new version."""
    current = dict(lt_version(2, ImageId="ami-0a"), **{lts.IMAGE_ALIAS: "resolve:ssm:/p"})
    plan = lts.plan_launch_template_version("2", current, current, "ami-new")
    assert (plan["create"], plan["target_version"], plan["image_id"], plan["previous_image_id"]) == (
        True, 3, "ami-new", "ami-0a")
    assert lts.plan_launch_template_version("2", current, current, "ami-0a")["create"] is False
