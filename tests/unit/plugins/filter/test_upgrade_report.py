# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the upgrade_report filter: the report of role nodegroup_upgrade, one test per kind of run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.eksops.nodegroup.plugins.filter.upgrade_report import FilterModule, upgrade_report

LAUNCH_TEMPLATE = dict(id="lt-1", version=3, image_id="ami-b", previous_version=2, previous_image_id="ami-a")
ERROR = dict(phase="upgrade", task="Drain the batch", code="PodEvictionFailure", msg="node-1 stays cordoned",
             parameter=None, aws_error_code=None, failed_nodes=["node-1"], failed_pods=[], scaling_activities=[],
             rolled_back=False, group_state=None, resume="Rerun the same job.")


def drained(evicted=(), deleted=(), warnings=(), waited=1.0, load_balancers=(), **pdb_wait):
    return dict(evicted=list(evicted), deleted=list(deleted), warnings=list(warnings), failed=[],
                post_drain_waited_seconds=waited, load_balancers=list(load_balancers), **pdb_wait)


def setup_result(**overrides):
    return dict(dict(kind="self_managed", asg_name="workers-asg", launch_template=LAUNCH_TEMPLATE, run_id="r1",
                     nodes_before=4, max_unavailable=2, preflight_warnings=[], on_target=False), **overrides)


def scale_down_result(**overrides):
    return dict(dict(autoscaler_detected=False, journal_found=True, removed_instances=[],
                     after=dict(min_size=1, max_size=6, desired_capacity=4), resumed_processes=["AZRebalance"],
                     kept_sizes=[]),
                **overrides)


def run(**overrides):
    """A run as report.yml gives it: every phase variable null unless given."""
    base = dict(
        cluster_name="prod", nodegroup_name="workers", asg_name=None, update_strategy=None, strategy="default",
        parallelism=2, max_unavailable_percentage=None, max_surge=1, force=False,
        started_at="2024-05-01T10:00:00Z", finished_at="2024-05-01T10:20:00Z",
        phase_seconds={"setup": 3.2, "scale_up": 95.7, "upgrade": 1020.4, "scale_down": 80.1},
        check_mode=False, plan=None, error=None,
        setup_result=None, setup_phase=None, failure_state=None, managed_update_result=None,
        managed_update_step=None, upgrade_replaced_instances=None, upgrade_never_joined=None,
        upgrade_drain_results=None, scale_down_result=None, scale_up_result=None)
    base.update(overrides)
    return base


def test_the_filter_is_registered_by_its_name():
    assert FilterModule().filters() == {"upgrade_report": upgrade_report}


