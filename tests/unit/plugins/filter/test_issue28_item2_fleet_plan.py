# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 2: the fleet playbook's waves (filter fleet_plan, module_utils/plan/fleet.py) - rings in
fleet_rings order, each cluster's node groups in the declared order and at most per_cluster_concurrency at once,
Ansible's serial sized to match - its report (filter fleet_report: one row per node group, the halt) and the
bake's verdict on a node group of the previous ring (plan/fleet_bake_verdict.py bake_problem)."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.filter.fleet_bake_halt import FilterModule as BakeFilters
from ansible_collections.eksops.nodegroup.plugins.filter.fleet_plan import FilterModule as PlanFilters, fleet_plan
from ansible_collections.eksops.nodegroup.plugins.filter.fleet_report import FilterModule as ReportFilters, fleet_report
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.fleet_bake_verdict import bake_problem

RINGS = ["canary", "ring1", "ring2"]
FIRST = ["system*", "monitoring*"]


def host(cluster, nodegroup, ring, region="us-west-2", **more):
    return dict(dict(cluster_name=cluster, nodegroup_name=nodegroup, aws_region=region, kind="self_managed",
                     nodegroup_image_name="amazon-eks-node-al2023-x86_64-standard-1.29-v20240601",
                     nodegroup_tags={"upgrade-ring": ring}), **more)


# The sandbox's fleet scenario (tests/sandbox/scenarios/fleet.yaml), as the inventory names its hosts.
FLEET = {
    "fleet-canary/system": host("fleet-canary", "system", "canary", kind="managed", nodegroup_ami_type="AL2_x86_64"),
    "fleet-canary/apps-arm": host("fleet-canary", "apps-arm", "canary"),
    "fleet-west/system": host("fleet-west", "system", "ring1"),
    "fleet-west/apps": host("fleet-west", "apps", "ring1"),
    "fleet-west/batch": host("fleet-west", "batch", "ring2"),
    "fleet-eu/system": host("fleet-eu", "system", "ring1", region="eu-west-1"),
    "fleet-eu/apps": host("fleet-eu", "apps", "ring2", region="eu-west-1"),
    "fleet-eu/legacy": host("fleet-eu", "legacy", "ring2", region="eu-west-1"),
}


def plan(hosts=None, rings=None, first=None, concurrency=1):
    hosts = FLEET if hosts is None else hosts
    return fleet_plan(list(hosts), hosts, RINGS if rings is None else rings, FIRST if first is None else first,
                      concurrency)


def test_the_filters_are_registered_by_their_names():
    assert list(PlanFilters().filters()) == ["fleet_plan"]
    assert list(ReportFilters().filters()) == ["fleet_report"]
    assert list(BakeFilters().filters()) == ["fleet_bake_halt"]


def test_issue28_item2_the_canary_ring_goes_first_and_each_cluster_one_group_at_a_time_system_first():
    waves = plan()
    assert waves["error"] is None
    assert [step["wave"] for step in waves["steps"]] == [1, 2, 3, 4, 5, 6]
    assert [(step["ring"], step["hosts"]) for step in waves["steps"]] == [
        ("canary", ["fleet-canary/system"]),
        ("canary", ["fleet-canary/apps-arm"]),
        ("ring1", ["fleet-eu/system", "fleet-west/system"]),
        ("ring1", ["fleet-west/apps"]),
        ("ring2", ["fleet-eu/apps", "fleet-west/batch"]),
        ("ring2", ["fleet-eu/legacy"]),
    ]
    assert waves["serial"] == [1, 1, 2, 1, 2, 1]
    assert waves["hosts"] == [name for step in waves["steps"] for name in step["hosts"]]
    assert sorted(waves["hosts"]) == sorted(FLEET)


def test_issue28_item2_a_ring_is_baked_before_its_first_wave_on_the_previous_ring_only():
    steps = plan()["steps"]
    assert [[group["name"] for group in step["bake_nodegroups"]] for step in steps] == [
        [], [], ["fleet-canary/system", "fleet-canary/apps-arm"], [],
        ["fleet-eu/system", "fleet-west/system", "fleet-west/apps"], []]
    assert steps[2]["bake_nodegroups"][0] == dict(name="fleet-canary/system", cluster_name="fleet-canary",
                                                  nodegroup_name="system", asg_name=None, region="us-west-2",
                                                  profile=None, kubeconfig=None, context=None)


