# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Launch templates: the versions an upgrade reads, creates and points the group at (SPEC U1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import ec2 as ec2_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    LAUNCH_TEMPLATE_VERSION_CHANGED,
    NOT_FOUND,
    UpgradeError,
    not_found,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import asg_launch_template_spec

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal


def pin_asg_launch_template(autoscaling: Any, asg: Mapping[str, Any], lt_id: str, version: int | str) -> None:
    """Point the ASG at one exact launch template version number."""
    autoscaling_api.set_launch_template(autoscaling, asg["AutoScalingGroupName"],
                                        dict(LaunchTemplateId=lt_id, Version=str(version)),
                                        mixed=asg_launch_template_spec(asg)["mixed"])


# EC2 User Guide, "Use a Systems Manager parameter instead of an AMI ID": a launch template's ImageId may name a
# parameter, resolved to an AMI id at each launch.
SSM_IMAGE_PREFIX = "resolve:ssm:"
# Ours, not AWS's: the ImageId a version gives as a parameter, kept in its description next to the AMI id it resolves to.
IMAGE_ALIAS = "ImageAlias"


def describe_lt_version(ec2: Any, lt_id: str, version: int | str, parameter: str = "version") -> dict[str, Any]:
    """One launch template version (number, "$Latest" or "$Default"); ResourceNotFound naming ``parameter``. Issue 29
    item 4: an ImageId given as a Systems Manager parameter is described as the AMI id it resolves to now
    (ResolveAlias), which is what the next launch runs; the parameter is kept as IMAGE_ALIAS."""
    described = _describe_lt_version(ec2, lt_id, version, parameter, False)
    alias = lt_version_image(described)
    if not (alias or "").startswith(SSM_IMAGE_PREFIX):
        return described
    return dict(_describe_lt_version(ec2, lt_id, version, parameter, True), **{IMAGE_ALIAS: alias})


def _describe_lt_version(ec2: Any, lt_id: str, version: int | str, parameter: str, resolve_alias: bool) -> dict[str, Any]:
    try:
        described = ec2_api.describe_launch_template_version(ec2, lt_id, version, resolve_alias)
    except UpgradeError as err:
        if err.code == NOT_FOUND or "NotFound" in err.details.get("aws_error_code", ""):
            raise not_found(parameter, "Launch template %s has no version %s (%s)" % (lt_id, version, parameter),
                            launch_template_id=lt_id, **err.details)
        raise
    if described is None:
        raise not_found(parameter, "Launch template %s has no version %s (%s)" % (lt_id, version, parameter),
                        launch_template_id=lt_id)
    return described


def lt_version_image(version_description: Mapping[str, Any]) -> str | None:
    """The AMI of a launch template version description, or None."""
    return (version_description.get("LaunchTemplateData") or {}).get("ImageId")


def target_lt_version(ec2: Any, lt_id: str, asg_version: int | str, named: int | str | None = None,
                      parameter: str = "launch_template_version") -> tuple[int, str | None]:
    """(version number, AMI) of the launch template version new nodes run: ``named`` when given
    (ResourceNotFound naming ``parameter``), else the one the ASG points at (``asg_version``, a number or
    "$Latest"/"$Default"; ResourceNotFound naming asg_name)."""
    described = describe_lt_version(ec2, lt_id, named or asg_version, parameter=parameter if named else "asg_name")
    return int(described["VersionNumber"]), lt_version_image(described)


def describe_image(ec2: Any, image_id: str, parameter: str = "image_id") -> dict[str, Any]:
    """The AMI description; ResourceNotFound naming ``parameter`` when it does not exist (or is not visible)."""
    try:
        image = ec2_api.describe_image(ec2, image_id)
    except UpgradeError as err:
        if err.code == NOT_FOUND or err.details.get("aws_error_code", "").startswith("InvalidAMIID"):
            raise not_found(parameter, "AMI %s (%s) does not exist or is not visible to this account"
                            % (image_id, parameter), image_id=image_id)
        raise
    if image is None:
        raise not_found(parameter, "AMI %s (%s) does not exist or is not visible to this account"
                        % (image_id, parameter), image_id=image_id)
    return image


def resolve_launch_template_id(ec2: Any, spec: Mapping[str, Any]) -> str:
    """The launch template id of an ASG's spec (which may name the template instead)."""
    if spec.get("id"):
        return spec["id"]
    template = ec2_api.describe_launch_template_named(ec2, spec["name"])
    if template is None:
        raise not_found("asg_name", "The ASG's launch template %s does not exist" % spec.get("name"))
    return template["LaunchTemplateId"]