def test_a_rolling_upgrade_adds_up_the_upgrade_and_the_scale_down():
    report = upgrade_report(run(
        setup_result=setup_result(preflight_warnings=[{"check": "single_replica"}],
                                  pods_to_move={"node-1": 2, "node-2": 1, "node-3": 0, "node-4": 5}),
        scale_up_result=dict(surge=6, surge_sizing="eks"),
        upgrade_replaced_instances=["i-1", "i-2"],
        upgrade_never_joined=[{"instance_id": "i-9", "reason": "never registered"}],
        upgrade_drain_results={"node-1": drained(["a/p1", "a/p2"], warnings=["w1"], pdb_wait_seconds=1.25,
                                                 waited=21.4, load_balancers=["web", "api"]),
                               "node-2": drained(["a/p3"], pdb_wait_seconds=2.0)},
        scale_down_result=scale_down_result(removed_instances=[{"instance_id": "i-20"}],
                                            drain={"node-3": drained(["b/p4"], pdb_wait_seconds=0.1)})))
    assert report == dict(
        status="succeeded", cluster_name="prod", nodegroup_name="workers", kind="self_managed",
        on_target_already=False, eks_update=None, asg_name="workers-asg", run_id="r1", strategy="default",
        max_unavailable=2, max_unavailable_percentage=None, max_surge=None, force=False,
        launch_template=LAUNCH_TEMPLATE, preflight_warnings=[{"check": "single_replica"}],
        started_at="2024-05-01T10:00:00Z", finished_at="2024-05-01T10:20:00Z",
        phase_seconds={"setup": 3.2, "scale_up": 95.7, "upgrade": 1020.4, "scale_down": 80.1}, total_seconds=1199.4,
        nodes_before=4, replaced_instances=["i-1", "i-2"],
        never_joined=[{"instance_id": "i-9", "reason": "never registered"}],
        drained_nodes=["node-1", "node-2", "node-3"], surplus_removed=["i-20"], quarantined=[],
        surge=6, surge_sizing="eks", surge_instance_minutes=119.6, schedule=None, at_risk_batches=[], decrements=0,
        surplus_marked=[], surplus_nodes_with_pods=None, pods_evicted=4,
        pods_deleted_by_force=[], pod_warnings=["w1"], pdb_wait_seconds=3.4,
        pods_on_old_nodes=3, disruptions_per_old_pod=1.33,
        post_drain_waits={"node-1": dict(seconds=21.4, load_balancers=["web", "api"]),
                          "node-2": dict(seconds=1.0, load_balancers=[]),
                          "node-3": dict(seconds=1.0, load_balancers=[])},
        # No batch records (the upgrade role gives them, issue 25 item 4): the phases only.
        batches=[], timeline=dict(phases=[dict(phase="setup", start=0.0, end=3.2),
                                          dict(phase="scale_up", start=3.2, end=98.9),
                                          dict(phase="upgrade", start=98.9, end=1119.3),
                                          dict(phase="scale_down", start=1119.3, end=1199.4)],
                                  cordoned=None, availability_zones=[]),
        dry_run=False, plan=None,
        autoscaler_detected=False,
        restored=dict(sizes=dict(min_size=1, max_size=6, desired_capacity=4), resumed_processes=["AZRebalance"],
                      kept_sizes=[]),
        error=None)


def test_b1_the_report_shows_the_schedule_its_decrements_and_the_batches_at_risk():
    """Issue 11 item 1 (SPEC B1): the schedule the upgrade phase ran wins over the one asked for."""
    report = upgrade_report(run(
        setup_result=setup_result(), schedule="once", upgrade_schedule="eks", upgrade_at_risk_batches=[2],
        upgrade_decrements=3,
        scale_up_result=dict(surge=6, surge_sizing="eks", surplus_nodes=[dict(instance_id="i-7", node_name="node-7")]),
        scale_down_result=scale_down_result(surplus_nodes_with_pods=0)))
    assert (report["schedule"], report["at_risk_batches"], report["decrements"]) == ("eks", [2], 3)
    assert report["surplus_marked"] == ["node-7"] and report["surplus_nodes_with_pods"] == 0
    assert upgrade_report(run(setup_result=setup_result(), schedule="once"))["schedule"] == "once"
    assert upgrade_report(run(setup_result=setup_result(kind="managed"), schedule="eks"))["schedule"] is None


def test_a_surge_upgrade_reports_max_surge_and_the_pods_deleted_by_force():
    report = upgrade_report(run(
        strategy="surge", update_strategy="surge", max_surge=2, parallelism=1, force=True,
        setup_result=setup_result(nodes_before=None),
        upgrade_replaced_instances=["i-1", "i-2", "i-3"], upgrade_never_joined=[],
        upgrade_drain_results={"node-1": drained(["a/p1"], ["a/p8", "a/p9"], pdb_wait_seconds=1.0),
                               "node-2": drained(warnings=["w"], pdb_wait_seconds=0.5)},
        scale_down_result=scale_down_result()))
    assert (report["strategy"], report["max_surge"], report["max_unavailable"], report["force"]) == ("surge", 2, 1, True)
    assert report["replaced_instances"] == ["i-1", "i-2", "i-3"] and report["never_joined"] == []
    assert (report["pods_evicted"], report["pods_deleted_by_force"], report["pod_warnings"]) == (1, ["a/p8", "a/p9"], ["w"])
    assert report["pdb_wait_seconds"] == 1.5 and report["nodes_before"] is None


