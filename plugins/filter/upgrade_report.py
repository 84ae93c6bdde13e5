# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.report.timeline import (
    az_timeline,
    batch_reports,
    epoch_of,
    phase_spans,
)

DOCUMENTATION = r"""
---
name: upgrade_report
short_description: The report of a node-group upgrade, from what its phases recorded
version_added: 0.1.0
description:
  - Builds the report of role C(eksops.nodegroup.nodegroup_upgrade) (written to C(nodegroup_upgrade_report_path),
    published with C(set_stats) as C(nodegroup_upgrade)) from the role's inputs and the variables its phases set.
  - A phase that did not run left its variables unset; give them as null.
  - Use P(eksops.nodegroup.upgrade_summary#filter) for the lines a person reads.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  _input:
    description:
      - The run, with these keys.
      - C(cluster_name), C(nodegroup_name), C(asg_name) (the role's input, null when discovered),
        C(update_strategy) (the role's input), C(strategy) (the strategy run on a self-managed group),
        C(max_unavailable_percentage), C(max_surge), C(force) (a boolean).
      - C(parallelism), the max_unavailable the setup phase resolved (null before it did).
      - C(started_at), C(finished_at) (UTC times), C(phase_seconds) (seconds by phase), C(check_mode).
      - C(plan), the plan of a dry run (else null); C(error), the run's error (else null), with C(code),
        C(phase), C(msg), C(rolled_back), C(resume), C(stopped) (a stop at a safe point, issue 27) and optionally
        C(rollback_error).
      - The phases' variables, null when unset - C(setup_result), C(setup_phase) (the setup task's result), C(failure_state) (the node
        group described after a failure), C(managed_update_result), C(managed_update_step),
        C(upgrade_replaced_instances), C(upgrade_never_joined), C(upgrade_drain_results) (the upgrade phase's, of
        either strategy), C(scale_down_result), and C(scale_up_result) (may be left out); C(upgrade_quarantined)
        (may be left out), the nodes the upgrade phase held in quarantine (issue 27 item 5).
      - C(schedule) (the schedule the run asked the phases for, issue 11 item 1), C(upgrade_schedule) (the one the
        upgrade phase ran, after any fallback), C(upgrade_at_risk_batches) and C(upgrade_decrements) (may be left
        out).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Build the report
  ansible.builtin.set_fact:
    report: "{{ run | eksops.nodegroup.upgrade_report }}"
"""

