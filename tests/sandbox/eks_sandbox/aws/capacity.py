# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Auto Scaling service does between API calls: launch and terminate instances until each group has
its desired capacity, and move EC2 instances through pending -> running and shutting-down -> terminated.

State lives on moto's objects (extra `sandbox_*` attributes), so describe calls and this reconciler agree.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Callable

from moto.autoscaling.models import ASG_NAME_TAG, FakeAutoScalingGroup, InstanceState
from moto.ec2.models.instances import Instance
from moto.ec2.models.instance_types import INSTANCE_TYPES
from moto.ec2.models.instances import InstanceState as Ec2InstanceState

from . import lifecycle
from .activities import FAILED, IN_PROGRESS, aws_time, launch_failure_message, record_activity, utcnow
from .mixed_instances import Launch, capacity_of, choose_launch, weight_of
from .moto_patches import LIVE_LIFECYCLE_STATES, resolve_image_id, suspended_process_names

__all__ = ["CapacityReconciler", "launch_template_version_of"]

PENDING, RUNNING = ("pending", 0), ("running", 16)


def launch_template_version_of(group: FakeAutoScalingGroup) -> int | None:
    """The number of the launch template version the group launches now ($Latest/$Default resolved)."""
    if group.ec2_launch_template is None:
        return None
    return group.ec2_launch_template.get_version(group.launch_template_version).number