def test_disruptions_per_old_pod_count_every_move_against_the_pods_on_the_nodes_the_upgrade_drained():
    """Issue 11 item 1 (SPEC B1): the denominator is the preflight's count on the replaced nodes only (node-9
    was never drained; node-3 is a surplus node drained at scale-down), force deletions count as moves."""
    counts = {"node-1": 2, "node-2": 2, "node-3": 0, "node-9": 7}
    report = upgrade_report(run(
        setup_result=setup_result(pods_to_move=counts),
        upgrade_drain_results={"node-1": drained(["a/p1"], ["a/p2"]), "node-2": drained(["a/p3", "a/p4"])},
        scale_down_result=scale_down_result(drain={"node-3": drained(["a/p5"])})))
    assert (report["pods_on_old_nodes"], report["disruptions_per_old_pod"]) == (4, 1.25)
    once = upgrade_report(run(setup_result=setup_result(pods_to_move=counts),
                              upgrade_drain_results={"node-1": drained(["a/p1", "a/p2"])}))
    assert (once["pods_on_old_nodes"], once["disruptions_per_old_pod"]) == (2, 1.0)


def test_disruptions_per_old_pod_are_null_without_a_count_or_without_pods_on_the_old_nodes():
    uncounted = upgrade_report(run(setup_result=setup_result(), upgrade_drain_results={"node-1": drained(["a/p1"])}))
    assert (uncounted["pods_on_old_nodes"], uncounted["disruptions_per_old_pod"]) == (None, None)
    empty = upgrade_report(run(setup_result=setup_result(pods_to_move={"node-1": 0}),
                               upgrade_drain_results={"node-1": drained()}))
    assert (empty["pods_on_old_nodes"], empty["disruptions_per_old_pod"]) == (0, None)
    assert upgrade_report(run())["disruptions_per_old_pod"] is None


def test_a_later_drain_of_a_node_replaces_an_earlier_one():
    report = upgrade_report(run(
        upgrade_drain_results={"node-1": drained(["a/p1"], pdb_wait_seconds=1.0)},
        scale_down_result=scale_down_result(drain={"node-1": drained(["a/p1", "a/p2"], pdb_wait_seconds=2.0)})))
    assert (report["drained_nodes"], report["pods_evicted"], report["pdb_wait_seconds"]) == (["node-1"], 2, 2.0)


def test_pdb_wait_is_not_reported_when_a_drain_did_not_report_it_or_nothing_was_drained():
    partly = upgrade_report(run(upgrade_drain_results={"node-1": drained(pdb_wait_seconds=1.0), "node-2": drained()}))
    assert partly["pdb_wait_seconds"] is None
    assert upgrade_report(run(upgrade_drain_results={}))["pdb_wait_seconds"] is None


def test_a_managed_upgrade_reports_eks_update_and_the_update_strategy_given():
    outcome = dict(eks_update={"id": "upd-1", "status": "Successful"}, nodegroup={"version": "1.30"},
                   progress={"nodes_updated": 4, "nodes_total": 4}, changed=True)
    report = upgrade_report(run(update_strategy="minimal", parallelism=None, max_unavailable_percentage=25,
                                setup_result=setup_result(kind="managed", launch_template=None),
                                managed_update_result=outcome, phase_seconds={"setup": 1.5, "eks_update": 300.0}))
    assert (report["kind"], report["eks_update"], report["strategy"]) == ("managed", outcome, "minimal")
    assert (report["max_unavailable"], report["max_unavailable_percentage"]) == (None, 25)
    assert (report["status"], report["total_seconds"], report["restored"]) == ("succeeded", 301.5, None)