RETURN = r"""
_value:
  description:
    - The report. C(status) is C(succeeded), C(failed), C(planned) (a dry run), C(stopped) (the cluster
      autoscaler changed the group during the upgrade), C(paused) (asked to pause, playbooks/pause_upgrade.yml) or
      C(window_closed) (the maintenance window or max_duration_seconds left no time for the next batch or phase);
      after C(paused) and C(window_closed) the upgrade playbook run again goes on, and C(error) says where it
      stopped.
    - C(kind), C(asg_name) are what is known of the node group, also when the setup phase stopped before it
      found the group. C(eks_update) is what EKS did on a managed node group; its C(plan) is what the run did or, in
      check mode, would do (C(action) none, follow or start, and C(message)).
    - C(pods_evicted), C(pods_deleted_by_force), C(pod_warnings) and C(pdb_wait_seconds) add up every drained
      node; C(pdb_wait_seconds) is null when a drain did not report it. On an EKS managed node group
      C(pods_evicted) counts the evictions EKS made from the group's nodes while it was followed, seen in the
      cluster (pods marked C(DisruptionTarget) C(EvictionByEvictionAPI)); null when the cluster could not be
      watched.
    - C(pods_on_old_nodes) is the number of pods a drain moves that were on the nodes this run's upgrade phase
      drained, as the preflight counted them before anything changed (null when the preflight did not count them).
      On an EKS managed node group the old nodes are those EKS's update replaced.
      C(disruptions_per_old_pod) is every pod evicted or deleted by force in this run (scale-down included) per
      such pod (issue 11 item 1, SPEC B1 - 1.0 when each pod moved once; a pod evicted onto a node that is drained
      later moves twice); null when no pod was on those nodes.
    - C(post_drain_waits) has, for every drained node, the seconds it waited after it was empty and the load
      balancers that held its instance meanwhile (SPEC B3).
    - C(surge) is the number of nodes the scale-up phase added (C(surge_sizing) says how it was sized, issue 11
      item 2); null when no scale-up phase ran. C(surge_instance_minutes) is what the surge cost, as an upper
      bound - C(surge) times the minutes from the start of this run's scale-up phase to the end of its scale-down
      phase, over which the group stood at most C(surge) nodes above its size before the upgrade; the launch and
      termination time of each surge instance is not recorded, so no exact figure is given. Null when no scale-up
      phase ran.
    - C(schedule) is the schedule of the terminations (issue 11 item 1, SPEC B1) - C(once) or C(eks), the one the
      upgrade phase ran when it ran (C(once) falls back to C(eks) with a warning), else the one asked for; null on an
      EKS managed node group. C(at_risk_batches) lists the batches (1-based) where the planner could not rule out a
      replacement landing in another Availability Zone than the one that needs it; C(decrements) counts the
      terminations that lowered the desired capacity; C(surplus_marked) the new nodes the scale-up marked surplus;
      C(surplus_nodes_with_pods) how many surplus nodes held pods to move at the scale-down (0 under C(once)).
    - C(restored) has the sizes and processes the scale-down restored (null when it restored nothing), and in
      C(kept_sizes) the MinSize or MaxSize someone changed during the upgrade, which it kept (issue 29 item 4);
      C(error) is the run's error with a one-line C(summary).
    - C(quarantined) lists the nodes held in quarantine (issue 27 item 5, C(undrainable_nodes=quarantine)) - each
      with C(node), C(instance_id), C(batch), C(retried), C(evicted) (the pods its drains evicted before they
      timed out, counted in C(pods_evicted)), C(pods) (C(pod), C(reason), C(pdb)) and C(pod_disruption_budgets);
      empty when none is.
  type: dict
  sample:
    status: succeeded
    cluster_name: prod
    nodegroup_name: workers
    kind: self_managed
    on_target_already: false
    eks_update: null
    asg_name: workers-asg
    run_id: 5c3f0e9a
    strategy: default
    max_unavailable: 1
    max_unavailable_percentage: null
    max_surge: null
    force: false
    launch_template: {id: lt-0123456789abcdef0, version: 3, image_id: ami-0b, previous_version: 2, previous_image_id: ami-0a}
    preflight_warnings: []
    started_at: "2024-05-01T10:00:00Z"
    finished_at: "2024-05-01T10:20:00Z"
    phase_seconds: {setup: 3.2, scale_up: 95.7, upgrade: 1020.4, scale_down: 80.1}
    total_seconds: 1199.4
    nodes_before: 3
    replaced_instances: [i-0a, i-0b, i-0c]
    never_joined: []
    drained_nodes: [ip-10-0-1-1.ec2.internal, ip-10-0-2-1.ec2.internal, ip-10-0-3-1.ec2.internal]
    surplus_removed: [i-0d, i-0e]
    quarantined: []
    surge: 6
    surge_sizing: eks
    surge_instance_minutes: 119.6
    schedule: once
    at_risk_batches: []
    decrements: 3
    surplus_marked: [ip-10-0-3-7.ec2.internal]
    surplus_nodes_with_pods: 0
    pods_evicted: 14
    pods_deleted_by_force: []
    pod_warnings: []
    pdb_wait_seconds: 12.5
    post_drain_waits:
      ip-10-0-1-1.ec2.internal: {seconds: 21.4, load_balancers: [k8s-default-web-3c1f0e2a9b]}
    dry_run: false
    plan: null
    autoscaler_detected: false
    restored: {sizes: {min_size: 3, max_size: 6, desired_capacity: 3}, resumed_processes: [AZRebalance]}
    error: null
"""

