# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_drain against the sandbox (SPEC D1-D16, C1, U4, U5, Z3, P1-P4).

The demo scenario comes from the shared `sandbox` fixture; the fault scenarios and the 110-pod node get their
own sandboxes here. The 110-pod test also drains an identical node with `kubectl drain` (when kubectl is on
PATH) and compares the API request counts the sandbox recorded per user agent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections import Counter

import pytest
import yaml
from kubernetes.client import V1Container, V1ObjectMeta, V1Pod, V1PodSpec

from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import retry_api_call
from nodegroup_state import asg_name_of, nodegroup_nodes
from sandbox_helpers import ansible_env, run_module, start_sandbox, stop_sandbox
from scenarios import pinned_pools

EXCLUDE_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
FAST = {"post_drain_wait": 1, "delete_options": {"wait_timeout": 60}}


def pods_by_node(sandbox):
    result = {}
    # retried: the fault scenarios inject errors into every client's requests, the tests' too
    for pod in retry_api_call(sandbox.core_v1().list_pod_for_all_namespaces).items:
        if pod.spec.node_name:
            result.setdefault(pod.spec.node_name, []).append("%s/%s" % (pod.metadata.namespace, pod.metadata.name))
    return result


def node_with(sandbox, must_have, must_not_have=()):
    for name, pods in sorted(pods_by_node(sandbox).items()):
        node = retry_api_call(sandbox.core_v1().read_node, name)
        if node.spec.unschedulable:
            continue
        if all(any(p.startswith(prefix) for p in pods) for prefix in must_have) and \
                not any(p.startswith(prefix) for prefix in must_not_have for p in pods):
            return name
    raise AssertionError("no schedulable node has %s without %s: %s" % (must_have, must_not_have, pods_by_node(sandbox)))


def node_events(sandbox, node):
    events = sandbox.core_v1().list_namespaced_event("default", field_selector="involvedObject.name=%s" % node)
    return [(e.reason, e.source.component if e.source else None) for e in events.items]


def requests_of(report, agent_part):
    counts = Counter()
    for key, count in report["k8s_requests"].items():
        agent, verb, resource, status = key.rsplit(" ", 3)
        if agent_part in agent:
            counts[(verb, resource, status)] += count
    return counts


def drain(sandbox, args, **kwargs):
    merged = dict(FAST)
    merged.update(args)
    return run_module(sandbox, "node_drain", merged, **kwargs)


# --------------------------------------------------------------------------------------------------------
# demo scenario
# --------------------------------------------------------------------------------------------------------

def test_check_mode_plans_refusal_without_touching_the_node_D10(sandbox):
    node = node_with(sandbox, ["default/debug-shell"])
    result = drain(sandbox, {"name": node}, check=True, diff=True)
    assert result["failed"] and result["code"] == "PodEvictionFailure"
    assert result["drain"]["nodes"][node]["failed"][0]["pod"] == "default/debug-shell"
    assert not sandbox.core_v1().read_node(node).spec.unschedulable
    assert "default/debug-shell" in pods_by_node(sandbox)[node]


def test_drain_web_node_respects_the_pdb_D1_U4_U5(sandbox):
    node = node_with(sandbox, ["default/web-"], must_not_have=["default/debug-shell", "payments/billing"])
    before = pods_by_node(sandbox)[node]
    plan = drain(sandbox, {"name": node}, check=True, diff=True)
    assert not plan["failed"] and plan["changed"]
    assert sorted(plan["drain"]["nodes"][node]["evicted"]) == sorted(p for p in before if not p.startswith("kube-system/"))
    assert not sandbox.core_v1().read_node(node).spec.unschedulable

    started = time.monotonic()
    result = drain(sandbox, {"name": node}, diff=True)
    assert not result["failed"], result.get("msg")
    assert result["changed"] and result["drain"]["nodes"][node]["evicted"] == plan["drain"]["nodes"][node]["evicted"]
    assert time.monotonic() - started >= 1  # post_drain_wait
    live = sandbox.core_v1().read_node(node)
    assert live.spec.unschedulable and live.metadata.labels[EXCLUDE_LB_LABEL] == "true"
    assert "eksops.nodegroup/cordoned-by" in live.metadata.annotations
    assert [p for p in pods_by_node(sandbox).get(node, []) if not p.startswith("kube-system/")] == []
    assert ("EksopsCordon", "eksops-nodegroup") in node_events(sandbox, node)
    assert ("EksopsDrain", "eksops-nodegroup") in node_events(sandbox, node)
    report = sandbox.report()
    assert report["pdb_violations"] == []
    ours = requests_of(report, "node_drain")
    assert ours[("watch", "pods", "200")] >= 1
    assert ours[("get", "pods", "200")] == 0   # D15: no per-pod polling

    again = drain(sandbox, {"name": node})
    assert not again["failed"] and not again["changed"]
    assert again["drain"]["requests_made"] <= 4


