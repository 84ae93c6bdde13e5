# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A moto node group whose ASG already points at a new launch template version (the setup phase done)."""

from __future__ import annotations

from ..moto_nodegroup import MotoNodegroup


def upgraded_world(desired=4, **kind):
    """``kind``: MotoNodegroup's kind/convention (a terraform-aws-eks self-managed group by default)."""
    world = MotoNodegroup(desired=desired, **kind)
    # no UserData: in-process moto keeps it as a plain str for new versions and then refuses to launch
    world.target_version = world.ec2.create_launch_template_version(
        LaunchTemplateId=world.lt_id, LaunchTemplateData=dict(ImageId=world.new_ami, InstanceType="m5.large"),
    )["LaunchTemplateVersion"]["VersionNumber"]
    world.autoscaling.update_auto_scaling_group(AutoScalingGroupName=world.asg_name, LaunchTemplate=dict(
        LaunchTemplateId=world.lt_id, Version=str(world.target_version)))
    return world


def sizes(world):
    asg = world.asg()
    return asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"]


def suspended(world):
    return sorted(p["ProcessName"] for p in world.asg().get("SuspendedProcesses", []))
