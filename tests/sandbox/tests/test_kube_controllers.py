# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller loop: kubelet/node lifecycle from cloud instances, scheduler, ReplicaSet/Deployment,
DaemonSet, graceful pod termination, and tick() cost at the `large` size."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from eks_sandbox.kube.resources import NODES, PODS
from eks_sandbox.kube.testing import KubeHarness, scenario


def running(core, **kw):
    return [p for p in core.list_pod_for_all_namespaces(**kw).items
            if p.status.phase == "Running" and p.metadata.deletion_timestamp is None]


def test_instance_becomes_a_labelled_ready_node(tmp_path):
    sc = scenario(nodegroups=[{"name": "workers", "ami": "eks-node-1.30", "min_size": 0, "desired_capacity": 0,
                               "max_pods": 17, "labels": {"team": "a"},
                               "taints": [{"key": "dedicated", "value": "a", "effect": "NoSchedule"}]}])
    with KubeHarness(str(tmp_path), sc) as h:
        instance = h.cloud.add(az="us-west-2b", lt_version=7)
        core = client.CoreV1Api(h.api_client())
        node = h.wait_for(lambda: core.list_node().items, what="node")[0]
        assert node.metadata.name == instance["private_dns_name"]
        assert node.spec.provider_id == f"aws:///us-west-2b/{instance['instance_id']}"
        # The well-known labels plus what the user data says: a plain self-managed group (terraform-aws-eks)
        # writes no node-group label, so the node has none (no eks.amazonaws.com/* on self-managed nodes).
        assert node.metadata.labels == {
            "kubernetes.io/hostname": instance["private_dns_name"], "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": "us-west-2b",
            "topology.kubernetes.io/region": "us-west-2", "node.kubernetes.io/instance-type": "m5.large",
            "team": "a"}
        assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [("dedicated", "a", "NoSchedule")]
        assert node.status.allocatable["pods"] == "17"
        ready = [c for c in node.status.conditions if c.type == "Ready"][0]
        assert ready.status == "True"
        # The node group, AMI and launch template version come from the instance (matched by providerID).
        view = h.sim.snapshot(h.cloud.instances())["nodes"][0]
        assert (view["nodegroup"], view["az"], view["instance_id"], view["ami"], view["lt_version"], view["ready"]) \
            == ("workers", "us-west-2b", instance["instance_id"], "ami-00000000000000001", 7, True)
        assert h.sim.snapshot()["nodes"][0]["nodegroup"] is None, "never guessed from labels"


def test_the_node_is_what_the_instances_user_data_says_not_the_scenario(tmp_path):
    al2 = scenario(amis=[{"name": "eks-node-1.30", "id": "ami-00000000000000001", "kubernetes_version": "1.30",
                          "family": "amazon-linux-2"}])
    with KubeHarness(str(tmp_path), al2) as h:
        user_data = ("#!/bin/bash\n/etc/eks/bootstrap.sh kube-test --use-max-pods false --kubelet-extra-args "
                     "'--node-labels=role=db,alpha.eksctl.io/nodegroup-name=db --register-with-taints=db=true:NoExecute"
                     " --max-pods=29'\n")
        h.cloud.add(user_data=user_data)
        node = h.wait_for(lambda: client.CoreV1Api(h.api_client()).list_node().items, what="node")[0]
        assert {k: v for k, v in node.metadata.labels.items() if "kubernetes.io/" not in k} == {
            "role": "db", "alpha.eksctl.io/nodegroup-name": "db"}
        assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [("db", "true", "NoExecute")]
        assert node.status.allocatable["pods"] == "29" and node.status.node_info.os_image == "Amazon Linux 2"