def test_bare_pod_refused_without_force_nothing_evicted_D8_D10(sandbox):
    node = node_with(sandbox, ["default/debug-shell"])
    before = sorted(pods_by_node(sandbox)[node])
    result = drain(sandbox, {"name": node})
    assert result["failed"] and result["code"] == "PodEvictionFailure"
    assert "default/debug-shell" in result["msg"] and "use force" in result["msg"]
    assert result["drain"]["nodes"][node]["evicted"] == []
    assert sorted(pods_by_node(sandbox)[node]) == before
    assert sandbox.core_v1().read_node(node).spec.unschedulable  # a failed node stays cordoned
    assert ("EksopsDrainFailed", "eksops-nodegroup") in node_events(sandbox, node)

    forced = drain(sandbox, {"name": node, "delete_options": {"force": True, "wait_timeout": 60}})
    assert not forced["failed"], forced.get("msg")
    assert "default/debug-shell" in forced["drain"]["nodes"][node]["evicted"]
    assert any("not managed by a controller" in w for w in forced["drain"]["nodes"][node]["warnings"])


def test_cordon_and_uncordon_states(sandbox):
    node = node_with(sandbox, [])
    first = run_module(sandbox, "node_drain", {"name": node, "state": "cordon", "run_id": "it-run"})
    assert first["changed"] and sandbox.core_v1().read_node(node).spec.unschedulable
    assert not run_module(sandbox, "node_drain", {"name": node, "state": "cordon"})["changed"]
    other = run_module(sandbox, "node_drain", {"name": node, "state": "uncordon", "run_id": "another-run"})
    assert not other["changed"]
    undone = run_module(sandbox, "node_drain", {"name": node, "state": "uncordon", "run_id": "it-run"})
    assert undone["changed"]
    live = sandbox.core_v1().read_node(node)
    assert not live.spec.unschedulable and EXCLUDE_LB_LABEL not in (live.metadata.labels or {})


def test_instance_ids_are_resolved_to_their_nodes_when_the_drain_starts_U5(sandbox):
    node = node_with(sandbox, ["default/web-"], must_not_have=["default/debug-shell", "payments/billing"])
    instance_id = sandbox.core_v1().read_node(node).spec.provider_id.rsplit("/", 1)[-1]
    # demo's group is self-managed (terraform): its nodes carry no node-group label, so they are found among all
    # nodes by spec.providerID (SPEC K1, K2)
    result = drain(sandbox, {"instance_ids": [instance_id, "i-0000000000000dead"], "cluster_name": "demo",
                             "nodegroup_name": "workers"})
    assert not result["failed"], result.get("msg")
    assert result["drain"]["instances"] == {instance_id: node, "i-0000000000000dead": None}
    assert list(result["drain"]["nodes"]) == [node] and result["drain"]["nodes"][node]["evicted"]
    assert [p for p in pods_by_node(sandbox).get(node, []) if not p.startswith("kube-system/")] == []


def test_nodegroup_name_without_cluster_name_is_refused_naming_both(sandbox):
    """The node group is found by its kind (SPEC K1), which takes the cluster's name."""
    node = node_with(sandbox, [])
    instance_id = sandbox.core_v1().read_node(node).spec.provider_id.rsplit("/", 1)[-1]
    result = drain(sandbox, {"instance_ids": [instance_id], "nodegroup_name": "workers"})
    assert result["failed"], result
    assert "nodegroup_name" in result["msg"] and "cluster_name" in result["msg"]
    assert not sandbox.core_v1().read_node(node).spec.unschedulable


def test_unknown_node_fails_naming_it(sandbox):
    result = run_module(sandbox, "node_drain", {"name": "no-such-node"})
    assert result["failed"] and result["code"] == "ResourceNotFound" and "no-such-node" in result["msg"]


