# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (boto3's Auto Scaling client and the kubernetes python client against a running sandbox, and POST
$SANDBOX_URL/update-cni, which `eks-sandbox update-cni` sends): a never_ready AMI's nodes register NotReady with the
kubelet's "cni plugin not initialized" until the cluster's VPC CNI is updated to a release that initializes on them;
then the node already there turns Ready (its not-ready taint lifted) and the next one boots Ready, on the same AMI.
Issue 28 item 2: the fleet's canary halt is fixed in the cluster, so a rerun with the same targets can resume.

Issue 28, sandbox fidelity: the fields are a real cluster's. The kubelet's Ready condition False, KubeletNotReady,
with containerd's NetworkPluginNotReady / go-cni's "cni plugin not initialized" (pkg/kubelet/nodestatus/setters.go,
pkg/kubelet/kubelet.go updateRuntimeUp, containerd internal/cri/server/status.go); node.kubernetes.io/not-ready
NoSchedule (TaintNodesAtCreation admission) and NoExecute with timeAdded (node lifecycle controller
NotReadyTaintTemplate); after the update only the Ready condition transitions (KubeletReady, "kubelet is posting
ready status") and both taints go."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest
from harness import client as aws_client
from harness import one_group, running_with_kube, wait_for


@pytest.fixture(scope="module")
def sandbox():
    with running_with_kube(one_group("update-cni", "broken-1.30", 0)) as started:
        yield started


NOT_INITIALIZED = ("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                   "message:Network plugin returns error: cni plugin not initialized")


def condition(node, type_: str):
    return next(c for c in node.status.conditions if c.type == type_)


def ready(node) -> str:
    return condition(node, "Ready").status


def not_ready_taints(node) -> list[tuple[str, bool]]:
    """(effect, has timeAdded) of the node's node.kubernetes.io/not-ready taints."""
    return sorted((t.effect, t.time_added is not None) for t in node.spec.taints or []
                  if t.key == "node.kubernetes.io/not-ready")


def post(sandbox, body: dict) -> dict:
    request = urllib.request.Request(sandbox.control_url + "/update-cni", data=json.dumps(body).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def scale(sandbox, desired: int) -> str:
    autoscaling = aws_client(sandbox, "autoscaling")
    name = autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"][0]["AutoScalingGroupName"]
    autoscaling.set_desired_capacity(AutoScalingGroupName=name, DesiredCapacity=desired)
    return name


def first_node(sandbox):
    scale(sandbox, 1)
    return wait_for(lambda: sandbox.core.list_node().items)[0]


def test_sandbox_fidelity_a_never_ready_node_reports_the_kubelets_condition_and_both_not_ready_taints(sandbox):
    """Runs before the update (the module's tests run in file order on one sandbox)."""
    node = first_node(sandbox)
    ready_condition = condition(node, "Ready")
    assert (ready_condition.status, ready_condition.reason, ready_condition.message) == \
        ("False", "KubeletNotReady", NOT_INITIALIZED)
    assert not_ready_taints(node) == [("NoExecute", True), ("NoSchedule", False)]
    assert [c.type for c in node.status.conditions] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]


def test_a_never_ready_amis_nodes_get_ready_once_the_clusters_cni_is_updated(sandbox):
    first = first_node(sandbox)
    assert ready(first) == "False"
    assert condition(first, "Ready").message == NOT_INITIALIZED
    assert not_ready_taints(first) == [("NoExecute", True), ("NoSchedule", False)]
    memory = condition(first, "MemoryPressure").last_transition_time
    # rfc3339 has whole seconds: update in a later second than the node's registration, so a transition shows.
    wait_for(lambda: int(time.time()) > memory.timestamp())

    done = post(sandbox, {"ami": "broken-1.30"})["done"]
    assert any(first.metadata.name in line and "10-aws.conflist" in line for line in done), done
    # The kubelet reports Ready at its next pass, as it does once aws-node wrote the CNI configuration.
    node = wait_for(lambda: ready(n := sandbox.core.read_node(first.metadata.name)) == "True" and n)
    ready_condition = condition(node, "Ready")
    assert (ready_condition.reason, ready_condition.message) == ("KubeletReady", "kubelet is posting ready status")
    assert not_ready_taints(node) == []
    # Only the Ready condition transitioned; the kubelet keeps the others' lastTransitionTime.
    assert condition(node, "MemoryPressure").last_transition_time == memory
    assert ready_condition.last_transition_time > memory

    scale(sandbox, 2)
    nodes = wait_for(lambda: len(items := sandbox.core.list_node().items) == 2 and items)
    assert [ready(n) for n in nodes] == ["True", "True"]
    assert [not_ready_taints(n) for n in nodes] == [[], []]
    images = {i["ImageId"] for r in aws_client(sandbox, "ec2").describe_instances()["Reservations"] for i in r["Instances"]}
    assert images == {"ami-0000000000000dead"}  # the same AMI: the cluster was fixed, not the image


def test_update_cni_refuses_an_ami_whose_nodes_get_ready(sandbox):
    with pytest.raises(urllib.error.HTTPError) as refused:
        post(sandbox, {"ami": "eks-node-1.30"})
    assert refused.value.code == 400 and "eks-node-1.30" in refused.value.read().decode()
