# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SPEC B1 (issue 11 item 1, "each pod moves once") wired into the phases: what the journal records about the
schedule, the surplus nodes of the scale-up, the live view of the group the planner (plan/schedule.py) is asked about
per batch, and the surplus the scale-down removes.

Under the schedule ``once`` the scale-up (asg_surge) records, before the surge (SPEC C3: journal first), the
schedule and the instances per Availability Zone before it (``start_per_az``); once the new nodes are validated
(U3) it marks the new nodes the group will not keep (schedule.choose_surplus) with SURPLUS_ANNOTATION, cordons
them and excludes them from load balancers, so no evicted pod lands on them. The upgrade phase (node_replace)
asks schedule.next_batch which old instances go next and which of their terminations lower the desired capacity
instead of waiting for a replacement, so the group ends with start_per_az new instances per AZ plus the surplus,
which the scale-down (nodegroup_scale_restore) removes first: they hold no pod the upgrade moved.

The decisions are pure functions of what the callers read; mark_surplus and read_group are the two calls.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any
import random

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import schedule
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.placement import live_per_az
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.quarantine_book import is_quarantined
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import cordon_nodes, uncordon_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import described_for_join, join_instances_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import SURPLUS_ANNOTATION, Journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import patch_node_annotations
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.instance_choice import (
    LEAVING_STATES,
    pick_batch,
    scale_in_choice,
    split_old_new,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.parallelism import autoscaler_changed

SCHEDULES = schedule.SCHEDULES
SCHEDULE_DEFAULT_MODULE = "eks"  # modules keep EKS's schedule unless told (parity); the playbooks default to once


# --- the scale-up (asg_surge) ---------------------------------------------------------------------------------

def journal_schedule(journal: Journal | None, requested: str, rolling: bool, start_per_az: Mapping[str, int],
                     asg_name: str) -> tuple[dict[str, Any], str | None]:
    """(journal fields to record, warning or None) for a scale-up asked for schedule ``requested``.

    A rerun never recomputes what the journal holds, and a rerun asking for another schedule than the journal's is
    refused naming ``schedule``. A journal whose surge was recorded without a schedule (an older version of the
    collection started it) keeps none: the upgrade goes on with EKS's schedule, which the warning says.
    ``start_per_az``: the live instances per AZ now, recorded only by the run that makes the first surge.
    """
    if requested not in SCHEDULES:
        raise invalid_parameter("schedule", "schedule must be one of %s, got %s" % (", ".join(SCHEDULES), requested))
    if not rolling:
        if requested == "once":
            raise invalid_parameter("schedule", "schedule once plans the terminations of the rolling upgrade "
                                    "(mode rolling); the other modes keep EKS's schedule (schedule eks)")
        return {}, None
    if journal is not None and journal.schedule is not None:
        if journal.schedule != requested:
            raise invalid_parameter(
                "schedule", "schedule: the upgrade under way on Auto Scaling group %s was scaled up with schedule %s "
                "(journal); a rerun must ask for the same schedule, got %s" % (asg_name, journal.schedule, requested))
        return {}, None
    if journal is not None and journal.surge is not None:
        warning = None
        if requested == "once":
            warning = ("schedule once: the upgrade under way on Auto Scaling group %s was scaled up without a recorded "
                       "schedule (by an older version of this collection), so the instances per Availability Zone "
                       "before it are not known; it goes on with EKS's schedule (eks)" % asg_name)
        return {}, warning
    fields = dict(schedule=requested)
    if requested == "once":
        fields["start_per_az"] = dict(start_per_az)
    return fields, None


def by_az(instances: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """{az: [instance id, ...]} of instance records."""
    grouped = {}
    for instance in instances:
        grouped.setdefault(instance.get("availability_zone") or "", []).append(instance["instance_id"])
    return grouped


def marked_surplus(nodes: Iterable[Any], run_id: str | None) -> dict[str, Any]:
    """{node name: node} of the nodes marked surplus by run ``run_id`` (node_view objects)."""
    if not run_id:
        return {}
    return dict((node.metadata.name, node) for node in nodes
                if (node.metadata.annotations or {}).get(SURPLUS_ANNOTATION) == run_id)


def surplus_to_mark(journal: Journal, phase_before: str | None, new: Sequence[Mapping[str, Any]],
                    nodes: Iterable[Any], preexisting: Iterable[str]) -> list[dict[str, Any]]:
    """The new instance records to mark surplus under ``journal`` (schedule once with start_per_az), after U3.

    Marks already made by this run are kept (a rerun never chooses again); when the upgrade phase had begun before
    this run (``phase_before``) nothing new is chosen, since new nodes may hold moved pods by then. Otherwise
    schedule.choose_surplus picks them from the new instances per AZ, ``preexisting`` being the new instances that
    existed before this run's surge."""
    if journal.schedule != "once" or journal.start_per_az is None:
        return []
    marked = marked_surplus(nodes, journal.run_id)
    if marked:
        return [i for i in new if i.get("node_name") in marked]
    if phase_before == "upgrade":
        return []
    chosen = set(schedule.choose_surplus(journal.start_per_az, by_az(new), preexisting=list(preexisting)))
    return [i for i in new if i["instance_id"] in chosen]


def mark_surplus(core_v1: Any, surplus: Sequence[Mapping[str, Any]], run_id: str, check_mode: bool) -> list[str]:
    """Annotate the surplus nodes SURPLUS_ANNOTATION=<run_id> (the record, first), then cordon them and label them
    excluded from external load balancers with node_drain's own cordon (D1, U4). Returns the node names changed."""
    names = [i["node_name"] for i in surplus if i.get("node_name")]
    if not names or check_mode:
        return []
    for name in names:
        patch_node_annotations(core_v1, name, {SURPLUS_ANNOTATION: run_id})
    cordon_nodes(core_v1, names, run_id=run_id, exclude_from_load_balancers=True)
    return names


def surplus_summary(surplus: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(instance_id=i["instance_id"], availability_zone=i["availability_zone"], node_name=i.get("node_name"))
            for i in surplus]


# --- the upgrade phase (node_replace) -------------------------------------------------------------------------

def live_schedule(journal: Journal | None, requested: str) -> tuple[str, str | None]:
    """(the schedule node_replace runs, warning or None): ``once`` needs the journal's start_per_az; without it
    (an older version of the collection scaled the group up, or the scale-up ran with schedule eks) EKS's."""
    if requested != "once":
        return requested, None
    if journal is None or journal.start_per_az is None:
        return "eks", ("schedule once: the upgrade journal records no instances per Availability Zone before the "
                       "scale-up (start_per_az: the scale-up ran with schedule eks, or an older version of this "
                       "collection started the upgrade); the old nodes are replaced with EKS's schedule (eks)")
    return "once", None


def capacity_accepted(journal: Journal, desired_now: int, accept_current_capacity: bool) -> bool:
    """Whether the desired capacity was, or is about to be, accepted as moved (accept_current_capacity, issue 10
    item 23): the size the group returns to is no longer the sum of start_per_az, or the desired capacity is not
    the one the upgrade set and accept_current_capacity will adopt it at the next termination."""
    if journal.start_per_az is not None and journal.original_desired_capacity is not None \
            and journal.original_desired_capacity != sum(journal.start_per_az.values()):
        return True
    return accept_current_capacity and journal.desired_capacity_set is not None and autoscaler_changed(
        desired_now, journal.desired_capacity_set, journal.desired_capacity_pending)


def group_view(asg: Mapping[str, Any], joined: Sequence[Mapping[str, Any]], journal: Journal,
               surplus_nodes: Iterable[str], override_images: Mapping[str, str],
               held: Collection[str] = ()) -> schedule.GroupView:
    """The schedule.GroupView of ``asg`` (one DescribeAutoScalingGroups) whose instances joined with EC2 and the
    nodes are ``joined``: terminating instances are not live, surplus ones (node names ``surplus_nodes``) are live
    but not kept, ``owed`` the replacements Auto Scaling has not launched yet; ``override_images`` as in
    instance_choice.is_new_instance; ``held`` old instances held in quarantine (issue 27 item 5): live, and not
    old to replace now."""
    zones = list(asg.get("AvailabilityZones") or [])
    live = [i for i in joined if i.get("lifecycle_state") not in LEAVING_STATES]
    old, new = split_old_new(live, journal.target_launch_template_version, journal.target_image_id, override_images)
    surplus = set(surplus_nodes)
    kept = [i for i in new if not (i.get("node_name") and i["node_name"] in surplus)]
    live_counts = live_per_az(zones, live)
    owed = max(0, int(asg["DesiredCapacity"]) - sum(live_counts.values()))
    old_by_az = dict((zone, []) for zone in zones)
    for zone, ids in by_az([i for i in old if i["instance_id"] not in held]).items():
        old_by_az.setdefault(zone, []).extend(ids)
    return schedule.GroupView(zones, dict(journal.start_per_az), old_by_az, live_per_az(zones, kept), live_counts,
                              owed)


def read_group(autoscaling: Any, ec2: Any, core_v1: Any, group: Any,
               describe_asg: Callable[[Any, str], dict[str, Any]],
               list_nodes: Callable[[Any, Any], list[Any]],
               described: dict[str, dict[str, Any]] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]], list[Any]]:
    """(the group described once, its instances joined with EC2 and their nodes, the nodes): one
    DescribeAutoScalingGroups, one DescribeInstances, one node list. ``described``: the EC2 descriptions read
    before, by instance id, which this call adds to; only the members not in it are described. What the join reads
    of an EC2 description never changes in an instance's life (image, launch time, placement, the launch template
    version EC2 tags it with at launch)."""
    asg = describe_asg(autoscaling, group.asg_name)
    members = asg.get("Instances", [])
    nodes = list_nodes(core_v1, group.with_asg(asg))
    known = described_for_join(ec2, [i["InstanceId"] for i in members], {} if described is None else described)
    joined = join_instances_nodes(members, known, nodes)
    return asg, joined, nodes


