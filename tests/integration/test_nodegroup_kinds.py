# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-group kinds against one sandbox cluster that holds a self-managed group of each convention (SPEC K1, K2,
K4): nodegroup_info finds each one by its own tool's tags, reports its kind and its Auto Scaling group, and
joins its instances with their nodes by spec.providerID; two candidates for one name are refused, naming both;
asg_instance_terminate reports an instance whose node never registered (`never_joined`).

One sandbox for the whole module (cluster `kinds`, three one-node groups): the tests run in file order, the
read-only ones first; only the last one launches an instance, which the scenario's `never_join` fault (armed
once the sandbox is ready, count 1) keeps from ever registering its node.
"""

from __future__ import annotations

import copy
import time

import pytest
import yaml

from nodegroup_state import asg_name_of, call_counts, calls_between, instance_id_of, mutating_calls, workers_asg
from sandbox_helpers import run_module, running_sandbox

CLUSTER = "kinds"
AMI_129 = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
KINDS_SCENARIO = {
    "name": CLUSTER,
    "availability_zones": ["us-west-2a", "us-west-2b"],
    "amis": [{"name": AMI_129, "kubernetes_version": "1.29"}],
    "nodegroups": [
        # terraform-aws-eks self-managed-node-group: ASG tf-<26 digits>, tags Name=tf and
        # kubernetes.io/cluster/kinds=owned, no node label
        {"name": "tf", "kind": "self_managed", "ami": AMI_129, "min_size": 1, "max_size": 3, "desired_capacity": 1},
        # eksctl unmanaged node group: alpha.eksctl.io/* tags, nodes labelled alpha.eksctl.io/nodegroup-name=ctl
        {"name": "ctl", "kind": "self_managed_eksctl", "ami": AMI_129, "min_size": 1, "max_size": 3,
         "desired_capacity": 1},
        # the AWS CloudFormation node group template: tags Name=kinds-cfn-Node and the cluster tag, no node label
        {"name": "cfn", "kind": "self_managed", "convention": "cloudformation", "ami": AMI_129, "min_size": 1,
         "max_size": 3, "desired_capacity": 1},
    ],
    "workloads": [{"kind": "Deployment", "name": "web", "replicas": 2},
                  {"kind": "DaemonSet", "name": "node-agent", "namespace": "kube-system"}],
    # The first instance that boots after the sandbox is ready never registers its node (its kubelet never
    # reaches the API server): only test_an_instance_whose_node_never_registered_... launches one.
    "faults": [{"type": "never_join", "count": 1}],
}
EKSCTL_SELECTOR = "alpha.eksctl.io/nodegroup-name=ctl"


@pytest.fixture(scope="module")
def kinds_sandbox(tmp_path_factory):
    with running_sandbox(KINDS_SCENARIO, tmp_path_factory.mktemp("sandbox-kinds")) as handle:
        yield handle


def info(sandbox, nodegroup, **args):
    return run_module(sandbox, "nodegroup_info", {"cluster_name": CLUSTER, "nodegroup_name": nodegroup, **args})


def asg_tags(sandbox, nodegroup) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in workers_asg(sandbox, nodegroup).get("Tags", [])}


@pytest.mark.parametrize("nodegroup, kind, selector, identifying_tags", [
    ("tf", "self_managed", None, {"Name": "tf", "kubernetes.io/cluster/kinds": "owned"}),
    ("ctl", "self_managed_eksctl", EKSCTL_SELECTOR,
     {"alpha.eksctl.io/cluster-name": CLUSTER, "alpha.eksctl.io/nodegroup-name": "ctl"}),
    ("cfn", "self_managed", None, {"Name": "kinds-cfn-Node", "kubernetes.io/cluster/kinds": "owned"}),
])
def test_k1_each_convention_is_found_with_its_kind_and_its_own_asg(kinds_sandbox, nodegroup, kind, selector,
                                                                   identifying_tags):
    sandbox = kinds_sandbox
    # What discovery keys on is what the tool put there (the sandbox seeds each convention as its tool does).
    tags = asg_tags(sandbox, nodegroup)
    assert {key: tags.get(key) for key in identifying_tags} == identifying_tags
    assert not [key for key in tags if key.startswith("eks:")]  # none of them is EKS managed
    before = call_counts(sandbox)

    result = info(sandbox, nodegroup)
    assert result["failed"] is False, result
    group = result["nodegroup"]
    assert (group["kind"], group["node_selector"], group["managed"]) == (kind, selector, None)
    # Among three groups of one cluster, each name finds its own ASG (the one the sandbox seeded for it).
    assert group["asg_name"] == asg_name_of(sandbox, nodegroup)
    # K2: every instance is joined with its node by spec.providerID, labelled or not.
    nodes = {instance_id_of(n): n for n in sandbox.core_v1().list_node().items}
    assert len(group["instances"]) == 1
    for instance in group["instances"]:
        assert instance["node_name"] == nodes[instance["instance_id"]].metadata.name
        assert instance["ready"] is True
    assert group["orphan_nodes"] == [] and group["old_instances"] == [] and group["plan"] is not None
    calls = calls_between(before, call_counts(sandbox))
    assert mutating_calls(calls) == {}
    # P2: a kind that labels its nodes narrows the node LIST on the server; the others list every node once.
    assert calls["eksops.nodegroup/0.1.0/nodegroup_info list nodes 200"] == 1


def test_k1_an_asg_of_another_nodegroup_is_refused(kinds_sandbox):
    """asg_name names eksctl's group `ctl`: its tags say so, so it is not node group `tf`."""
    other = asg_name_of(kinds_sandbox, "ctl")
    result = info(kinds_sandbox, "tf", asg_name=other)
    assert result["failed"] is True
    assert (result["code"], result["parameter"]) == ("InvalidParameter", "asg_name"), result
    assert other in result["msg"] and "ctl" in result["msg"]


