# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The observer: counts, minima, PDB violations and the timeline, from synthetic snapshots and from a real
sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import pytest

from eks_sandbox.observer import Observer
from eks_sandbox.recorder import Recorder
from eks_sandbox.runtime import read_env_file

SCENARIO = {"name": "unit", "nodegroups": [{"name": "workers"}, {"name": "spare"}]}


def node(name: str, ready: bool = True, unschedulable: bool = False, nodegroup: str = "workers",
         az: str = "us-west-2a") -> dict:
    return {"name": name, "nodegroup": nodegroup, "az": az, "instance_id": "i-" + name, "ami": "ami-1",
            "lt_version": 1, "ready": ready, "unschedulable": unschedulable, "labels": {"k": "v"}}


def snapshot(nodes: list[dict], web_ready: int, web_min: int | None = 3) -> dict:
    return {"nodes": nodes,
            "workloads": {"default/web": {"kind": "Deployment", "replicas": 4, "ready": web_ready,
                                          "pdb_min_available": web_min}}}


def instance(nodegroup: str, state: str) -> dict:
    return {"nodegroup": nodegroup, "state": state}


def test_pdb_violation_is_recorded_once_per_episode_with_the_lowest_ready():
    recorder = Recorder()
    observer = Observer(SCENARIO, recorder)
    nodes = [node("a"), node("b")]
    for t, ready in [(1, 4), (2, 3), (3, 2), (4, 1), (5, 3), (6, 4), (7, 2), (8, 3)]:
        observer.sample(snapshot(nodes, ready), now=t)
    report = observer.report(snapshot(nodes, 4), {})
    assert report["pdb_violations"] == [
        {"workload": "default/web", "time": 3, "ready": 1, "min_available": 3, "until": 5},
        {"workload": "default/web", "time": 7, "ready": 2, "min_available": 3, "until": 8},
    ]
    assert report["workloads"]["default/web"] == {"kind": "Deployment", "replicas": 4, "ready": 4, "min_ready": 1,
                                                  "pdb_min_available": 3}
    assert [e["kind"] for e in report["events"]] == ["pdb_violation", "pdb_violation"]


def test_no_violation_at_the_budget_or_without_a_pdb():
    observer = Observer(SCENARIO, Recorder())
    for ready in (4, 3, 3, 4):
        observer.sample(snapshot([node("a")], ready), now=1)
    observer.sample(snapshot([node("a")], 0, web_min=None), now=2)
    report = observer.report(snapshot([node("a")], 4), {})
    assert report["pdb_violations"] == []
    assert report["workloads"]["default/web"]["min_ready"] == 0


def test_an_open_violation_has_no_end_yet():
    observer = Observer(SCENARIO, Recorder())
    observer.sample(snapshot([node("a")], 2), now=10)
    [violation] = observer.report(snapshot([node("a")], 1), {})["pdb_violations"]
    assert violation["until"] is None and violation["ready"] == 1


def test_node_counts_per_nodegroup_over_the_run():
    observer = Observer(SCENARIO, Recorder())
    observer.sample(snapshot([node("a"), node("b"), node("c")], 4), now=1)
    observer.sample(snapshot([node("a"), node("b"), node("c"), node("d", ready=False)], 4), now=2)
    observer.sample(snapshot([node("a", unschedulable=True), node("d"), node("x", nodegroup="spare")], 4), now=3)
    report = observer.report(snapshot([node("d"), node("e")], 4),
                             {"workers": {"min": 1, "max": 9, "desired": 2, "suspended_processes": [], "tags": {}}})
    workers = report["nodegroups"]["workers"]
    assert (workers["node_count_min"], workers["node_count_max"], workers["ready_nodes_min"]) == (2, 4, 2)
    assert [n["name"] for n in workers["nodes"]] == ["d", "e"]
    assert set(workers["nodes"][0]) == {"name", "az", "instance_id", "ami", "lt_version", "ready", "unschedulable",
                                        "labels"}
    assert workers["asg"]["desired"] == 2
    spare = report["nodegroups"]["spare"]
    assert (spare["node_count_min"], spare["node_count_max"], spare["asg"]) == (0, 1, None)