_UNSET = object()


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return _UNSET
        value = value[key]
    return value


def _known(run: Mapping[str, Any], key: str, fallback: Any) -> Any:
    """What is known of the group: the setup phase's result, else its discovery, else the description taken after
    the failure (the setup phase may have stopped before it found the group; issue 10 item 24)."""
    for found in (_dig(run, "setup_result", key), _dig(run, "setup_phase", "setup", "nodegroup", key),
                  _dig(run, "failure_state", "nodegroup", key)):
        if found is not _UNSET:
            return found
    return fallback


# Issue 27: a run that stopped at a safe point as asked (a pause) or as its time ran out (the maintenance window,
# max_duration_seconds) did not fail; its error says where it stopped (its ``stopped`` flag, errors.STOPPED_CODES).
STOPPED_STATUS = {"UpgradePaused": "paused", "MaintenanceWindowClosed": "window_closed"}


def _status(run: Mapping[str, Any]) -> str:
    if run["error"] is not None:
        return STOPPED_STATUS.get(run["error"]["code"], "failed") if run["error"].get("stopped") else "failed"
    if run["check_mode"]:
        return "planned"
    return "stopped" if (run["scale_down_result"] or {}).get("autoscaler_detected", False) else "succeeded"


def _launch_template(setup: Mapping[str, Any]) -> dict[str, Any] | None:
    """The setup's launch template without the journal it wrote: the report names the run by run_id, and the
    journal is the group's bookkeeping (gone once the upgrade ends), not an outcome."""
    launch_template = setup.get("launch_template")
    if launch_template is None:
        return None
    return dict((key, value) for key, value in launch_template.items() if key != "journal")


def _eks_outcome(run: Mapping[str, Any]) -> dict[str, Any] | None:
    """What EKS did on a managed node group: the role's result, else (the role failed) its last module step."""
    if run["managed_update_result"] is not None:
        return run["managed_update_result"]
    step = run["managed_update_step"]
    if step is None:
        return None
    followed = step.get("nodegroup_update") or {}
    plan = followed.get("plan") or {}
    return dict(eks_update=followed.get("eks_update"), nodegroup=followed.get("nodegroup"),
                progress=followed.get("progress"), evictions=followed.get("evictions"),
                plan=dict(action=plan.get("action"), message=plan.get("message")) if plan else None)


def _eks_evictions(run: Mapping[str, Any]) -> dict[str, Any] | None:
    """The evictions EKS made on a managed node group, as eks_nodegroup_update counted them from the cluster (issue
    29 item 3), or None (a self-managed group, or no update was followed)."""
    return (_eks_outcome(run) or {}).get("evictions")