def test_autoscaler_tainted_node_is_refused_C1(sandbox):
    node = node_with(sandbox, [])
    core = sandbox.core_v1()
    taints = [{"key": "ToBeDeletedByClusterAutoscaler", "value": "1", "effect": "NoSchedule"}]
    core.patch_node(node, {"spec": {"taints": taints}})
    result = drain(sandbox, {"name": node})
    assert result["failed"] and result["code"] == "ClusterAutoscalerActive" and node in result["msg"]
    live = core.read_node(node)
    assert not live.spec.unschedulable
    assert [t.key for t in live.spec.taints] == ["ToBeDeletedByClusterAutoscaler"]


def test_issue10_item24_an_invalid_pod_selector_is_refused_before_the_node_is_cordoned(sandbox):
    """`app in ((` was refused by the API server at the first pod LIST, after the node had been cordoned and
    labelled: now it is refused by name before any request."""
    node = next(n.metadata.name for n in sandbox.core_v1().list_node().items
                if not n.spec.unschedulable and not n.spec.taints)  # one the drain would cordon
    before = requests_of(sandbox.report(), "node_drain")
    result = drain(sandbox, {"name": node, "pod_selectors": ["app in (("], "cluster_name": "demo",
                             "nodegroup_name": "workers"})
    assert result["failed"] and (result["code"], result["parameter"]) == ("InvalidParameter", "pod_selectors"), result
    assert "app in ((" in result["msg"] and "is not a Kubernetes label selector" in result["msg"]
    live = sandbox.core_v1().read_node(node)
    assert not live.spec.unschedulable and EXCLUDE_LB_LABEL not in (live.metadata.labels or {})
    assert requests_of(sandbox.report(), "node_drain") == before  # not one Kubernetes request


# --------------------------------------------------------------------------------------------------------
# fault scenarios
# --------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scenario_sandbox(tmp_path_factory):
    started = []

    def start(scenario):
        state_dir = tmp_path_factory.mktemp("sandbox-%s" % os.path.basename(str(scenario)).replace(".yaml", ""))
        started.append(state_dir)
        try:
            handle = start_sandbox(str(scenario), state_dir)
        except RuntimeError as exc:
            pytest.fail(str(exc), pytrace=False)
        started[-1] = (state_dir, handle)
        return handle

    yield start
    for entry in started:
        if isinstance(entry, tuple):
            entry[1].close()
            stop_sandbox(entry[0])
        else:
            stop_sandbox(entry)


def test_pdb_blocked_fails_naming_pod_and_pdb_then_force_deletes_D14_Z3(scenario_sandbox):
    sandbox = scenario_sandbox("fault_pdb_blocked")
    node = node_with(sandbox, ["default/web-"])
    web_pods = [p for p in pods_by_node(sandbox)[node] if p.startswith("default/web-")]
    started = time.monotonic()
    result = drain(sandbox, {"name": node, "delete_options": {"wait_timeout": 3}})
    assert 3 <= time.monotonic() - started < 30
    assert result["failed"] and result["code"] == "PodEvictionFailure"
    failed = result["drain"]["nodes"][node]["failed"]
    assert sorted(f["pod"] for f in failed) == sorted(web_pods)
    assert all(f["pdb"] for f in failed)
    assert failed[0]["pdb"] in result["msg"] and web_pods[0] in result["msg"]
    assert sandbox.core_v1().read_node(node).spec.unschedulable
    assert sorted(p for p in pods_by_node(sandbox)[node] if p.startswith("default/web-")) == sorted(web_pods)
    assert requests_of(sandbox.report(), "node_drain")[("delete", "pods", "200")] == 0

    forced = drain(sandbox, {"name": node, "delete_options": {"wait_timeout": 3, "force": True}})
    assert not forced["failed"], forced.get("msg")
    assert sorted(forced["drain"]["nodes"][node]["deleted"]) == sorted(web_pods)
    assert not [p for p in pods_by_node(sandbox).get(node, []) if p.startswith("default/web-")]