@pytest.mark.parametrize("user_data, reason", [
    ("#!/bin/bash\n/etc/eks/bootstrap.sh other-cluster\n", "for cluster other-cluster, not kube-test"),
    # Issue 29 item 4: AL2's bootstrap.sh on an AL2023 AMI (the scenario's): nodeadm reads only a NodeConfig
    ("#!/bin/bash\n/etc/eks/bootstrap.sh kube-test\n", "is for al2's bootstrap, but its AMI runs al2023's"),
    ("", "runs no EKS bootstrap"),
    ("#!/bin/bash\necho hello\n", "runs no EKS bootstrap"),
])
def test_an_instance_not_bootstrapped_for_this_cluster_never_joins(tmp_path, user_data, reason):
    sc = scenario(timings={"node_boot_seconds": 0.05})
    with KubeHarness(str(tmp_path), sc) as h:
        stray = h.cloud.add(user_data=user_data)
        h.cloud.add()
        h.wait_for(lambda: h.sim.store.count(NODES) == 1, what="the other instance's node")
        h.wait_for(lambda: any(e["kind"] == "node_never_joined" for e in h.recorder.events()), what="event")
        [event] = [e for e in h.recorder.events() if e["kind"] == "node_never_joined"]
        assert event["instance_id"] == stray["instance_id"] and reason in event["reason"]
        time.sleep(0.1)
        assert h.sim.store.count(NODES) == 1
        assert not any(n["spec"]["providerID"].endswith("/" + stray["instance_id"]) for n in h.sim.store.items(NODES))


def test_node_appears_only_after_boot_time(tmp_path):
    sc = scenario(timings={"node_boot_seconds": 0.6})
    with KubeHarness(str(tmp_path), sc) as h:
        h.cloud.add()
        time.sleep(0.3)
        assert h.sim.store.count(NODES) == 0
        h.wait_for(lambda: h.sim.store.count(NODES) == 1, timeout=3)


def test_never_ready_ami_gives_a_not_ready_node(tmp_path):
    with KubeHarness(str(tmp_path)) as h:
        h.cloud.add(image_id="ami-0000000000000dead")
        core = client.CoreV1Api(h.api_client())
        node = h.wait_for(lambda: core.list_node().items)[0]
        time.sleep(0.2)
        ready = [c for c in core.list_node().items[0].status.conditions if c.type == "Ready"][0]
        assert ready.status == "False" and ready.reason == "KubeletNotReady" and "cni" in ready.message
        assert h.sim.snapshot(h.cloud.instances())["nodes"][0]["ami"] == "ami-0000000000000dead"
        assert node.metadata.name == h.cloud.instances()[0]["private_dns_name"]


def test_terminated_instance_node_goes_not_ready_then_away_and_pods_are_lost(tmp_path):
    sc = scenario(timings={"node_removal_seconds": 0.5},
                  workloads=[{"kind": "Deployment", "name": "web", "replicas": 2},
                             {"kind": "DaemonSet", "name": "agent"}])
    with KubeHarness(str(tmp_path), sc, nodes=1) as h:
        core = client.CoreV1Api(h.api_client())
        h.wait_for(lambda: len(running(core)) == 3, what="3 pods running")
        instance = h.cloud.instances()[0]
        h.cloud.set_state(instance["instance_id"], "shutting-down")

        def ready_status(node):
            return [c for c in node.status.conditions if c.type == "Ready"][0].status

        node = h.wait_for(lambda: [n for n in core.list_node().items if ready_status(n) == "Unknown"],
                          what="node NotReady")[0]
        assert any(t.key == "node.kubernetes.io/unreachable" for t in node.spec.taints)
        assert h.sim.snapshot()["workloads"]["default/web"]["ready"] == 0
        h.wait_for(lambda: not core.list_node().items, what="node removed")
        assert not core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node.metadata.name}").items
        lost = h.recorder.pods_lost()
        assert sorted(entry["pod"].split("-")[0] for entry in lost) == ["default/web", "default/web"]
        assert all(entry["node"] == node.metadata.name for entry in lost)


