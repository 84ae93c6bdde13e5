# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the upgrade_summary filter: the lines role nodegroup_upgrade prints last."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.eksops.nodegroup.plugins.filter.upgrade_summary import FilterModule, upgrade_summary

ADVICE = "Check the cluster autoscaler."
GROUP_LINE = "Node group workers of cluster prod (self_managed, Auto Scaling group workers-asg): SUCCEEDED."
PHASE_LINE = "Time per phase: setup 3.2 s, upgrade 100.5 s; total 103.7 s."
ERROR = dict(phase="upgrade", task="Drain the batch", code="PodEvictionFailure", msg="node-1 stays cordoned",
             parameter=None, failed_pods=[], rolled_back=False, group_state=None, resume="Rerun the same job.",
             summary="...")


def report(**overrides):
    base = dict(
        status="succeeded", cluster_name="prod", nodegroup_name="workers", kind="self_managed",
        on_target_already=False, eks_update=None, asg_name="workers-asg", strategy="default", max_unavailable=2,
        max_surge=None, launch_template=None, preflight_warnings=[], phase_seconds={"setup": 3.2, "upgrade": 100.5},
        total_seconds=103.7, nodes_before=None, replaced_instances=[], never_joined=[], surplus_removed=[],
        pods_evicted=0, pods_deleted_by_force=[], pod_warnings=[], pdb_wait_seconds=None,
        disruptions_per_old_pod=None, dry_run=False, plan=None, restored=None, error=None)
    base.update(overrides)
    return base


def managed(**overrides):
    return report(kind="managed", **overrides)


def test_the_filter_is_registered_by_its_name():
    assert FilterModule().filters() == {"upgrade_summary": upgrade_summary}


def test_a_rolling_upgrade_says_the_target_nodes_pods_time_and_what_was_restored():
    lines = upgrade_summary(report(
        launch_template=dict(id="lt-1", version=3, image_id="ami-b", previous_version=2, previous_image_id="ami-a"),
        preflight_warnings=[{"check": "single_replica"}, {"check": "bare_pod"}], nodes_before=4,
        replaced_instances=["i-1", "i-2", "i-3", "i-4"], surplus_removed=["i-20"], pods_evicted=7,
        pod_warnings=["w"], pdb_wait_seconds=3.4, disruptions_per_old_pod=1.4,
        never_joined=[{"instance_id": "i-9", "reason": "never registered"}, {"instance_id": "i-8", "reason": "not Ready"}],
        restored=dict(sizes=dict(min_size=1, max_size=6, desired_capacity=4), resumed_processes=["AZRebalance", "ScheduledActions"],
                      kept_sizes=[])),
        "/tmp/report.json", ADVICE)
    assert lines == [
        GROUP_LINE,
        "Instances terminated without a node: i-9 never registered; i-8 not Ready.",
        "Target: launch template lt-1 version 3 (AMI ami-b), from version 2 (AMI ami-a).",
        "Nodes replaced: 4 of 4 (strategy default, max_unavailable 2); surplus nodes removed at scale-down: 1.",
        PHASE_LINE,
        "Pods: 7 evicted, 0 deleted by force, 1 removed with a warning, 1.4 per pod on the old nodes; time waiting on "
        "PodDisruptionBudgets: 3.4 s.",
        "Preflight warnings (printed before the upgrade started): single_replica, bare_pod",
        "Restored: min/max/desired 1/6/4, resumed processes: AZRebalance, ScheduledActions.",
        "Report written to /tmp/report.json",
    ]


def test_a_surge_upgrade_says_max_surge_and_the_pods_deleted_by_force():
    lines = upgrade_summary(report(strategy="surge", max_surge=2, max_unavailable=0, pods_evicted=3,
                                   pods_deleted_by_force=["a/p1", "a/p2"], pdb_wait_seconds=0.0,
                                   restored=dict(sizes=dict(min_size=1, max_size=3, desired_capacity=3),
                                                 resumed_processes=[], kept_sizes=[])))
    assert lines == [
        GROUP_LINE,
        "Nodes replaced: 0 (strategy surge, max_unavailable 0, max_surge 2); surplus nodes removed at scale-down: 0.",
        PHASE_LINE,
        "Pods: 3 evicted, 2 deleted by force (a/p1, a/p2), 0 removed with a warning; time waiting on "
        "PodDisruptionBudgets: 0.0 s.",
        "Restored: min/max/desired 1/3/3, resumed processes: none.",
    ]