def test_timeline_counts_ready_nodes_per_availability_zone():
    # What lets a scenario check SPEC U3 from the report: a new Ready node in every AZ before the first cordon.
    observer = Observer(SCENARIO, Recorder())
    observer.sample(snapshot([node("a"), node("b", az="us-west-2b"), node("c", az="us-west-2b", ready=False),
                              node("x", nodegroup="spare", az="us-west-2c")], 4), now=1)
    [entry] = observer.report(snapshot([], 4), {})["timeline"][:1]
    assert entry["nodes"]["workers"]["ready_by_az"] == {"us-west-2a": 1, "us-west-2b": 1}
    assert entry["nodes"]["spare"]["ready_by_az"] == {"us-west-2c": 1}


def test_instance_counts_count_pending_and_running_only():
    observer = Observer(SCENARIO, Recorder())
    observer.sample(snapshot([], 4), [instance("workers", "running")] * 3, now=1)
    observer.sample(snapshot([], 4), [instance("workers", "running")] * 3 + [instance("workers", "pending")] * 2
                    + [instance("workers", "shutting-down"), instance("workers", "terminated")], now=2)
    report = observer.report(snapshot([], 4), {}, [instance("workers", "running")] * 2)
    assert (report["nodegroups"]["workers"]["instance_count_min"],
            report["nodegroups"]["workers"]["instance_count_max"]) == (2, 5)


def test_timeline_records_changes_only_and_stays_bounded():
    observer = Observer(SCENARIO, Recorder(), max_timeline=10)
    for t in range(5):
        observer.sample(snapshot([node("a")], 4), now=t)
    assert [e["t"] for e in observer.report(snapshot([node("a")], 4), {})["timeline"]] == [0]
    for t in range(100):
        observer.sample(snapshot([node("a")], t % 2 + 3), now=10 + t)
    report = observer.report(snapshot([node("a")], 4), {})
    timeline = report["timeline"]
    assert len(timeline) <= 10
    assert report["timeline_decimations"] > 0
    assert timeline[-1]["t"] == 109 and timeline[-1]["ready_replicas"] == {"default/web": 4}
    assert timeline[-1]["nodes"] == {"workers": {"total": 1, "ready": 1, "unschedulable": 0,
                                                 "ready_by_az": {"us-west-2a": 1}}}
    assert [e["t"] for e in timeline] == sorted(e["t"] for e in timeline)


def test_report_carries_recorder_data_and_extra_fields():
    recorder = Recorder()
    recorder.k8s_request("kubectl", "list", "pods", 200)
    recorder.aws_call("DescribeInstances", "RequestLimitExceeded")
    recorder.pod_lost("default", "web-1", "n1")
    assert Recorder().pdb_rounds() == {"rounds": 0, "seconds": 0.0, "reaction_seconds": 0.0,
                                       "reaction_seconds_max": 0.0, "by_pdb": {}}
    recorder.pdb_round("default/web", 0.6, 0.1)
    recorder.pdb_round("default/web", 0.55, 0.05)
    assert Recorder().pod_stops() == {"stops": 0, "seconds": 0.0, "reaction_seconds": 0.0,
                                      "reaction_seconds_max": 0.0, "by_node": {}}
    recorder.pod_stop(0.25, 0.05, "node-a")
    recorder.pod_stop(0.3, 0.1)
    recorder.node_boot(2.2, 0.2, "i-1")
    report = Observer(SCENARIO, recorder).report(snapshot([], 4), {}, extra={"ready_at": 5.0})
    assert report["k8s_requests"] == {"kubectl list pods 200": 1}
    assert report["aws_calls"] == {"DescribeInstances RequestLimitExceeded": 1}
    assert report["pods_lost"][0]["pod"] == "default/web-1"
    web = {"rounds": 2, "seconds": 1.15, "reaction_seconds": 0.15, "reaction_seconds_max": 0.1}
    assert report["pdb_rounds"] == {**web, "by_pdb": {"default/web": web}}
    assert report["pod_stops"] == {"stops": 2, "seconds": 0.55, "reaction_seconds": 0.15, "reaction_seconds_max": 0.1,
                                   "by_node": {"node-a": {"stops": 1, "last_reaction_seconds": 0.05}}}
    assert report["node_boots"] == {"boots": 1, "seconds": 2.2, "reaction_seconds": 0.2, "reaction_seconds_max": 0.2,
                                    "by_instance": {"i-1": 0.2}}
    assert report["ready_at"] == 5.0 and report["scenario"] == "unit"