def test_a_failed_managed_upgrade_reports_the_last_step_of_eks_update():
    # eks_nodegroup_update's failed result: what it followed is under its result key, nodegroup_update.
    step = dict(failed=True, msg="boom", nodegroup_update=dict(eks_update={"id": "upd-2", "status": "Failed"},
                                                               nodegroup={"version": "1.29"}))
    report = upgrade_report(run(setup_result=setup_result(kind="managed"), managed_update_step=step,
                                error=dict(ERROR, phase="eks_update")))
    assert report["eks_update"] == dict(eks_update={"id": "upd-2", "status": "Failed"}, nodegroup={"version": "1.29"},
                                        progress=None, evictions=None, plan=None)
    assert report["status"] == "failed"


def managed_run(evictions, pods_to_move=None, step=False):
    """A managed upgrade whose eks_nodegroup_update counted ``evictions`` (its role's result, or its failed step)."""
    outcome = dict(eks_update={"id": "upd-3", "status": "Successful"}, nodegroup={"version": "1.30"},
                   progress={"nodes_updated": 2, "nodes_total": 2}, evictions=evictions)
    setup = setup_result(kind="managed", launch_template=None, pods_to_move=pods_to_move)
    if step:
        return run(setup_result=setup, managed_update_step=dict(failed=True, nodegroup_update=outcome),
                   error=dict(ERROR, phase="eks_update"))
    return run(setup_result=setup, managed_update_result=dict(outcome, changed=True))


def test_issue29_item3_the_report_of_a_managed_upgrade_counts_the_evictions_eks_made():
    evictions = dict(pods_evicted=9, nodes_replaced=["node-1", "node-2"], counted=True)
    report = upgrade_report(managed_run(evictions, pods_to_move={"node-1": 3, "node-2": 2, "node-9": 4}))
    assert report["pods_evicted"] == 9
    # The pods that were on the nodes EKS replaced (node-9 was not replaced), moved 9 times in all.
    assert (report["pods_on_old_nodes"], report["disruptions_per_old_pod"]) == (5, 1.8)
    failed = upgrade_report(managed_run(evictions, pods_to_move={"node-1": 3, "node-2": 2}, step=True))
    assert (failed["pods_evicted"], failed["disruptions_per_old_pod"]) == (9, 1.8)


def test_evictions_not_counted_are_null_not_zero():
    report = upgrade_report(managed_run(dict(pods_evicted=2, nodes_replaced=["node-1"], counted=False),
                                        pods_to_move={"node-1": 3}))
    assert (report["pods_evicted"], report["pods_on_old_nodes"], report["disruptions_per_old_pod"]) == (None, None, None)


def test_a_failure_reports_the_error_with_a_summary():
    report = upgrade_report(run(setup_result=setup_result(), error=ERROR))
    assert report["status"] == "failed" and report["autoscaler_detected"] is False
    assert report["error"] == dict(ERROR, summary="PodEvictionFailure in phase upgrade: node-1 stays cordoned | "
                                                  "Rerun the same job.")


def test_the_summary_of_a_failure_says_the_rollback_and_its_own_failure():
    rolled_back = upgrade_report(run(error=dict(ERROR, rolled_back=True)))["error"]["summary"]
    assert rolled_back == "PodEvictionFailure in phase upgrade: node-1 stays cordoned (rolled back) | Rerun the same job."
    failed = upgrade_report(run(error=dict(ERROR, rollback_error="AccessDenied: no")))["error"]["summary"]
    assert failed == ("PodEvictionFailure in phase upgrade: node-1 stays cordoned Rollback failed: AccessDenied: no"
                      " | Rerun the same job.")


def test_a_dry_run_is_planned_with_its_plan():
    plan = dict(strategy="rolling", old_count=3, batches=[["i-1", "i-2"], ["i-3"]])
    report = upgrade_report(run(check_mode=True, plan=plan, setup_result=setup_result()))
    assert (report["status"], report["dry_run"], report["plan"]) == ("planned", True, plan)


def test_a_failed_dry_run_is_failed():
    assert upgrade_report(run(check_mode=True, error=ERROR))["status"] == "failed"