class CapacityReconciler:
    """AZ-balanced launches and scale-in, launch failures with retries, and EC2 state timers.

    `launch_failure(az) -> error code | None` decides whether a launch in an AZ fails (the scenario's faults);
    an AZ whose launch failed is retried after `launch_retry_seconds` and meanwhile launches go to the
    group's other AZs, as AWS does when one zone lacks capacity. `not_visible_for() -> seconds | None`, asked
    once per launch, hides the new instance from DescribeInstances for that long (moto_patches (i)).
    """

    def __init__(self, ec2_backend: Any, region: str, timings: dict[str, float],
                 launch_failure: Callable[[str], str | None], on_event: Callable[..., None],
                 launch_retry_seconds: float = 1.0, not_visible_for: Callable[[], float | None] | None = None):
        self.ec2 = ec2_backend
        self.region = region
        self.pending_seconds = timings["instance_pending_seconds"]
        self.shutdown_seconds = timings["instance_shutdown_seconds"]
        self.launch_failure = launch_failure
        self.not_visible_for = not_visible_for or (lambda: None)
        self.on_event = on_event
        self.launch_retry_seconds = launch_retry_seconds
        self._retry_after: dict[tuple[str, str], float] = {}
        self._subnets: dict[str, dict[str, str]] = {}

    # ------------------------------------------------------------------------------------ EC2 state timers

    def advance_instances(self, now: float) -> None:
        """pending -> running and shutting-down -> terminated for instances whose time has come."""
        for reservation in self.ec2.reservations.values():
            for instance in reservation.instances:
                state = instance._state.name
                since = getattr(instance, "sandbox_state_since", None)
                if since is None:
                    continue
                if state == "pending" and now - since >= self.pending_seconds:
                    self.mark_running(instance, now)
                elif state == "shutting-down" and now - since >= self.shutdown_seconds:
                    self._mark_terminated(instance, now)

    @staticmethod
    def advance_lifecycle_actions(group: FakeAutoScalingGroup, now: float) -> None:
        """Termination lifecycle actions whose timeout passed take the hook's DefaultResult (lifecycle.py)."""
        lifecycle.advance_lifecycle_actions(group, now)

    def mark_running(self, instance: Instance, now: float) -> None:
        instance._state = Ec2InstanceState(*RUNNING)
        instance.sandbox_state_since = now
        asg_state = getattr(instance, "sandbox_asg_state", None)
        if asg_state is not None and asg_state.lifecycle_state == "Pending":
            asg_state.lifecycle_state = "InService"
        activity = getattr(instance, "sandbox_activity", None)
        if activity is not None and activity.status_code == IN_PROGRESS:
            activity.finish()

    def _mark_terminated(self, instance: Instance, now: float) -> None:
        instance.terminate()  # moto's own: state 48, network interfaces released
        instance.sandbox_state_since = now
        group = getattr(instance, "autoscaling_group", None)
        if group is not None:
            group.instance_states = [s for s in group.instance_states if s.instance is not instance]
        activity = getattr(instance, "sandbox_activity", None)
        if activity is not None and activity.status_code == IN_PROGRESS:
            activity.finish()

    # ------------------------------------------------------------------------------------ desired capacity

    def reconcile(self, group: FakeAutoScalingGroup, now: float) -> None:
        """Launch or terminate so the capacity of the group's Pending+InService instances (their weights: capacity
        units, mixed_instances.py; else their number) matches its desired capacity."""
        live = [s for s in group.instance_states if s.lifecycle_state in LIVE_LIFECYCLE_STATES]
        desired = group.desired_capacity or 0
        suspended = suspended_process_names(group)
        if capacity_of(live) < desired and "Launch" not in suspended:
            self._scale_out(group, live, desired, now)
        elif capacity_of(live) > desired and "Terminate" not in suspended:
            self._scale_in(group, live, desired)
        if capacity_of(s for s in group.instance_states if s.lifecycle_state in LIVE_LIFECYCLE_STATES) >= desired:
            group.sandbox_capacity_cause = None

    def _cause(self, group: FakeAutoScalingGroup, what: str, verb: str, current: int, desired: int) -> str:
        prefix = getattr(group, "sandbox_capacity_cause", None)
        text = (f"At {aws_time(utcnow())} an instance was {what} in response to a difference between desired "
                f"and actual capacity, {verb} the capacity from {current} to {desired}.")
        return f"{prefix}  {text}" if prefix else text

    def _subnet_by_az(self, group: FakeAutoScalingGroup) -> dict[str, str]:
        key = group.vpc_zone_identifier or ""
        if key not in self._subnets:
            by_az: dict[str, str] = {}
            for subnet_id in filter(None, key.split(",")):
                by_az.setdefault(self.ec2.get_subnet(subnet_id).availability_zone, subnet_id)
            self._subnets[key] = by_az
        return self._subnets[key]

    def _scale_out(self, group: FakeAutoScalingGroup, live: list[InstanceState], desired: int, now: float) -> None:
        zones = list(dict.fromkeys(group.availability_zones))
        per_zone = Counter(s.availability_zone for s in live)
        subnets = self._subnet_by_az(group)
        live = list(live)
        cause = self._cause(group, "started", "increasing", capacity_of(live), desired)
        while capacity_of(live) < desired:
            usable = [z for z in zones if self._retry_after.get((group.name, z), 0.0) <= now]
            if not usable:
                return
            zone = min(usable, key=lambda z: (per_zone[z], zones.index(z)))
            subnet_id = subnets.get(zone)
            launch = self._launch_of(group, live, zone)
            code = self.launch_failure(zone) or self._architecture_mismatch(launch)
            if code:
                self._record_failed_launch(group, zone, subnet_id, code, cause, zones, launch)
                self._retry_after[(group.name, zone)] = now + self.launch_retry_seconds
                continue
            live.append(self._launch(group, launch, zone, subnet_id, cause, now))
            per_zone[zone] += 1

    def _record_failed_launch(self, group: FakeAutoScalingGroup, zone: str, subnet_id: str | None, code: str,
                              cause: str, zones: list[str], launch: Launch | None) -> None:
        instance_type = launch.instance_type if launch else self._instance_type(group)
        message = launch_failure_message(code, instance_type, zone, [z for z in zones if z != zone],
                                         self._architectures(launch))
        record_activity(group, f"Launching a new EC2 instance.  Status Reason: {message}", cause,
                        status_code=FAILED, status_message=message,
                        details={"Subnet ID": subnet_id or "", "Availability Zone": zone})
        self.on_event("launch_failure", asg=group.name, availability_zone=zone, code=code)

    def _launch_of(self, group: FakeAutoScalingGroup, live: list[InstanceState], zone: str) -> Launch | None:
        """What the group launches next in ``zone``: its mixed instances policy's choice, else its launch template's
        (None for a launch configuration)."""
        chosen = choose_launch(group, self.ec2, live, zone)
        if chosen is None and group.ec2_launch_template is not None:
            version = group.ec2_launch_template.get_version(group.launch_template_version)
            chosen = Launch(self._instance_type(group), group.ec2_launch_template, version, version.image_id, False, 1)
        # A resolve:ssm: ImageId is resolved at each launch (None: no such parameter).
        return dataclasses.replace(chosen, image_id=self._image_id(chosen.image_id)) if chosen else None

    def _architectures(self, launch: Launch | None) -> tuple[str, str] | None:
        """(the instance type's architecture, the AMI's) when the launch's AMI is of an architecture its instance type
        does not support (the EC2 instance type data moto ships lists SupportedArchitectures), else None."""
        if launch is None:
            return None
        image = self.ec2.amis.get(launch.image_id)
        supported = (INSTANCE_TYPES.get(launch.instance_type) or {}).get("ProcessorInfo", {}).get(
            "SupportedArchitectures")
        if image is None or not supported or image.architecture in supported:
            return None
        return supported[0], image.architecture

    def _architecture_mismatch(self, launch: Launch | None) -> str | None:
        """EC2's RunInstances refuses an AMI of an architecture the instance type does not support:
        InvalidParameterValue; and an ImageId resolve:ssm:<parameter> whose parameter does not exist."""
        if launch is not None and launch.image_id is None:
            return "InvalidParameter"
        return "InvalidParameterValue" if self._architectures(launch) else None

    def _image_id(self, image_id: str) -> str | None:
        """The AMI a launch runs: a resolve:ssm: ImageId resolved at this launch (moto_patches (q))."""
        return resolve_image_id(self.ec2.account_id, self.region, image_id)

    def _instance_type(self, group: FakeAutoScalingGroup) -> str:
        return group.instance_type or "m1.small"

    def _launch(self, group: FakeAutoScalingGroup, launch: Launch | None, zone: str, subnet_id: str | None,
                cause: str, now: float) -> InstanceState:
        tags = group.get_propagated_tags()
        tags[ASG_NAME_TAG] = group.name
        if launch is not None:
            version = launch.version
            tags.update(version.instance_tags)
            image_id, user_data, security_groups = launch.image_id, version.user_data, version.security_groups
            launch_template = {"LaunchTemplateId": launch.template.id, "Version": str(version.number)}
            instance_type = launch.instance_type
        else:
            config = group.launch_config
            image_id, user_data, security_groups = config.image_id, config.user_data, config.security_groups
            launch_template, instance_type = None, self._instance_type(group)
        reservation = self.ec2.run_instances(
            image_id, 1, user_data, security_groups, instance_type=instance_type,
            tags={"instance": tags}, placement=zone, subnet_id=subnet_id, launch_config=group.launch_config,
            launch_template=launch_template, is_instance_type_default=False, region_name=self.region)
        instance = reservation.instances[0]
        instance._state = Ec2InstanceState(*PENDING)
        instance.sandbox_state_since = now
        instance.sandbox_launched_at = now
        hidden = self.not_visible_for()
        if hidden:
            instance.sandbox_visible_at = now + hidden
        instance.sandbox_private_dns_name = instance.private_dns_name
        instance.autoscaling_group = group
        if launch is not None:
            instance.sandbox_launch_template = (launch.template, version.number)
            instance.sandbox_weight = launch.weight
            if launch.spot:
                instance.sandbox_spot, instance.lifecycle = True, "spot"
            if launch.image_id != self._image_id(version.image_id):
                instance.sandbox_override_image = launch.image_id
        asg_state = InstanceState(instance, lifecycle_state="Pending",
                                  protected_from_scale_in=group.new_instances_protected_from_scale_in,
                                  autoscaling_group=group)
        instance.sandbox_asg_state = asg_state
        group.instance_states.append(asg_state)
        instance.sandbox_activity = record_activity(
            group, f"Launching a new EC2 instance: {instance.id}", cause,
            details={"Subnet ID": subnet_id or "", "Availability Zone": zone})
        return asg_state

    def _scale_in(self, group: FakeAutoScalingGroup, live: list[InstanceState], desired: int) -> None:
        """AWS's default termination policy: the AZ with the most instances (and an unprotected one), then
        instances not on the group's current launch template version (oldest version first), then the
        longest-running."""
        order = {zone: i for i, zone in enumerate(dict.fromkeys(group.availability_zones))}
        current_version = launch_template_version_of(group)
        remaining = list(live)
        cause = self._cause(group, "taken out of service", "shrinking", capacity_of(live), desired)
        while capacity_of(remaining) > desired:
            per_zone = Counter(s.availability_zone for s in remaining)
            # Weighted: capacity stays "at the desired capacity or above it" (mixed_instances.py).
            candidates = [s for s in remaining if not s.protected_from_scale_in
                          and capacity_of(remaining) - weight_of(s) >= desired]
            if not candidates:
                return
            # An AZ the group no longer spans goes first; ties go to the AZ listed first.
            zone = max({s.availability_zone for s in candidates},
                       key=lambda z: (z not in order, per_zone[z], -order.get(z, 0)))
            in_zone = [s for s in candidates if s.availability_zone == zone]
            victim = min(in_zone, key=lambda s: self._termination_rank(s, current_version))
            remaining.remove(victim)
            self._terminate(group, victim, cause)

    @staticmethod
    def _termination_rank(state: InstanceState, current_version: int | None) -> tuple:
        launched_from = getattr(state.instance, "sandbox_launch_template", None)
        version = launched_from[1] if launched_from else None
        on_current = version is None or version == current_version
        return (on_current, version or 0, state.instance.launch_time)

    def _terminate(self, group: FakeAutoScalingGroup, state: InstanceState, cause: str) -> None:
        instance = state.instance
        if instance._state.name == "pending" and getattr(instance, "sandbox_activity", None) is not None \
                and instance.sandbox_activity.status_code == IN_PROGRESS:
            instance.sandbox_activity.finish("Cancelled")
        instance.sandbox_activity = record_activity(group, f"Terminating EC2 instance: {instance.id}", cause)
        lifecycle.begin_termination(state)  # Terminating:Wait while the group has termination hooks