def test_scheduler_honours_cordon_taints_tolerations_selectors_and_spreads(tmp_path):
    sc = scenario(workloads=[{"kind": "Deployment", "name": "spread", "replicas": 4},
                             {"kind": "Deployment", "name": "pinned", "replicas": 1, "node_selector": {"pin": "yes"}}])
    with KubeHarness(str(tmp_path), sc, nodes=2) as h:
        core = client.CoreV1Api(h.api_client())
        h.wait_for(lambda: len(running(core, label_selector="app=spread")) == 4)
        per_node = {}
        for pod in running(core, label_selector="app=spread"):
            per_node[pod.spec.node_name] = per_node.get(pod.spec.node_name, 0) + 1
        assert sorted(per_node.values()) == [2, 2]
        pinned = core.list_namespaced_pod("default", label_selector="app=pinned").items[0]
        assert pinned.spec.node_name is None
        assert [c for c in pinned.status.conditions if c.type == "PodScheduled"][0].reason == "Unschedulable"
        nodes = [n.metadata.name for n in core.list_node().items]
        core.patch_node(nodes[0], {"spec": {"unschedulable": True}})
        core.patch_node(nodes[0], {"metadata": {"labels": {"pin": "yes"}}})
        time.sleep(0.3)
        assert core.read_namespaced_pod(pinned.metadata.name, "default").spec.node_name is None  # cordoned
        cordoned = core.read_node(nodes[0])
        assert any(t.key == "node.kubernetes.io/unschedulable" for t in cordoned.spec.taints)
        tolerate_all = {"metadata": {"name": "anywhere", "labels": {}},
                        "spec": {"containers": [{"name": "c", "image": "x"}], "tolerations": [{"operator": "Exists"}],
                                 "nodeSelector": {"pin": "yes"}}}
        core.create_namespaced_pod("default", tolerate_all)
        h.wait_for(lambda: core.read_namespaced_pod("anywhere", "default").spec.node_name == nodes[0],
                   what="tolerate-all pod on the cordoned node")
        core.patch_node(nodes[0], {"spec": {"unschedulable": False}})
        h.wait_for(lambda: core.read_namespaced_pod(pinned.metadata.name, "default").spec.node_name == nodes[0])
        h.wait_for(lambda: not core.read_node(nodes[0]).spec.taints)


def test_max_pods_caps_a_node(tmp_path):
    sc = scenario(nodegroups=[{"name": "workers", "ami": "eks-node-1.30", "min_size": 0, "desired_capacity": 0,
                               "max_pods": 3}],
                  workloads=[{"kind": "Deployment", "name": "many", "replicas": 5}])
    with KubeHarness(str(tmp_path), sc, nodes=1) as h:
        core = client.CoreV1Api(h.api_client())
        h.wait_for(lambda: len(running(core)) == 3)
        time.sleep(0.2)
        assert len([p for p in core.list_namespaced_pod("default").items if not p.spec.node_name]) == 2