def test_the_cluster_autoscaler_stops_the_upgrade_and_nothing_is_restored():
    report = upgrade_report(run(setup_result=setup_result(), scale_down_result=dict(autoscaler_detected=True)))
    assert (report["status"], report["autoscaler_detected"], report["restored"]) == ("stopped", True, None)


def test_the_cluster_autoscaler_error_counts_as_the_autoscaler_detected():
    report = upgrade_report(run(error=dict(ERROR, code="ClusterAutoscalerActive")))
    assert (report["status"], report["autoscaler_detected"]) == ("failed", True)


def test_nothing_is_restored_without_a_journal():
    report = upgrade_report(run(setup_result=setup_result(on_target=True),
                                scale_down_result=dict(autoscaler_detected=False, journal_found=False)))
    assert (report["on_target_already"], report["restored"], report["surplus_removed"]) == (True, None, [])


def test_the_group_is_known_from_the_discovery_when_the_setup_phase_stopped():
    report = upgrade_report(run(setup_phase={"setup": {"nodegroup": {"kind": "self_managed_eksctl", "asg_name": "found"}}},
                                failure_state={"nodegroup": {"kind": "other", "asg_name": "other"}}, error=ERROR))
    assert (report["kind"], report["asg_name"]) == ("self_managed_eksctl", "found")


def test_the_group_is_known_from_its_description_after_the_failure():
    report = upgrade_report(run(setup_phase={"failed": True, "msg": "no"}, asg_name="given",
                                failure_state={"nodegroup": {"kind": "self_managed", "asg_name": "found"}}, error=ERROR))
    assert (report["kind"], report["asg_name"]) == ("self_managed", "found")


def test_an_unknown_group_is_the_asg_name_given_and_no_kind():
    report = upgrade_report(run(asg_name="given", setup_phase={"failed": True}, failure_state={"failed": True},
                                parallelism=None, phase_seconds={}, error=ERROR))
    assert (report["kind"], report["asg_name"], report["max_unavailable"]) == (None, "given", None)
    assert (report["total_seconds"], report["replaced_instances"], report["drained_nodes"]) == (0, [], [])
    assert (report["launch_template"], report["preflight_warnings"], report["on_target_already"]) == (None, [], False)


def test_issue11_item2_the_surge_and_its_instance_minutes_an_upper_bound():
    """Issue 11 item 2: the report says what the surge was and what it cost: the surge times the minutes from the
    start of the scale-up to the end of the scale-down (here 4 x (95.7 + 1020.4 + 80.1) s = 79.7 instance-minutes);
    none when no scale-up ran (minimal strategy: a surge of 0 costs 0)."""
    report = upgrade_report(run(setup_result=setup_result(),
                                scale_up_result=dict(surge=4, surge_sizing="per_az")))
    assert (report["surge"], report["surge_sizing"], report["surge_instance_minutes"]) == (4, "per_az", 79.7)
    assert upgrade_report(run(scale_up_result=dict(surge=0, surge_sizing=None)))["surge_instance_minutes"] == 0
    unset = upgrade_report(run())
    assert (unset["surge"], unset["surge_sizing"], unset["surge_instance_minutes"]) == (None, None, None)


def test_issue25_item2_a_run_whose_nulls_arrived_as_empty_strings_reports_nulls():
    # ansible-core 2.16 to 2.18 render each null of report.yml's mapping as an empty string.
    nulls = {key: "" for key, value in run().items() if value is None}
    assert upgrade_report(run(**nulls)) == upgrade_report(run())


# 2024-05-01T10:00:00Z, the runs' started_at.
START = 1714557600.0


def batch_record(batch, instance, zone, started, drained_at, ended, gone, group_per_az):
    """A batch as node_replace records it (replace_loop.ReplaceState.batches), times in seconds after START."""
    return dict(batch=batch, instance_ids=[instance], nodes=["node-" + instance], started=START + started,
                drained=START + drained_at, accepted=START + ended, gone=START + gone, ended=START + ended, decrement_ids=[], at_risk=False,
                replacements=[], availability_zones={instance: zone}, group_per_az=group_per_az)


