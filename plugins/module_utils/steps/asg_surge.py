# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The surge step: asg_surge's work (raise the Auto Scaling group's sizes and wait for the new nodes, SPEC U2, U3)
for its module or an action.

``module`` is anything with the EksopsModule surface these functions use: ``params`` (asg_surge's options,
ARGUMENT_SPEC), ``check_mode``, ``aws(service)``, ``k8s()``, ``core_v1()``, ``warn``, ``with_diff`` and
``fail_upgrade``.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any
import time

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.asg_state import (
    asg_sizes,
    check_capacity_unmoved,
    check_wanted,
    DEFAULT_SUSPENDED_PROCESSES,
    new_node_target,
    resumed_capacity,
    target_split,
    SCALE_IN_PROTECTION_OURS,
    scale_in_protection_owner,
    set_scale_in_protection,
    suspended_process_names,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import utc_now
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.placement import SURGE_SIZINGS, live_per_az
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_watch import GroupSnapshot, GroupWatch
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.waiter import Waiter
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.mixed_instances import check_weights
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import mark_scale_down_disabled
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.schedule_state import (
    SCHEDULE_DEFAULT_MODULE,
    SCHEDULES,
    journal_schedule,
    mark_surplus,
    surplus_summary,
    surplus_to_mark,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import NODE_CREATION_FAILURE, UpgradeError, invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import describe_instances, join_instances_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import LEASE_OPTION, claim
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.kinds import expected_node_labels
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import (
    NODEGROUP_ARGUMENT_SPEC,
    NodegroupRef,
    describe_asg,
    find_module_nodegroup,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.instance_choice import check_new_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.launch_failures import (
    PERSISTENT_FAILURES_PER_AZ,
    launch_failure_error,
    persistent_launch_failure,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.parallelism import (
    resolve_max_unavailable,
    rolling_parallelism,
    scaled_up_sizes,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.process_suspension import (
    plan_suspension,
    validate_suspend_processes,
)

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule

# The option constraints beside the argument spec, as AnsibleModule and validate_argument_spec take them.
CONSTRAINTS = dict(
    mutually_exclusive=[("max_unavailable", "max_unavailable_percentage")],
    required_if=[("mode", "explicit", ["surge"]), ("mode", "desired", ["desired_capacity"])],
)

ARGUMENT_SPEC = dict(
    NODEGROUP_ARGUMENT_SPEC,
    mode=dict(type="str", choices=["rolling", "explicit", "desired"], default="rolling"),
    surge_sizing=dict(type="str", choices=list(SURGE_SIZINGS), default="eks"),
    surge=dict(type="int"),
    desired_capacity=dict(type="int"),
    max_unavailable=dict(type="int"),
    max_unavailable_percentage=dict(type="int"),
    suspend_processes=dict(type="list", elements="str", default=list(DEFAULT_SUSPENDED_PROCESSES)),
    pending_decrement=dict(type="int", default=0),
    wait=dict(type="bool", default=True),
    wait_timeout=dict(type="int", default=900),
    image_id=dict(type="str"),
    launch_template_version=dict(type="str"),
    label_surge_nodes=dict(type="bool", default=True),
    accept_current_capacity=dict(type="bool", default=False),
    schedule=dict(type="str", choices=list(SCHEDULES), default=SCHEDULE_DEFAULT_MODULE),
    **LEASE_OPTION
)


def validate_params(params: dict[str, Any]) -> None:
    """Refuse bad input before any AWS call, naming the parameter."""
    resolve_max_unavailable(params["max_unavailable"], params["max_unavailable_percentage"], 0)
    if params["mode"] == "explicit" and params["surge"] < 0:
        raise invalid_parameter("surge", "surge must be >= 0, got %d" % params["surge"])
    if params["mode"] == "desired" and params["desired_capacity"] < 0:
        raise invalid_parameter("desired_capacity", "desired_capacity must be >= 0, got %d"
                                % params["desired_capacity"])
    if params["wait_timeout"] <= 0:
        raise invalid_parameter("wait_timeout", "wait_timeout must be > 0, got %d" % params["wait_timeout"])
    validate_suspend_processes(params["suspend_processes"])
    if params["pending_decrement"] < 0:
        raise invalid_parameter("pending_decrement", "pending_decrement must be >= 0, got %d"
                                % params["pending_decrement"])


def group_split(ec2: Any, asg: dict[str, Any], target: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(old, new) live instance records of the group now. Old and new as everywhere, from AWS's record of each
    instance, not its node (SPEC K2)."""
    instances = asg.get("Instances", [])
    joined = join_instances_nodes(instances, describe_instances(ec2, [i["InstanceId"] for i in instances]), [])
    return target_split(joined, target)


def group_placement(ec2: Any, asg: dict[str, Any], target: dict[str, Any],
                    split: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None) -> tuple[dict[str, int], list[str]]:
    """(live instances in each of the group's AZs, the AZs holding old instances): what the surge per_az is sized
    from (SPEC B2), and the instances per AZ before the surge the schedule once ends with (SPEC B1)."""
    old, new = split or group_split(ec2, asg, target)
    return live_per_az(asg.get("AvailabilityZones", []), old + new), sorted(set(i["availability_zone"] for i in old))


def plan_placement(module: EksopsModule, asg: dict[str, Any], target: dict[str, Any], journal: Journal | None,
                   per_az: bool) -> tuple[tuple[dict[str, int], list[str]] | None, dict[str, Any], list[str]]:
    """(group_placement when the surge per_az or the schedule once needs it, the schedule's journal fields, the new
    instances there before this run's surge). SPEC B1: the schedule once records the instances per AZ before the
    surge; a rerun takes the journal's (schedule_state.journal_schedule, which refuses another schedule)."""
    params = module.params
    rolling = params["mode"] == "rolling"
    split = group_split(module.aws("ec2"), asg, target) if per_az or (rolling and params["schedule"] == "once") else None
    placement = group_placement(module.aws("ec2"), asg, target, split) if split is not None else None
    fields, warning = journal_schedule(journal, params["schedule"], rolling, placement[0] if placement else {},
                                       asg["AutoScalingGroupName"])
    if warning:
        module.warn(warning)
    first_surge = journal is None or journal.surge is None
    preexisting = [i["instance_id"] for i in split[1]] if split is not None and first_surge else []
    return placement, fields, preexisting


def target_desired(params: dict[str, Any], asg: dict[str, Any], original_desired: int, journal: Journal | None = None,
                   placement: tuple[dict[str, int], list[str]] | None = None) -> tuple[int, int]:
    """(desired capacity to reach, surge) for the mode, from the size before the upgrade (SPEC U2).

    ``journal``: the upgrade's journal on a rerun. Once it records the rolling surge the capacity it records is
    reached, not recomputed, and past the scale-up the capacity the upgrade set since is kept
    (asg_state.resumed_capacity, issue 25 item 1); else (a journal set back to setup) the surge per_az takes the surge
    it recorded (the group's placement then is the surged one). ``placement``: group_placement, which the surge
    per_az is sized from.
    """
    mode = params["mode"]
    journal_surge = journal.surge if journal is not None else None
    resumed = resumed_capacity(journal, asg["DesiredCapacity"]) if mode == "rolling" and journal else None
    if resumed is not None:
        return resumed, journal_surge if journal_surge is not None else resumed - original_desired
    if mode == "desired":
        return params["desired_capacity"], params["desired_capacity"] - original_desired
    if mode == "explicit":
        surge = params["surge"]
    elif params["surge_sizing"] == "per_az" and journal_surge is not None:
        surge = journal_surge
    else:
        # The same resolution as the upgrade plan's batches (upgrade_plan.upgrade_plan), from the same base.
        az_counts, old_azs = placement or (None, [])
        surge = rolling_parallelism(original_desired, len(asg.get("AvailabilityZones", [])), params["max_unavailable"],
                                    params["max_unavailable_percentage"], surge=params["surge_sizing"],
                                    az_counts=az_counts, old_azs=old_azs)["surge"]
    return original_desired + surge, surge


def plan_journal(journal: Journal | None, asg: dict[str, Any], target: dict[str, Any], wanted_desired: int, surge: int,
                 requested_processes: list[str], pending_decrement: int = 0,
                 schedule_fields: dict[str, Any] | None = None) -> tuple[Journal, list[str]]:
    """The journal after this run, and the processes to suspend now (SPEC A1: only ones not already suspended).
    ``schedule_fields``: what schedule_state.journal_schedule records (SPEC B1). With the MaxSize set (issue 29 item 4)."""
    before = asg_sizes(asg)
    base = journal or Journal.start(phase="scale_up")
    ours, to_suspend = plan_suspension(base.suspended_processes, requested_processes, suspended_process_names(asg))
    updated = base.advanced(
        "scale_up",
        original_min_size=base.original_min_size if base.original_min_size is not None else before["min_size"],
        original_max_size=base.original_max_size if base.original_max_size is not None else before["max_size"],
        original_desired_capacity=(base.original_desired_capacity if base.original_desired_capacity is not None
                                   else before["desired_capacity"]),
        suspended_processes=ours,
        desired_capacity_set=wanted_desired,
        desired_capacity_pending=wanted_desired - pending_decrement if pending_decrement else None,
        surge=surge,
        scale_in_protection=base.scale_in_protection or scale_in_protection_owner(asg),
        launch_template_id=target["launch_template_id"],
        target_launch_template_version=str(target["launch_template_version"]),
        target_image_id=target["image_id"],
        **(schedule_fields or {})
    )
    max_size = scaled_up_sizes(before["min_size"], before["max_size"], wanted_desired)["max_size"]
    return updated.size_set("max_size", max_size, before["max_size"]), to_suspend


def plan_diff(asg: dict[str, Any], before: dict[str, int], after: dict[str, int], journal: Journal | None,
              new_journal: Journal, to_suspend: list[str]) -> dict[str, Any]:
    """The diff of the planned scale-up: sizes, suspended processes, and the schedule with the instances per AZ
    before the surge (SPEC B1); the surplus nodes marked are added once known."""
    suspended = suspended_process_names(asg)
    return dict(before=dict(before, suspended_processes=sorted(suspended),
                            schedule=journal.schedule if journal else None,
                            start_per_az=journal.start_per_az if journal else None),
                after=dict(after, suspended_processes=sorted(set(suspended) | set(to_suspend)),
                           schedule=new_journal.schedule, start_per_az=new_journal.start_per_az))


def node_summary(instance: dict[str, Any]) -> dict[str, Any]:
    return dict(instance_id=instance["instance_id"], availability_zone=instance["availability_zone"],
                node_name=instance["node_name"], ready=instance["ready"])


def describe_problems(problems: list[dict[str, Any]]) -> str:
    return "; ".join("%s%s: %s" % (p["instance_id"] or "availability zone " + str(p["availability_zone"]),
                                   " (%s)" % p["availability_zone"] if p["instance_id"] else "", p["reason"])
                     for p in problems)


class NewNodeValidation:
    """The U3 condition over a GroupWatch snapshot: enough instances, every new node Ready and carrying the
    labels its node group's tool sets (SPEC K1)."""

    def __init__(self, params: dict[str, Any], group: NodegroupRef, target: dict[str, Any], wanted_desired: int) -> None:
        self.params = params
        self.expected_labels = expected_node_labels(group.kind, group.nodegroup_name)
        self.target = target
        self.wanted_desired = wanted_desired
        # A surge step of one or two nodes cannot cover every AZ; only the EKS scale-up phase must.
        self.require_every_az = params["mode"] == "rolling"
        self.relaunches_left = PERSISTENT_FAILURES_PER_AZ

    def new_instances(self, snapshot: GroupSnapshot) -> list[dict[str, Any]]:
        return target_split(snapshot.instances, self.target)[1]

    def problems(self, snapshot: GroupSnapshot) -> list[dict[str, Any]]:
        old, new = target_split(snapshot.instances, self.target)
        azs_with_old_nodes = set(i["availability_zone"] for i in old) if self.require_every_az else set()
        problems = check_new_nodes(new, azs_with_old_nodes, self.expected_labels)
        missing = self.wanted_desired - len(old) - len(new)
        if missing > 0:
            problems.append(dict(availability_zone=None, instance_id=None, node_name=None,
                                 reason="%d of the %d instances were not launched" % (missing, self.wanted_desired)))
        return problems

    def az_to_relaunch(self, snapshot: GroupSnapshot) -> str | None:
        """The AZ of _failure_where_lacking while relaunches are left, else None. Auto Scaling launched the failed
        instance in another AZ and, AZRebalance being suspended (SPEC A1), will not come back to this one: one more
        instance is asked for, which Auto Scaling puts in the AZ with the fewest instances ("Instances are launched
        in the Availability Zone with the fewest instances", Auto Scaling user guide, AZ rebalancing), the one that
        failed (issue 10 item 8)."""
        failure = self._failure_where_lacking(snapshot) if self.relaunches_left > 0 else None
        return failure["availability_zone"] if failure else None

    def given_up(self, snapshot: GroupSnapshot) -> dict[str, Any] | None:
        """_failure_where_lacking once the relaunches are spent, else None. "If launches fail in an Availability
        Zone, Auto Scaling will attempt to launch in another healthy Availability Zone instead" (API reference,
        AvailabilityZoneDistribution): a relaunch can land elsewhere without failing again."""
        return self._failure_where_lacking(snapshot) if self.relaunches_left <= 0 else None

    def _failure_where_lacking(self, snapshot: GroupSnapshot) -> dict[str, Any] | None:
        """The newest launch failure of an AZ with old nodes and no new instance, all wanted ones launched."""
        if not self.require_every_az or not snapshot.failures:
            return None
        old, new = target_split(snapshot.instances, self.target)
        if self.wanted_desired > len(old) + len(new):
            return None
        lacking = set(i["availability_zone"] for i in old) - set(i["availability_zone"] for i in new)
        return next((f for f in snapshot.failures if f["availability_zone"] in lacking), None)

    def __call__(self, snapshot: GroupSnapshot) -> bool:
        return (persistent_launch_failure(snapshot.failures) is not None
                or self._failure_where_lacking(snapshot) is not None or not self.problems(snapshot))


def relaunch(autoscaling: Any, asg_name: str, journal: Journal, validation: NewNodeValidation) -> Journal:
    """One more instance for the AZ that NewNodeValidation.az_to_relaunch named: desired capacity and MaxSize up
    by one, recorded in the journal first (SPEC C3: the capacity we set). Returns the journal written."""
    wanted = validation.wanted_desired + 1
    max_before = describe_asg(autoscaling, asg_name)["MaxSize"]
    max_size = max(max_before, wanted)
    updated = journal.replace(desired_capacity_set=wanted, surge=(journal.surge or 0) + 1).size_set(
        "max_size", max_size, max_before)
    write_journal(autoscaling, asg_name, updated, previous=journal)
    autoscaling_api.update_sizes(autoscaling, asg_name, max_size=max_size, desired_capacity=wanted)
    validation.wanted_desired = wanted
    validation.relaunches_left -= 1
    return updated


def wait_for_new_nodes(module: EksopsModule, group: NodegroupRef, target: dict[str, Any], journal: Journal,
                       started: datetime.datetime) -> tuple[list[dict[str, Any]], list[Any], Journal]:
    """Wait for U3 (SPEC U3), asking for another instance where a capacity error left an AZ without a new one;
    raise the launch failure or NodeCreationFailure. Returns (new instances, nodes, the journal as written)."""
    params = module.params
    name = group.asg_name
    validation = NewNodeValidation(params, group, target, journal.desired_capacity_set)
    watch = GroupWatch(module.aws("autoscaling"), module.aws("ec2"), module.core_v1(), group,
                       activities_since=started)
    waiter = Waiter(validation, params["wait_timeout"])
    while True:
        held, snapshot = watch.wait(waiter)
        failure = persistent_launch_failure(snapshot.failures) or (validation.given_up(snapshot) if held else None)
        if failure is not None:
            raise launch_failure_error(failure, name)
        az = validation.az_to_relaunch(snapshot) if held else None
        if az is None:
            break
        module.warn("A launch in %s failed for lack of capacity and Auto Scaling launched elsewhere; asking for one "
                    "more instance there" % az)
        journal = relaunch(module.aws("autoscaling"), name, journal, validation)
    new = validation.new_instances(snapshot)
    if not held:
        problems = validation.problems(snapshot)
        seen = "; launches that failed meanwhile: %s" % "; ".join(
            "%s in %s" % (f["cause"], f["availability_zone"]) for f in snapshot.failures) if snapshot.failures else ""
        raise UpgradeError(
            NODE_CREATION_FAILURE, "New nodes of Auto Scaling group %s were not ready within %d s (wait_timeout): %s%s"
            % (name, params["wait_timeout"], describe_problems(problems), seen),
            asg_name=name, problems=problems, new_nodes=[node_summary(i) for i in new],
            launch_failures=snapshot.failures)
    return new, snapshot.nodes, journal


def scale_up(module: EksopsModule, group: NodegroupRef, journal: Journal | None, new_journal: Journal, to_suspend: list[str],
             before: dict[str, int], after: dict[str, int]) -> bool:
    """Journal first, then the processes, the scale-in protection and the sizes. Returns whether protection was
    set (the other changes the plan foresaw)."""
    autoscaling, name = module.aws("autoscaling"), group.asg_name
    if new_journal != journal:
        write_journal(autoscaling, name, new_journal, previous=journal or Journal())
    autoscaling_api.suspend_processes(autoscaling, name, to_suspend)
    # Issue 10 item 22: before the group grows, so that a desired capacity set back behind the upgrade's back
    # (a Terraform apply, a person) cannot scale in nodes that hold pods.
    protected = (new_journal.scale_in_protection == SCALE_IN_PROTECTION_OURS
                 and bool(set_scale_in_protection(autoscaling, group.asg, True)))
    if after != before:
        autoscaling_api.update_sizes(autoscaling, name, max_size=after["max_size"], desired_capacity=after["desired_capacity"])
    return protected


def wait_and_label(module: EksopsModule, group: NodegroupRef, target: dict[str, Any], journal: Journal,
                   started: datetime.datetime, wanted: int, after: dict[str, int],
                   result: dict[str, Any], phase_before: str | None = None,
                   preexisting: list[str] | None = None) -> tuple[Journal, bool]:
    """Wait for the new nodes (U3), protect them, under the schedule once mark the surplus ones (SPEC B1), and with
    label_surge_nodes mark them for the cluster autoscaler (C2). Returns (the journal as written, whether a node was
    marked)."""
    autoscaling, name = module.aws("autoscaling"), group.asg_name
    new, nodes, journal = wait_for_new_nodes(module, group, target, journal, started)
    if journal.scale_in_protection == SCALE_IN_PROTECTION_OURS:
        set_scale_in_protection(autoscaling, describe_asg(autoscaling, name), True)
    relaunched = journal.desired_capacity_set - wanted
    if relaunched:
        result["surge"] += relaunched
        result["after"] = scaled_up_sizes(after["min_size"], after["max_size"], journal.desired_capacity_set)
        result["relaunched"] = relaunched
    result["new_nodes"] = [node_summary(i) for i in new]
    # SPEC B1: the new nodes the group will not keep are cordoned before the first old node is drained.
    surplus = surplus_to_mark(journal, phase_before, new, nodes, preexisting or [])
    result["surplus_nodes"] = surplus_summary(surplus)
    surplus_marked = mark_surplus(module.core_v1(), surplus, journal.run_id, module.check_mode)
    if not module.params["label_surge_nodes"]:
        return journal, bool(surplus_marked)
    new_names = set(i["node_name"] for i in new)
    marked = mark_scale_down_disabled(module.core_v1(), [n for n in nodes if n.metadata.name in new_names], journal.run_id)
    return journal, bool(marked or surplus_marked)


def run(module: EksopsModule) -> dict[str, Any]:
    started_clock = time.time()
    started = utc_now()
    params = module.params
    validate_params(params)
    autoscaling = module.aws("autoscaling")
    ec2 = module.aws("ec2")
    group = find_module_nodegroup(module, refuse_managed="scale its Auto Scaling group")
    asg, name, journal = group.asg, group.asg_name, group.journal()
    check_weights(asg)  # its sizes would be capacity units, this module's are nodes (SPEC W2)
    before = asg_sizes(asg)

    # Only a raise is someone else's here: the journal is written before the scale-up, so a crash in between
    # leaves the group below the capacity set, which this run raises (SPEC C3).
    if journal is not None and journal.desired_capacity_set is not None \
            and before["desired_capacity"] > journal.desired_capacity_set:
        journal = check_capacity_unmoved(module, autoscaling, asg, journal)

    target = new_node_target(ec2, asg, journal, params["image_id"], params["launch_template_version"])
    original_desired = (journal.original_desired_capacity if journal is not None
                        and journal.original_desired_capacity is not None else before["desired_capacity"])
    per_az = (params["mode"] == "rolling" and params["surge_sizing"] == "per_az"
              and (journal is None or journal.surge is None))
    placement, schedule_fields, preexisting = plan_placement(module, asg, target, journal, per_az)
    wanted, surge = target_desired(params, asg, original_desired, journal, placement if per_az else None)
    check_wanted(params, wanted, before["desired_capacity"], original_desired, name)
    after = scaled_up_sizes(before["min_size"], before["max_size"], wanted)
    new_journal, to_suspend = plan_journal(journal, asg, target, wanted, surge, params["suspend_processes"],
                                           params["pending_decrement"], schedule_fields)

    result = dict(asg_name=name, surge=surge, before=before, after=after, new_nodes=[],
                  surge_sizing=params["surge_sizing"] if params["mode"] == "rolling" else None,
                  suspended_processes=list(new_journal.suspended_processes), target=target,
                  schedule=(new_journal.schedule or "eks") if params["mode"] == "rolling" else None,
                  start_per_az=new_journal.start_per_az, surplus_nodes=[])
    changed = bool(new_journal != journal or to_suspend or after != before)
    diff = plan_diff(asg, before, after, journal, new_journal, to_suspend)

    # Whatever the plan, the module may protect, relaunch, annotate and journal below: the run's lease first.
    claim(module, autoscaling, asg)
    if not module.check_mode:
        if params["wait"]:
            # SPEC K4: the Kubernetes API the wait will watch is proven to be cluster_name's before any change.
            module.k8s()
        if scale_up(module, group, journal, new_journal, to_suspend, before, after):
            changed = True
        if params["wait"]:
            new_journal, labelled = wait_and_label(module, group, target, new_journal, started, wanted, after, result,
                                                   journal.phase if journal is not None else None, preexisting)
            changed = changed or labelled
            diff["after"]["surplus_nodes"] = [i["node_name"] for i in result["surplus_nodes"]]
        # The new capacity is there: the old nodes are next (a rerun must not take them for a scale-up).
        upgrading = new_journal.advanced("upgrade")
        if upgrading != new_journal:
            write_journal(autoscaling, name, upgrading, previous=new_journal)
            changed = True
    result["elapsed_seconds"] = round(time.time() - started_clock, 1)
    return module.with_diff(dict(changed=changed, surge=result), **diff)
