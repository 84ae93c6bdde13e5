# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restore step: nodegroup_scale_restore's work (remove the surplus nodes, restore the group's sizes and
processes, clear the journal, SPEC U6) for its module or an action.

``module`` is anything with the EksopsModule surface these functions use: ``params`` (nodegroup_scale_restore's options,
ARGUMENT_SPEC), ``check_mode``, ``aws(service)``, ``k8s()``, ``core_v1()``, ``warn``, ``with_diff`` and
``fail_upgrade``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
import time

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.asg_state import (
    asg_sizes,
    autoscaler_error,
    active_instance_refresh,
    check_capacity_unmoved,
    refresh_summary,
    SCALE_IN_PROTECTION_OURS,
    set_scale_in_protection,
    suspended_process_names,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import list_nodegroup_nodes, unmark_scale_down_disabled
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.termination import wait_terminated
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import DEFAULT_OPTIONS as DRAIN_DEFAULTS, DrainOptions, drain_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    INSTANCE_REFRESH_IN_PROGRESS,
    POD_EVICTION_FAILURE,
    WAIT_TIMEOUT,
    UpgradeError,
    invalid_parameter,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, clear_journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import LEASE_OPTION, claim
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.load_balancers import find_cluster_load_balancers
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import join_instances_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import (
    NODEGROUP_ARGUMENT_SPEC,
    NodegroupRef,
    asg_launch_template,
    describe_asg,
    find_module_nodegroup,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import (
    resolve_instance_nodes,
    termination_problems_message,
    undrained_instances,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.instance_choice import LEAVING_STATES
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.parallelism import autoscaler_changed
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.schedule_state import (
    nodes_with_moved_pods,
    release_surplus,
    restore_choice,
)

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule

# No option constraints beyond the argument spec (AnsibleModule's and validate_argument_spec's keywords).
CONSTRAINTS = {}

ARGUMENT_SPEC = dict(
    NODEGROUP_ARGUMENT_SPEC,
    on_autoscaler=dict(type="str", choices=["fail", "stop"], default="fail"),
    drain_timeout=dict(type="int", default=DRAIN_DEFAULTS["drain_timeout"]),
    post_drain_wait=dict(type="int", default=DRAIN_DEFAULTS["post_drain_wait"]),
    post_drain_min_wait=dict(type="int"),
    ignore_load_balancer_timeout=dict(type="bool", default=DRAIN_DEFAULTS["ignore_load_balancer_timeout"]),
    force=dict(type="bool", default=DRAIN_DEFAULTS["force"]),
    grace_period=dict(type="int", default=DRAIN_DEFAULTS["grace_period"]),
    wait_timeout=dict(type="int", default=600),
    accept_current_capacity=dict(type="bool", default=False),
    **LEASE_OPTION
)


def surplus_drain_options(params: dict[str, Any], run_id: str | None = None) -> DrainOptions:
    """The surplus drain's options; DrainOptions refuses a bad one naming it."""
    return DrainOptions(drain_timeout=params["drain_timeout"], post_drain_wait=params["post_drain_wait"],
                        post_drain_min_wait=params["post_drain_min_wait"],
                        ignore_load_balancer_timeout=params["ignore_load_balancer_timeout"], force=params["force"],
                        grace_period=params["grace_period"], run_id=run_id)


def validate_params(params: dict[str, Any]) -> None:
    """The options, refused naming the parameter; the drain's by the drain engine's own rules (DrainOptions: one
    definition of a valid drain_timeout, issue 26 item 6)."""
    if params["wait_timeout"] <= 0:
        raise invalid_parameter("wait_timeout", "wait_timeout must be > 0, got %d" % params["wait_timeout"])
    surplus_drain_options(params)


def autoscaler_active(journal: Journal, desired_now: int) -> bool:
    """SPEC C3, allowing for our own scale-in: a resumed scale-down may find the group below the journal's value
    (terminated, journal not yet updated), never above it."""
    if journal.phase == "scale_down" and journal.desired_capacity_set is not None \
            and desired_now < journal.desired_capacity_set:
        return False
    return autoscaler_changed(desired_now, journal.desired_capacity_set, journal.desired_capacity_pending)


# Issue 29 item 4: the sizes an operator may change during the upgrade, with the journal field of the value before
# the upgrade and the name AWS gives each (the value the upgrade last set is in the journal's sizes_set).
HAND_SIZES = (("min_size", "original_min_size", "MinSize"), ("max_size", "original_max_size", "MaxSize"))


def sizes_changed_by_hand(journal: Journal, before: dict[str, int]) -> list[dict[str, Any]]:
    """Issue 29 item 4: the MinSize and MaxSize the group has now that are neither what it had before the upgrade nor
    what the upgrade last set (the original when it set none): someone changed them during the upgrade (a person, an
    apply), and the restore keeps them (docs/roles.md, the scale-down phase). A size the journal has no original
    for (no scale-up happened) is not restored at all."""
    changed = []
    for size, original_field, aws_name in HAND_SIZES:
        original = getattr(journal, original_field)
        if original is None:
            continue
        ours = (journal.sizes_set or {}).get(size, original)
        if before[size] not in (original, ours):
            changed.append(dict(size=size, aws_name=aws_name, before_upgrade=original, set_by_upgrade=ours,
                                found=before[size]))
    return changed


def restored_sizes(journal: Journal, before: dict[str, int], kept: list[dict[str, Any]] | None = None) -> dict[str, int]:
    """The sizes before the upgrade; fields the journal lacks (no scale-up happened) keep their value, and so do
    the ``kept`` sizes (sizes_changed_by_hand), within which the desired capacity is put back."""
    def pick(original: int | None, current: int) -> int:
        return current if original is None else original

    by_hand = dict((change["size"], change["found"]) for change in kept or [])
    desired = pick(journal.original_desired_capacity, before["desired_capacity"])
    desired = max(desired, by_hand.get("min_size", desired))
    desired = min(desired, by_hand.get("max_size", desired))
    # An accepted capacity (accept_current_capacity) may lie outside the original MinSize..MaxSize.
    return dict(min_size=by_hand.get("min_size", min(pick(journal.original_min_size, before["min_size"]), desired)),
                max_size=by_hand.get("max_size", max(pick(journal.original_max_size, before["max_size"]), desired)),
                desired_capacity=desired)


def kept_sizes_warning(asg_name: str, kept: list[dict[str, Any]]) -> str:
    """What the restore says about the sizes it keeps (sizes_changed_by_hand)."""
    def known(change: dict[str, Any]) -> str:
        if change["set_by_upgrade"] == change["before_upgrade"]:
            return "not the %d it had before the upgrade, which the upgrade left alone" % change["before_upgrade"]
        return "neither the %d it had before the upgrade nor the %d the upgrade set" % (
            change["before_upgrade"], change["set_by_upgrade"])

    return " ".join(
        "%s of Auto Scaling group %s is %d, %s: someone changed it during the upgrade, and the restore keeps %d "
        "instead of putting back %d (set it yourself if %d is what you want)."
        % (change["aws_name"], asg_name, change["found"], known(change), change["found"], change["before_upgrade"],
           change["before_upgrade"])
        for change in kept)


def surplus_instances(asg: dict[str, Any], nodes: list[Any], count: int, journal: Journal | None = None) -> list[dict[str, Any]]:
    """The ``count`` instances to remove, as join records: under the journal's schedule once, first the surplus
    nodes the scale-up marked (SPEC B1: they hold no pod the upgrade moved), then (SPEC U6) AZ-balanced, off the
    group's launch template version first."""
    if count <= 0:
        return []
    members = [i for i in asg.get("Instances", []) if i.get("LifecycleState") not in LEAVING_STATES]
    joined = join_instances_nodes(members, {}, nodes)
    group_version = asg_launch_template(asg)[1]
    return restore_choice(joined, nodes, journal or Journal(), count,
                          int(group_version) if group_version.isdigit() else None)


def plan_restore(asg: dict[str, Any], before: dict[str, int], journal: Journal, nodes: list[Any], result: dict[str, Any]
                 ) -> tuple[dict[str, int], list[dict[str, Any]], list[str], dict[str, Any]]:
    """What the restore does to ``asg``, whose sizes are ``before``, also put in ``result``: (the sizes after, the
    surplus instances, the processes to resume, the diff)."""
    kept = sizes_changed_by_hand(journal, before)
    after = restored_sizes(journal, before, kept)
    surplus = surplus_instances(asg, nodes, before["desired_capacity"] - after["desired_capacity"], journal)
    suspended = suspended_process_names(asg)
    to_resume = [p for p in journal.suspended_processes if p in suspended]
    result.update(after=after, resumed_processes=to_resume, kept_sizes=kept,
                  removed_instances=[dict(instance_id=i["instance_id"], availability_zone=i["availability_zone"],
                                          node_name=i["node_name"]) for i in surplus])
    diff = dict(before=dict(before, suspended_processes=sorted(suspended)),
                after=dict(after, suspended_processes=sorted(set(suspended) - set(to_resume)),
                           kept_sizes=[change["size"] for change in kept]))
    return after, surplus, to_resume, diff


def autoscaler_stop(module: EksopsModule, autoscaling: Any, asg: dict[str, Any], journal: Journal, result: dict[str, Any],
                    changed: bool) -> dict[str, Any]:
    """U6/C3: the cluster autoscaler moved the group; stop without restoring (fail or report, as asked)."""
    err = autoscaler_error(autoscaling, asg, journal)
    result.update(autoscaler_detected=True, scaling_activities=err.details["scaling_activities"])
    if module.params["on_autoscaler"] == "fail":
        module.fail_upgrade(err, changed=changed, restore=result)
    return dict(changed=changed, msg=err.msg, restore=result)


def surplus_nodes(module: EksopsModule, group: NodegroupRef, surplus_ids: list[str]) -> dict[str, str | None]:
    """The node of each surplus instance, found now (None: it has not joined): an instance that had no node when the
    plan was made may have joined since."""
    return resolve_instance_nodes(module.core_v1(), surplus_ids, group.node_selector)[0]


def drain_surplus(module: EksopsModule, group: NodegroupRef, journal: Journal, node_names: list[str],
                  result: dict[str, Any]) -> bool:
    """Drain the surplus nodes (U6: the surplus is drained like any other node, never removed with pods on it).
    Returns whether there was a node to drain."""
    params = module.params
    if not node_names:
        return False
    balancers = find_cluster_load_balancers(module.aws, params["cluster_name"], module.warn, group.asg)
    drained = drain_nodes(module.core_v1(), node_names, surplus_drain_options(params, journal.run_id),
                          load_balancers=balancers)
    result["drain"] = drained.to_dict()
    result["surplus_nodes_with_pods"] = len(nodes_with_moved_pods(result["drain"]))
    error = drained.error()
    if error is not None:
        module.fail_upgrade(error, changed=True, restore=result)
    return True


def terminate_surplus(module: EksopsModule, autoscaling: Any, group: NodegroupRef, journal: Journal,
                      instance_ids: list[str], desired_after: int, result: dict[str, Any]) -> Journal:
    """Terminate surplus instances that hold no pod (U5 checked first), each lowering the desired capacity, to
    ``desired_after``, which the journal records. Returns the journal written."""
    problems = undrained_instances(module.core_v1(), instance_ids, group.node_selector)[0]
    if problems:
        module.fail_upgrade(UpgradeError(POD_EVICTION_FAILURE, termination_problems_message(problems),
                                         undrained=problems), changed=True, restore=result)
    for instance_id in instance_ids:
        autoscaling_api.terminate_instance_in_auto_scaling_group(autoscaling, instance_id, True)
    written = journal.replace(desired_capacity_set=desired_after)
    write_journal(autoscaling, group.asg_name, written, previous=journal)
    return written


def remove_surplus(module: EksopsModule, autoscaling: Any, group: NodegroupRef, journal: Journal, surplus_ids: list[str],
                   desired_before: int, result: dict[str, Any]) -> tuple[Journal, dict[str, Any] | None]:
    """U6: the surplus instances drained and terminated, then waited for until gone. Those that have no node yet go
    first, before any drain: the pods a drain evicts would land on a node that joins meanwhile (the last replacement
    of the upgrade phase may still be booting), which then could not be removed. Returns (the journal written, the
    module's result when the cluster autoscaler moved the group during the drain, else None)."""
    nodes = surplus_nodes(module, group, surplus_ids)
    nodeless = [i for i in surplus_ids if not nodes.get(i)]
    joined = [i for i in surplus_ids if nodes.get(i)]
    if nodeless:
        journal = terminate_surplus(module, autoscaling, group, journal, nodeless, desired_before - len(nodeless),
                                    result)
    if drain_surplus(module, group, journal, sorted(set(nodes[i] for i in joined)), result):
        # The drain took a while, and the pods it evicted are what makes the autoscaler scale up: look again
        # before removing anything more.
        asg = describe_asg(autoscaling, group.asg_name)
        if autoscaler_active(journal, asg_sizes(asg)["desired_capacity"]):
            return journal, autoscaler_stop(module, autoscaling, asg, journal, result, changed=True)
    if joined:
        journal = terminate_surplus(module, autoscaling, group, journal, joined, desired_before - len(surplus_ids),
                                    result)
    wait_timeout = module.params["wait_timeout"]
    wait_terminated(module.aws("ec2"), surplus_ids, wait_timeout, on_timeout=lambda pending: UpgradeError(
        WAIT_TIMEOUT, "Surplus instances %s of %s were not terminated within %d s (wait_timeout); rerun to resume"
        % (", ".join(pending), group.asg_name, wait_timeout), asg_name=group.asg_name, instance_ids=pending))
    return journal, None


def check_no_refresh_to_resume(module: EksopsModule, autoscaling: Any, name: str, to_resume: list[str], changed: bool,
                               result: dict[str, Any]) -> None:
    """SPEC W2: an instance refresh started during the upgrade (an owner's apply starts one) waits, paused by the
    suspended InstanceRefresh process; resuming it would replace the upgraded nodes without a drain. Stop before the
    processes are resumed, with the journal kept, so that a rerun finishes once it is cancelled."""
    refresh = active_instance_refresh(autoscaling, name) if "InstanceRefresh" in to_resume else None
    if refresh is None:
        return
    module.fail_upgrade(UpgradeError(
        INSTANCE_REFRESH_IN_PROGRESS,
        "Auto Scaling group %s has instance refresh %s (%s), started during the upgrade and paused by the suspended "
        "InstanceRefresh process: resuming the processes would let it replace the upgraded nodes without a drain. "
        "Cancel it (aws autoscaling cancel-instance-refresh --auto-scaling-group-name %s), then run again to finish "
        "the scale-down; the group keeps its processes suspended and the upgrade journal until then."
        % (name, refresh.get("InstanceRefreshId"), refresh.get("Status"), name),
        instance_refresh=refresh_summary(refresh)), changed=changed, restore=result)


def restore_group(module: EksopsModule, autoscaling: Any, group: NodegroupRef, journal: Journal, after: dict[str, int],
                  to_resume: list[str], result: dict[str, Any]) -> None:
    """The sizes, the scale-in protection the upgrade set, the suspended processes and the C2 annotations back."""
    name = group.asg_name
    if asg_sizes(group.asg) != after:
        autoscaling_api.update_sizes(autoscaling, name, **after)
    if journal.scale_in_protection == SCALE_IN_PROTECTION_OURS:
        # The protection the upgrade set (issue 10 item 22), removed once the sizes are back.
        result["unprotected_instances"] = set_scale_in_protection(autoscaling, describe_asg(autoscaling, name), False)
    autoscaling_api.resume_processes(autoscaling, name, to_resume)
    nodes = list_nodegroup_nodes(module.core_v1(), group)
    result["unannotated_nodes"] = unmark_scale_down_disabled(module.core_v1(), nodes)
    # SPEC B1: a surplus node the group keeps (an accepted capacity above the size before) serves from now on.
    result["released_surplus_nodes"] = release_surplus(module.core_v1(), nodes, journal.run_id)


def run(module: EksopsModule) -> dict[str, Any]:
    started_clock = time.time()
    params = module.params
    validate_params(params)
    autoscaling = module.aws("autoscaling")
    group = find_module_nodegroup(module, refuse_managed="restore its Auto Scaling group")
    asg, name, journal = group.asg, group.asg_name, group.journal()
    before = asg_sizes(asg)
    result = dict(asg_name=name, journal_found=journal is not None, autoscaler_detected=False, before=before,
                  after=before, kept_sizes=[], removed_instances=[], drain={}, resumed_processes=[], unannotated_nodes=[],
                  schedule=(journal.schedule or "eks") if journal is not None else None, surplus_nodes_with_pods=0)
    if journal is None:
        result["elapsed_seconds"] = round(time.time() - started_clock, 1)
        return dict(changed=False, restore=result)

    if autoscaler_active(journal, before["desired_capacity"]) and not params["accept_current_capacity"]:
        return autoscaler_stop(module, autoscaling, asg, journal, result, changed=False)
    # Everything from here changes the group (the journal is cleared at the end): the run's lease first.
    heartbeat = claim(module, autoscaling, asg)
    if autoscaler_active(journal, before["desired_capacity"]):
        # Issue 10 item 23: the documented way out after ClusterAutoscalerActive.
        journal = check_capacity_unmoved(module, autoscaling, asg, journal)

    nodes = list_nodegroup_nodes(module.core_v1(), group)
    after, surplus, to_resume, diff = plan_restore(asg, before, journal, nodes, result)
    if result["kept_sizes"]:
        module.warn(kept_sizes_warning(name, result["kept_sizes"]))
    if module.check_mode:
        result["elapsed_seconds"] = round(time.time() - started_clock, 1)
        return module.with_diff(dict(changed=True, restore=result), **diff)

    # The desired capacity now is ours (checked above): record it, so a pending value cannot linger.
    scaling_down = journal.advanced(
        "scale_down", desired_capacity_pending=None,
        desired_capacity_set=before["desired_capacity"] if journal.desired_capacity_set is not None else None)
    if scaling_down != journal:
        write_journal(autoscaling, name, scaling_down, previous=journal)
        journal = scaling_down

    if surplus:
        journal, stopped = remove_surplus(module, autoscaling, group, journal, [i["instance_id"] for i in surplus],
                                          before["desired_capacity"], result)
        if stopped is not None:
            return stopped

    asg = describe_asg(autoscaling, name)
    if autoscaler_active(journal, asg_sizes(asg)["desired_capacity"]):
        return autoscaler_stop(module, autoscaling, asg, journal, result, changed=bool(surplus))
    check_no_refresh_to_resume(module, autoscaling, name, to_resume, changed=bool(surplus), result=result)
    restore_group(module, autoscaling, group.with_asg(asg), journal, after, to_resume, result)
    if heartbeat is not None:
        heartbeat.stop()  # the lease goes with the journal
    clear_journal(autoscaling, name)
    result["elapsed_seconds"] = round(time.time() - started_clock, 1)
    return module.with_diff(dict(changed=True, restore=result), **diff)