def describe_launch_template(ec2: Any, lt_id: str) -> dict[str, Any]:
    """The launch template (name, DefaultVersionNumber, LatestVersionNumber)."""
    template = ec2_api.describe_launch_template(ec2, lt_id)
    if template is None:
        raise not_found("asg_name", "Launch template %s does not exist" % lt_id, launch_template_id=lt_id)
    return template


def plan_launch_template_version(asg_version: int | str, current: Mapping[str, Any], latest: Mapping[str, Any],
                                 target_image_id: str | None = None, named: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What launch_template_version must do (SPEC U1), given descriptions of LT versions.

    ``asg_version``: the version string on the ASG now; ``current``: the version it resolves to (the source);
    ``latest``: $Latest; ``named``: the version the user named, else ``target_image_id`` is the new AMI.
    Reuses, rather than creates, a version whose data already is the source's with the new image: the
    current one, or $Latest (a rerun after a crash between create and pin).
    Returns {source_version, target_version (predicted when create), create, pin, image_id, previous_image_id}.
    """
    source_version = int(current["VersionNumber"])
    create = False
    if named is not None:
        target_version = int(named["VersionNumber"])
        target_image_id = lt_version_image(named)
    else:
        if not target_image_id:
            raise ValueError("plan_launch_template_version needs target_image_id or named")
        wanted_data = dict(current.get("LaunchTemplateData") or {}, ImageId=target_image_id)
        if (current.get("LaunchTemplateData") or {}) == wanted_data:
            target_version = source_version
        elif (latest.get("LaunchTemplateData") or {}) == wanted_data:
            target_version = int(latest["VersionNumber"])
        else:
            target_version = int(latest["VersionNumber"]) + 1
            create = True
    return dict(
        source_version=source_version,
        target_version=target_version,
        create=create,
        pin=str(asg_version) != str(target_version),
        image_id=target_image_id,
        previous_image_id=lt_version_image(current),
    )


def journal_conflict(journal: Journal | None, lt_id: str, target_version: int | str) -> bool:
    """True when an upgrade journal exists for another launch template version than this target."""
    return journal is not None and not journal.targets(lt_id, target_version)


def launch_template_moved(ec2: Any, asg: Mapping[str, Any], journal: Journal | None) -> dict[str, str] | None:
    """Issue 29 item 4: the launch template the group launches from now, {launch_template_id, version}, when it is
    not the target its upgrade journal records (None when it is, or without a journal or target). A "$Latest" or
    "$Default" reference is resolved: the infrastructure-as-code workflow leaves one on the group."""
    if journal is None or journal.launch_template_id is None or journal.target_launch_template_version is None:
        return None
    spec = asg_launch_template_spec(asg)
    lt_id = resolve_launch_template_id(ec2, spec)
    version = spec["version"]
    if lt_id == journal.launch_template_id and not version.isdigit():
        version = str(target_lt_version(ec2, lt_id, version)[0])
    if lt_id == journal.launch_template_id and version == str(journal.target_launch_template_version):
        return None
    return dict(launch_template_id=lt_id, version=spec["version"])


def check_launch_template_unmoved(ec2: Any, asg: Mapping[str, Any], journal: Journal | None) -> None:
    """Issue 29 item 4, before an upgrade step's change: raise LaunchTemplateVersionChanged when the group no longer
    launches from the journal's target (someone set the version back during the upgrade): its new instances would
    start with the old configuration, and the old nodes' replacements would be old nodes."""
    moved = launch_template_moved(ec2, asg, journal)
    if moved is None:
        return
    name = asg["AutoScalingGroupName"]
    target = "%s version %s" % (journal.launch_template_id, journal.target_launch_template_version)
    raise UpgradeError(
        LAUNCH_TEMPLATE_VERSION_CHANGED,
        "Auto Scaling group %s launches from launch template %s version %s, no longer from %s, the target of this "
        "upgrade (run %s): its launch template version was changed during the upgrade, not by the upgrade (a "
        "person, or an apply of the tool that owns the group), so new instances would start with the old configuration. The upgrade "
        "stopped before its next change. To go on, point the group at %s again (aws autoscaling "
        "update-auto-scaling-group --auto-scaling-group-name %s --launch-template LaunchTemplateId=%s,Version=%s, "
        "or in the tool that owns it) and run the same job again: the nodes already on the target are kept. If the "
        "change was meant (a rollback), run only the scale-down (module nodegroup_scale_restore, role scale_down): "
        "it removes the surplus, instances off the group's version first, and restores the group's sizes and "
        "processes."
        % (name, moved["launch_template_id"], moved["version"], target, journal.run_id, target, name,
           journal.launch_template_id, journal.target_launch_template_version),
        asg_name=name, launch_template_id=moved["launch_template_id"], launch_template_version=moved["version"],
        target_launch_template_id=journal.launch_template_id,
        target_launch_template_version=str(journal.target_launch_template_version))