def test_k1_an_unknown_nodegroup_is_not_found_naming_what_was_looked_for(kinds_sandbox):
    result = info(kinds_sandbox, "nope")
    assert result["failed"] is True
    assert (result["code"], result["parameter"]) == ("ResourceNotFound", "nodegroup_name"), result
    assert "nope" in result["msg"] and "kubernetes.io/cluster/kinds" in result["msg"]


def test_k1_two_matches_are_refused_naming_both_and_asg_name_decides(kinds_sandbox):
    """A cluster moving node group `ctl` from eksctl to terraform: terraform's new group (tags Name=ctl and the
    cluster tag) stands next to eksctl's. Neither may be guessed; asg_name picks one."""
    sandbox = kinds_sandbox
    autoscaling = sandbox.client("autoscaling")
    eksctl_asg = workers_asg(sandbox, "ctl")
    terraform_name = "ctl-20250101120000000000000001"
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=terraform_name, MinSize=0, MaxSize=0, DesiredCapacity=0,
        LaunchTemplate={"LaunchTemplateId": eksctl_asg["LaunchTemplate"]["LaunchTemplateId"], "Version": "1"},
        VPCZoneIdentifier=eksctl_asg["VPCZoneIdentifier"],
        Tags=[{"Key": key, "Value": value, "PropagateAtLaunch": True}
              for key, value in (("Name", "ctl"), ("kubernetes.io/cluster/%s" % CLUSTER, "owned"))])
    try:
        result = info(sandbox, "ctl")
        assert result["failed"] is True
        assert (result["code"], result["parameter"]) == ("InvalidParameter", "asg_name"), result
        assert eksctl_asg["AutoScalingGroupName"] in result["msg"] and terraform_name in result["msg"]
        assert "self_managed_eksctl" in result["msg"]
        assert result["candidates"] == sorted([eksctl_asg["AutoScalingGroupName"], terraform_name])

        chosen = info(sandbox, "ctl", asg_name=eksctl_asg["AutoScalingGroupName"])
        assert chosen["failed"] is False, chosen
        assert (chosen["nodegroup"]["kind"], chosen["nodegroup"]["asg_name"]) == (
            "self_managed_eksctl", eksctl_asg["AutoScalingGroupName"])
        chosen = info(sandbox, "ctl", asg_name=terraform_name)
        assert chosen["failed"] is False, chosen
        assert (chosen["nodegroup"]["kind"], chosen["nodegroup"]["instances"]) == ("self_managed", [])
        # The other groups are not affected by the ambiguity of this name.
        assert info(sandbox, "tf")["failed"] is False
    finally:
        autoscaling.delete_auto_scaling_group(AutoScalingGroupName=terraform_name, ForceDelete=True)


# --------------------------------------------------------------------------------------------------------
# An instance whose node never registers (the scenario's never_join fault)
# --------------------------------------------------------------------------------------------------------

