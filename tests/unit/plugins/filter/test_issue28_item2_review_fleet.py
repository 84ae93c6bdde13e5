# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 2 review: the fleet playbook's plan, report, stop message and bake verdict (filters fleet_plan,
fleet_report, fleet_stop_message, fleet_bake_halt), each test named after the reviewer's finding it proves."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.filter.fleet_bake_halt import FilterModule as BakeFilters
from ansible_collections.eksops.nodegroup.plugins.filter.fleet_plan import fleet_plan
from ansible_collections.eksops.nodegroup.plugins.filter.fleet_report import fleet_report
from ansible_collections.eksops.nodegroup.plugins.filter.fleet_stop_message import FilterModule as StopFilters

from .test_issue28_item2_fleet_plan import FIRST, FLEET, RINGS, host, plan, report

bake_halt = BakeFilters().filters()["fleet_bake_halt"]
stop_message = StopFilters().filters()["fleet_stop_message"]


def test_issue28_item2_review_7_first_nodegroups_is_a_barrier_whatever_the_concurrency():
    hosts = {"c/system": host("c", "system", "canary"), "c/apps-a": host("c", "apps-a", "canary"),
             "c/apps-b": host("c", "apps-b", "canary")}
    waves = plan(hosts, concurrency=2)
    assert [step["hosts"] for step in waves["steps"]] == [["c/system"], ["c/apps-a", "c/apps-b"]]
    assert waves["serial"] == [1, 2]


def test_issue28_item2_review_10_concurrency_is_checked_once_in_the_plan_naming_it():
    for value, says in ((0, "got 0"), ("two", "got two"), (True, "got True")):
        refused = plan(concurrency=value)
        assert refused["error"]["parameter"] == "per_cluster_concurrency", refused
        assert "whole number >= 1, " + says in refused["error"]["msg"]
    assert plan(concurrency="2")["serial"] == plan(concurrency=2)["serial"]


def test_issue28_item2_review_10_each_baked_step_names_the_previous_ring_and_the_plan_prints_itself():
    waves = plan()
    assert [step["bake_ring"] for step in waves["steps"]] == [None, None, "canary", None, "ring1", None]
    assert waves["summary"].startswith("wave 1 (canary): fleet-canary/system; wave 2 (canary): fleet-canary/apps-arm; "
                                       "wave 3 (ring1, after the bake of ring canary): fleet-eu/system, fleet-west/system")


def test_issue28_item2_review_5a_a_control_plane_older_than_the_target_is_refused_before_any_change():
    hosts = dict(FLEET, **{"fleet-west/apps": dict(FLEET["fleet-west/apps"], cluster_version="1.29"),
                           "fleet-eu/apps": dict(FLEET["fleet-eu/apps"], cluster_version="1.30")})
    refused = fleet_plan(list(hosts), hosts, RINGS, FIRST, 1, "1.30")
    assert refused["error"]["parameter"] == "kubernetes_version", refused
    assert "fleet-west/apps (1.29)" in refused["error"]["msg"] and "fleet-eu/apps" not in refused["error"]["msg"]
    assert fleet_plan(list(hosts), hosts, RINGS, FIRST, 1, "1.29")["error"] is None


def _hostvars(**reports):
    hostvars = {name: {} for name in FLEET}
    for name, status in reports.items():
        hostvars[name.replace("__", "/").replace("_", "-")] = dict(nodegroup_upgrade_report=report(
            status, None if status == "succeeded" else "NodeCreationFailure"))
    return hostvars


def test_issue28_item2_review_3_a_report_written_between_waves_says_running():
    fleet = fleet_report(plan(), _hostvars(fleet_canary__system="succeeded"), 1, 0)
    assert (fleet["status"], fleet["halt"], fleet["halted_at"]) == ("running", None, None)


def test_issue28_item2_review_3_a_bake_halt_is_in_the_report_with_its_wave_ring_code_and_reason():
    done = _hostvars(fleet_canary__system="succeeded", fleet_canary__apps_arm="succeeded")
    waves = plan()
    read = dict(name="fleet-canary/apps-arm", nodegroup=dict(old_instances=["i-1"], instances=[]))
    halt = bake_halt(dict(ring=dict(nodegroups=[read], clusters=[])), waves["steps"][2])
    assert halt["code"] == "HealthGateFailed" and halt["wave"] == 3 and halt["ring"] == "ring1"
    assert "ring canary" in halt["reason"] and "fleet-canary/apps-arm: 1 instance(s) not on the target" in halt["reason"]
    fleet = fleet_report(waves, done, 3, 0, [], halt)
    assert (fleet["status"], fleet["halt"]) == ("halted", halt)
    assert fleet["halted_at"] == dict(wave=3, ring="ring1", failed=[])
    assert [wave["wave"] for wave in fleet["waves"]] == [1, 2]


