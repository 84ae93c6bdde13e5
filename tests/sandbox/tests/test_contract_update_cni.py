# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (boto3's Auto Scaling client and the kubernetes python client against a running sandbox, and POST
$SANDBOX_URL/update-cni, which `eks-sandbox update-cni` sends): a never_ready AMI's nodes register NotReady with the
kubelet's "cni plugin not initialized" until the cluster's VPC CNI is updated to a release that initializes on them;
then the node already there turns Ready (its not-ready taint lifted) and the next one boots Ready, on the same AMI.
Issue 28 item 2: the fleet's canary halt is fixed in the cluster, so a rerun with the same targets can resume."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from harness import client as aws_client
from harness import one_group, running_with_kube, wait_for


@pytest.fixture(scope="module")
def sandbox():
    with running_with_kube(one_group("update-cni", "broken-1.30", 0)) as started:
        yield started


def ready(node) -> str:
    return next(c.status for c in node.status.conditions if c.type == "Ready")


def post(sandbox, body: dict) -> dict:
    request = urllib.request.Request(sandbox.control_url + "/update-cni", data=json.dumps(body).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_a_never_ready_amis_nodes_get_ready_once_the_clusters_cni_is_updated(sandbox):
    autoscaling = aws_client(sandbox, "autoscaling")
    name = autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"][0]["AutoScalingGroupName"]
    autoscaling.set_desired_capacity(AutoScalingGroupName=name, DesiredCapacity=1)
    [first] = wait_for(lambda: sandbox.core.list_node().items)
    assert ready(first) == "False"
    assert "cni plugin not initialized" in next(c.message for c in first.status.conditions if c.type == "Ready")
    assert "node.kubernetes.io/not-ready" in [t.key for t in first.spec.taints or []]

    done = post(sandbox, {"ami": "broken-1.30"})["done"]
    assert any(first.metadata.name in line for line in done), done
    node = sandbox.core.read_node(first.metadata.name)
    assert ready(node) == "True" and "node.kubernetes.io/not-ready" not in [t.key for t in node.spec.taints or []]

    autoscaling.set_desired_capacity(AutoScalingGroupName=name, DesiredCapacity=2)
    nodes = wait_for(lambda: len(items := sandbox.core.list_node().items) == 2 and items)
    assert [ready(n) for n in nodes] == ["True", "True"]
    images = {i["ImageId"] for r in aws_client(sandbox, "ec2").describe_instances()["Reservations"] for i in r["Instances"]}
    assert images == {"ami-0000000000000dead"}  # the same AMI: the cluster was fixed, not the image


def test_update_cni_refuses_an_ami_whose_nodes_get_ready(sandbox):
    with pytest.raises(urllib.error.HTTPError) as refused:
        post(sandbox, {"ami": "eks-node-1.30"})
    assert refused.value.code == 400 and "eks-node-1.30" in refused.value.read().decode()