def _drained(run: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every drained node's result, by node: the upgrade phase's (either strategy), the scale-down's."""
    drained = {}
    for results in (run["upgrade_drain_results"], (run["scale_down_result"] or {}).get("drain")):
        drained.update(results or {})
    return drained


def _pdb_wait_seconds(drained: Mapping[str, Mapping[str, Any]]) -> float | None:
    if drained and all("pdb_wait_seconds" in node for node in drained.values()):
        return round(sum(node["pdb_wait_seconds"] for node in drained.values()), 1)
    return None


def _restored(scale_down: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if scale_down is None or scale_down["autoscaler_detected"] or not scale_down.get("journal_found"):
        return None
    return dict(sizes=scale_down["after"], resumed_processes=scale_down["resumed_processes"],
                kept_sizes=scale_down["kept_sizes"])


def _surge(run: Mapping[str, Any]) -> dict[str, Any]:
    """The scale-up's surge and its cost in instance-minutes, an upper bound (see RETURN): the surge times the
    minutes of the phases that ran with the group surged."""
    scale_up = run.get("scale_up_result")
    if not scale_up:
        return dict(surge=None, surge_sizing=None, surge_instance_minutes=None)
    seconds = sum(run["phase_seconds"].get(phase, 0) for phase in ("scale_up", "upgrade", "scale_down"))
    return dict(surge=scale_up["surge"], surge_sizing=scale_up.get("surge_sizing"),
                surge_instance_minutes=round(scale_up["surge"] * seconds / 60.0, 1))


def _error_report(error: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if error is None:
        return None
    summary = "%s in phase %s: %s" % (error["code"], error["phase"], error["msg"])
    if error["rolled_back"]:
        summary += " (rolled back)"
    if "rollback_error" in error:
        summary += " Rollback failed: %s" % error["rollback_error"]
    return dict(error, summary="%s | %s" % (summary, error["resume"]))


def _pods(drained: Mapping[str, Mapping[str, Any]], eks_evictions: Mapping[str, Any] | None,
          quarantined: list[Mapping[str, Any]]) -> dict[str, Any]:
    """What the drains did, those of the nodes still held in quarantine too (issue 27 item 5: what they evicted
    moved); on a managed group, what EKS's did (null when the cluster could not be watched)."""
    nodes = drained.values()
    evicted = sum(len(node["evicted"]) for node in nodes) + sum(len(entry["evicted"]) for entry in quarantined)
    if eks_evictions is not None:
        evicted = evicted + eks_evictions["pods_evicted"] if eks_evictions["counted"] else None
    return dict(
        pods_evicted=evicted,
        pods_deleted_by_force=[pod for node in nodes for pod in node["deleted"]],
        pod_warnings=[warning for node in nodes for warning in node["warnings"]],
        pdb_wait_seconds=_pdb_wait_seconds(drained),
        post_drain_waits=dict((name, dict(seconds=node["post_drain_waited_seconds"],
                                          load_balancers=node["load_balancers"]))
                              for name, node in drained.items()),
    )


def _disruptions(run: Mapping[str, Any], drained: Mapping[str, Mapping[str, Any]],
                 eks_evictions: Mapping[str, Any] | None) -> dict[str, Any]:
    """Pods moved per pod that was on a replaced node (issue 11 item 1): the old nodes are the ones the upgrade
    phase drained (on a managed group, the ones EKS's update replaced), their pods the preflight's count of what a
    drain moves."""
    to_move = (run["setup_result"] or {}).get("pods_to_move")
    if to_move is None or (eks_evictions is not None and not eks_evictions["counted"]):
        return dict(pods_on_old_nodes=None, disruptions_per_old_pod=None)
    old_nodes = set(run["upgrade_drain_results"] or {})
    old_nodes |= set((eks_evictions or {}).get("nodes_replaced") or [])
    on_old_nodes = sum(to_move.get(node, 0) for node in old_nodes)
    moved = sum(len(node["evicted"]) + len(node["deleted"]) for node in drained.values())
    moved += (eks_evictions or {}).get("pods_evicted", 0)
    return dict(pods_on_old_nodes=on_old_nodes,
                disruptions_per_old_pod=round(moved / on_old_nodes, 2) if on_old_nodes else None)


def _schedule(run: Mapping[str, Any]) -> dict[str, Any]:
    """The schedule (issue 11 item 1, SPEC B1): the upgrade phase's when it ran, else the one asked for."""
    scale_up = run.get("scale_up_result") or {}
    scale_down = run["scale_down_result"] or {}
    managed = (run["setup_result"] or {}).get("kind") == "managed"
    return dict(schedule=None if managed else (run.get("upgrade_schedule") or run.get("schedule")),
                at_risk_batches=list(run.get("upgrade_at_risk_batches") or []),
                decrements=int(run.get("upgrade_decrements") or 0),
                surplus_marked=[node["node_name"] for node in scale_up.get("surplus_nodes") or []],
                surplus_nodes_with_pods=scale_down.get("surplus_nodes_with_pods"))


def _unset_as_null(run: Mapping[str, Any]) -> dict[str, Any]:
    """``run`` with each empty string as null: before ansible-core 2.19, a template whose value is null renders as an
    empty string (the test eksops.nodegroup.unset says more)."""
    return {key: None if value == "" else value for key, value in run.items()}


def _timeline(run: Mapping[str, Any], drained: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The batches of the upgrade phase with their times and waits, and the timeline of the run (issue 25 item 4,
    module_utils/report/timeline.py); the picture beside the JSON report draws them."""
    # One replace path for both strategies (issue 26 item 2); the surge strategy's phase keeps its name.
    phase = "surge_upgrade" if run["strategy"] == "surge" else "upgrade"
    batches = batch_reports({phase: run.get("upgrade_batches")}, drained)
    start = epoch_of(run["started_at"])
    spans = phase_spans(run["phase_seconds"])
    start_instances = _dig(run, "setup_phase", "setup", "nodegroup", "instances")
    old_left = ((run["error"] or {}).get("group_state") or {}).get("old_instances") or []
    cordoned = run.get("upgrade_cordoned")
    return dict(batches=batches, timeline=dict(
        phases=spans,
        cordoned=None if not cordoned else dict(seconds=round(max(0.0, cordoned["at"] - start), 1),
                                                nodes=list(cordoned["nodes"])),
        availability_zones=az_timeline(start, start_instances if isinstance(start_instances, list) else [], batches,
                                       old_left, run.get("scale_up_result"),
                                       (run["scale_down_result"] or {}).get("removed_instances") or [], spans)))


def upgrade_report(run: Mapping[str, Any]) -> dict[str, Any]:
    run = _unset_as_null(run)
    setup = run["setup_result"] or {}
    scale_down = run["scale_down_result"]
    error = run["error"]
    drained = _drained(run)
    report = dict(
        status=_status(run),
        cluster_name=run["cluster_name"],
        nodegroup_name=run["nodegroup_name"],
        kind=_known(run, "kind", None),
        on_target_already=setup.get("on_target", False),
        eks_update=_eks_outcome(run),
        asg_name=_known(run, "asg_name", run["asg_name"]),
        run_id=setup.get("run_id"),
        strategy=run["strategy"] if setup.get("kind", "") != "managed" else run["update_strategy"],
        max_unavailable=None if run["parallelism"] is None else int(run["parallelism"]),
        max_unavailable_percentage=run["max_unavailable_percentage"],
        max_surge=run["max_surge"] if run["strategy"] == "surge" else None,
        force=run["force"],
        launch_template=_launch_template(setup),
        preflight_warnings=setup.get("preflight_warnings", []),
        started_at=run["started_at"],
        finished_at=run["finished_at"],
        phase_seconds=run["phase_seconds"],
        total_seconds=round(sum(run["phase_seconds"].values()), 1),
        nodes_before=setup.get("nodes_before"),
        replaced_instances=run["upgrade_replaced_instances"] or [],
        never_joined=run["upgrade_never_joined"] or [],
        drained_nodes=list(drained),
        surplus_removed=[instance["instance_id"] for instance in (scale_down or {}).get("removed_instances", [])],
        quarantined=list(run.get("upgrade_quarantined") or []),
    )
    report.update(_surge(run))
    report.update(_schedule(run))
    eks_evictions = _eks_evictions(run)
    report.update(_pods(drained, eks_evictions, report["quarantined"]))
    report.update(_disruptions(run, drained, eks_evictions))
    report.update(_timeline(run, drained))
    report.update(
        dry_run=run["check_mode"],
        plan=run["plan"],
        autoscaler_detected=bool((scale_down or {}).get("autoscaler_detected", False))
        or (error or {}).get("code", "") == "ClusterAutoscalerActive",
        restored=_restored(scale_down),
        error=_error_report(error),
    )
    return report


class FilterModule(object):
    def filters(self) -> dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]]:
        return {"upgrade_report": upgrade_report}
