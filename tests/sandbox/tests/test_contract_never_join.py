# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (kubectl, boto3 and GET $SANDBOX_URL/report against a running sandbox): the never_join fault. Instances
launched in the faulted availability zone boot and run (EC2 and Auto Scaling say so) but never register a node;
instances launched elsewhere do; the report's events name each instance that never joined (node_never_joined).
That is what a real node whose kubelet cannot reach the cluster looks like from the outside."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request

import pytest

from eks_sandbox.scenario.loader import load_scenario
from harness import client, running

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH (expected at /usr/bin/kubectl)")

FAULTED = "us-west-2b"
SCENARIO = {
    "name": "never-join-contract", "cluster": {"kubernetes_version": "1.30", "tls": True},
    "timings": {"instance_pending_seconds": 0.02, "instance_shutdown_seconds": 0.02, "node_boot_seconds": 0.05,
                "node_removal_seconds": 0.05, "pod_start_seconds": 0.05, "controller_interval_seconds": 0.02,
                "sample_interval_seconds": 0.05},
    "amis": [{"name": "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", "kubernetes_version": "1.29"}],
    "nodegroups": [{"name": "workers", "ami": "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101",
                    "min_size": 0, "max_size": 9, "desired_capacity": 3}],
    "faults": [{"type": "never_join", "availability_zone": FAULTED}],
}


@pytest.fixture(scope="module")
def sandbox():
    with running(load_scenario(SCENARIO)) as started:
        yield started


def kubectl_nodes(sandbox) -> dict[str, dict]:
    """Node by instance id (from spec.providerID, aws:///<az>/<instance id>), as kubectl sees them."""
    result = subprocess.run([KUBECTL, "get", "nodes", "-o", "json"], capture_output=True, text=True, timeout=30,
                            env={**os.environ, "KUBECONFIG": str(sandbox.kubeconfig_path)}, check=True)
    return {n["spec"]["providerID"].rsplit("/", 1)[-1]: n for n in json.loads(result.stdout)["items"]}


def report(sandbox) -> dict:
    with urllib.request.urlopen(sandbox.control_url + "/report", timeout=10) as response:
        return json.loads(response.read())


def test_instances_in_the_faulted_zone_run_but_never_register_a_node(sandbox):
    autoscaling, ec2 = client(sandbox, "autoscaling"), client(sandbox, "ec2")
    name = sandbox.aws.asg_view("workers")["name"]
    seeded = kubectl_nodes(sandbox)
    assert len(seeded) == 3, "the fault is armed once the cluster is ready: the seeded nodes all joined"
    assert any(n["metadata"]["labels"]["topology.kubernetes.io/zone"] == FAULTED for n in seeded.values())

    autoscaling.set_desired_capacity(AutoScalingGroupName=name, DesiredCapacity=6)  # one more in each zone

    def settled():
        instances = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0][
            "Instances"]
        new = {i["InstanceId"]: i for i in instances if i["InstanceId"] not in seeded}
        now = report(sandbox)
        events = [e for e in now["events"] if e["kind"] == "node_never_joined"]
        ready = [n for n in now["nodegroups"]["workers"]["nodes"] if n["ready"]]
        return (new, events) if len(new) == 3 and len(events) == 1 and len(ready) == 5 else None

    deadline = time.monotonic() + 15
    while not (state := settled()):
        assert time.monotonic() < deadline, "the new instances did not settle"
        time.sleep(0.05)
    new, [event] = state
    nodes = kubectl_nodes(sandbox)
    assert len(nodes) == 5
    stranded = [i for i in new.values() if i["AvailabilityZone"] == FAULTED]
    assert len(stranded) == 1
    stranded_id = stranded[0]["InstanceId"]
    assert event["instance_id"] == stranded_id and "never_join" in event["reason"]
    assert stranded_id not in nodes
    # It runs, as far as AWS knows: a health check of the instance alone would not catch it.
    assert stranded[0]["LifecycleState"] == "InService" and stranded[0]["HealthStatus"] == "Healthy"
    [described] = [i for r in ec2.describe_instances(InstanceIds=[stranded_id])["Reservations"] for i in r["Instances"]]
    assert described["State"]["Name"] == "running"
    # The instances launched in the other zones became Ready nodes.
    for instance_id, instance in new.items():
        if instance_id == stranded_id:
            continue
        node = nodes[instance_id]
        assert node["metadata"]["labels"]["topology.kubernetes.io/zone"] == instance["AvailabilityZone"] != FAULTED
        assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"
    faults = report(sandbox)["faults"]
    assert [(f["type"], f["fired"]) for f in faults] == [("never_join", 1)]
    time.sleep(0.2)  # no late registration: the kubelet of that instance never reaches the API server
    assert stranded_id not in kubectl_nodes(sandbox)
