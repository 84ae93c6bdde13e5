# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch template step: launch_template_version's work for its module or the nodegroup_setup action.

``module`` is anything with the EksopsModule surface these functions use: ``params`` (launch_template_version's
options, ARGUMENT_SPEC), ``check_mode``, ``aws(service)``, ``with_diff`` and ``fail_upgrade``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.asg_state import (
    DEFAULT_SUSPENDED_PROCESSES,
    check_nothing_replaces_nodes_behind,
    suspended_process_names,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import ec2 as ec2_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.shapes import aws_tags_to_dict
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    OWNED_BY_INFRASTRUCTURE_AS_CODE,
    UPGRADE_TARGET_CONFLICT,
    UpgradeError,
    invalid_parameter,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import read_eks_cluster
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.mixed_instances import (
    check_overrides_follow,
    check_weights,
    own_configuration_overrides,
    policy_overrides,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import LEASE_OPTION, check_tag_budget, claim
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.user_data import BOOTSTRAP_OF, bootstrap_of
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.amis import (
    ami_os,
    check_kubernetes_version,
    check_not_newer_than_control_plane,
    check_version_change,
    resolve_eks_ami,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.launch_templates import (
    describe_image,
    describe_launch_template,
    describe_lt_version,
    IMAGE_ALIAS,
    journal_conflict,
    lt_version_image,
    pin_asg_launch_template,
    plan_launch_template_version,
    resolve_launch_template_id,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import (
    asg_launch_template_spec,
    find_module_nodegroup,
    NODEGROUP_ARGUMENT_SPEC,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.ownership import group_owner, revert_refusal
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.process_suspension import (
    plan_suspension,
    validate_suspend_processes,
)

ARGUMENT_SPEC = dict(
    NODEGROUP_ARGUMENT_SPEC,
    image_id=dict(type="str"),
    kubernetes_version=dict(type="str"),
    version=dict(type="int", aliases=["launch_template_version"]),
    description=dict(type="str"),
    set_default=dict(type="bool", default=False),
    pin_asg=dict(type="bool", default=True),
    run_id=dict(type="str"),
    force_new_target=dict(type="bool", default=False),
    allow_downgrade=dict(type="bool", default=False),
    suspend_processes=dict(type="list", elements="str", default=list(DEFAULT_SUSPENDED_PROCESSES)),
    use_current_launch_template=dict(type="bool"),  # no default: one of the targets, which exclude each other
    accept_owner_revert=dict(type="bool", default=False),
    **LEASE_OPTION
)
TARGET_OPTIONS = ["image_id", "kubernetes_version", "version", "use_current_launch_template"]


# The name messages give the version option: the playbooks' and roles', and the module's alias (issue 29 item 4).
VERSION_PARAMETER = "launch_template_version"


def target_option(params: Any) -> str:
    """The name of the option that set the target, as messages name it."""
    name = next(name for name in TARGET_OPTIONS if params[name] not in (None, False))
    return VERSION_PARAMETER if name == "version" else name


def check_options(params: Any) -> None:
    """What the options alone can refuse: processes an upgrade cannot suspend; a launch template version that is not
    a number from 1 (0 read as the group's current version, issue 29 item 4, and a negative one reached EC2)."""
    validate_suspend_processes(params["suspend_processes"])
    if params["version"] is not None and params["version"] < 1:
        raise invalid_parameter(VERSION_PARAMETER, "launch_template_version must be a launch template version number "
                                "(1 or more), got %s" % params["version"])


def resolve_target_image(module: Any, ec2: Any, lt_id: str,
                         current: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """(target image id or None, named version description or None, SSM parameter or None); validated."""
    params = module.params
    if params["use_current_launch_template"]:
        # SPEC W1: the version the group already uses, as its owner's apply left it; nothing pinned or created.
        image_id = lt_version_image(current)
        if image_id:
            describe_image(ec2, image_id, parameter="use_current_launch_template")
        return image_id, current, None
    if params["version"] is not None:
        named = describe_lt_version(ec2, lt_id, params["version"], parameter=VERSION_PARAMETER)
        image_id = lt_version_image(named)
        if image_id:
            describe_image(ec2, image_id, parameter=VERSION_PARAMETER)
        return image_id, named, None
    if params["image_id"]:
        describe_image(ec2, params["image_id"], parameter="image_id")
        return params["image_id"], None, None
    # K6 first: a version newer than the control plane is refused as such, not as an AMI SSM does not publish.
    check_not_newer_than_control_plane(
        "kubernetes_version", check_kubernetes_version(params["kubernetes_version"]),
        "Kubernetes %s" % params["kubernetes_version"],
        read_eks_cluster(module.aws("eks"), params["cluster_name"]).get("version"))
    current_image_id = lt_version_image(current)
    current_image = describe_image(ec2, current_image_id, parameter="kubernetes_version") if current_image_id else {}
    image_id, ssm_parameter = resolve_eks_ami(module.aws("ssm"), current_image.get("Name"),
                                              params["kubernetes_version"])
    describe_image(ec2, image_id, parameter="kubernetes_version")
    return image_id, None, ssm_parameter


def check_target_version(module: Any, ec2: Any, plan: dict[str, Any], nodes_image_id: str | None) -> None:
    """K6 skew and downgrade, judged from the AMIs' names, before any change. ``nodes_image_id``: the AMI the
    nodes ran before this upgrade (the journal's, on a rerun after the group was pinned to the target)."""
    if not plan["image_id"] or plan["image_id"] == nodes_image_id:
        return
    params = module.params
    parameter = target_option(params)
    names = dict((image_id, describe_image(ec2, image_id, parameter=parameter).get("Name"))
                 for image_id in (plan["image_id"], nodes_image_id) if image_id)
    cluster_version = read_eks_cluster(module.aws("eks"), params["cluster_name"]).get("version")
    check_version_change(parameter, names.get(plan["image_id"]), names.get(nodes_image_id),
                         cluster_version, params["allow_downgrade"])


def group_instance_types(asg: Mapping[str, Any], template_data: Mapping[str, Any]) -> list[str]:
    """The instance types the group launches the target AMI on: the launch template's, and those of the mixed
    instances policy's overrides that use the group's template (an override with a template or AMI of its own does not)."""
    types = [template_data["InstanceType"]] if template_data.get("InstanceType") else []
    own = own_configuration_overrides(asg)
    types.extend(override["InstanceType"] for override in policy_overrides(asg)
                 if override.get("InstanceType") and override not in own)
    return sorted(set(types))


def check_image_fits(module: Any, ec2: Any, asg: Mapping[str, Any], plan: Mapping[str, Any],
                     template_data: Mapping[str, Any]) -> None:
    """Issue 29 item 4, before any change: an AMI that an instance type of the group cannot run (arm64 on x86_64, or
    the reverse: EC2 would refuse every launch), or whose bootstrap the template's user data is not written for (AL2
    user data on an AL2023 AMI: the nodes would never join), is refused; each was found only when no new node came."""
    if not plan["image_id"]:
        return
    parameter = target_option(module.params)
    image = describe_image(ec2, plan["image_id"], parameter=parameter)
    target_os, user_data_os = ami_os(image.get("Name")), bootstrap_of(template_data.get("UserData"))
    if target_os and user_data_os and target_os != user_data_os:
        raise invalid_parameter(
            parameter, "AMI %s (%s) is %s, which boots with %s, but the launch template's user data is written for "
            "%s (%s): its nodes would never join the cluster. Give the launch template user data for the AMI's "
            "bootstrap in a version of your own, and upgrade to that version. Nothing was changed."
            % (plan["image_id"], parameter, target_os, BOOTSTRAP_OF[target_os], user_data_os,
               BOOTSTRAP_OF[user_data_os]), image_os=target_os, user_data_os=user_data_os)
    instance_types = group_instance_types(asg, template_data)
    if not instance_types:
        return
    architecture = image.get("Architecture")
    supported = ec2_api.describe_instance_type_architectures(ec2, instance_types)
    unfit = [name for name in instance_types if architecture and supported.get(name)
             and architecture not in supported[name]]
    if unfit:
        raise invalid_parameter(
            parameter, "AMI %s (%s) is %s, but the group launches it on %s (%s): EC2 would refuse every launch. "
            "Choose an AMI of the instance types' architecture. Nothing was changed."
            % (plan["image_id"], parameter, architecture, ", ".join(unfit),
               ", ".join("/".join(supported[name]) for name in unfit)),
            image_architecture=architecture, instance_types=unfit)


def target_words(plan: Mapping[str, Any]) -> str:
    """The plan's target for a person: the version it would create, or the existing one it names."""
    if plan["create"]:
        return "a new launch template version with %s" % plan["image_id"]
    return "launch template version %s (%s)" % (plan["target_version"], plan["image_id"])


def check_owner(params: Any, asg: dict[str, Any], plan: dict[str, Any], pin: bool) -> None:
    """SPEC W1: refuse to create or pin a version behind the back of the infrastructure as code that owns the group
    (its next apply reverts it and replaces the nodes without a drain), unless accept_owner_revert."""
    if not (plan["create"] or pin) or params["accept_owner_revert"]:
        return
    asg_name = asg["AutoScalingGroupName"]
    owner = group_owner(asg_name, aws_tags_to_dict(asg.get("Tags")), params["cluster_name"])
    if owner is None:
        return
    parameter = target_option(params)
    raise UpgradeError(OWNED_BY_INFRASTRUCTURE_AS_CODE, revert_refusal(owner, asg_name, target_words(plan), parameter),
                       parameter=parameter, owner=owner._asdict())


def journal_for(module: Any, journal: Journal | None, asg: dict[str, Any], lt_id: str,
                plan: dict[str, Any]) -> tuple[Journal | None, list[str]]:
    """(The journal to write before pinning, or None when the existing one stays as it is; the processes to
    suspend before pinning, SPEC A1)."""
    updated = retargeted_journal(module, journal, asg["AutoScalingGroupName"], lt_id, plan)
    if not module.params["pin_asg"]:
        return updated, []
    base = updated or journal
    ours, to_suspend = plan_suspension(base.suspended_processes, module.params["suspend_processes"],
                                       suspended_process_names(asg))
    if ours != base.suspended_processes:
        updated = base.replace(suspended_processes=ours)
    return updated, to_suspend


def retargeted_journal(module: Any, journal: Journal | None, asg_name: str, lt_id: str,
                       plan: dict[str, Any]) -> Journal | None:
    """The journal of this target, or None when the existing one already is."""
    target_fields = dict(
        previous_launch_template_version=str(plan["source_version"]),
        target_launch_template_version=str(plan["target_version"]),
        launch_template_id=lt_id,
        target_image_id=plan["image_id"],
    )
    if journal is None:
        return Journal.start(phase="setup", run_id=module.params["run_id"], **target_fields)
    if not journal_conflict(journal, lt_id, plan["target_version"]):
        return None
    if not module.params["force_new_target"]:
        raise UpgradeError(
            UPGRADE_TARGET_CONFLICT,
            "Auto Scaling group %s has an unfinished upgrade (run %s, phase %s) to launch template %s version %s "
            "(%s), but this run targets %s. Finish or restore that upgrade first, or set force_new_target=true "
            "to retarget it" % (asg_name, journal.run_id, journal.phase, journal.launch_template_id,
                                journal.target_launch_template_version, journal.target_image_id, target_words(plan)),
            parameter="force_new_target", journal=journal.to_dict())
    return journal.retargeted(lt_id, str(plan["target_version"]), plan["image_id"], str(plan["source_version"]))


def create_version(module: Any, ec2: Any, lt_id: str, plan: dict[str, Any]) -> int:
    """Create the new version from SourceVersion with only the AMI replaced; returns its number."""
    description = module.params["description"] or "eksops.nodegroup: %s from version %s" % (
        plan["image_id"], plan["source_version"])
    return ec2_api.create_launch_template_version(ec2, lt_id, plan["source_version"], plan["image_id"], description)


def apply_changes(module: Any, asg: dict[str, Any], lt_id: str, plan: dict[str, Any], pin: bool, set_default: bool,
                  journal: Journal | None, new_journal: Journal | None, to_suspend: list[str]) -> Journal | None:
    """Create the version, record the journal, suspend the processes, pin the group, set the default: in that
    order, so a crash leaves a state a rerun picks up. Returns the journal written (or None)."""
    autoscaling, ec2 = module.aws("autoscaling"), module.aws("ec2")
    asg_name = asg["AutoScalingGroupName"]
    created_version = None
    changed = []  # what is done already when a later step fails (issue 10 item 24: "Nothing was changed" was said)
    try:
        if plan["create"]:
            created_version = plan["target_version"] = create_version(module, ec2, lt_id, plan)
            changed.append("created launch template version %s" % created_version)
            if new_journal is not None:
                new_journal = new_journal.replace(target_launch_template_version=str(plan["target_version"]))
        if new_journal is not None:
            write_journal(autoscaling, asg_name, new_journal, previous=journal or Journal())
            changed.append("wrote the upgrade journal")
        autoscaling_api.suspend_processes(autoscaling, asg_name, to_suspend)
        if to_suspend:
            changed.append("suspended processes %s" % ", ".join(to_suspend))
        if pin:
            pin_asg_launch_template(autoscaling, asg, lt_id, plan["target_version"])
            changed.append("pointed the group at version %s" % plan["target_version"])
        if set_default:
            ec2_api.set_default_launch_template_version(ec2, lt_id, plan["target_version"])
    except UpgradeError as err:
        if not changed:
            raise
        # Something is done already: say so (changed, and what), a rerun picks it up from the journal.
        err.msg = "%s (before that, this run %s)" % (err.msg, "; ".join(changed))
        done = dict(asg_name=asg_name, id=lt_id)
        if created_version is not None:
            done.update(version=created_version, image_id=plan["image_id"], created=True)
        module.fail_upgrade(err, changed=True, launch_template=done)
    return new_journal


def previous_of_upgrade(ec2: Any, lt_id: str, plan: dict[str, Any], journal: Journal | None) -> tuple[int, str | None]:
    """(version, AMI) the group used before the upgrade: the journal's, when it records one of this template,
    since a rerun after a crash finds the group on the target already (a rollback goes back to it)."""
    recorded = journal.previous_launch_template_version if journal is not None else None
    if journal is None or journal.launch_template_id != lt_id or not recorded \
            or str(recorded) == str(plan["source_version"]):
        return plan["source_version"], plan["previous_image_id"]
    previous = describe_lt_version(ec2, lt_id, recorded, parameter="asg_name")
    return int(previous["VersionNumber"]), lt_version_image(previous)


def check_plan(module: Any, ec2: Any, asg: dict[str, Any], plan: dict[str, Any], template_data: Mapping[str, Any],
               nodes_image_id: str | None, pin: bool) -> None:
    """Before any change: the target's Kubernetes version, its AMI on the group's instance types and user data, the
    mixed instances overrides it would leave behind (SPEC W2), the group's owner (W1)."""
    check_target_version(module, ec2, plan, nodes_image_id)
    check_image_fits(module, ec2, asg, plan, template_data)
    check_overrides_follow(asg, plan["target_version"] != plan["source_version"], target_option(module.params))
    check_owner(module.params, asg, plan, pin)


def run(module: Any) -> dict[str, Any]:
    params = module.params
    check_options(params)
    autoscaling, ec2 = module.aws("autoscaling"), module.aws("ec2")
    group = find_module_nodegroup(
        module, refuse_managed="create versions of its launch template or point its Auto Scaling group at one")
    asg, asg_name = group.asg, group.asg_name
    check_nothing_replaces_nodes_behind(autoscaling, asg)
    check_weights(asg)
    check_tag_budget(asg)
    spec = asg_launch_template_spec(asg)
    lt_id = resolve_launch_template_id(ec2, spec)
    template = describe_launch_template(ec2, lt_id)
    current = describe_lt_version(ec2, lt_id, spec["version"], parameter="asg_name")
    latest = describe_lt_version(ec2, lt_id, template["LatestVersionNumber"], parameter="asg_name")
    image_id, named, ssm_parameter = resolve_target_image(module, ec2, lt_id, current)
    plan = plan_launch_template_version(spec["version"], current, latest, image_id, named)
    if params["use_current_launch_template"]:
        plan["pin"] = False  # the group's reference stays as its owner wrote it, "$Latest" or "$Default" included
    journal = Journal.from_tags(asg.get("Tags"), asg_name=asg_name)
    pin = plan["pin"] and params["pin_asg"]
    check_plan(module, ec2, asg, plan, (named or current).get("LaunchTemplateData") or {},
               previous_of_upgrade(ec2, lt_id, plan, journal)[1], pin)

    new_journal, to_suspend = journal_for(module, journal, asg, lt_id, plan) if pin or journal is not None \
        else (None, [])
    default_version = int(template["DefaultVersionNumber"])
    set_default = params["set_default"] and default_version != plan["target_version"]

    if plan["create"] or pin or set_default or new_journal is not None or to_suspend:
        claim(module, autoscaling, asg)
    if not module.check_mode:
        new_journal = apply_changes(module, asg, lt_id, plan, pin, set_default, journal, new_journal, to_suspend)
    if set_default:
        default_version = plan["target_version"]
    final_journal = new_journal if new_journal is not None else journal
    previous_version, previous_image_id = previous_of_upgrade(ec2, lt_id, plan, final_journal)

    launch_template = dict(
        id=lt_id, name=template.get("LaunchTemplateName") or spec["name"],
        previous_version=previous_version, version=plan["target_version"],
        previous_image_id=previous_image_id, image_id=plan["image_id"],
        created=plan["create"], pinned=pin, default_version=default_version, asg_name=asg_name,
        journal=final_journal.to_dict() if final_journal is not None else None)
    if ssm_parameter:
        launch_template["ssm_parameter"] = ssm_parameter
    result = dict(changed=bool(plan["create"] or pin or set_default or new_journal is not None or to_suspend),
                  launch_template=launch_template)
    after_version = str(plan["target_version"]) if pin else spec["version"]
    suspended_before = sorted(suspended_process_names(asg))
    before = dict(asg_name=asg_name, launch_template_version=spec["version"], image_id=plan["previous_image_id"],
                  default_version=int(template["DefaultVersionNumber"]), suspended_processes=suspended_before)
    after = dict(asg_name=asg_name, launch_template_version=after_version,
                 image_id=plan["image_id"] if pin else plan["previous_image_id"], default_version=default_version,
                 suspended_processes=sorted(set(suspended_before) | set(to_suspend)))
    return module.with_diff(result, **image_aliases(before, after, plan, pin, current, latest, named))


def image_aliases(before: dict[str, Any], after: dict[str, Any], plan: Mapping[str, Any], pin: bool,
                  current: Mapping[str, Any], latest: Mapping[str, Any], named: Mapping[str, Any] | None
                  ) -> dict[str, dict[str, Any]]:
    """The diff, saying (issue 29 item 4) where a version's ImageId is a Systems Manager parameter (the image_id
    shown is the AMI it resolves to): a version this run creates has the target AMI's id written out."""
    if plan["create"]:
        target = {}
    elif named is not None:
        target = named
    else:
        target = latest if plan["target_version"] == int(latest["VersionNumber"]) else current
    aliases = (current.get(IMAGE_ALIAS), target.get(IMAGE_ALIAS) if pin else current.get(IMAGE_ALIAS))
    if any(aliases):
        before, after = dict(before, image_alias=aliases[0]), dict(after, image_alias=aliases[1])
    return dict(before=before, after=after)