def test_issue28_item2_review_9_a_bake_read_failure_keeps_its_own_code():
    step = plan()["steps"][2]
    denied = dict(name="fleet-canary/system", failed=True, code="AccessDenied", msg="denied")
    halt = bake_halt(dict(ring=dict(nodegroups=[denied], clusters=[])), step)
    assert halt["code"] == "AccessDenied" and "fleet-canary/system could not be read (denied)" in halt["reason"]
    unhealthy = bake_halt(dict(ring=dict(nodegroups=[denied], clusters=[
        dict(cluster_name="fleet-canary", failed=True, code="HealthGateFailed", msg="x")])), step)
    assert unhealthy["code"] == "HealthGateFailed" and "fleet-canary: x" in unhealthy["reason"]
    assert bake_halt(dict(ring=dict(nodegroups=[], clusters=[dict(cluster_name="fleet-canary", health=dict(workloads=[]))])),
                     step) is None
    # The task failed as a whole, as the job guard ends it (the action's result: JobStopped, which failed_when false
    # lets through): nothing was judged, and the halt says so with that code.
    whole = bake_halt(dict(failed=True, msg="The job is gone (SIGTERM)", code="JobStopped"), step)
    assert whole["code"] == "JobStopped" and "the ring could not be judged (The job is gone" in whole["reason"]


def test_issue28_item2_review_4_the_stop_message_says_whether_the_later_waves_start():
    hosts = {"a/system": host("a", "system", "canary"), "b/system": host("b", "system", "canary"),
             "a/apps": host("a", "apps", "ring1")}
    waves = plan(hosts)
    hostvars = {"a/system": dict(nodegroup_upgrade_report=report("failed", "NodeCreationFailure")),
                "b/system": dict(nodegroup_upgrade_report=report("succeeded")), "a/apps": {}}
    tolerated = fleet_report(waves, hostvars, 1, 50)
    assert tolerated["halt"] is None and tolerated["status"] == "running"
    assert stop_message(tolerated, "a/system") == (
        "Node group a/system (wave 1, ring canary) ended failed (NodeCreationFailure). 1 of the 2 node group(s) of "
        "wave 1 did not end on target, within fleet_max_fail_percentage 50%: the later waves go on; rerun the job "
        "afterwards to resume this node group (docs/fleet.md).")
    stopped = fleet_report(waves, hostvars, 1, 49)
    assert stopped["halt"]["code"] == "FleetWaveFailed" and stopped["status"] == "halted"
    assert "more than fleet_max_fail_percentage 49%: the later waves do not start" in stop_message(stopped, "a/system")


def test_issue28_item2_review_2_an_unreachable_node_group_of_a_wave_that_ran_stops_the_fleet():
    hosts = {"a/system": host("a", "system", "canary"), "a/apps": host("a", "apps", "ring1")}
    # a/system's host went unreachable: no report, no fleet_upgrade_error; Ansible does not count it as failed.
    fleet = fleet_report(plan(hosts), {"a/system": {}, "a/apps": {}}, 1, 0)
    assert fleet["waves"][0]["failed"] == ["a/system"] and fleet["halt"]["wave"] == 1
    assert fleet["status"] == "halted"


def test_issue28_item2_review_6_a_rerun_with_a_limit_is_partial_with_rows_left_out():
    hosts = {"a/system": host("a", "system", "canary")}
    hostvars = {"a/system": dict(nodegroup_upgrade_report=report("succeeded")),
                "a/apps": dict(cluster_name="a", nodegroup_name="apps"), "localhost-like": {}}
    fleet = fleet_report(plan(hosts), hostvars, 1, 0, ["a/apps", "a/system", "localhost-like"])
    assert fleet["status"] == "partial" and fleet["counts"] == {"succeeded": 1, "left_out": 1}
    assert fleet["rows"][1] == dict(fleet["rows"][1], host="a/apps", status="left_out", wave=None,
                                    cluster_name="a", nodegroup_name="apps")
