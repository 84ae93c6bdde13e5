# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Amazon EC2 Auto Scaling API calls (the client is ``aws_client(params, "autoscaling")``).

Each function is one call, its errors translated by aws_call; what to make of an answer is the caller's. The calls
that change the group's sizes, processes, protection, launch template or instances stop with the job (SPEC W5).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import aws_call
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.shapes import paginate

RESOURCE_TYPE = "auto-scaling-group"


@aws_call("describe Auto Scaling group {asg_name}")
def describe_auto_scaling_group(autoscaling: Any, asg_name: str) -> dict[str, Any] | None:
    """The group's description, or None when there is no such group."""
    groups = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[asg_name])["AutoScalingGroups"]
    return groups[0] if groups else None


@aws_call("describe Auto Scaling groups {asg_names}")
def describe_auto_scaling_groups(autoscaling: Any, asg_names: Iterable[str]) -> list[dict[str, Any]]:
    """The descriptions of the groups of those names that exist (all pages)."""
    return paginate(autoscaling, "describe_auto_scaling_groups", "AutoScalingGroups",
                    AutoScalingGroupNames=list(asg_names))


@aws_call("describe every Auto Scaling group of the region")
def describe_all_auto_scaling_groups(autoscaling: Any) -> list[dict[str, Any]]:
    """Every group of the account and region, in pages of 100 (the most DescribeAutoScalingGroups returns)."""
    return paginate(autoscaling, "describe_auto_scaling_groups", "AutoScalingGroups",
                    PaginationConfig=dict(PageSize=100))


def _tag_filters(tags: Mapping[str, str | None]) -> list[dict[str, Any]]:
    return [dict(Name="tag-key", Values=[key]) if value is None else dict(Name="tag:%s" % key, Values=[value])
            for key, value in tags.items()]


@aws_call(lambda autoscaling, tags: "find the Auto Scaling groups tagged %s" % ", ".join(
    key if value is None else "%s=%s" % (key, value) for key, value in tags.items()))
def find_auto_scaling_groups(autoscaling: Any, tags: Mapping[str, str | None]) -> list[dict[str, Any]]:
    """The groups that carry every tag of ``tags`` ({key: value}, or {key: None} for the key with any value)."""
    return paginate(autoscaling, "describe_auto_scaling_groups", "AutoScalingGroups", Filters=_tag_filters(tags))


def _sizes(min_size: int | None, max_size: int | None, desired_capacity: int | None) -> list[tuple[str, int]]:
    return [(key, value) for key, value in (("MinSize", min_size), ("MaxSize", max_size),
                                            ("DesiredCapacity", desired_capacity)) if value is not None]


def _describe_sizes(autoscaling: Any, asg_name: str, min_size: int | None, max_size: int | None,
                    desired_capacity: int | None) -> str:
    return "update the sizes of Auto Scaling group %s (%s)" % (
        asg_name, ", ".join("%s=%s" % size for size in _sizes(min_size, max_size, desired_capacity)))


@aws_call(_describe_sizes, stops_with_job=True)
def update_sizes(autoscaling: Any, asg_name: str, min_size: int | None = None, max_size: int | None = None,
                 desired_capacity: int | None = None) -> None:
    """UpdateAutoScalingGroup with only the sizes given."""
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg_name,
                                          **dict(_sizes(min_size, max_size, desired_capacity)))


@aws_call(lambda autoscaling, asg_name, spec, mixed: "update Auto Scaling group %s to launch template %s version %s"
          % (asg_name, spec["LaunchTemplateId"], spec["Version"]), stops_with_job=True)
def set_launch_template(autoscaling: Any, asg_name: str, spec: Mapping[str, str], mixed: bool) -> None:
    """Point the group at ``spec`` ({LaunchTemplateId, Version}): its LaunchTemplate, or, with ``mixed``, the
    launch template of its MixedInstancesPolicy."""
    if mixed:
        autoscaling.update_auto_scaling_group(
            AutoScalingGroupName=asg_name,
            MixedInstancesPolicy=dict(LaunchTemplate=dict(LaunchTemplateSpecification=spec)))
    else:
        autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg_name, LaunchTemplate=spec)