def test_two_pdbs_fail_the_pod_at_once_D13_Z3(scenario_sandbox):
    sandbox = scenario_sandbox("fault_two_pdbs")
    node = node_with(sandbox, ["default/web-"])
    web_pods = [p for p in pods_by_node(sandbox)[node] if p.startswith("default/web-")]
    started = time.monotonic()
    result = drain(sandbox, {"name": node, "delete_options": {"wait_timeout": 120}})
    assert time.monotonic() - started < 60   # at once, not after wait_timeout
    assert result["failed"] and result["code"] == "PodEvictionFailure"
    failed = result["drain"]["nodes"][node]["failed"]
    assert sorted(f["pod"] for f in failed) == sorted(web_pods)
    assert all("more than one PodDisruptionBudget" in f["reason"] and "," in f["pdb"] for f in failed)
    counts = requests_of(sandbox.report(), "node_drain")
    assert counts[("create", "pods/eviction", "500")] == len(web_pods)


def test_dropped_and_expired_watches_are_resumed_P1(scenario_sandbox):
    sandbox = scenario_sandbox("fault_watch")
    node = node_with(sandbox, ["default/web-"])
    result = drain(sandbox, {"name": node, "post_drain_wait": 3})
    assert not result["failed"], result.get("msg")
    assert [p for p in pods_by_node(sandbox).get(node, []) if p.startswith("default/web-")] == []
    report = sandbox.report()
    assert report["pdb_violations"] == []
    ours = requests_of(report, "node_drain")
    assert ours[("get", "pods", "200")] == 0


def test_throttling_and_server_errors_are_retried_P3(scenario_sandbox):
    sandbox = scenario_sandbox("fault_k8s_errors")
    node = node_with(sandbox, ["default/web-"])
    result = drain(sandbox, {"name": node})
    assert not result["failed"], result.get("msg")
    assert [p for p in pods_by_node(sandbox).get(node, []) if p.startswith("default/web-")] == []
    ours = requests_of(sandbox.report(), "node_drain")
    assert ours[("patch", "nodes", "200")] == 1
    assert sum(count for (verb, resource, status), count in ours.items()
               if status in ("429", "500", "503")) >= 1
    assert sandbox.report()["pdb_violations"] == []


# --------------------------------------------------------------------------------------------------------
# Pods that land on the node while it is drained (U5, D14, Z3)
# --------------------------------------------------------------------------------------------------------

LATE_PODS_SCENARIO = pinned_pools("late_pods", 1, [
    # Z3: tolerates the cordon, and its only node is the one drained: every evicted pod comes back there
    {"kind": "Deployment", "name": "everywhere", "replicas": 2, "tolerate_all": True, "nodegroup": "solo"},
    # takes 250 s x 0.02 = 5 s to stop: the drain is still waiting when a pod is bound to the node
    {"kind": "Deployment", "name": "stubborn", "replicas": 1, "nodegroup": "workers",
     "termination_grace_period_seconds": 250, "ignore_sigterm": True},
    {"kind": "DaemonSet", "name": "node-agent", "namespace": "kube-system"},
])


@pytest.fixture(scope="module")
def late_pods_sandbox(scenario_sandbox, tmp_path_factory):
    scenario = tmp_path_factory.mktemp("late-pods") / "late_pods.yaml"
    scenario.write_text(yaml.safe_dump(LATE_PODS_SCENARIO))
    return scenario_sandbox(scenario)


def nodegroup_node(sandbox, nodegroup):
    [node] = nodegroup_nodes(sandbox, nodegroup)
    return node.metadata.name


def test_tolerate_all_pods_that_keep_coming_back_end_in_pod_eviction_failure_Z3_D14(late_pods_sandbox):
    sandbox = late_pods_sandbox
    node = nodegroup_node(sandbox, "solo")
    originals = sorted(p for p in pods_by_node(sandbox)[node] if p.startswith("default/everywhere-"))
    assert len(originals) == 2
    started = time.monotonic()
    result = drain(sandbox, {"name": node, "post_drain_wait": 1, "delete_options": {"wait_timeout": 6}})
    assert time.monotonic() - started < 60
    assert result["failed"] and result["code"] == "PodEvictionFailure", result
    node_result = result["drain"]["nodes"][node]
    # the originals were evicted; the replacements that landed on the cordoned node were not evicted again (issue
    # 10 item 7, test_eviction_storm.py): they fail the node at once, named, with the Deployment and why
    assert set(originals) == set(node_result["evicted"])
    assert node_result["failed"] and all(f["pod"].startswith("default/everywhere-") for f in node_result["failed"])
    assert node_result["failed"][0]["pod"] in result["msg"]
    assert "Deployment default/everywhere: its pods tolerate every taint" in result["msg"]
    assert sandbox.core_v1().read_node(node).spec.unschedulable
    report = sandbox.report()
    assert report["pods_lost"] == []
    ours = requests_of(report, "node_drain")
    # P1: the newcomers come from the watch; no per-pod GETs, and LISTs only at the start and per post-drain wait
    assert ours[("get", "pods", "200")] == 0
    assert ours[("list", "pods", "200")] <= 3


