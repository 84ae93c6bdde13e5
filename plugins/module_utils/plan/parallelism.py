# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure decisions of a node-group upgrade: sizes, batches, schedules, node validation.

Nothing here talks to AWS or Kubernetes; every function takes plain values (the instance records of
``instances.join_instances_nodes``: dicts with instance_id, availability_zone, lifecycle_state,
launch_template_version, instance_type, image_id, node_name, ready, unschedulable, labels) and returns plain values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
import json
import re

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.placement import SURGE_SIZINGS, per_az_surge
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    ASG_INSTANCE_LAUNCH_FAILURES,
    INSTANCE_LIMIT_EXCEEDED,
    INSUFFICIENT_FREE_ADDRESSES,
    NODE_CREATION_FAILURE,
    UpgradeError,
    invalid_parameter,
)

if TYPE_CHECKING:
    import random

MAX_UNAVAILABLE_LIMIT = 100
SURGE_CAP_DEFAULT = 20
SURGE_CAP_LIMIT = 100

# Lifecycle states of instances that are leaving the group: neither old nor new any more. Terminating:Retained is
# an instance whose termination lifecycle action was abandoned in a group whose instance lifecycle policy retains it
# (Auto Scaling user guide, "Manage retained instances"): it is still listed, and its EC2 instance runs, but
# "Retained instances do not count toward your Amazon EC2 Auto Scaling group's desired capacity".
LEAVING_STATES = frozenset([
    "Terminating", "Terminating:Wait", "Terminating:Proceed", "Terminating:Retained", "Terminated",
    "Detaching", "Detached",
])