def test_issue28_item2_the_bake_judges_the_previous_rings_clusters_once_each():
    steps = plan()["steps"]
    assert [[c["cluster_name"] for c in step["bake_clusters"]] for step in steps] == [
        [], [], ["fleet-canary"], [], ["fleet-eu", "fleet-west"], []]
    assert steps[4]["bake_clusters"][0] == dict(cluster_name="fleet-eu", region="eu-west-1", profile=None, kubeconfig=None,
                                                context=None)


def test_issue28_item2_the_bake_uses_the_hosts_kube_context():
    """Issue 28 item 2, the bake's gaps (b): the bake reaches each cluster of the previous ring through the
    kubeconfig context its hosts name (kube_context), as their upgrade does, not only through the ARN's."""
    hosts = dict((name, dict(variables, kube_context="admin@canary") if name.startswith("fleet-canary/") else variables)
                 for name, variables in FLEET.items())
    assert [c["context"] for c in plan(hosts)["steps"][2]["bake_clusters"]] == ["admin@canary"]
    mixed = dict(hosts, **{"fleet-canary/system": FLEET["fleet-canary/system"]})
    refused = plan(mixed)
    assert refused["error"]["parameter"] == "kube_context" and "steps" not in refused
    assert "fleet-canary/system (none); fleet-canary/apps-arm (admin@canary)" in refused["error"]["msg"], refused


def test_issue28_item2_each_host_reaches_its_cluster_through_the_context_its_runs_use():
    """The plan's contexts (the wave play's module_defaults and the bake's, one rule): kube_context, else with a
    kubeconfig the cluster's ARN, else none (an EKS token for cluster_name)."""
    arn = "arn:aws:eks:us-west-2:123456789012:cluster/fleet-west"
    hosts = dict(FLEET, **{"fleet-west/apps": dict(FLEET["fleet-west/apps"], cluster_arn=arn),
                           "fleet-west/system": dict(FLEET["fleet-west/system"], cluster_arn=arn),
                           "fleet-west/batch": dict(FLEET["fleet-west/batch"], cluster_arn=arn, kube_context="admin"),
                           "fleet-eu/system": dict(FLEET["fleet-eu/system"], kube_context="eu")})
    hosts["fleet-west/apps"]["kube_context"] = hosts["fleet-west/system"]["kube_context"] = "admin"
    hosts["fleet-eu/apps"] = dict(FLEET["fleet-eu/apps"], kube_context="eu")
    hosts["fleet-eu/legacy"] = dict(FLEET["fleet-eu/legacy"], kube_context="eu")
    hosts["fleet-canary/system"] = dict(FLEET["fleet-canary/system"], cluster_arn=arn.replace("fleet-west", "fleet-canary"))
    hosts["fleet-canary/apps-arm"] = dict(FLEET["fleet-canary/apps-arm"], cluster_arn=arn.replace("fleet-west", "fleet-canary"))
    with_kubeconfig = fleet_plan(list(hosts), hosts, RINGS, FIRST, 1, None, None, "/home/sre/.kube/config")
    without = fleet_plan(list(hosts), hosts, RINGS, FIRST, 1)
    assert with_kubeconfig["contexts"]["fleet-canary/system"] == arn.replace("fleet-west", "fleet-canary")
    assert without["contexts"]["fleet-canary/system"] is None
    assert with_kubeconfig["contexts"]["fleet-west/apps"] == without["contexts"]["fleet-west/apps"] == "admin"
    assert [c["context"] for c in with_kubeconfig["steps"][2]["bake_clusters"]] == [arn.replace("fleet-west", "fleet-canary")]
    assert [c["context"] for c in without["steps"][2]["bake_clusters"]] == [None]
    assert dict((g["name"], g["context"]) for g in with_kubeconfig["steps"][4]["bake_nodegroups"]) == {
        "fleet-eu/system": "eu", "fleet-west/system": "admin", "fleet-west/apps": "admin"}
    # A kubeconfig of one host's own (host variable kubeconfig, not the environment's): that host only.
    canary = dict(hosts, **{"fleet-canary/apps-arm": dict(hosts["fleet-canary/apps-arm"], kubeconfig="/k/canary")})
    own = fleet_plan(list(canary), canary, RINGS, FIRST, 1)
    assert own["contexts"]["fleet-canary/apps-arm"] == arn.replace("fleet-west", "fleet-canary")
    assert own["contexts"]["fleet-canary/system"] is None
    assert [(g["name"], g["kubeconfig"]) for g in own["steps"][2]["bake_nodegroups"]] == [
        ("fleet-canary/system", None), ("fleet-canary/apps-arm", "/k/canary")]