def after_terminations(asg: Mapping[str, Any], joined: Sequence[Mapping[str, Any]], journal: Journal,
                       instance_ids: Sequence[str], decrement_ids: Sequence[str]
                       ) -> tuple[dict[str, Any], list[dict[str, Any]], Journal]:
    """(asg, joined, journal) as read_group would read them once Auto Scaling has accepted the terminations of
    ``instance_ids``, those of ``decrement_ids`` lowering the desired capacity (terminate_step.terminate: the
    instances Terminating, the desired capacity lowered and recorded in the journal). The live planner plans the
    next batch from it while a batch waits out its post-drain wait (issue 11 item 4)."""
    leaving = set(instance_ids)
    desired = int(asg["DesiredCapacity"]) - len(decrement_ids)
    predicted = dict(asg, DesiredCapacity=desired, Instances=[
        dict(i, LifecycleState="Terminating") if i["InstanceId"] in leaving else i for i in asg.get("Instances", [])])
    records = [dict(i, lifecycle_state="Terminating") if i["instance_id"] in leaving else dict(i) for i in joined]
    return predicted, records, journal.replace(desired_capacity_set=desired) if decrement_ids else journal


def planning_basis(asg: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the live planner's decision depends on in one DescribeAutoScalingGroups: the desired capacity, which
    instances are members and live (Pending, InService) or leaving, and the journal. Two reads with the same basis
    plan the same batch (an instance going from Pending to InService changes nothing)."""
    members = frozenset((i["InstanceId"], i.get("LifecycleState") not in LEAVING_STATES)
                        for i in asg.get("Instances", []))
    return (asg.get("DesiredCapacity"), members,
            Journal.from_tags(asg.get("Tags"), asg_name=asg.get("AutoScalingGroupName")))


def eks_batch(joined: Sequence[Mapping[str, Any]], journal: Journal, batch_size: int,
              rng: random.Random, override_images: Mapping[str, str]) -> schedule.ScheduledBatch | None:
    """EKS's batch from the live group (the fallback after an accepted capacity): up to ``batch_size`` old
    instances at random (U5), every termination replaced."""
    live = [i for i in joined if i.get("lifecycle_state") not in LEAVING_STATES]
    old = split_old_new(live, journal.target_launch_template_version, journal.target_image_id, override_images)[0]
    picked = pick_batch(sorted(old, key=lambda i: i["instance_id"]), batch_size, rng)
    if not picked:
        return None
    return schedule.ScheduledBatch([i["instance_id"] for i in picked], [], False)


# --- the scale-down (nodegroup_scale_restore) -----------------------------------------------------------------

def restore_choice(members: Sequence[dict[str, Any]], nodes: Iterable[Any], journal: Journal, count: int,
                   group_version: int | None) -> list[dict[str, Any]]:
    """The ``count`` instances (join records of the live ``members``) the scale-down removes (U6): under the
    journal's schedule once, first the surplus this run marked (they hold no pod the upgrade moved), then, if more
    must go, the AZ-balanced choice (planning.scale_in_choice) among the others; a node held in quarantine (issue 27
    item 5: a PodDisruptionBudget kept its pods, its drain would time out again) only when no other is left. Each
    is drained before its termination (U6), never removed with its pods."""
    if count <= 0:
        return []
    chosen = []
    nodes = list(nodes)
    if journal.schedule == "once":
        marked = marked_surplus(nodes, journal.run_id)
        chosen = [i for i in members if i.get("node_name") in marked][:count]
    picked = set(i["instance_id"] for i in chosen)
    held = set(n.metadata.name for n in nodes if is_quarantined(n.metadata.labels))
    for rest in ([i for i in members if i["instance_id"] not in picked and i.get("node_name") not in held],
                 [i for i in members if i["instance_id"] not in picked and i.get("node_name") in held]):
        chosen += scale_in_choice(rest, count - len(chosen), group_version)
    return chosen


def release_surplus(core_v1: Any, nodes: Iterable[Any], run_id: str | None) -> list[str]:
    """The surplus nodes of run ``run_id`` the scale-down keeps (a capacity accepted above the size before the
    upgrade needs them) are uncordoned and lose the surplus mark: they serve from now on. Returns their names."""
    names = sorted(marked_surplus(nodes, run_id))
    if not names:
        return []
    uncordon_nodes(core_v1, names, run_id=run_id)
    for name in names:
        patch_node_annotations(core_v1, name, {SURPLUS_ANNOTATION: None})
    return names


def nodes_with_moved_pods(drain: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The drained nodes that held pods to move (evicted or deleted): under schedule once, none of the surplus."""
    return sorted(name for name, node in drain.items() if node.get("evicted") or node.get("deleted"))