# ------------------------------------------------------------------------------------------------- end to end
# The report must tell the truth about a real sandbox: a PDB broken by deleting pods (bypassing eviction)
# and pods killed with their instance are caught. Runs `eks-sandbox up` on surge5 (web: 5 replicas, PDB
# maxUnavailable 1, so minAvailable 4).

EKS_SANDBOX = [sys.executable, "-m", "eks_sandbox.cli"]


@pytest.fixture(scope="module")
def surge5(tmp_path_factory):
    state_dir = tmp_path_factory.mktemp("observer-surge5")
    try:
        up = subprocess.run([*EKS_SANDBOX, "up", "--scenario", "surge5", "--state-dir", str(state_dir)],
                            capture_output=True, text=True, timeout=150, check=False)
        assert up.returncode == 0, up.stderr
        yield read_env_file(state_dir / "env")
    finally:
        subprocess.run([*EKS_SANDBOX, "down", "--state-dir", str(state_dir)], capture_output=True, timeout=60,
                       check=False)


def _report(env: dict) -> dict:
    with urllib.request.urlopen(env["SANDBOX_URL"] + "/report", timeout=30) as response:
        return json.loads(response.read())


def _wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("condition not met in time")


def _core_v1(env: dict):
    from kubernetes import client, config

    return client.CoreV1Api(config.new_client_from_config(config_file=env["KUBECONFIG"]))


def test_report_catches_a_pdb_broken_by_deleting_pods(surge5):
    core = _core_v1(surge5)
    before = time.time()
    web = core.list_namespaced_pod("default", label_selector="app=web").items
    for pod in web[:2]:
        core.delete_namespaced_pod(pod.metadata.name, "default", grace_period_seconds=0)

    def recovered_violation():
        violations = [v for v in _report(surge5)["pdb_violations"] if v["workload"] == "default/web"]
        return violations and violations[-1]["until"] is not None and violations[-1]

    violation = _wait_for(recovered_violation)
    assert violation["min_available"] == 4 and violation["ready"] <= 3
    assert before <= violation["time"] <= violation["until"]
    assert _report(surge5)["workloads"]["default/web"]["min_ready"] <= 3


def test_report_lists_pods_lost_with_their_instance(surge5):
    import boto3

    core = _core_v1(surge5)
    node = core.list_node().items[0]
    # DaemonSet pods belong to their node (a drain leaves them): their end with it is no loss.
    on_node = {f"{p.metadata.namespace}/{p.metadata.name}" for p in
               core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node.metadata.name}").items
               if not any(ref.kind == "DaemonSet" for ref in p.metadata.owner_references or ())}
    assert on_node
    autoscaling = boto3.client("autoscaling", endpoint_url=surge5["AWS_ENDPOINT_URL"],
                               region_name=surge5["AWS_REGION"], aws_access_key_id="testing",
                               aws_secret_access_key="testing")
    autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=node.spec.provider_id.rsplit("/", 1)[-1],
                                                         ShouldDecrementDesiredCapacity=True)

    def lost_on_node():
        return {p["pod"] for p in _report(surge5)["pods_lost"] if p["node"] == node.metadata.name}

    lost = _wait_for(lambda: lost_on_node() >= on_node and lost_on_node())
    assert lost == on_node
    # The Node lingers NotReady for node_removal_seconds after its instance stopped, then goes.
    report = _wait_for(lambda: (r := _report(surge5))["nodegroups"]["workers"]["node_count_min"] == 4 and r)
    assert report["timeline"][-1]["nodes"]["workers"]["total"] == 4
    assert "TerminateInstanceInAutoScalingGroup OK" in report["aws_calls"]