def test_issue28_item2_per_cluster_concurrency_puts_that_many_groups_of_a_cluster_in_one_wave():
    waves = plan(concurrency=2)
    # The system groups still go before the others of their cluster (review finding 7).
    assert [step["hosts"] for step in waves["steps"]] == [
        ["fleet-canary/system"], ["fleet-canary/apps-arm"],
        ["fleet-eu/system", "fleet-west/system"], ["fleet-west/apps"],
        ["fleet-eu/apps", "fleet-eu/legacy", "fleet-west/batch"]]
    assert waves["serial"] == [1, 1, 2, 1, 3]


def test_issue28_item2_the_declared_order_puts_monitoring_after_system_before_the_rest():
    hosts = {name: host("c", name.split("/")[1], "canary")
             for name in ("c/apps", "c/monitoring-a", "c/system-b", "c/system-a", "c/zeta")}
    assert plan(hosts)["hosts"] == ["c/system-a", "c/system-b", "c/monitoring-a", "c/apps", "c/zeta"]


def test_issue28_item2_a_limit_shrinks_the_waves_and_an_empty_ring_has_none():
    limited = {name: value for name, value in FLEET.items() if name != "fleet-canary/apps-arm"}
    waves = plan(limited, rings=["canary", "ring0", "ring1", "ring2"])
    assert waves["serial"] == [1, 2, 1, 2, 1]
    assert [group["name"] for group in waves["steps"][1]["bake_nodegroups"]] == ["fleet-canary/system"]


def test_issue28_item2_the_host_variable_upgrade_ring_wins_over_the_tag():
    hosts = dict(FLEET, **{"fleet-west/batch": dict(FLEET["fleet-west/batch"], upgrade_ring="canary")})
    assert "fleet-west/batch" in plan(hosts)["steps"][0]["hosts"]


def test_issue28_item2_the_targets_are_asked_per_region():
    regions = plan()["regions"]
    assert sorted(regions) == ["eu-west-1", "us-west-2"]
    assert [entry["host"] for entry in regions["eu-west-1"]] == ["fleet-eu/system", "fleet-eu/apps", "fleet-eu/legacy"]
    assert regions["us-west-2"][0] == dict(host="fleet-canary/system", kind="managed", nodegroup_image_name=FLEET[
        "fleet-canary/system"]["nodegroup_image_name"], nodegroup_ami_type="AL2_x86_64")


@pytest.mark.parametrize("hosts, rings, concurrency, parameter, words", [
    (dict(FLEET, **{"other/x": host("other", "x", "ring9")}), RINGS, 1, "fleet_rings", "other/x (ring9)"),
    (dict(FLEET, **{"other/x": dict(host("other", "x", None), nodegroup_tags={})}), RINGS, 1, "fleet_rings",
     "other/x (None)"),
    (dict(FLEET, web1={"ansible_host": "10.0.0.1"}), RINGS, 1, "hosts", "web1 lack cluster_name"),
    (FLEET, RINGS, 0, "per_cluster_concurrency", "got 0"),
    (dict(FLEET, **{"copy": host("fleet-west", "apps", "ring2")}), RINGS, 1, "nodegroup_name",
     "copy and fleet-west/apps (apps)"),
    (FLEET, [], 1, "fleet_rings", "got []"),
    (FLEET, ["canary", "canary"], 1, "fleet_rings", "each once"),
])
def test_issue28_item2_what_cannot_be_planned_is_refused_naming_the_parameter(hosts, rings, concurrency, parameter, words):
    refused = plan(hosts, rings=rings, concurrency=concurrency)
    assert refused["error"]["parameter"] == parameter and words in refused["error"]["msg"], refused
    assert "steps" not in refused


def report(status, code=None, pods=3):
    return dict(status=status, cluster_name="c", nodegroup_name="n", started_at="t0", finished_at="t1",
                total_seconds=42.0, phase_seconds={"setup": 1.0}, pods_evicted=pods,
                error=None if code is None else dict(code=code, summary="%s: it failed" % code))


def written(name):
    return {"nodegroup_upgrade_report_file": {"report_file": {
        "path": "/r/%s.json" % name, "timeline": {"path": "/r/%s.svg" % name, "size": 10}}}}


