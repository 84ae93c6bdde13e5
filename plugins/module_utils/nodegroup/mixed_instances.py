# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A group's MixedInstancesPolicy as the upgrade sees it (SPEC W2, issue 29 item 2).

An override can launch its instance type from a launch template of its own ("Specify a different launch template
for an instance type", Auto Scaling user guide) or from an AMI of its own (LaunchTemplateOverrides.ImageId): those
instances run what their override says, not the group's template, so they are judged old or new against it. And
WeightedCapacity makes the group's sizes count capacity units, not instances ("Configure instance weighting": "The
size of the Auto Scaling group is measured in capacity units"), which the surge and the restore, sized in nodes,
cannot honour.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import MIXED_INSTANCES_UNSUPPORTED, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.launch_templates import (
    describe_lt_version,
    lt_version_image,
    resolve_launch_template_id,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import asg_launch_template_spec


def policy_overrides(asg: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The overrides of the group's mixed instances policy ([] without one)."""
    return list(((asg.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}).get("Overrides") or [])


def own_configuration_overrides(asg: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The overrides that do not launch the group's template as it is: an AMI of their own, or another template."""
    overrides = policy_overrides(asg)
    group_template_id = asg_launch_template_spec(asg)["id"] if overrides else None
    found = []
    for override in overrides:
        spec = override.get("LaunchTemplateSpecification") or {}
        other_template = bool(spec) and spec.get("LaunchTemplateId") != group_template_id
        if override.get("ImageId") or other_template:
            found.append(override)
    return found


def override_words(override: Mapping[str, Any]) -> str:
    """An override for a person: its instance type and what it launches instead of the group's template."""
    spec = override.get("LaunchTemplateSpecification") or {}
    launches = "AMI %s" % override["ImageId"] if override.get("ImageId") else "launch template %s version %s" % (
        spec.get("LaunchTemplateId") or spec.get("LaunchTemplateName"), spec.get("Version") or "$Default")
    return "%s (%s)" % (override.get("InstanceType") or "instance requirements", launches)


def check_weights(asg: Mapping[str, Any]) -> None:
    """Refuse, before any change, a group whose overrides weigh instances other than 1: its sizes are capacity units,
    and how many instances a change of desired capacity launches depends on the types Auto Scaling picks."""
    weighted = sorted(set("%s=%s" % (o.get("InstanceType"), o["WeightedCapacity"]) for o in policy_overrides(asg)
                          if str(o.get("WeightedCapacity") or "1") != "1"))
    if not weighted:
        return
    name = asg["AutoScalingGroupName"]
    raise UpgradeError(
        MIXED_INSTANCES_UNSUPPORTED,
        "Auto Scaling group %s weighs its instance types (WeightedCapacity %s): its sizes count capacity units, and "
        "a change of its desired capacity launches as many instances as the types Auto Scaling picks add up to, so a "
        "surge and a restore sized in nodes could leave nodes undrained or the group short. Set every override's "
        "WeightedCapacity to 1 (or remove them) for the upgrade, with its sizes in instances, and put them back after. "
        "Nothing was changed." % (name, ", ".join(weighted)),
        weighted_capacity=weighted)


def check_overrides_follow(asg: Mapping[str, Any], changes_template: bool, parameter: str) -> None:
    """Refuse, before any change, a target that changes the group's template (a new version, or another one pinned)
    while overrides launch their own AMI or template: their instances would never run the target. With
    use_current_launch_template each override is judged against what it launches (override_images)."""
    others = own_configuration_overrides(asg)
    if not (changes_template and others):
        return
    raise UpgradeError(
        MIXED_INSTANCES_UNSUPPORTED,
        "Auto Scaling group %s launches %s from an override of its own, which %s does not change: those nodes would "
        "never run the target. Put the new AMI in each override (its launch template, or its ImageId) the way the "
        "group is managed, then run with use_current_launch_template=true: every node is then rolled onto what its "
        "override launches. Nothing was changed."
        % (asg["AutoScalingGroupName"], ", ".join(override_words(o) for o in others), parameter),
        parameter=parameter, overrides=[override_words(o) for o in others])


def override_images(ec2: Any, asg: Mapping[str, Any]) -> dict[str, str]:
    """{instance type: the AMI its override launches now} for the overrides of their own AMI or template; an
    instance of such a type is new when it runs that AMI (planning.is_new_instance)."""
    images = {}
    for override in own_configuration_overrides(asg):
        if not override.get("InstanceType"):
            continue
        image = override.get("ImageId")
        if not image:
            spec = override["LaunchTemplateSpecification"]
            template_id = resolve_launch_template_id(
                ec2, dict(id=spec.get("LaunchTemplateId"), name=spec.get("LaunchTemplateName")))
            image = lt_version_image(describe_lt_version(ec2, template_id, spec.get("Version") or "$Default",
                                                         parameter="asg_name"))
        if image:
            images[override["InstanceType"]] = image
    return images