@aws_call("suspend processes {processes} of Auto Scaling group {asg_name}", stops_with_job=True)
def suspend_processes(autoscaling: Any, asg_name: str, processes: Iterable[str]) -> None:
    """Suspend ``processes`` (none: no call)."""
    if processes:
        autoscaling.suspend_processes(AutoScalingGroupName=asg_name, ScalingProcesses=list(processes))


@aws_call("resume processes {processes} of Auto Scaling group {asg_name}", stops_with_job=True)
def resume_processes(autoscaling: Any, asg_name: str, processes: Iterable[str]) -> None:
    """Resume ``processes`` (none: no call)."""
    if processes:
        autoscaling.resume_processes(AutoScalingGroupName=asg_name, ScalingProcesses=list(processes))


@aws_call(lambda autoscaling, asg_name, instance_ids, protected: "%s the scale-in protection of instances %s of %s" % (
    "set" if protected else "remove", ", ".join(instance_ids), asg_name), stops_with_job=True)
def set_instance_protection(autoscaling: Any, asg_name: str, instance_ids: Iterable[str], protected: bool) -> None:
    """Set or remove the scale-in protection of up to 50 instances (the API's limit)."""
    autoscaling.set_instance_protection(AutoScalingGroupName=asg_name, InstanceIds=list(instance_ids),
                                        ProtectedFromScaleIn=protected)


@aws_call("describe scaling activities of {asg_name}")
def describe_scaling_activities(autoscaling: Any, asg_name: str, max_records: int = 100) -> list[dict[str, Any]]:
    """The group's latest scaling activities, newest first (one page)."""
    return autoscaling.describe_scaling_activities(AutoScalingGroupName=asg_name, MaxRecords=max_records)["Activities"]


@aws_call("terminate instance {instance_id} through its Auto Scaling group", stops_with_job=True)
def terminate_instance_in_auto_scaling_group(autoscaling: Any, instance_id: str, decrement: bool) -> None:
    """TerminateInstanceInAutoScalingGroup; ``decrement``: lower the desired capacity instead of replacing it."""
    autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=instance_id,
                                                         ShouldDecrementDesiredCapacity=decrement)


@aws_call("describe the instance refreshes of Auto Scaling group {asg_name}")
def describe_instance_refreshes(autoscaling: Any, asg_name: str) -> list[dict[str, Any]]:
    """The group's instance refreshes, newest first (the first page: an active one is the newest)."""
    return autoscaling.describe_instance_refreshes(AutoScalingGroupName=asg_name)["InstanceRefreshes"]


@aws_call("describe the warm pool of Auto Scaling group {asg_name}")
def describe_warm_pool(autoscaling: Any, asg_name: str) -> dict[str, Any] | None:
    """The group's warm pool configuration (None: it has none), with its instances' count (first page)."""
    answer = autoscaling.describe_warm_pool(AutoScalingGroupName=asg_name)
    configuration = answer.get("WarmPoolConfiguration")
    if not configuration:
        return None
    return dict(configuration, instances=len(answer.get("Instances") or []))


@aws_call("describe the lifecycle hooks of Auto Scaling group {asg_name}")
def describe_lifecycle_hooks(autoscaling: Any, asg_name: str) -> list[dict[str, Any]]:
    """The group's lifecycle hooks (not paged: a group has at most 50)."""
    return autoscaling.describe_lifecycle_hooks(AutoScalingGroupName=asg_name).get("LifecycleHooks", [])


@aws_call(lambda autoscaling, asg_name, tags: "set tags %s on Auto Scaling group %s" % (", ".join(tags), asg_name))
def create_or_update_tags(autoscaling: Any, asg_name: str, tags: Mapping[str, str]) -> None:
    """Set ``tags`` ({key: value}, in that order) on the group, not propagated to instances."""
    autoscaling.create_or_update_tags(Tags=[
        dict(ResourceId=asg_name, ResourceType=RESOURCE_TYPE, Key=key, Value=value, PropagateAtLaunch=False)
        for key, value in tags.items()])


@aws_call("delete tags {keys} from Auto Scaling group {asg_name}")
def delete_tags(autoscaling: Any, asg_name: str, keys: Iterable[str]) -> None:
    """Delete the tags ``keys`` from the group (none: no call)."""
    if keys:
        autoscaling.delete_tags(Tags=[dict(ResourceId=asg_name, ResourceType=RESOURCE_TYPE, Key=key) for key in keys])