def test_a_pod_bound_to_the_node_mid_drain_fails_the_drain_naming_it_U5_D8(late_pods_sandbox):
    sandbox = late_pods_sandbox
    core = sandbox.core_v1()
    node = nodegroup_node(sandbox, "workers")
    outcome = {}
    drainer = threading.Thread(target=lambda: outcome.update(drain(sandbox, {"name": node})))
    drainer.start()
    try:
        deadline = time.monotonic() + 60
        while not any(p.metadata.deletion_timestamp for p in core.list_namespaced_pod(
                "default", label_selector="app=stubborn", field_selector="spec.nodeName=%s" % node).items):
            assert time.monotonic() < deadline and drainer.is_alive(), "the stubborn pod was never evicted"
            time.sleep(0.2)
        # bound by spec.nodeName: no scheduler, the cordon does not keep it off
        core.create_namespaced_pod("default", V1Pod(
            metadata=V1ObjectMeta(name="late-bound"),
            spec=V1PodSpec(node_name=node, containers=[V1Container(name="shell", image="busybox")])))
    finally:
        drainer.join(120)
    assert outcome["failed"] and outcome["code"] == "PodEvictionFailure", outcome
    assert "default/late-bound" in outcome["msg"] and "arrived during the drain" in outcome["msg"]
    failed = dict((f["pod"], f["reason"]) for f in outcome["drain"]["nodes"][node]["failed"])
    assert failed.pop("default/late-bound") == \
        "pod not managed by a controller (use force); it arrived during the drain"
    # the drain stops there (D10): the evicted pod still stopping is reported as such, nothing else
    assert all(p.startswith("default/stubborn-") and r == "still terminating when a pod that arrived was refused"
               for p, r in failed.items())
    assert "default/late-bound" in pods_by_node(sandbox)[node]
    assert core.read_node(node).spec.unschedulable


@pytest.mark.parametrize("named_by", ["names", "instance_ids"])
def test_issue10_item24_nodegroup_name_is_a_scope_another_groups_node_is_refused(late_pods_sandbox, named_by):
    """node_drain with nodegroup_name=workers cordoned a node of group solo: now refused before any change, naming
    the node, its instance and the Auto Scaling group it is in."""
    sandbox = late_pods_sandbox
    core = sandbox.core_v1()
    node, own = nodegroup_node(sandbox, "solo"), nodegroup_node(sandbox, "workers")
    instance_id = core.read_node(node).spec.provider_id.rsplit("/", 1)[-1]
    own_instance = core.read_node(own).spec.provider_id.rsplit("/", 1)[-1]
    cordoned = dict((name, core.read_node(name).spec.unschedulable) for name in (node, own))
    before = requests_of(sandbox.report(), "node_drain")
    args = {"names": [own, node]} if named_by == "names" else {"instance_ids": [own_instance, instance_id]}
    result = drain(sandbox, dict(args, state="cordon", cluster_name="late_pods", nodegroup_name="workers"))
    assert result["failed"] and (result["code"], result["parameter"]) == ("InvalidParameter", named_by), result
    solo_asg = asg_name_of(sandbox, "solo")
    assert "node %s (instance %s) is in Auto Scaling group %s" % (node, instance_id, solo_asg) in result["msg"]
    assert "outside node group workers of cluster late_pods" in result["msg"] and own not in result["msg"]
    assert result["outside"] == [dict(node=node, instance_id=instance_id, asg_name=solo_asg, nodegroup=None)]
    assert dict((name, core.read_node(name).spec.unschedulable) for name in (node, own)) == cordoned
    made = requests_of(sandbox.report(), "node_drain") - before
    # read only: the API version (first contact), then the two nodes read or one LIST of the nodes
    assert made == Counter({("get", "version", "200"): 1, ("get", "nodes", "200"): 2} if named_by == "names"
                           else {("get", "version", "200"): 1, ("list", "nodes", "200"): 1}), made


# --------------------------------------------------------------------------------------------------------
# 110 pods, one disruption at a time: ours vs kubectl drain
# --------------------------------------------------------------------------------------------------------