def test_issue28_item2_a_failed_canary_halts_the_fleet_and_the_report_says_where_and_why():
    waves = plan()
    hostvars = {name: {} for name in FLEET}
    hostvars["fleet-canary/system"] = dict(nodegroup_upgrade_report=report("succeeded"), **written("system"))
    hostvars["fleet-canary/apps-arm"] = dict(nodegroup_upgrade_report=report("failed", "NodeCreationFailure", pods=0))
    fleet = fleet_report(waves, hostvars, 2, 0)
    assert fleet["status"] == "halted"
    assert fleet["halted_at"] == dict(wave=2, ring="canary", failed=["fleet-canary/apps-arm"])
    assert fleet["counts"] == {"succeeded": 1, "failed": 1, "not_started": 6}
    rows = {row["host"]: row for row in fleet["rows"]}
    assert [row["host"] for row in fleet["rows"]] == waves["hosts"]
    assert rows["fleet-canary/system"]["report_path"] == "/r/system.json"
    assert rows["fleet-canary/system"]["timeline_path"] == "/r/system.svg"
    assert (rows["fleet-canary/system"]["total_seconds"], rows["fleet-canary/system"]["pods_evicted"]) == (42.0, 3)
    assert rows["fleet-canary/apps-arm"]["error_code"] == "NodeCreationFailure"
    assert rows["fleet-canary/apps-arm"]["error"] == "NodeCreationFailure: it failed"
    assert rows["fleet-eu/legacy"] == dict(rows["fleet-eu/legacy"], status="not_started", wave=6, ring="ring2",
                                           error_code=None, report_path=None)


def test_issue28_item2_a_run_that_failed_before_its_report_is_a_failed_row():
    hostvars = {name: {} for name in FLEET}
    hostvars["fleet-canary/system"] = {"fleet_upgrade_error": {"code": "InvalidParameter", "msg": "drain_timeout"}}
    fleet = fleet_report(plan(), hostvars, 1, 0)
    assert fleet["rows"][0]["status"] == "failed" and fleet["rows"][0]["error_code"] == "InvalidParameter"
    assert fleet["rows"][0]["error"] == "drain_timeout" and fleet["status"] == "halted"


def test_issue28_item2_every_group_upgraded_is_a_succeeded_fleet():
    hostvars = {name: dict(nodegroup_upgrade_report=report("succeeded")) for name in FLEET}
    fleet = fleet_report(plan(), hostvars, 6, 0)
    assert (fleet["status"], fleet["halted_at"], fleet["counts"]) == ("succeeded", None, {"succeeded": 8})


def test_issue28_item2_a_dry_run_of_the_fleet_is_planned_not_failed():
    hostvars = {name: dict(nodegroup_upgrade_report=report("planned")) for name in FLEET}
    fleet = fleet_report(plan(), hostvars, 6, 0)
    assert (fleet["status"], fleet["halted_at"], fleet["counts"]) == ("planned", None, {"planned": 8})


def instance(name, ready=True, unschedulable=False, state="InService"):
    return dict(instance_id="i-" + name, node_name=name, ready=ready, unschedulable=unschedulable, lifecycle_state=state)


@pytest.mark.parametrize("nodegroup, problem", [
    (dict(old_instances=[], instances=[instance("a"), instance("b")]), ""),
    (dict(old_instances=["i-a"], instances=[instance("a"), instance("b")]), "c/n: 1 instance(s) not on the target (i-a)"),
    (dict(old_instances=[], instances=[instance("a", ready=False)]), "c/n: instance i-a InService, node a not Ready"),
    (dict(old_instances=[], instances=[dict(instance("a"), node_name=None)]),
     "c/n: instance i-a InService, node not registered Ready"),
    (dict(old_instances=[], instances=[instance("a", unschedulable=True)]), "c/n: node a cordoned"),
])
def test_issue28_item2_the_bake_judges_the_previous_rings_groups(nodegroup, problem):
    assert bake_problem(dict(name="c/n", nodegroup=nodegroup)) == problem


def test_issue28_item2_a_group_the_bake_cannot_read_is_a_problem():
    bake = bake_problem
    assert bake(dict(name="c/n", failed=True, msg="AccessDenied")) == "c/n could not be read (AccessDenied)"
    # failed_when false keeps the task going: the result then has no nodegroup.
    assert bake(dict(name="c/n", failed=False, msg="NotFound")) == "c/n could not be read (NotFound)"