def test_issue25_item4_the_report_has_per_batch_times_and_what_each_waited_on():
    """Issue 25 item 4: each batch's start, drained and terminated times, and what it waited on - the
    PodDisruptionBudgets, the pods' termination (the rest of the drain), the load balancers, the instances'
    termination - with the pods it moved and warned about."""
    report = upgrade_report(run(
        setup_result=setup_result(),
        upgrade_batches=[batch_record(1, "i-1", "us-east-1a", 100, 150, 151, 170, {"us-east-1a": 2, "us-east-1b": 2}),
                         batch_record(2, "i-2", "us-east-1b", 200, 230, 231, 240, {"us-east-1a": 1, "us-east-1b": 2})],
        upgrade_drain_results={"node-i-1": drained(["a/p1", "a/p2"], warnings=["emptyDir data deleted"],
                                                   pdb_wait_seconds=20.0, waited=10.0, load_balancers=["web"]),
                               "node-i-2": drained(["a/p3"], ["a/bare"], pdb_wait_seconds=0.0, waited=2.0)}))
    first, second = report["batches"]
    assert first == dict(
        phase="upgrade", batch=1, instance_ids=["i-1"], nodes=["node-i-1"], availability_zones={"i-1": "us-east-1a"},
        group_per_az={"us-east-1a": 2, "us-east-1b": 2}, started_at="2024-05-01T10:01:40.000Z",
        new_nodes_ready_at=None, drained_at="2024-05-01T10:02:30.000Z",
        termination_accepted_at="2024-05-01T10:02:31.000Z", terminated_at="2024-05-01T10:02:50.000Z",
        pods_evicted=2, pods_deleted_by_force=0, pod_warnings=["node node-i-1: emptyDir data deleted"],
        waited_on=[dict(what="pod_disruption_budget", seconds=20.0),
                   dict(what="pods_terminating", seconds=20.0),
                   dict(what="load_balancer_deregistration", seconds=10.0, load_balancers=["web"]),
                   dict(what="instances_terminating", seconds=19.0)],
        quarantined=[], retry=False)
    assert (second["started_at"], second["drained_at"], second["terminated_at"]) == (
        "2024-05-01T10:03:20.000Z", "2024-05-01T10:03:50.000Z", "2024-05-01T10:04:00.000Z")
    assert (second["pods_evicted"], second["pods_deleted_by_force"]) == (1, 1)
    # No load balancer held the node: the fixed post-drain wait.
    assert second["waited_on"] == [dict(what="pods_terminating", seconds=28.0),
                                   dict(what="post_drain_wait", seconds=2.0, load_balancers=[]),
                                   dict(what="instances_terminating", seconds=9.0)]


def test_issue25_item4_the_timeline_counts_old_and_new_nodes_per_az_over_the_run():
    """Issue 25 item 4: the old nodes per AZ fall as each batch's instances are gone; the new ones are the
    group's other instances, counted at the start, after the scale-up and as each termination was accepted."""
    instances = [dict(instance_id="i-1", availability_zone="us-east-1a"),
                 dict(instance_id="i-2", availability_zone="us-east-1b")]
    report = upgrade_report(run(
        setup_result=setup_result(), setup_phase=dict(setup=dict(nodegroup=dict(instances=instances))),
        scale_up_result=dict(surge=2, surge_sizing="per_az",
                             new_nodes=[dict(availability_zone="us-east-1a"), dict(availability_zone="us-east-1b")]),
        upgrade_batches=[batch_record(1, "i-1", "us-east-1a", 100, 150, 151, 170, {"us-east-1a": 2, "us-east-1b": 2}),
                         batch_record(2, "i-2", "us-east-1b", 200, 230, 231, 240, {"us-east-1a": 1, "us-east-1b": 2})],
        upgrade_drain_results={"node-i-1": drained(), "node-i-2": drained()},
        upgrade_cordoned=dict(at=START + 99.5, nodes=["node-i-1", "node-i-2"])))
    timeline = report["timeline"]
    assert timeline["cordoned"] == dict(seconds=99.5, nodes=["node-i-1", "node-i-2"])
    lanes = dict((lane["availability_zone"], [(c["seconds"], c["old"], c["new"]) for c in lane["counts"]])
                 for lane in timeline["availability_zones"])
    assert lanes == {
        "us-east-1a": [(0.0, 1, 0), (98.9, 1, 1), (151.0, 1, 1), (170.0, 0, 1), (231.0, 0, 1), (240.0, 0, 1)],
        "us-east-1b": [(0.0, 1, 0), (98.9, 1, 1), (151.0, 1, 1), (170.0, 1, 1), (231.0, 1, 1), (240.0, 0, 1)],
    }