def test_replicaset_replaces_deleted_pods_and_daemonset_covers_new_nodes(tmp_path):
    sc = scenario(workloads=[{"kind": "Deployment", "name": "web", "replicas": 3},
                             {"kind": "DaemonSet", "name": "agent"}])
    with KubeHarness(str(tmp_path), sc, nodes=1) as h:
        core = client.CoreV1Api(h.api_client())
        apps = client.AppsV1Api(h.api_client())
        h.wait_for(lambda: len(running(core, label_selector="app=web")) == 3)
        victim = running(core, label_selector="app=web")[0]
        core.delete_namespaced_pod(victim.metadata.name, "default", grace_period_seconds=0)
        h.wait_for(lambda: len(running(core, label_selector="app=web")) == 3
                   and victim.metadata.name not in {p.metadata.name for p in running(core)})
        # The controllers write the status on their next pass after the pods' (as kube-controller-manager does).
        h.wait_for(lambda: apps.read_namespaced_deployment("web", "default").status.ready_replicas == 3
                   and apps.list_namespaced_replica_set("default").items[0].status.ready_replicas == 3)
        assert apps.read_namespaced_deployment("web", "default").status.observed_generation == 1
        rs = apps.list_namespaced_replica_set("default").items[0]
        assert rs.metadata.owner_references[0].kind == "Deployment"
        pod = running(core, label_selector="app=web")[0]
        assert pod.metadata.owner_references[0].kind == "ReplicaSet" and pod.metadata.owner_references[0].controller
        assert {c.type for c in pod.status.conditions if c.status == "True"} >= {"Ready", "ContainersReady"}
        h.cloud.add()
        h.wait_for(lambda: len(running(core, label_selector="app=agent")) == 2)
        h.wait_for(lambda: apps.read_namespaced_daemon_set("agent", "default").status.number_ready == 2)
        assert apps.read_namespaced_daemon_set("agent", "default").status.desired_number_scheduled == 2
        agent = running(core, label_selector="app=agent")[0]
        assert any(t.key == "node.kubernetes.io/unschedulable" for t in agent.spec.tolerations)
        apps.delete_namespaced_deployment("web", "default")
        h.wait_for(lambda: not core.list_namespaced_pod("default", label_selector="app=web").items,
                   what="garbage collection of the deployment's pods")


@pytest.mark.parametrize("ignore_sigterm,lower,upper", [(True, 0.9, 2.0), (False, 0.0, 0.6)])
def test_graceful_termination_takes_scaled_grace_period(tmp_path, ignore_sigterm, lower, upper):
    sc = scenario(timings={"grace_period_scale": 0.02},
                  workloads=[{"kind": "Pod", "name": "slow", "termination_grace_period_seconds": 50,
                              "ignore_sigterm": ignore_sigterm}])
    with KubeHarness(str(tmp_path), sc, nodes=1) as h:
        core = client.CoreV1Api(h.api_client())
        h.wait_for(lambda: running(core))
        started = time.monotonic()
        core.delete_namespaced_pod("slow", "default")
        h.wait_for(lambda: not core.list_namespaced_pod("default").items, timeout=5)
        assert lower <= time.monotonic() - started <= upper


def test_snapshot_reports_workloads(tmp_path):
    sc = scenario(workloads=[{"kind": "Deployment", "name": "web", "replicas": 2, "pdb": {"max_unavailable": 1}},
                             {"kind": "Pod", "name": "solo"}])
    with KubeHarness(str(tmp_path), sc, nodes=2) as h:
        h.wait_for(lambda: h.sim.snapshot()["workloads"]["default/web"]["ready"] == 2
                   and h.sim.snapshot()["workloads"]["default/solo"]["ready"] == 1)
        workloads = h.sim.snapshot()["workloads"]
        assert workloads["default/web"] == {"kind": "Deployment", "replicas": 2, "ready": 2,
                                            "pdb_min_available": 1}
        assert workloads["default/solo"]["pdb_min_available"] is None


def test_tick_is_cheap_at_large_size(tmp_path):
    """`large` = 100 nodes x 30 pods: a steady-state tick stays well under 50 ms."""
    workloads = [{"kind": "Deployment", "name": f"app{i}", "replicas": 100, "pdb": {"min_available": 90}}
                 for i in range(29)] + [{"kind": "DaemonSet", "name": "agent"}]
    sc = scenario(workloads=workloads)
    with KubeHarness(str(tmp_path), sc, nodes=100, tick=False) as h:
        for dummy in range(10):
            h.sim.tick()
            time.sleep(0.1)
        assert h.sim.store.count(PODS) == 3000
        with h.sim.store.lock:
            assert all(p["status"]["phase"] == "Running" for p in h.sim.store.items(PODS))
        durations = []
        for dummy in range(10):
            started = time.perf_counter()
            h.sim.tick()
            durations.append(time.perf_counter() - started)
        durations.sort()
        assert durations[5] < 0.05, durations
