# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Auto Scaling group's state as the upgrade modules read it: sizes, suspended processes, scale-in
protection, scaling activities; and the checks a rerun makes of it against the journal (SPEC A1, C3).

Terminations are in nodegroup/termination.py, the node group's nodes in members/group_nodes.py, the watch over both in
members/group_watch.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
import datetime

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    AUTOSCALER_ACTIVE,
    INSTANCE_REFRESH_IN_PROGRESS,
    REPLACES_INSTANCES_ITSELF,
    WARM_POOL_PRESENT,
    UpgradeError,
    invalid_parameter,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import parse_utc_iso, utc_now
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import claim
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.launch_templates import (
    check_launch_template_unmoved,
    target_lt_version,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.mixed_instances import override_images
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import asg_launch_template
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.instance_choice import split_old_new
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.parallelism import (
    SURGE_CAP_LIMIT,
    autoscaler_changed,
)

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule

# SPEC A1: the processes that would replace or rebalance nodes behind our back.
# InstanceRefresh: a refresh (terraform-aws-eks starts one on apply) replaces nodes without a drain; suspended,
# it pauses without being cancelled (Auto Scaling user guide, "Suspend and resume processes"; SPEC W2).
DEFAULT_SUSPENDED_PROCESSES = ["AZRebalance", "AlarmNotification", "ScheduledActions", "ReplaceUnhealthy", "InstanceRefresh"]
# Describe calls while waiting: no more often than this (scaling activities are throttled per account).
ASG_POLL_SECONDS = 5.0


# DescribeInstanceRefreshes statuses of a refresh that is not over (Auto Scaling user guide, "Check the status of an
# instance refresh": a refresh "passes from Pending to InProgress until it reaches Successful, Failed, Cancelled,
# RollbackSuccessful, or RollbackFailed"; Cancelling, RollbackInProgress and Baking are on the way there).
ACTIVE_REFRESH_STATUSES = ("Pending", "InProgress", "Cancelling", "RollbackInProgress", "Baking")


def active_instance_refresh(autoscaling: Any, asg_name: str) -> dict[str, Any] | None:
    """The group's instance refresh that is not over (paused by a suspended process included), or None."""
    return next((refresh for refresh in autoscaling_api.describe_instance_refreshes(autoscaling, asg_name)
                 if refresh.get("Status") in ACTIVE_REFRESH_STATUSES), None)


def refresh_summary(refresh: Mapping[str, Any]) -> dict[str, Any]:
    return dict(id=refresh.get("InstanceRefreshId"), status=refresh.get("Status"),
                percentage_complete=refresh.get("PercentageComplete"))


def check_no_instance_refresh(autoscaling: Any, asg_name: str) -> None:
    """SPEC W2: refuse while an instance refresh is active on the group (even paused by a suspended process: it
    goes on, without a drain, once the upgrade resumes the processes)."""
    refresh = active_instance_refresh(autoscaling, asg_name)
    if refresh is None:
        return
    raise UpgradeError(
        INSTANCE_REFRESH_IN_PROGRESS,
        "Auto Scaling group %s has instance refresh %s %s (%s%% done): it replaces nodes without draining them, so "
        "the upgrade does not start beside it. Let it end, or cancel it (aws autoscaling cancel-instance-refresh "
        "--auto-scaling-group-name %s), then run again. Nothing was changed."
        % (asg_name, refresh.get("InstanceRefreshId"), refresh.get("Status"), refresh.get("PercentageComplete", 0),
           asg_name),
        instance_refresh=refresh_summary(refresh))


def check_no_warm_pool(autoscaling: Any, asg_name: str) -> None:
    """SPEC W2: refuse a group with a warm pool before any change. "As instances leave the warm pool, they count toward
    the desired capacity", and a launch template change leaves "existing instances ... not affected" (Auto Scaling
    user guide, "Warm pools"): the surge would be drawn from instances of the old configuration, no new node would
    come, and the upgrade would end in NodeCreationFailure."""
    pool = autoscaling_api.describe_warm_pool(autoscaling, asg_name)
    if pool is None or pool.get("Status") == "PendingDelete":
        return
    raise UpgradeError(
        WARM_POOL_PRESENT,
        "Auto Scaling group %s has a warm pool (%d instance(s) in it now, pool state %s): a scale-out draws its "
        "instances first, and they keep the launch template version they were launched with, so the upgrade's new "
        "nodes would be old ones. Delete the warm pool (aws autoscaling delete-warm-pool --auto-scaling-group-name "
        "%s --force-delete), run the upgrade, then put the warm pool back: its instances are then launched from the "
        "new version. Nothing was changed." % (asg_name, pool["instances"], pool.get("PoolState", "Stopped"), asg_name),
        warm_pool=pool)


def check_no_self_replacement(asg: Mapping[str, Any]) -> None:
    """SPEC W2: refuse before any change a group that replaces instances by itself, without a drain: at the end of
    their maximum lifetime (Auto Scaling user guide, "Replace Auto Scaling instances based on maximum instance
    lifetime": the old nodes are the oldest), or on a Spot rebalance recommendation (CapacityRebalance: "After
    launching a new instance, it then terminates an old instance"). Neither has a process the upgrade can suspend."""
    name = asg["AutoScalingGroupName"]
    found = []
    if asg.get("MaxInstanceLifetime"):
        found.append(("a maximum instance lifetime of %d s" % asg["MaxInstanceLifetime"],
                      "--max-instance-lifetime 0", "the same option with its value"))
    if asg.get("CapacityRebalance"):
        found.append(("capacity rebalancing", "--no-capacity-rebalance", "--capacity-rebalance"))
    if not found:
        return
    raise UpgradeError(
        REPLACES_INSTANCES_ITSELF,
        "Auto Scaling group %s has %s: Auto Scaling would replace nodes by itself during the upgrade, without a drain. "
        "Turn it off for the upgrade (aws autoscaling update-auto-scaling-group --auto-scaling-group-name %s %s), run "
        "the upgrade, then turn it back on (%s). Nothing was changed."
        % (name, " and ".join(what for what, _off, _on in found), name, " ".join(off for _what, off, _on in found),
           ", ".join(on for _what, _off, on in found)),
        max_instance_lifetime=asg.get("MaxInstanceLifetime"), capacity_rebalance=bool(asg.get("CapacityRebalance")))


def check_nothing_replaces_nodes_behind(autoscaling: Any, asg: Mapping[str, Any]) -> None:
    """SPEC W2: what would replace the group's nodes without a drain during the upgrade, refused before any change."""
    check_no_self_replacement(asg)
    check_no_instance_refresh(autoscaling, asg["AutoScalingGroupName"])
    check_no_warm_pool(autoscaling, asg["AutoScalingGroupName"])


def asg_sizes(asg: Mapping[str, Any]) -> dict[str, int]:
    return dict(min_size=asg["MinSize"], max_size=asg["MaxSize"], desired_capacity=asg["DesiredCapacity"])


def suspended_process_names(asg: Mapping[str, Any]) -> list[str]:
    return [process["ProcessName"] for process in asg.get("SuspendedProcesses", [])]


# SetInstanceProtection takes up to 50 instance ids (Amazon EC2 Auto Scaling API Reference).
PROTECTION_CHUNK = 50
SCALE_IN_PROTECTION_OURS, SCALE_IN_PROTECTION_THEIRS = "ours", "theirs"


def scale_in_protection_owner(asg: Mapping[str, Any]) -> str:
    """Who manages the group's scale-in protection during an upgrade (issue 10 item 22): "theirs" when the
    group protects new instances or any instance is protected already, else "ours"."""
    if asg.get("NewInstancesProtectedFromScaleIn") or any(
            i.get("ProtectedFromScaleIn") for i in asg.get("Instances", [])):
        return SCALE_IN_PROTECTION_THEIRS
    return SCALE_IN_PROTECTION_OURS


def set_scale_in_protection(autoscaling: Any, asg: Mapping[str, Any], protected: bool) -> list[str]:
    """Protect (or unprotect) the group's InService instances whose setting differs, so a desired capacity
    lowered behind the upgrade's back cannot terminate a node that still holds pods: "Instance scale-in protection
    starts when the instance state is InService"; TerminateInstanceInAutoScalingGroup, which the upgrade uses,
    still terminates protected instances (Auto Scaling user guide, "Use instance scale-in protection").
    Returns the ids changed."""
    name = asg["AutoScalingGroupName"]
    ids = sorted(i["InstanceId"] for i in asg.get("Instances", [])
                 if i.get("LifecycleState") == "InService" and bool(i.get("ProtectedFromScaleIn")) != protected)
    for start in range(0, len(ids), PROTECTION_CHUNK):
        chunk = ids[start:start + PROTECTION_CHUNK]
        autoscaling_api.set_instance_protection(autoscaling, name, chunk, protected)
    return ids


def scaling_activities_since(autoscaling: Any, asg_name: str, since: datetime.datetime, max_records: int = 100) -> list[dict[str, Any]]:
    """The ASG's scaling activities that started at or after ``since`` (newest first, one page)."""
    activities = autoscaling_api.describe_scaling_activities(autoscaling, asg_name, max_records)
    return [activity for activity in activities if activity.get("StartTime") is None or activity["StartTime"] >= since]


def activity_summary(activity: Mapping[str, Any]) -> dict[str, Any]:
    """A scaling activity in snake_case, for results."""
    start = activity.get("StartTime")
    return dict(
        activity_id=activity.get("ActivityId"),
        start_time=start.isoformat() if hasattr(start, "isoformat") else start,
        status_code=activity.get("StatusCode"),
        description=activity.get("Description"),
        cause=activity.get("Cause"),
        status_message=activity.get("StatusMessage"),
    )


# --- journal-driven helpers ---------------------------------------------------------------------------------

def autoscaler_error(autoscaling: Any, asg: Mapping[str, Any], journal: Journal) -> UpgradeError:
    """ClusterAutoscalerActive (SPEC C3): the desired capacity is not the one we last set."""
    name = asg["AutoScalingGroupName"]
    since = parse_utc_iso(journal.started_at) or utc_now() - datetime.timedelta(hours=1)
    activities = [activity_summary(a) for a in scaling_activities_since(autoscaling, name, since)]
    return UpgradeError(
        AUTOSCALER_ACTIVE,
        "The desired capacity of Auto Scaling group %s is %d, but this upgrade last set it to %d: something else "
        "(the cluster autoscaler?) is scaling the group. Nothing was restored; see scaling_activities"
        % (name, asg["DesiredCapacity"], journal.desired_capacity_set),
        asg_name=name, desired_capacity=asg["DesiredCapacity"], desired_capacity_set=journal.desired_capacity_set,
        scaling_activities=activities)


def check_capacity_unmoved(module: EksopsModule, autoscaling: Any, asg: Mapping[str, Any], journal: Journal | None) -> Journal | None:
    """SPEC C3 before a module changes anything during an upgrade: the desired capacity is the one the upgrade last
    set (or the one its decrementing termination under way leaves). Otherwise raise ClusterAutoscalerActive, or,
    with the module's accept_current_capacity, adopt the change (Journal.adopt_desired_capacity) and write it to
    the journal. Returns the journal to go on with."""
    desired = asg["DesiredCapacity"]
    if journal is None or not autoscaler_changed(desired, journal.desired_capacity_set, journal.desired_capacity_pending):
        return journal
    if not module.params["accept_current_capacity"]:
        raise autoscaler_error(autoscaling, asg, journal)
    adopted = journal.adopt_desired_capacity(desired)
    name = asg["AutoScalingGroupName"]
    module.warn("The desired capacity of %s is %d, not the %d this upgrade set: accepted (accept_current_capacity); "
                "the group returns to %s at the end" % (name, desired, journal.desired_capacity_set,
                                                        adopted.original_desired_capacity))
    # The run's lease before this first change: a live run's journal is never rewritten by another.
    claim(module, autoscaling, asg)
    if not module.check_mode:
        write_journal(autoscaling, name, adopted, previous=journal)
    return adopted


def resumed_capacity(journal: Journal | None, desired_now: int) -> int | None:
    """The desired capacity the scale-up's rerun reaches once the journal records the surge, else None (issue 25
    item 1, SPEC W5, B1): the rerun never recomputes it. In the scale-up that is the capacity it set (a relaunch
    included); past it the surge is in place and the upgrade's terminations have set the capacity since (under the
    schedule once, lowered by each decrement), so the rerun adds nothing. That is the journal's
    desired_capacity_set, or ``desired_now`` where decrementing terminations under way explain it (from
    desired_capacity_pending up: killed among them or before the journal's next write). A desired capacity above
    the one set is someone else's, checked before (check_capacity_unmoved)."""
    if journal is None or journal.phase not in ("scale_up", "upgrade", "scale_down") or journal.surge is None \
            or journal.desired_capacity_set is None:
        return None
    if not autoscaler_changed(desired_now, journal.desired_capacity_set, journal.desired_capacity_pending):
        return desired_now
    return journal.desired_capacity_set


def check_wanted(params: dict[str, Any], wanted: int, desired_now: int, original_desired: int, name: str) -> None:
    """Refuse a target desired capacity below the current one (the module only scales up), more than
    SURGE_CAP_LIMIT above the size before the upgrade (issue 10 item 18: a typo must not launch a fleet), or below
    pending_decrement; each naming the option it came from."""
    if wanted < desired_now:
        parameter = {"desired": "desired_capacity", "explicit": "surge"}.get(params["mode"], "max_unavailable")
        raise invalid_parameter(
            parameter, "asg_surge only scales up: the target desired capacity %d (from %s) is below the current %d "
            "of Auto Scaling group %s" % (wanted, parameter, desired_now, name))
    if wanted - original_desired > SURGE_CAP_LIMIT:
        parameter = "desired_capacity" if params["mode"] == "desired" else "surge"
        raise invalid_parameter(
            parameter, "%s asks for %d nodes above the %d Auto Scaling group %s had before the upgrade; at most %d "
            "are created at once" % (parameter, wanted - original_desired, original_desired, name, SURGE_CAP_LIMIT))
    if params["pending_decrement"] > wanted:
        raise invalid_parameter(
            "pending_decrement", "pending_decrement %d is more than the target desired capacity %d of Auto Scaling "
            "group %s" % (params["pending_decrement"], wanted, name))


def new_node_target(ec2: Any, asg: Mapping[str, Any], journal: Journal | None, image_id: str | None = None,
                    launch_template_version: int | str | None = None) -> dict[str, Any]:
    """What new nodes run: {launch_template_id, launch_template_version (int), image_id, override_images}.

    The options win, then the journal's target, then the launch template version the ASG points at;
    override_images: what the mixed instances overrides of an AMI or template of their own launch (SPEC W2). Issue 29
    item 4: LaunchTemplateVersionChanged when the ASG no longer launches from the journal's target (its new nodes
    would never count as new).
    """
    check_launch_template_unmoved(ec2, asg, journal)
    lt_id, asg_version = asg_launch_template(asg)
    version = launch_template_version or (journal.target_launch_template_version if journal else None)
    # A version from the journal is the ASG's business: a missing one names asg_name, not the option.
    number, version_image = target_lt_version(
        ec2, lt_id, asg_version, version,
        parameter="launch_template_version" if launch_template_version else "asg_name")
    image = image_id or (journal.target_image_id if journal else None) or version_image
    return dict(launch_template_id=lt_id, launch_template_version=number, image_id=image,
                override_images=override_images(ec2, asg))


def target_split(instances: list[dict[str, Any]], target: Mapping[str, Any]
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(old, new) of ``instances`` for a target of new_node_target."""
    return split_old_new(instances, target["launch_template_version"], target["image_id"], target.get("override_images"))