def test_a_managed_upgrade_says_what_eks_did_and_nothing_of_nodes_or_pods():
    eks = dict(eks_update={"id": "upd-1", "status": "Successful"}, nodegroup={"release_version": "r2", "version": "1.30"},
               progress={"nodes_updated": 3, "nodes_total": 4})
    assert upgrade_summary(managed(eks_update=eks)) == [
        GROUP_LINE.replace("self_managed", "managed"),
        "EKS update upd-1: Successful; release r2, Kubernetes 1.30; 3 of 4 nodes on the launch template version EKS set.",
        PHASE_LINE,
    ]


def test_issue29_item3_a_managed_upgrade_says_the_evictions_eks_made():
    eks = dict(eks_update={"id": "upd-1", "status": "Successful"}, nodegroup={"release_version": "r2", "version": "1.30"},
               progress={"nodes_updated": 4, "nodes_total": 4},
               evictions=dict(pods_evicted=9, nodes_replaced=["n1", "n2"], counted=True))
    assert upgrade_summary(managed(eks_update=eks, disruptions_per_old_pod=1.8))[1] == (
        "EKS update upd-1: Successful; release r2, Kubernetes 1.30; 4 of 4 nodes on the launch template version EKS "
        "set; 9 pod(s) evicted by EKS, 1.8 per pod on the old nodes.")
    eks["evictions"] = dict(pods_evicted=0, nodes_replaced=[], counted=False)
    assert upgrade_summary(managed(eks_update=eks))[1].endswith(
        "; EKS's evictions not counted (the cluster could not be watched).")


def test_a_managed_group_already_on_the_target_needs_no_eks_update():
    eks = dict(eks_update=None, nodegroup={"release_version": "r2", "version": "1.30"}, progress=None)
    assert upgrade_summary(managed(eks_update=eks))[1] == (
        "No EKS update needed: the node group was already on the target; release r2, Kubernetes 1.30.")


def test_issue25_item3_a_managed_dry_run_says_the_update_it_would_start_not_that_none_was_needed():
    """--check on a managed group said "No EKS update needed: the node group was already on the target" beside a
    diff of 1.29 -> 1.30: in check mode nothing is started, and the line says what would be."""
    eks = dict(eks_update=None, nodegroup={"release_version": "r1", "version": "1.29"}, progress=None,
               plan=dict(action="start", message="Node group workers: updating to Kubernetes 1.30"))
    assert upgrade_summary(managed(eks_update=eks))[1] == (
        "No EKS update started (check mode); the run would start one: Node group workers: updating to Kubernetes "
        "1.30; release r1, Kubernetes 1.29.")


def test_no_eks_line_without_eks_s_record_of_the_group():
    lines = upgrade_summary(managed(eks_update=dict(eks_update=None, nodegroup=None, progress=None)))
    assert lines == [GROUP_LINE.replace("self_managed", "managed"), PHASE_LINE]


def test_a_group_already_on_the_target_says_nothing_was_changed():
    assert upgrade_summary(report(on_target_already=True))[1] == (
        "Every instance already ran the target: nothing to do, nothing was changed.")


def test_a_dry_run_says_its_plan_and_nothing_of_nodes_or_pods():
    lines = upgrade_summary(report(status="planned", dry_run=True, plan=dict(old_count=3, batches=[["i-1", "i-2"], ["i-3"]])))
    assert lines == [
        GROUP_LINE.replace("SUCCEEDED", "PLANNED"),
        "Dry run: 3 nodes would be replaced in 2 batches (plan above); nothing was changed.",
        PHASE_LINE,
    ]


def test_a_stop_by_the_cluster_autoscaler_says_what_to_do():
    lines = upgrade_summary(report(status="stopped"), None, ADVICE)
    assert lines[-1] == ("STOPPED: the cluster autoscaler changed the desired capacity during the upgrade; nothing was "
                         "restored. Check the cluster autoscaler.")


def test_a_failure_says_the_error_the_pods_the_group_and_how_to_resume():
    error = dict(ERROR, failed_pods=[{"pod": "a/x", "reason": "blocked", "pdb": "a/budget"},
                                     {"pod": "a/y", "reason": "timeout", "pdb": None}],
                 group_state={"asg_name": "workers-asg", "desired_capacity": 9, "cordoned_nodes": ["node-1"]})
    lines = upgrade_summary(report(status="failed", error=error), "/tmp/report.json")
    assert lines[-5:] == [
        'ERROR PodEvictionFailure in phase upgrade (task "Drain the batch"): node-1 stays cordoned',
        "Pods that could not be removed: a/x (blocked; PodDisruptionBudget a/budget), a/y (timeout)",
        'State of the group: {"asg_name": "workers-asg", "desired_capacity": 9, "cordoned_nodes": ["node-1"]}',
        "To resume: Rerun the same job.",
        "Report written to /tmp/report.json",
    ]


