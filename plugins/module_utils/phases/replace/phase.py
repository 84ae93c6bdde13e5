# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_replace's options and the steps of its loop: node_drain's and asg_instance_terminate's own code
(drain_step, terminate_step), and asg_surge's (surge_step) for the launches of the surge strategy's steps, run with
one shared Clients, in the action plugin's process (issue 11 item 4).

The steps' options are typed and checked once for the phase (PhaseSteps, issue 26 item 4); the steps run with one
StepContext over node_replace's params (host/step_context.py), and the loop reads their typed outcomes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
import time

from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import node_drain as drain_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import nodegroup_info as nodegroup_describe
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import schedule_state as schedule_ops
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import asg_surge as surge_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import asg_instance_terminate as terminate_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.placement import live_per_az, surge_step_old
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clients import Clients
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import DrainOptions
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.cluster_proof import NODE_READY_TIMEOUT_DEFAULT
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError, invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.launch_templates import check_launch_template_unmoved
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import LEASE_OPTION
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.next_batch import LivePlanner
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.instance_choice import LEAVING_STATES
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import (
    NODEGROUP_ARGUMENT_SPEC,
    NodegroupRef,
    describe_asg,
    find_module_nodegroup,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.read_ahead import ReadAhead
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.batch_safe_point import BatchSafePoint, batch_bound, gated_batches
from ansible_collections.eksops.nodegroup.plugins.module_utils.gates.safe_points import GATE_ARGUMENT_SPEC, SafePoints
from ansible_collections.eksops.nodegroup.plugins.module_utils.host import job_guard
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.quarantine import Quarantine, drained_and_held
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.quarantine_book import (
    MAX_QUARANTINED_NODES_DEFAULT,
    UNDRAINABLE_NODES,
    UNDRAINABLE_NODES_DEFAULT,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.health_gate import GATE_OPTIONS, ordered_plan, phase_gates
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import clock_time
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import StepContext, group_options, validated
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import (
    Batch,
    Drained,
    ReplaceFailed,
    ReplaceLoop,
    ReplaceState,
    StepFailed,
    canary_first,
    planned_batches,
    planned_steps,
    termination_rounds,
)

# The planning options, as nodegroup_info takes them; used when node_replace plans the phase itself (max_surge
# plans the surge strategy's steps, SPEC S1-S4, as the rolling strategies' batches are planned).
PLANNING_OPTIONS = ("update_strategy", "max_unavailable", "max_unavailable_percentage", "max_surge", "surge_cap")

# node_replace's own options; the AWS and Kubernetes ones are added as for every module (merged_argument_spec).
ARGUMENT_SPEC = dict(
    NODEGROUP_ARGUMENT_SPEC,
    batches=dict(type="list", elements="list"),
    # The surge strategy's steps as nodegroup_info plans them (parallelism.place_surge_steps); the keys this loop
    # does not use are the plan's own, accepted as they come.
    steps=dict(type="list", elements="dict", options=dict(
        desired_capacity=dict(type="int", required=True),
        launch=dict(type="int", required=True),
        instance_ids=dict(type="list", elements="str", required=True),
        step=dict(type="int"),
        replace=dict(type="int"),
        desired_after_launch=dict(type="int"),
        desired_after_terminate=dict(type="int"),
    )),
    suspend_processes=surge_step.ARGUMENT_SPEC["suspend_processes"],
    node_names=dict(type="dict", default={}),
    cordon_old_nodes=dict(type="bool", default=False),
    update_strategy=nodegroup_describe.ARGUMENT_SPEC["update_strategy"],
    max_unavailable=nodegroup_describe.ARGUMENT_SPEC["max_unavailable"],
    max_unavailable_percentage=nodegroup_describe.ARGUMENT_SPEC["max_unavailable_percentage"],
    max_surge=nodegroup_describe.ARGUMENT_SPEC["max_surge"],
    surge_cap=nodegroup_describe.ARGUMENT_SPEC["surge_cap"],
    delete_options=dict(type="dict", default={}, options=drain_step.DELETE_OPTIONS_SPEC),
    post_drain_wait=drain_step.ARGUMENT_SPEC["post_drain_wait"],
    post_drain_min_wait=drain_step.ARGUMENT_SPEC["post_drain_min_wait"],
    ignore_load_balancer_timeout=drain_step.ARGUMENT_SPEC["ignore_load_balancer_timeout"],
    eviction_concurrency=drain_step.ARGUMENT_SPEC["eviction_concurrency"],
    accept_current_capacity=dict(type="bool", default=False),
    wait_for_replacements=dict(type="bool", default=False),
    wait_timeout=dict(type="int", default=600),
    node_ready_timeout=dict(type="int", default=NODE_READY_TIMEOUT_DEFAULT),
    run_id=dict(type="str"),
    schedule=dict(type="str", choices=list(schedule_ops.SCHEDULES), default=schedule_ops.SCHEDULE_DEFAULT_MODULE),
    batch_size=dict(type="int"),
    seed=dict(type="int"),
    undrainable_nodes=dict(type="str", choices=list(UNDRAINABLE_NODES), default=UNDRAINABLE_NODES_DEFAULT),
    max_quarantined_nodes=dict(type="int", default=MAX_QUARANTINED_NODES_DEFAULT),
    # Issue 27 items 2-4: what is checked before each batch (gates/safe_points.py, phases/replace/batch_safe_point.py).
    **GATE_ARGUMENT_SPEC,
    # Issue 27 items 1 and 7: the soak and health gate, the canary, the zone order (phases/replace/health_gate.py).
    **GATE_OPTIONS,
    **LEASE_OPTION
)


def full_argument_spec() -> dict[str, Any]:
    return merged_argument_spec(ARGUMENT_SPEC, uses_aws=True, uses_k8s=True)


def validate_schedule(params: Mapping[str, Any]) -> None:
    """The schedule options and the surge steps, before any change, naming the parameter (SPEC B1, S3)."""
    if params["schedule"] == "once" and params["wait_for_replacements"]:
        raise invalid_parameter("schedule", "schedule once plans which terminations lower the desired capacity; "
                                "wait_for_replacements (strategy minimal) waits for a replacement of each: use "
                                "schedule eks with it")
    if params["steps"] is not None or params["max_surge"] is not None:
        # SPEC S3: each step drains its own nodes after its launch; nothing is cordoned ahead or waited for.
        for name, refused in (("schedule", params["schedule"] != "eks"),
                              ("cordon_old_nodes", params["cordon_old_nodes"]),
                              ("wait_for_replacements", params["wait_for_replacements"])):
            if refused:
                raise invalid_parameter(name, "%s: the surge strategy's steps (steps, max_surge) take the schedule "
                                        "eks, no cordon_old_nodes and no wait_for_replacements" % name)
        for step in params["steps"] or []:
            if step["desired_capacity"] < 0 or step["launch"] < 0:
                raise invalid_parameter("steps", "steps: desired_capacity and launch must be >= 0, got step %s"
                                        % dict(step))
    if params["batch_size"] is not None and params["batch_size"] < 1:
        raise invalid_parameter("batch_size", "batch_size must be >= 1, got %d" % params["batch_size"])


@dataclass(frozen=True)
class PhaseSteps:
    """The options of the phase's steps, typed and checked once from node_replace's validated params (step_options),
    as kubectl's drain command builds its drain.Helper once and drains every node with it (kubernetes/kubectl
    pkg/cmd/drain/drain.go, DrainCmdOptions.Complete; pkg/drain/drain.go, Helper): ``drain``, node_drain's
    (each batch names its instances, DrainStep.of_instances); ``terminate``, asg_instance_terminate's (each round
    its instances and decrement, TerminateStep.of_round); ``surge``, asg_surge's params for a surge step's launch
    (validated here once; each step sets its desired capacity, wait and pending decrement)."""

    drain: drain_step.DrainStep
    terminate: terminate_step.TerminateStep
    surge: Mapping[str, Any] | None

    def of_run(self, run_id: str | None) -> PhaseSteps:
        """The same options, the drains marking the nodes they cordon with the upgrade's ``run_id`` (the journal's,
        which plan_phase resolves when the task gives none), not a drain's own: an abort gives back the nodes the
        upgrade cordoned by it (issue 27 item 3)."""
        if not run_id or run_id == self.drain.run_id:
            return self
        engine = DrainOptions(**dict(self.drain.engine.as_dict(), run_id=run_id))
        return replace(self, drain=replace(self.drain, engine=engine, run_id=run_id))


def step_options(params: Mapping[str, Any], check_mode: bool) -> PhaseSteps:
    """PhaseSteps from node_replace's validated ``params``, every option checked before any change (the drain's
    by DrainOptions, naming the parameter)."""
    drain = drain_step.DrainStep.from_params(dict(params, state="drain", instance_ids=[],
                                                  exclude_from_load_balancers=True), check_mode)
    terminate = terminate_step.TerminateStep.from_params(dict(params, instance_ids=[], wait=True,
                                                              should_decrement_desired_capacity=False))
    surge = None
    if params["steps"] is not None or params["max_surge"] is not None:
        options = group_options(params)
        options.update(mode="desired", desired_capacity=0, suspend_processes=params["suspend_processes"],
                       wait_timeout=params["node_ready_timeout"],
                       accept_current_capacity=params["accept_current_capacity"])
        surge = validated(surge_step.ARGUMENT_SPEC, options)
    return PhaseSteps(drain, terminate, surge)


def _guarded(step: Callable[..., Any]) -> Callable[..., Any]:
    """An UpgradeError a step raises (module.run would have turned it into fail_json) becomes StepFailed."""
    def call(*args: Any) -> Any:
        try:
            return step(*args)
        except UpgradeError as err:
            raise StepFailed(err) from err
    return call


class Terminations:
    """The termination rounds of one batch (termination_rounds, terminate_step.Termination) as the one handle the
    loop's finish waits on, read as the loop reads one round: the lists joined, the group per AZ before the
    first."""

    def __init__(self, rounds: Sequence[terminate_step.Termination]) -> None:
        self.rounds = list(rounds)

    @property
    def never_joined(self) -> list[dict[str, Any]]:
        return [i for r in self.rounds for i in r.never_joined]

    @property
    def availability_zones(self) -> dict[str, str]:
        return dict(item for r in self.rounds for item in r.availability_zones.items())

    @property
    def group_per_az(self) -> dict[str, int]:
        return dict(self.rounds[0].group_per_az) if self.rounds else {}

    @property
    def replacements(self) -> list[dict[str, Any]]:
        return [i for r in self.rounds for i in r.replacements]

    @property
    def retained_instances(self) -> list[str]:
        return [i for r in self.rounds for i in r.retained_instances]


def plan_phase(params: Mapping[str, Any], clients: Clients, warn: Callable[[str], None],
               held: Callable[[Mapping[str, str | None]], Mapping[str, str]] = lambda names: {}
               ) -> tuple[dict[str, Any], dict[str, Any] | None, NodegroupRef | None]:
    """(node_replace's params with the plan filled in, the plan or None, the node group found or None). With
    ``batches`` or ``steps`` given they are the plan. Without, the phase is planned here as nodegroup_info plans it
    (nodegroup_describe, from the planning options, the journal's run id and the batch size, seed and node names of
    the plan): one process for the phase (issue 11 item 4); with ``max_surge``, the surge strategy's steps (issue 26
    item 2: one replace path for both strategies). A managed node group is refused (SPEC K3): EKS replaces its
    nodes. ``held(node_names)``: the plan's instances an earlier run held in quarantine (quarantine.CarriedOver),
    left out before the plan is ordered (issue 27 items 1, 5 and 7)."""
    if params["batches"] is not None or params["steps"] is not None:
        return dict(params), None, None
    options = group_options(params, lease=False)
    options.update((name, params[name]) for name in PLANNING_OPTIONS + ("seed", "schedule"))
    context = StepContext(validated(nodegroup_describe.ARGUMENT_SPEC, options), clients, False, False, warn,
                          lambda line: None)
    group = find_module_nodegroup(context, refuse_managed="replace its nodes through its Auto Scaling group")
    # Issue 29 item 4: before the old nodes are cordoned.
    check_launch_template_unmoved(context.aws("ec2"), group.asg, group.journal())
    described = nodegroup_describe.describe_nodegroup(context, group)
    plan = described["plan"]
    node_names = dict((i["instance_id"], i["node_name"]) for i in described["instances"])
    planned = [step["instance_ids"] for step in plan["steps"]] if plan["strategy"] == "surge" else plan["batches"]
    old = set(i for batch in planned for i in batch)
    plan = ordered_plan(plan, dict((i["instance_id"], i["availability_zone"]) for i in described["instances"]),
                        params["canary"], params["batch_order"],
                        held(dict((i, n) for i, n in node_names.items() if i in old)))
    node_names.update(params["node_names"])
    planned = dict(steps=plan["steps"]) if plan["strategy"] == "surge" else dict(batches=plan["batches"])
    return dict(params, batch_size=params["batch_size"] or plan["batch_size"], **planned,
                seed=plan["seed"], asg_name=described["asg_name"], node_names=node_names,
                run_id=params["run_id"] or (described["journal"] or {}).get("run_id")), plan, group


def plan_line(plan: Mapping[str, Any]) -> str:
    """The plan, for a person (the line the upgrade role printed before the phase)."""
    if plan["strategy"] == "surge":
        return ("%d of %d nodes run an old launch template version; replacing them in %d steps with max_surge %d and "
                "max_unavailable %d: the group stays between %d and %d nodes (desired capacity at each step: %s; "
                "seed %d)." % (plan["old_count"], plan["node_count"], len(plan["steps"]), plan["max_surge"],
                               plan["max_unavailable"], plan["size_range"][0], plan["size_range"][1],
                               ", ".join(str(step["desired_capacity"]) for step in plan["steps"]), plan["seed"]))
    return ("%d of %d nodes run an old launch template version; replacing them %d at a time in %d batches "
            "(strategy %s, seed %d)." % (plan["old_count"], plan["node_count"], plan["batch_size"],
                                         len(plan["batches"]), plan["strategy"], plan["seed"]))


def cordon_old_nodes(params: Mapping[str, Any], steps: PhaseSteps, clients: Clients, check_mode: bool, diff: bool,
                     warn: Callable[[str], None], log: Callable[[str], None]) -> dict[str, Any] | None:
    """SPEC U4: every old node cordoned and labelled out of the load balancers before the first batch, as
    node_drain state=cordon does (None when no old instance): node_drain's result, the task's to report. A failure
    raises ReplaceFailed with the step's result and nothing replaced."""
    instance_ids = [instance_id for batch in params["batches"] for instance_id in batch]
    if not instance_ids:
        return None
    context = StepContext(params, clients, check_mode, diff, warn, log)
    try:
        outcome = drain_step.drain(context, steps.drain.of_instances(instance_ids, state="cordon"))
    except UpgradeError as err:
        raise ReplaceFailed(err, ReplaceState(), {}) from err
    result = outcome.to_result(context)
    for warning in outcome.warnings():
        warn(warning)
    if outcome.error is not None:
        raise ReplaceFailed(outcome.error, ReplaceState(), result)
    return result


def old_instances_left(params: Mapping[str, Any], clients: Clients, warn: Callable[[str], None]) -> list[str]:
    """U5 ("until no node runs the old launch template version"): the group's old instances after the loop, as
    nodegroup_info tells them (those that joined during the upgrade are replaced by a rerun)."""
    options = group_options(params, lease=False)
    context = StepContext(validated(nodegroup_describe.ARGUMENT_SPEC, options), clients, False, False, warn,
                          lambda line: None)
    return nodegroup_describe.describe_nodegroup(context)["old_instances"]


def next_batch_source(params: Mapping[str, Any], clients: Clients, check_mode: bool, warn: Callable[[str], None],
                      node_names: dict[str, str | None], group: NodegroupRef | None = None,
                      order: Mapping[str, Any] | None = None) -> tuple[str, Callable[[ReplaceState], Batch | None]]:
    """(the schedule run, next_batch): the plan's batches (schedule eks, or check mode, which walks the plan), or
    the live planner of the schedule once, after the plan's canary batches (issue 27 item 1); ``order``: the plan's
    canary_batches and zone_ends (health_gate.ordered_plan), which place each planned batch (Batch.ordered); once without
    the journal's start_per_az falls back to eks, warning. ``group``: the node group plan_phase found (and refused if
    managed), else it is found here."""
    if params["steps"] is not None:
        return "eks", planned_steps(params["steps"], choose_after_launch=not check_mode, order=order)
    if params["schedule"] != "once" or check_mode:
        return params["schedule"], planned_batches(params["batches"], order=order)
    if group is None:
        group = find_module_nodegroup(StepContext(params, clients, check_mode, False, warn, lambda line: None),
                                      refuse_managed="terminate instances through its Auto Scaling group")
    schedule_run, warning = schedule_ops.live_schedule(group.journal(), "once")
    if warning:
        warn(warning)
    if schedule_run != "once":
        return schedule_run, planned_batches(params["batches"], order=order)
    planner = LivePlanner(params, clients, group, warn, node_names)
    canary = (order or {}).get("canary_batches", 0)
    return "once", canary_first(params["batches"][:canary], planner) if canary else planner


def check_target_unmoved(ctx: StepContext, group: NodegroupRef | None, asg: Mapping[str, Any] | None = None) -> None:
    """Issue 29 item 4, before each batch's first change: the group still launches from its journal's target
    (LaunchTemplateVersionChanged otherwise). ``asg``: its Auto Scaling group as the batch's safe point just read
    it (BatchSafePoint.take_group), else it is read here; ``group``: the node group as last read, else it is found
    here."""
    if asg is None:
        asg = describe_asg(ctx.aws("autoscaling"), group.asg_name) if group is not None else find_module_nodegroup(ctx).asg
    check_launch_template_unmoved(ctx.aws("ec2"), asg, Journal.from_tags(asg.get("Tags"), asg["AutoScalingGroupName"]))


def launch_new_nodes(surge: Mapping[str, Any], batch: Batch, context: StepContext,
                     progress: Callable[[str], None]) -> float | None:
    """A surge step's launch (SPEC S3), as asg_surge mode desired does it with ``surge`` (PhaseSteps.surge): the
    desired capacity raised to the step's, and its new nodes Ready before its old ones are drained. Returns the
    clock time they were (None when the step launches none)."""
    options = dict(surge, desired_capacity=batch.desired_capacity, wait=batch.launch > 0,
                   pending_decrement=batch.old_count)
    new_nodes = surge_step.run(context.with_params(options))["surge"]["new_nodes"]
    if batch.launch <= 0:
        return None
    ready = time.time()
    progress("launched %d new node(s), desired capacity %d: %d node(s) on the target Ready at %s" % (
        batch.launch, batch.desired_capacity, len(new_nodes), clock_time(ready)))
    return ready


def take_old_instances(ctx: StepContext, group: NodegroupRef | None, batch: Batch,
                       progress: Callable[[str], None]) -> None:
    """Issue 26 item 2 (SPEC S3, S4): a surge step's old instances (Batch.choose_old), chosen from the group as its
    launch left it (placement.surge_step_old), so that it ends with the AZ counts it began with. One group read;
    an old instance that is leaving or gone from the group counts in no AZ. ``group``: the node group as last
    read, else it is found here."""
    asg = describe_asg(ctx.aws("autoscaling"), group.asg_name) if group is not None else find_module_nodegroup(ctx).asg
    live = dict((i["InstanceId"], i["AvailabilityZone"]) for i in asg.get("Instances", [])
                if i.get("LifecycleState") not in LEAVING_STATES)
    counts = live_per_az(asg.get("AvailabilityZones", []),
                         [dict(instance_id=i, availability_zone=zone) for i, zone in live.items()])
    choice = batch.choose_old
    batch.take(surge_step_old(counts, [dict(instance_id=i, availability_zone=live.get(i)) for i in choice["candidates"]],
                              choice["count"], choice["end_size"], choice["next_launch"]))
    if batch.instance_ids:
        progress("replacing %s, chosen from the group as the launch left it (instances per AZ: %s)" % (
            ", ".join(batch.instance_ids), ", ".join("%s %d" % item for item in counts.items())))


def start_terminations(context: StepContext, terminate: terminate_step.TerminateStep, ahead: ReadAhead,
                       batch: Batch) -> Terminations:
    """A batch's termination rounds (termination_rounds), told to ``ahead`` once Auto Scaling accepted them."""
    rounds = []
    hooks = ahead.termination_hooks()
    for ids, decrement in termination_rounds(batch):
        # A later round refused: the earlier rounds' instances are going all the same (SPEC B1).
        accepted = [i for done in rounds for i in done.instance_ids]
        try:
            rounds.append(terminate_step.start_termination(context, terminate.of_round(ids, decrement), hooks))
        except StepFailed as failure:
            failure.accepted = accepted
            raise
        except UpgradeError as err:
            raise StepFailed(err, accepted=accepted) from err
    ahead.accepted(rounds)
    return Terminations(rounds)


def replace_loop(params: Mapping[str, Any], steps: PhaseSteps, clients: Clients, check_mode: bool, diff: bool,
                 warn: Callable[[str], None], log: Callable[[str], None], progress: Callable[[str], None],
                 next_batch: Callable[[ReplaceState], Batch | None], node_names: dict[str, str | None],
                 safe_points: SafePoints, group: NodegroupRef | None = None, quarantine: Quarantine | None = None,
                 order: Mapping[str, Any] | None = None
                 ) -> tuple[ReplaceLoop, Callable[[ReplaceState], Batch | None], BatchSafePoint, Callable[[], bool]]:
    """(the loop with node_drain's and asg_instance_terminate's steps, run with ``steps``' options, the next_batch
    to run it with, the safe point before a batch, what the phase runs before anything else: an earlier run's
    failed gate judged again, health_gate.judged_again_first). The termination wait overlaps the next batch's drain
    unless the replacements gate the next batch (wait_for_replacements, strategy minimal, U7) or nothing is
    terminated (check mode). A batch's terminations go in up to two rounds (termination_rounds). What the next batch
    needs is read during the post-drain wait (phases/replace/read_ahead.py); ``node_names`` (instance id -> node
    name) is the one ``next_batch`` keeps up to date, ``group`` the node group the phase found (None: the first
    termination finds it), ``quarantine`` the held nodes' (issue 27 item 5; None: a failed drain fails the run;
    retries last); ``order`` (canary_batches, zone_ends) which batches the health gate judges. The next_batch
    returned checks the job and ``safe_points`` before each batch (batch_safe_point)."""
    context = StepContext(params, clients, check_mode, diff, warn, log)
    planner = getattr(next_batch, "then", next_batch)  # a live planner, after the canary (loop.canary_first)
    ahead = ReadAhead(context, steps.drain, planner if isinstance(planner, LivePlanner) else None, group)
    # The first batch's reads go while the phase cordons every old node (U4).
    ahead.first()
    noun = "step" if params["steps"] is not None else "batch"
    gate, judge_first = phase_gates(params, clients, order or {}, check_mode, lambda: context.aws("autoscaling"),
                                    lambda: ahead.group or find_module_nodegroup(context), progress, warn)
    safe_point = BatchSafePoint(safe_points, context, lambda: ahead.group,
                                batch_bound(params, steps.drain.engine.drain_timeout,
                                            steps.drain.engine.post_drain_wait), noun, gate, steps.drain.engine.run_id)

    def drain(batch: Batch) -> Drained:
        # The group its safe point read (a pause request) serves the launch template check: one read per batch.
        check_target_unmoved(context, ahead.group, safe_point.take_group())
        ready = launch_new_nodes(steps.surge, batch, context, progress) if batch.desired_capacity is not None else None
        if batch.choose_old is not None:
            take_old_instances(context, ahead.group, batch, progress)
        if not batch.instance_ids:
            return Drained({}, {}, ready)
        outcome = drain_step.drain(context, steps.drain.of_instances(batch.instance_ids),
                                   ahead.drain_inputs(batch, node_names), ahead.on_emptied(batch))
        return drained_and_held(quarantine, batch, outcome, context, ready)

    def start(batch: Batch) -> Terminations:
        return start_terminations(context, steps.terminate, ahead, batch)

    def finish(terminations: Terminations) -> Terminations:
        for termination in terminations.rounds:
            terminate_step.finish_termination(context, termination)
        return terminations

    loop = ReplaceLoop(_guarded(drain), _guarded(start), _guarded(finish), progress,
                       overlap=not (params["wait_for_replacements"] or check_mode),
                       node_names=node_names, total=len(params["steps"] if params["steps"] is not None
                                                        else params["batches"]),
                       noun=noun, gate=gate)
    planned = ahead.next_batch(next_batch)
    if quarantine is not None:
        planned = quarantine.next_batch(planned)
    return loop, gated_batches(planned, job_guard.check, safe_point), safe_point, judge_first