def _check_int_range(parameter: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_parameter(parameter, "%s must be an integer, got %r" % (parameter, value), value=value)
    if value < low or value > high:
        raise invalid_parameter(
            parameter, "%s must be between %d and %d, got %d" % (parameter, low, high, value), value=value)


def resolve_max_unavailable(max_unavailable: int | None, max_unavailable_percentage: int | None, node_count: int) -> int:
    """Nodes upgraded in parallel (SPEC U1), with EKS NodegroupUpdateConfig semantics.

    ``max_unavailable`` and ``max_unavailable_percentage`` (each 1..100) are mutually exclusive; neither
    means 1. A percentage is of ``node_count``, the node group's size before the upgrade (never the surged
    group), rounded up: EKS does not document its rounding, and 50 % of 5 nodes is 3 nodes in EKS's updates as
    issue 10 item 4 records them. Never less than one node, never more than 100.
    """
    if max_unavailable is not None and max_unavailable_percentage is not None:
        raise invalid_parameter(
            "max_unavailable",
            "max_unavailable and max_unavailable_percentage are mutually exclusive; set only one",
            value=max_unavailable)
    if max_unavailable_percentage is not None:
        _check_int_range("max_unavailable_percentage", max_unavailable_percentage, 1, 100)
        if node_count < 0:
            raise ValueError("node_count must be >= 0, got %r" % (node_count,))
        # U1: the result is a node count in 1..100 like max_unavailable, whatever the group's size.
        return min(MAX_UNAVAILABLE_LIMIT, max(1, -(-node_count * max_unavailable_percentage // 100)))
    if max_unavailable is None:
        return 1
    _check_int_range("max_unavailable", max_unavailable, 1, MAX_UNAVAILABLE_LIMIT)
    return max_unavailable


def rolling_surge(az_count: int, max_unavailable: int) -> int:
    """New nodes launched before the rolling upgrade (SPEC U2): max(2 x AZs, max_unavailable)."""
    if az_count < 0 or max_unavailable < 0:
        raise ValueError("az_count and max_unavailable must be >= 0")
    return max(2 * az_count, max_unavailable)


def rolling_parallelism(group_size: int, az_count: int, max_unavailable: int | None = None, max_unavailable_percentage: int | None = None,
                        minimal: bool = False, surge: str = "eks", az_counts: Mapping[str, int] | None = None,
                        old_azs: Iterable[str] = ()) -> dict[str, int]:
    """The parallelism of a rolling (or, with ``minimal``, a minimal) upgrade, resolved once (issue 12):
    {max_unavailable, surge, batch_size}.

    ``group_size`` is the group's desired capacity before the upgrade (the journal's while one is under way), the
    base of a percentage, never the surged group (SPEC U1). The scale-up adds ``surge`` nodes (none for minimal,
    U7): with ``surge`` "eks", U2's larger of twice the AZ count and max_unavailable; with "per_az", per_az_surge
    of ``az_counts`` (live instances in each of the group's ``az_count`` AZs) and ``old_azs`` (B2). The old nodes go
    ``batch_size`` at a time (U5), all from the one resolved max_unavailable: asg_surge and the plan cannot disagree.
    """
    if surge not in SURGE_SIZINGS:
        raise invalid_parameter("surge", "surge must be one of %s, got %r" % (", ".join(SURGE_SIZINGS), surge),
                                value=surge)
    max_unavailable = resolve_max_unavailable(max_unavailable, max_unavailable_percentage, group_size)
    size = 0 if minimal else rolling_surge(az_count, max_unavailable)
    if size and surge == "per_az":
        size = per_az_surge(az_counts, old_azs, max_unavailable, cap=size)
    return dict(max_unavailable=max_unavailable, surge=size, batch_size=max_unavailable)


def scaled_up_sizes(min_size: int, max_size: int, target_desired: int) -> dict[str, int]:
    """ASG sizes that run ``target_desired`` instances: MaxSize only grows, MinSize is untouched."""
    return {
        "min_size": min_size,
        "max_size": max(max_size, target_desired),
        "desired_capacity": target_desired,
    }


def _label(instance: Mapping[str, Any], key: str) -> str | None:
    return (instance.get("labels") or {}).get(key)


def int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def is_new_instance(instance: Mapping[str, Any], target_lt_version: int | str | None, target_image_id: str | None,
                    override_images: Mapping[str, str] | None = None) -> bool:
    """True when what is known of the instance matches every given target (and something is known): from AWS (its
    launch template version, its AMI), never from its node's labels (SPEC K2), which only some kinds of node group
    set. An instance about which nothing can be proven new counts as old. One whose type a mixed instances override launches from an AMI or template of its own
    is new when it runs what that override launches now (``override_images``: {instance type: AMI}; SPEC W2).
    """
    if target_lt_version is None and target_image_id is None:
        raise ValueError("split_old_new needs target_lt_version or target_image_id")
    override_image = (override_images or {}).get(instance.get("instance_type") or "")
    if override_image:
        return instance.get("image_id") == override_image
    compared = False
    for known, target in ((instance.get("launch_template_version"), target_lt_version),
                          (instance.get("image_id"), target_image_id)):
        if known is None or target is None:
            continue
        if str(known) != str(target):
            return False
        compared = True
    return compared


def split_old_new(instances: Iterable[dict[str, Any]], target_lt_version: int | str | None,
                  target_image_id: str | None, override_images: Mapping[str, str] | None = None
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(old, new) instance records for the target; instances leaving the group are in neither."""
    old, new = [], []
    for instance in instances:
        if instance.get("lifecycle_state") in LEAVING_STATES:
            continue
        new_one = is_new_instance(instance, target_lt_version, target_image_id, override_images)
        (new if new_one else old).append(instance)
    return old, new


def pick_batch(old: Iterable[dict[str, Any]], size: int, rng: random.Random) -> list[dict[str, Any]]:
    """Up to ``size`` old instances to replace next (SPEC U5: at random, drawn with ``rng``).

    Instances already cordoned come first: after a crash mid-batch the rerun finishes those nodes
    instead of cordoning more and leaving the others unschedulable. Within each group the choice is random;
    sorting by id first makes it depend on ``rng`` only, not on the order of ``old``.
    """
    if size < 0:
        raise ValueError("size must be >= 0")
    batch = []
    for cordoned in (True, False):
        group = sorted((i for i in old if bool(i.get("unschedulable")) == cordoned), key=lambda i: i["instance_id"])
        batch.extend(rng.sample(group, min(size - len(batch), len(group))))
    return batch


def validate_surge_settings(max_surge: int, max_unavailable: int, cap: int = SURGE_CAP_DEFAULT) -> None:
    """Check the surge parameters (SPEC S1); raise InvalidParameter naming the offending one."""
    _check_int_range("surge_cap", cap, 1, SURGE_CAP_LIMIT)
    _check_int_range("max_surge", max_surge, 0, cap)
    _check_int_range("max_unavailable", max_unavailable, 0, cap)
    if max_surge == 0 and max_unavailable == 0:
        raise invalid_parameter(
            "max_surge", "max_surge and max_unavailable cannot both be 0: at least one must be > 0",
            value=max_surge)
    if max_surge + max_unavailable > cap:
        raise invalid_parameter(
            "max_surge",
            "max_surge + max_unavailable must not exceed %d (surge_cap), got %d + %d"
            % (cap, max_surge, max_unavailable),
            value=max_surge)


def surge_steps(node_count: int, max_surge: int, max_unavailable: int) -> list[dict[str, int]]:
    """The GKE-style surge schedule (SPEC S3, S4) for a group of ``node_count`` old nodes.

    Each step first raises the desired capacity to ``desired_after_launch`` (launching ``launch`` new
    nodes and waiting for them to be Ready), then drains and terminates ``replace`` old nodes with
    decrement, ending at ``desired_after_terminate``. The group size stays in
    ``[node_count - max_unavailable, node_count + max_surge]``, at most ``max_surge + max_unavailable``
    old nodes are replaced at once, and at least ``node_count - max_unavailable`` nodes stay available.
    ``max_surge == 0`` terminates before it creates. The last step ends at ``node_count`` new nodes.
    """
    if node_count < 0:
        raise ValueError("node_count must be >= 0")
    if max_surge < 0 or max_unavailable < 0 or max_surge + max_unavailable == 0:
        raise ValueError("need max_surge >= 0, max_unavailable >= 0, and one of them > 0")
    upper = node_count + max_surge
    lower = max(0, node_count - max_unavailable)
    steps = []
    count, old_left, launched = node_count, node_count, 0
    while old_left > 0 or launched < node_count:
        launch = min(upper - count, node_count - launched)
        count += launch
        launched += launch
        # count - lower never binds by construction; it states the S4 floor the loop must respect.
        replace = min(max_surge + max_unavailable, old_left, count - lower)
        steps.append({
            "step": len(steps) + 1,
            "launch": launch,
            "desired_after_launch": count,
            "replace": replace,
            "desired_after_terminate": count - replace,
        })
        count -= replace
        old_left -= replace
    return steps


def place_surge_steps(steps: Iterable[Mapping[str, int]], old_ids: Sequence[str], group_size: int) -> list[dict[str, Any]]:
    """The surge ``steps`` (``surge_steps`` of the ``old_ids``) on the group as it is, for the surge role to pass on
    without arithmetic (issue 12).

    ``group_size`` is the group's size before the upgrade; nodes that are not old (replaced by a crashed run) stay,
    so each step's ``desired_capacity`` is its ``desired_after_launch`` plus ``group_size`` minus the old nodes.
    Its ``instance_ids`` are the next ``replace`` of ``old_ids``, in their order (the batches').
    """
    base = group_size - len(old_ids)
    placed, done = [], 0
    for step in steps:
        placed.append(dict(step, desired_capacity=base + step["desired_after_launch"],
                           instance_ids=old_ids[done:done + step["replace"]]))
        done += step["replace"]
    return placed


def _az_key(instance: Mapping[str, Any]) -> str:
    return instance.get("availability_zone") or ""


def _scale_in_preference(instance: Mapping[str, Any], group_version: int | str | None) -> tuple[bool, bool, bool, int, str]:
    # Within an AZ: nodes already cordoned (a resumed scale-in finishes those), then nodes not on the version
    # the group launches (after a rollback these are the failed new ones), then nodes that are not serving,
    # then the oldest launch template version.
    version = instance.get("launch_template_version")
    return (
        not instance.get("unschedulable"),
        group_version is not None and version is not None and int(version) == int(group_version),
        bool(instance.get("ready")) and bool(instance.get("node_name")),
        -1 if version is None else int(version),
        instance["instance_id"],
    )


def scale_in_choice(instances: Iterable[dict[str, Any]], count: int, group_version: int | str | None = None) -> list[dict[str, Any]]:
    """``count`` instances to remove, AZ-balanced (SPEC U6): always from the AZ with the most left.

    ``group_version``: the launch template version the group launches now; within an AZ, instances on another
    version go first, so a scale-in after a rollback removes the failed new nodes and keeps the old ones.
    """
    if count < 0:
        raise ValueError("count must be >= 0")
    by_az = {}
    for instance in instances:
        by_az.setdefault(_az_key(instance), []).append(instance)
    for members in by_az.values():
        members.sort(key=lambda instance: _scale_in_preference(instance, group_version))
    chosen = []
    while len(chosen) < count and any(by_az.values()):
        az = max(sorted(by_az), key=lambda name: len(by_az[name]))
        chosen.append(by_az[az].pop(0))
    return chosen


def _problem(instance: Mapping[str, Any], reason: str) -> dict[str, Any]:
    return {
        "availability_zone": instance.get("availability_zone"),
        "instance_id": instance.get("instance_id"),
        "node_name": instance.get("node_name"),
        "reason": reason,
    }


def check_new_nodes(nodes: Iterable[Mapping[str, Any]], azs_with_old_nodes: Iterable[str], expected_labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """Problems that keep the scale-up from succeeding (SPEC U3); an empty list means it succeeded.

    ``nodes`` are the new instance records (joined with their nodes by providerID, SPEC K2);
    ``expected_labels`` the labels the node group's own tool sets ({} when it sets none, SPEC K1). Each problem
    is a dict naming availability_zone, instance_id, node_name (any may be None) and a reason.
    """
    problems = []
    ready_azs = set()
    for node in sorted(nodes, key=lambda n: (_az_key(n), n.get("instance_id") or "")):
        if not node.get("node_name"):
            problems.append(_problem(node, "instance has not registered as a Kubernetes node"))
            continue
        if not node.get("ready"):
            problems.append(_problem(node, "node is not Ready"))
            continue
        wrong = ["%s=%s (expected %s)" % (key, _label(node, key), value)
                 for key, value in sorted(expected_labels.items()) if _label(node, key) != value]
        if wrong:
            problems.append(_problem(node, "node has wrong labels: " + ", ".join(wrong)))
            continue
        ready_azs.add(_az_key(node))
    for az in sorted(set(azs_with_old_nodes) - ready_azs):
        problems.append({"availability_zone": az, "instance_id": None, "node_name": None,
                         "reason": "no new Ready node in this availability zone, which has old nodes"})
    return problems


def autoscaler_changed(desired_now: int | str, desired_set: int | str | None, desired_pending: int | str | None = None) -> bool:
    """True when someone else (the cluster autoscaler) changed the desired capacity we set (SPEC C3).

    ``desired_pending``: the desired capacity our own decrementing terminations under way leave; a crash among them
    or before the journal's update leaves the group from there to ``desired_set``, which is not the autoscaler.
    """
    low = desired_set if desired_pending is None else desired_pending
    return desired_set is not None and not int(low) <= int(desired_now) <= int(desired_set)


def plan_suspension(recorded: Iterable[str], requested: Iterable[str], suspended_now: Iterable[str]) -> tuple[list[str], list[str]]:
    """SPEC A1: (processes the upgrade owns, processes to suspend now).

    ``recorded``: the processes the journal says the upgrade suspended; ``requested``: the ones it wants
    suspended; ``suspended_now``: the ones suspended on the group. A requested process already suspended by
    someone else is not ours (restore must leave it suspended); a recorded one that is not suspended (a crash
    between the journal write and the suspension) is suspended again.
    """
    ours = list(recorded)
    ours.extend(process for process in requested if process not in suspended_now and process not in ours)
    return ours, [process for process in ours if process not in suspended_now]


# Auto Scaling processes an upgrade may suspend: Launch and Terminate are needed to replace the nodes.
SUSPENDABLE_PROCESSES = ("AddToLoadBalancer", "AlarmNotification", "AZRebalance", "HealthCheck", "InstanceRefresh",
                         "ReplaceUnhealthy", "ScheduledActions")


def validate_suspend_processes(processes: Iterable[str], parameter: str = "suspend_processes") -> None:
    """Refuse processes an upgrade cannot suspend, naming the parameter."""
    unknown = [process for process in processes if process not in SUSPENDABLE_PROCESSES]
    if unknown:
        raise invalid_parameter(
            parameter, "%s: %s cannot be suspended during an upgrade; choose from %s"
            % (parameter, ", ".join(unknown), ", ".join(SUSPENDABLE_PROCESSES)), value=unknown)


# Launch errors of failed ASG scaling activities, matched on the activity's StatusMessage (SPEC U3, U8).
_LAUNCH_FAILURE_PATTERNS = (
    (INSTANCE_LIMIT_EXCEEDED, "instance quota exceeded",
     re.compile(r"InstanceLimitExceeded|VcpuLimitExceeded|(instance|vCPU) limit", re.IGNORECASE)),
    (INSUFFICIENT_FREE_ADDRESSES, "no free IP addresses in the subnet",
     re.compile(r"InsufficientFreeAddresses|free (IP )?addresses", re.IGNORECASE)),
    (NODE_CREATION_FAILURE, "insufficient EC2 capacity",
     re.compile(r"InsufficientInstanceCapacity|sufficient .*capacity", re.IGNORECASE)),
    (ASG_INSTANCE_LAUNCH_FAILURES, "the launch template or its resources are invalid",
     re.compile(r"InvalidAMIID|InvalidLaunchTemplate|InvalidParameter|Unsupported|InvalidGroup|"
                r"InvalidSubnet|InvalidKeyPair|iamInstanceProfile|not authorized|Client\.",
                re.IGNORECASE)),
)
_AZ_PATTERN = re.compile(r"\b([a-z]{2}(?:-[a-z]+)+-\d[a-z])\b")
_INSTANCE_PATTERN = re.compile(r"\b(i-[0-9a-f]{8,17})\b")


def _activity_details(activity: Mapping[str, Any]) -> dict[str, Any]:
    try:
        details = json.loads(activity.get("Details") or "{}")
    except ValueError:
        return {}
    return details if isinstance(details, dict) else {}


# Issue 10 item 8: one failed launch aborted (and rolled back) a whole upgrade in 2.4 s. EC2 answers
# InsufficientInstanceCapacity when it has no capacity for the instance type in an AZ right now, and says to try
# again later or elsewhere (EC2 API error codes); Auto Scaling retries the AZ by itself. Every other launch error
# (a quota, no free addresses, an invalid template, AMI or profile) recurs on each retry. So a wait for new nodes
# ends at once on those, and on capacity errors only once an AZ has failed this many launches since it began.
TRANSIENT_LAUNCH_CAUSES = frozenset(["insufficient EC2 capacity", "instance launch failed"])
PERSISTENT_FAILURES_PER_AZ = 3


def persistent_launch_failure(failures: Sequence[dict[str, Any]], limit: int = PERSISTENT_FAILURES_PER_AZ) -> dict[str, Any] | None:
    """The launch failure (of ``failures``, newest first) that retrying cannot fix, or None to keep waiting: the
    newest one of a kind no retry fixes, else the newest one of an AZ with ``limit`` failures or more."""
    for failure in failures:
        if failure["cause"] not in TRANSIENT_LAUNCH_CAUSES:
            return failure
    per_az = {}
    for failure in failures:
        per_az[failure["availability_zone"]] = per_az.get(failure["availability_zone"], 0) + 1
    for failure in failures:
        if per_az[failure["availability_zone"]] >= limit:
            return failure
    return None


def launch_failure(activity: Mapping[str, Any]) -> dict[str, Any] | None:
    """A failed launch activity as {code, cause, availability_zone, instance_id, message}; else None."""
    if activity.get("StatusCode") != "Failed":
        return None
    description = activity.get("Description") or ""
    if "launch" not in description.lower():
        return None
    message = activity.get("StatusMessage") or activity.get("Cause") or ""
    code, cause = NODE_CREATION_FAILURE, "instance launch failed"
    for candidate_code, candidate_cause, pattern in _LAUNCH_FAILURE_PATTERNS:
        if pattern.search(message):
            code, cause = candidate_code, candidate_cause
            break
    details = _activity_details(activity)
    text = " ".join([description, message, activity.get("Cause") or ""])
    az = details.get("Availability Zone")
    if not az:
        match = _AZ_PATTERN.search(text)
        az = match.group(1) if match else None
    instance = _INSTANCE_PATTERN.search(text)
    return {
        "code": code,
        "cause": cause,
        "availability_zone": az,
        "instance_id": instance.group(1) if instance else None,
        "message": message,
        "activity_id": activity.get("ActivityId"),
    }


def launch_failure_error(failure: Mapping[str, Any], asg_name: str, what: str = "a node") -> UpgradeError:
    """The error of a persistent launch failure (persistent_launch_failure), with its code (U8) and where it
    happened; ``what`` the group was launching ("a node", "a replacement")."""
    where = failure["availability_zone"] or "an unknown Availability Zone"
    instance = " (instance %s)" % failure["instance_id"] if failure["instance_id"] else ""
    return UpgradeError(
        failure["code"], "Auto Scaling group %s failed to launch %s in %s%s: %s: %s"
        % (asg_name, what, where, instance, failure["cause"], failure["message"]),
        asg_name=asg_name, availability_zone=failure["availability_zone"], instance_id=failure["instance_id"],
        cause=failure["cause"], activity_id=failure["activity_id"])