BIG_NODE_SCENARIO = {
    "name": "big_node",
    "availability_zones": ["us-west-2a"],
    "timings": {"pod_start_seconds": 0.05, "grace_period_scale": 0.01, "node_boot_seconds": 0.5,
                "controller_interval_seconds": 0.05, "sample_interval_seconds": 0.05},
    "amis": [{"name": "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", "kubernetes_version": "1.29"}],
    "nodegroups": [
        {"name": "old", "ami": "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101",
         "min_size": 1, "max_size": 1, "desired_capacity": 1, "max_pods": 110},
        {"name": "spare", "ami": "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101",
         "min_size": 0, "max_size": 1, "desired_capacity": 0, "max_pods": 250},
    ],
    "workloads": [{"kind": "Deployment", "name": "bulk", "replicas": 110, "termination_grace_period_seconds": 1,
                   "pdb": {"max_unavailable": 1}}],
}


def _big_node_ready(sandbox):
    """All 110 pods Ready on the old node, then a spare node to receive them."""
    core = sandbox.core_v1()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = core.list_namespaced_pod("default", label_selector="app=bulk").items
        if len(pods) == 110 and all(p.status.phase == "Running" for p in pods):
            break
        time.sleep(0.5)
    else:
        raise AssertionError("110 bulk pods never became Running")
    nodes = {p.spec.node_name for p in pods}
    assert len(nodes) == 1
    sandbox.client("autoscaling").set_desired_capacity(AutoScalingGroupName=asg_name_of(sandbox, "spare"),
                                                       DesiredCapacity=1)
    while time.monotonic() < deadline:
        ready = [n for n in nodegroup_nodes(sandbox, "spare")
                 if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])]
        if ready:
            return nodes.pop()
        time.sleep(0.5)
    raise AssertionError("the spare node never became Ready")


def _total(counts):
    return sum(counts.values())


def test_110_pods_one_disruption_at_a_time_fewer_requests_than_kubectl_P1_P4(scenario_sandbox, tmp_path):
    scenario = tmp_path / "big_node.yaml"
    scenario.write_text(yaml.safe_dump(BIG_NODE_SCENARIO))

    sandbox = scenario_sandbox(scenario)
    node = _big_node_ready(sandbox)
    started = time.monotonic()
    result = drain(sandbox, {"name": node, "post_drain_wait": 0, "delete_options": {"wait_timeout": 400}},
                   timeout=500)
    elapsed = time.monotonic() - started
    assert not result["failed"], result.get("msg")
    assert len(result["drain"]["nodes"][node]["evicted"]) == 110
    # the budget allows one disruption at a time, so the gate held pods back (and the server refused a few)
    assert 0 < result["drain"]["nodes"][node]["pdb_wait_seconds"] <= elapsed
    report = sandbox.report()
    assert report["pdb_violations"] == []
    ours = requests_of(report, "node_drain")
    print("\neksops node_drain: %d requests for 110 pods (module counted %d), %.1f s waiting on the PDB of %.1f s: %s"
          % (_total(ours), result["drain"]["requests_made"], result["drain"]["nodes"][node]["pdb_wait_seconds"], elapsed, dict(ours)))
    # urllib3 may resend a request whose pooled keep-alive connection turned out closed: the server can see
    # a request or two more than the calls the module made.
    assert result["drain"]["requests_made"] <= _total(ours) <= result["drain"]["requests_made"] + 2
    # one eviction request per pod: an accepted eviction is never sent again (it would come back 404)
    assert ours[("create", "pods/eviction", "201")] + ours[("create", "pods/eviction", "404")] == 110

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not on PATH: no comparison")
    twin = scenario_sandbox(scenario)
    twin_node = _big_node_ready(twin)
    env = ansible_env(twin)
    completed = subprocess.run([kubectl, "drain", twin_node, "--ignore-daemonsets", "--delete-emptydir-data",
                                "--timeout=400s"], env=env, capture_output=True, text=True, timeout=500, check=False)
    assert completed.returncode == 0, completed.stderr
    twin_report = twin.report()
    assert twin_report["pdb_violations"] == []
    theirs = requests_of(twin_report, "kubectl")
    print("kubectl drain: %d requests for 110 pods: %s" % (_total(theirs), dict(theirs)))
    assert _total(ours) < _total(theirs)