def test_a_failure_before_the_setup_phase_resolved_anything_names_what_is_unknown():
    lines = upgrade_summary(report(status="failed", kind=None, asg_name=None, max_unavailable=None, error=ERROR))
    assert lines[:2] == [
        "Node group workers of cluster prod (kind unknown, Auto Scaling group unknown: the run stopped before "
        "identifying it): FAILED.",
        "Nodes replaced: 0 (strategy default, max_unavailable not resolved); surplus nodes removed at scale-down: 0.",
    ]
    assert lines[-1] == "To resume: Rerun the same job."


def test_an_asg_is_not_found_only_when_the_error_says_so():
    for parameter in ("nodegroup_name", "asg_name"):
        error = dict(ERROR, code="ResourceNotFound", parameter=parameter)
        assert "Auto Scaling group not found)" in upgrade_summary(report(asg_name=None, error=error))[0]
    other = dict(ERROR, code="ResourceNotFound", parameter="image_id")
    assert "Auto Scaling group unknown: " in upgrade_summary(report(asg_name=None, error=other))[0]


def test_issue29_the_owners_workflow_names_the_version_the_group_already_used_not_a_from_version():
    """SPEC W1: use_current_launch_template rolls onto the version the group uses; "from version 2" would be untrue."""
    lines = upgrade_summary(report(
        launch_template=dict(id="lt-1", version=2, image_id="ami-b", previous_version=2, previous_image_id="ami-b")),
        None, ADVICE)
    assert "Target: launch template lt-1 version 2 (AMI ami-b), the version the Auto Scaling group already used." \
        in lines


def test_issue29_a_maxsize_changed_by_hand_is_named_in_the_restored_line():
    """Issue 29 item 4: the summary says which size the scale-down kept instead of restoring, and the values."""
    kept = [dict(size="max_size", aws_name="MaxSize", before_upgrade=10, set_by_upgrade=16, found=20)]
    lines = upgrade_summary(report(restored=dict(sizes=dict(min_size=3, max_size=20, desired_capacity=5),
                                                 resumed_processes=[], kept_sizes=kept)))
    assert lines[-1] == ("Restored: min/max/desired 3/20/5, resumed processes: none. KEPT, changed by someone else "
                         "during the upgrade: MaxSize 20 (before the upgrade 10, the upgrade set 16).")


def test_issue25_item4_the_summary_says_where_the_picture_is():
    lines = upgrade_summary(report(), "/tmp/upgrade-report.json", ADVICE, "/tmp/upgrade-report.svg")
    assert lines[-2:] == ["Report written to /tmp/upgrade-report.json",
                          "Timeline of the upgrade (open it in a browser): /tmp/upgrade-report.svg"]


def test_issue27_a_stop_at_a_safe_point_reads_stopped_not_error():
    error = dict(ERROR, code="MaintenanceWindowClosed", msg="Stopped before batch 2", stopped=True)
    lines = upgrade_summary(report(status="window_closed", error=error))
    assert 'STOPPED MaintenanceWindowClosed in phase upgrade (task "Drain the batch"): Stopped before batch 2' in lines
    assert not any(line.startswith("ERROR ") for line in lines)


def test_issue27_item5_the_summary_names_each_quarantined_node_with_its_pods_and_budgets():
    entry = dict(node="ip-10-0-1-5", instance_id="i-5", batch=2, retried=True, evicted=[],
                 pod_disruption_budgets=["payments/billing"],
                 pods=[dict(pod="payments/billing-1", reason="Cannot evict pod", pdb="payments/billing")])
    line = [line for line in upgrade_summary(report(quarantined=[entry])) if line.startswith("Quarantined")]
    assert line == ["Quarantined (cordoned, labelled eksops.nodegroup/quarantined=true, instance kept; a rerun retries "
                    "them): node ip-10-0-1-5 (i-5): payments/billing-1 (Cannot evict pod; PodDisruptionBudget "
                    "payments/billing)."]
    assert not [line for line in upgrade_summary(report()) if line.startswith("Quarantined")]