def test_issue25_item4_a_surge_step_reports_its_launch_wait_and_a_launch_only_step_no_termination():
    launch_only = dict(batch=1, instance_ids=[], nodes=[], started=START + 10, new_nodes_ready=START + 40,
                       drained=START + 40, ended=START + 40, decrement_ids=[], at_risk=False)
    step = dict(batch_record(2, "i-1", "us-east-1a", 50, 80, 81, 90, {"us-east-1a": 3}), new_nodes_ready=START + 60)
    report = upgrade_report(run(
        setup_result=setup_result(), strategy="surge", upgrade_batches=[launch_only, step],
        upgrade_drain_results={"node-i-1": drained(["a/p1"], pdb_wait_seconds=0.0, waited=0.0)}))
    first, second = report["batches"]
    assert (first["phase"], first["new_nodes_ready_at"], first["terminated_at"]) == (
        "surge_upgrade", "2024-05-01T10:00:40.000Z", None)
    assert first["waited_on"] == [dict(what="new_nodes_ready", seconds=30.0)]
    assert second["waited_on"] == [dict(what="new_nodes_ready", seconds=10.0),
                                   dict(what="pods_terminating", seconds=20.0),
                                   dict(what="instances_terminating", seconds=9.0)]


def test_issue27_a_stop_at_a_safe_point_is_paused_or_window_closed_and_an_alarm_a_failure():
    def status(code, stopped):
        error = dict(ERROR, code=code, msg="Stopped before batch 2", stopped=stopped)
        return upgrade_report(run(setup_result=setup_result(), error=error))["status"]

    assert status("UpgradePaused", True) == "paused"
    assert status("MaintenanceWindowClosed", True) == "window_closed"
    assert status("AlarmTriggered", False) == "failed"
    assert status("PodEvictionFailure", False) == "failed"


def test_issue27_item5_a_batch_says_which_nodes_it_held_in_quarantine_and_a_retry_says_so():
    held = dict(batch_record(1, "i-1", "us-east-1a", 100, 150, 151, 170, {}), instance_ids=[], nodes=[],
                quarantined=["node-i-1"])
    retry = dict(batch_record(2, "i-1", "us-east-1a", 200, 230, 231, 240, {}), retry=True)
    entry = dict(node="node-i-1", instance_id="i-1", batch=1, retried=False, evicted=["a/p0"], pods=[],
                 pod_disruption_budgets=[])
    report = upgrade_report(run(setup_result=setup_result(), upgrade_batches=[held, retry],
                                upgrade_drain_results={"node-i-1": drained(["a/p1"])}, upgrade_quarantined=[entry]))
    first, second = report["batches"]
    assert (first["instance_ids"], first["nodes"], first["quarantined"], first["retry"]) == ([], [], ["node-i-1"], False)
    assert (second["instance_ids"], second["quarantined"], second["retry"]) == (["i-1"], [], True)
    assert report["quarantined"] == [entry]
    # What the held node's drain evicted before it timed out moved too.
    assert report["pods_evicted"] == 2