def never_joined_instance(sandbox, nodegroup: str, timeout: float = 60) -> str:
    """Add an instance to the group and wait until the sandbox's kubelet gave up registering it."""
    before = {i["InstanceId"] for i in workers_asg(sandbox, nodegroup)["Instances"]}
    sandbox.client("autoscaling").set_desired_capacity(AutoScalingGroupName=asg_name_of(sandbox, nodegroup),
                                                       DesiredCapacity=len(before) + 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = [i for i in workers_asg(sandbox, nodegroup)["Instances"] if i["InstanceId"] not in before]
        if new and new[0]["LifecycleState"] == "InService":
            refused = [e for e in sandbox.report()["events"]
                       if e["kind"] == "node_never_joined" and e.get("instance_id") == new[0]["InstanceId"]]
            if refused:
                assert "never_join" in refused[0]["reason"], refused
                return new[0]["InstanceId"]
        time.sleep(0.5)
    raise AssertionError("no instance of %s was refused its node within %d s" % (nodegroup, timeout))


def proxied_kubeconfig(sandbox, path) -> str:
    """The sandbox's kubeconfig with the API server spelled `localhost`: not DescribeCluster's endpoint, so the
    cluster must be proven by the node group's nodes (SPEC K4)."""
    with open(sandbox.env["KUBECONFIG"], encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    proxied = copy.deepcopy(config)
    proxied["clusters"][0]["cluster"]["server"] = config["clusters"][0]["cluster"]["server"].replace(
        "127.0.0.1", "localhost")
    path.write_text(yaml.safe_dump(proxied))
    return str(path)


def ec2_state(sandbox, instance_id) -> str:
    reservations = sandbox.client("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"]
    return reservations[0]["Instances"][0]["State"]["Name"]


def test_an_instance_whose_node_never_registered_is_reported_never_joined_K2_K4(kinds_sandbox, tmp_path):
    sandbox = kinds_sandbox
    nodegroup = "cfn"
    kept = {i["InstanceId"] for i in workers_asg(sandbox, nodegroup)["Instances"]}
    lost = never_joined_instance(sandbox, nodegroup)
    assert lost not in {instance_id_of(n) for n in sandbox.core_v1().list_node().items}
    args = {"cluster_name": CLUSTER, "nodegroup_name": nodegroup, "instance_ids": [lost],
            "should_decrement_desired_capacity": True, "wait_timeout": 60}
    before, calls_before = workers_asg(sandbox, nodegroup), call_counts(sandbox)

    # K4 through another spelling of the endpoint: an InService instance older than node_ready_timeout without
    # a node disproves the cluster, before anything changes ...
    kubeconfig = proxied_kubeconfig(sandbox, tmp_path / "kubeconfig")
    refused = run_module(sandbox, "asg_instance_terminate", {**args, "node_ready_timeout": 1},
                         env={"KUBECONFIG": kubeconfig})
    assert refused["failed"] is True and refused["code"] == "ClusterUnreachable", refused
    assert refused["instances_without_node"] == [lost] and lost in refused["msg"]
    # ... while one younger than the timeout may still be joining: proven by the other instance's node; the plan
    # names the instance as not joined yet.
    planned = run_module(sandbox, "asg_instance_terminate", args, check=True, env={"KUBECONFIG": kubeconfig})
    assert planned["failed"] is False, planned
    [entry] = planned["termination"]["never_joined"]
    assert entry["instance_id"] == lost and "has not joined the cluster yet" in entry["reason"]
    assert mutating_calls(calls_between(calls_before, call_counts(sandbox))) == {}
    assert workers_asg(sandbox, nodegroup)["DesiredCapacity"] == before["DesiredCapacity"]

    # With the cluster's own endpoint, past node_ready_timeout: terminated without a drain, reported.
    result = run_module(sandbox, "asg_instance_terminate", {**args, "node_ready_timeout": 1})
    assert result["failed"] is False, result
    out = result["termination"]
    assert result["changed"] is True and out["terminated"] == [lost]
    [entry] = out["never_joined"]
    assert entry["instance_id"] == lost and entry["launched_seconds_ago"] >= 1
    assert "never joined the cluster" in entry["reason"]
    assert any(lost in warning and "without a drain" in warning for warning in result.get("warnings", []))
    assert ec2_state(sandbox, lost) == "terminated"
    after = workers_asg(sandbox, nodegroup)
    assert after["DesiredCapacity"] == before["DesiredCapacity"] - 1
    assert {i["InstanceId"] for i in after["Instances"]} == kept
    # The group's joined node was not touched.
    [node] = [n for n in sandbox.core_v1().list_node().items if instance_id_of(n) in kept]
    assert not node.spec.unschedulable
    assert sandbox.report()["pods_lost"] == []
