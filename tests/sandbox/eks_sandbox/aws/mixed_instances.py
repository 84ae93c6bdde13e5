# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an Auto Scaling group with a MixedInstancesPolicy launches, and how it counts its capacity.

Modelled from the Amazon EC2 Auto Scaling user guide:

- "Auto Scaling groups with multiple instance types and purchase options": the On-Demand part of the desired
  capacity is OnDemandBaseCapacity plus OnDemandPercentageAboveBaseCapacity of the rest, "If the result creates a
  fractional number, Amazon EC2 Auto Scaling rounds up to the next integer in favor of On-Demand Instances"; the rest
  is Spot. On-Demand's `prioritized` strategy takes the overrides in their order. Spot pools are chosen by price and
  capacity (`price-capacity-optimized`, `capacity-optimized`, `lowest-price`), which the sandbox does not model: it
  spreads Spot launches over the overrides' types instead (the type with the fewest Spot instances in the AZ, then the
  overrides' order), as diversified pools do.
- "Specify a different launch template for an instance type": an override's LaunchTemplateSpecification launches
  that type from its own template; LaunchTemplateOverrides.ImageId (API reference) launches it with that AMI.
- "Configure instance weighting": "The size of the Auto Scaling group is measured in capacity units", an instance
  counts its type's WeightedCapacity, and "Current capacity will either be at the desired capacity or above it".

Spot instances are EC2's `InstanceLifecycle: spot`; DescribeAutoScalingGroups reports each instance's InstanceType,
WeightedCapacity (when the policy weighs) and the ImageId of an AMI override (API reference, Instance). Spot
interruptions are not modelled.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from moto.autoscaling.models import FakeAutoScalingGroup, InstanceState

__all__ = ["Launch", "choose_launch", "weight_of", "capacity_of", "correct_mixed_instances", "merged_policy"]


@dataclass(frozen=True)
class Launch:
    """One instance to launch: its type, the template (moto FakeLaunchTemplate) and version number it comes from, the
    AMI (an override's, else the version's), Spot or not, and how many capacity units it counts."""
    instance_type: str
    template: Any
    version: Any
    image_id: str
    spot: bool
    weight: int


def _policy(group: FakeAutoScalingGroup) -> dict[str, Any] | None:
    policy = group.mixed_instances_policy
    return policy if policy and (policy.get("LaunchTemplate") or {}).get("Overrides") else None


def _overrides(group: FakeAutoScalingGroup) -> list[dict[str, Any]]:
    return list(_policy(group)["LaunchTemplate"]["Overrides"]) if _policy(group) else []


def weight_of(state: InstanceState) -> int:
    """The capacity units an instance counts (1 without weights): the weight its type had at launch (a removed type
    keeps "their last updated weight values")."""
    return int(getattr(state.instance, "sandbox_weight", 1))


def capacity_of(states: Iterable[InstanceState]) -> int:
    return sum(weight_of(state) for state in states)


def _on_demand_wanted(group: FakeAutoScalingGroup, desired: int) -> int:
    distribution = _policy(group).get("InstancesDistribution") or {}
    base = int(distribution.get("OnDemandBaseCapacity") or 0)
    percentage = int(distribution.get("OnDemandPercentageAboveBaseCapacity", 100))
    if desired <= base:
        return desired
    return base + math.ceil((desired - base) * percentage / 100)


def _template_of(group: FakeAutoScalingGroup, ec2: Any, override: dict[str, Any]) -> tuple[Any, Any]:
    """(template, version) an override launches: its own LaunchTemplateSpecification's, else the group's."""
    spec = override.get("LaunchTemplateSpecification")
    if not spec:
        template = group.ec2_launch_template
        return template, template.get_version(group.launch_template_version)
    template = (ec2.get_launch_template(spec["LaunchTemplateId"]) if spec.get("LaunchTemplateId")
                else ec2.get_launch_template_by_name(spec["LaunchTemplateName"]))
    return template, template.get_version(spec.get("Version") or "$Default")


def choose_launch(group: FakeAutoScalingGroup, ec2: Any, live: list[InstanceState], zone: str) -> Launch | None:
    """The next instance the group launches in ``zone`` when its policy has overrides, else None (the template's)."""
    overrides = _overrides(group)
    if not overrides:
        return None
    desired = group.desired_capacity or 0
    on_demand = capacity_of(s for s in live if not getattr(s.instance, "sandbox_spot", False))
    spot = on_demand >= _on_demand_wanted(group, desired)
    if spot:
        in_zone = [s for s in live if getattr(s.instance, "sandbox_spot", False) and s.availability_zone == zone]
        override = min(overrides, key=lambda o: (sum(s.instance.instance_type == o["InstanceType"] for s in in_zone),
                                                 overrides.index(o)))
    else:
        override = overrides[0]  # On-Demand's `prioritized` strategy
    template, version = _template_of(group, ec2, override)
    return Launch(override["InstanceType"], template, version, override.get("ImageId") or version.image_id, spot,
                  int(override.get("WeightedCapacity") or 1))


def merged_policy(current: dict[str, Any] | None, given: dict[str, Any] | None) -> dict[str, Any] | None:
    """The policy after UpdateAutoScalingGroup: "Any properties that you don't specify are not changed by this update
    request" (API reference, UpdateAutoScalingGroup): the launch template's specification and overrides each replace
    the current one when given, the distribution's settings one by one."""
    if current is None:
        return given
    merged = copy.deepcopy(current)
    given = given or {}
    launch_template = given.get("LaunchTemplate") or {}
    for key in ("LaunchTemplateSpecification", "Overrides"):
        if key in launch_template:
            merged.setdefault("LaunchTemplate", {})[key] = copy.deepcopy(launch_template[key])
    merged.setdefault("InstancesDistribution", {}).update(given.get("InstancesDistribution") or {})
    spec = merged.get("LaunchTemplate", {}).get("LaunchTemplateSpecification") or {}
    if spec.get("LaunchTemplateId"):  # moto stores both the id and the name, and refuses both given
        spec.pop("LaunchTemplateName", None)
    return merged


def correct_mixed_instances() -> None:
    """(p) UpdateAutoScalingGroup changes only the parts of a MixedInstancesPolicy it is given (moto replaces the
    whole policy, and drops it on an update that gives none, a size change included); DescribeAutoScalingGroups'
    Instances[] carry WeightedCapacity when the policy weighs, and ImageId for an instance launched with an override's
    AMI (moto reports neither)."""
    original_update = FakeAutoScalingGroup.update

    def update(self: FakeAutoScalingGroup, *args: Any, **kwargs: Any) -> None:
        kwargs["mixed_instances_policy"] = merged_policy(self.mixed_instances_policy,
                                                         kwargs.get("mixed_instances_policy"))
        original_update(self, *args, **kwargs)

    def weighted_capacity(self: InstanceState) -> str | None:
        weighs = any(o.get("WeightedCapacity") for o in _overrides(self.auto_scaling_group))
        return str(weight_of(self)) if weighs else None

    def image_id(self: InstanceState) -> str | None:
        return getattr(self.instance, "sandbox_override_image", None)

    FakeAutoScalingGroup.update = update
    InstanceState.weighted_capacity = property(weighted_capacity)
    InstanceState.image_id = property(image_id)
