# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (the kubernetes client and boto3 against a running sandbox): a node is what its instance's user data says.

For self-managed node groups of the three EKS AMI families (AL2: bootstrap.sh; AL2023: nodeadm NodeConfig;
Bottlerocket: TOML settings), each node's labels, taints and allocatable pods are exactly what the user data of the
launch template version its instance was launched from says (read back with DescribeLaunchTemplateVersions and parsed
here, independently of eks_sandbox.bootstrap) plus the well-known labels the kubelet and the cloud provider set;
no eks.amazonaws.com/* label appears on a self-managed node. A launch template version made from another with only
the ImageId changed (SourceVersion) keeps the user data and so the labels. An instance whose user data bootstraps
another cluster runs but never becomes a node.

The formats, as their upstream documents them:
- AL2: awslabs/amazon-eks-ami templates/al2/runtime/bootstrap.sh: `bootstrap.sh CLUSTER [--option value]...`, the
  kubelet flags in --kubelet-extra-args (--node-labels=k=v,..., --register-with-taints=k=v:Effect,...,
  --max-pods=N, with --use-max-pods false);
- AL2023: nodeadm's NodeConfig (apiVersion node.eks.aws/v1alpha1) in an application/node.eks.aws MIME part:
  spec.cluster.name, spec.kubelet.flags, spec.kubelet.config.maxPods;
- Bottlerocket: TOML [settings.kubernetes] cluster-name, max-pods, node-labels, node-taints (key = ["value:Effect"]).
"""

from __future__ import annotations

import base64
import email
import shlex
import tomllib

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from eks_sandbox.scenario.loader import load_scenario
from harness import client, running, wait_for

CLUSTER = "prod"
AL2_129, AL2_130 = "amazon-eks-node-1.29-v20240101", "amazon-eks-node-1.30-v20240601"
AL2023_129, AL2023_130 = ("amazon-eks-node-al2023-x86_64-standard-1.29-v20240101",
                          "amazon-eks-node-al2023-x86_64-standard-1.30-v20240601")
BOTTLEROCKET_129 = "bottlerocket-aws-k8s-1.29-x86_64-v1.20.3-v20240101"
FAST = {"instance_pending_seconds": 0.02, "instance_shutdown_seconds": 0.02, "node_boot_seconds": 0.05,
        "node_removal_seconds": 0.05, "pod_start_seconds": 0.05, "controller_interval_seconds": 0.02,
        "sample_interval_seconds": 0.05}
# What the kubelet and the AWS cloud provider label every node with, whatever its user data says.
WELL_KNOWN = {"kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch", "topology.kubernetes.io/zone",
              "topology.kubernetes.io/region", "node.kubernetes.io/instance-type"}

SCENARIO = {
    "name": "bootstrap-contract", "cluster": {"name": CLUSTER, "kubernetes_version": "1.30", "tls": False},
    "timings": FAST,
    "amis": [{"name": AL2_129, "kubernetes_version": "1.29", "family": "amazon-linux-2"},
             {"name": AL2_130, "kubernetes_version": "1.30", "family": "amazon-linux-2"},
             {"name": AL2023_129, "kubernetes_version": "1.29"},
             {"name": AL2023_130, "kubernetes_version": "1.30"},
             {"name": BOTTLEROCKET_129, "kubernetes_version": "1.29", "family": "bottlerocket/x86_64"}],
    "nodegroups": [
        {"name": "al2", "kind": "self_managed_eksctl", "ami": AL2_129, "min_size": 0, "max_size": 5,
         "desired_capacity": 2, "max_pods": 17, "labels": {"team": "a"},
         "taints": [{"key": "dedicated", "value": "al2", "effect": "NoSchedule"}]},
        {"name": "al2023", "kind": "self_managed", "ami": AL2023_129, "min_size": 0, "max_size": 5,
         "desired_capacity": 2, "max_pods": 29, "labels": {"role": "web", "example.com/tier": "front"},
         "taints": [{"key": "gpu", "effect": "NoExecute"}]},
        {"name": "br", "kind": "self_managed", "convention": "cloudformation", "ami": BOTTLEROCKET_129,
         "min_size": 0, "max_size": 5, "desired_capacity": 2, "max_pods": 58, "labels": {"pool": "br"},
         "taints": [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
                    {"key": "spot", "value": "true", "effect": "NoExecute"}]},
    ],
}


# ------------------------------------------------------------------------------------------------ user data, read here

def _kubelet_flags(words: list[str]) -> tuple[dict, list, int | None]:
    labels, taints, max_pods = {}, [], None
    for word in words:
        name, dummy, value = word.partition("=")
        if name == "--node-labels":
            labels.update(pair.split("=", 1) for pair in value.split(","))
        elif name == "--register-with-taints":
            for spec in value.split(","):
                key_value, dummy, effect = spec.rpartition(":")
                key, dummy, taint_value = key_value.partition("=")
                taints.append((key, taint_value, effect))
        elif name == "--max-pods":
            max_pods = int(value)
    return labels, taints, max_pods


def read_al2(text: str) -> dict:
    assert text.startswith("#!"), "cloud-init runs user data as a script only when it starts with #!"
    [line] = [line for line in text.replace("\\\n", "").splitlines() if "/etc/eks/bootstrap.sh" in line]
    words = shlex.split(line)
    args = words[words.index("/etc/eks/bootstrap.sh") + 1:]
    options, positional = {}, []
    while args:  # every bootstrap.sh option takes a value ("$2"; shift 2); anything else is positional
        word = args.pop(0)
        if word.startswith("--"):
            options[word] = args.pop(0)
        else:
            positional.append(word)
    labels, taints, max_pods = _kubelet_flags(shlex.split(options.get("--kubelet-extra-args", "")))
    if max_pods is not None:
        assert options.get("--use-max-pods") == "false", "else bootstrap.sh sets max pods from the ENI table"
    return {"cluster": positional[0], "labels": labels, "taints": sorted(taints), "max_pods": max_pods}


def read_al2023(text: str) -> dict:
    message = email.message_from_string(text)
    assert message.is_multipart()
    [part] = [p for p in message.walk() if p.get_content_type() == "application/node.eks.aws"]
    [config] = [d for d in yaml.safe_load_all(part.get_payload()) if d]
    assert (config["apiVersion"], config["kind"]) == ("node.eks.aws/v1alpha1", "NodeConfig")
    kubelet = config["spec"].get("kubelet", {})
    labels, taints, max_pods = _kubelet_flags(kubelet.get("flags", []))
    return {"cluster": config["spec"]["cluster"]["name"], "labels": labels, "taints": sorted(taints),
            "max_pods": max_pods or kubelet.get("config", {}).get("maxPods")}


def read_bottlerocket(text: str) -> dict:
    kubernetes = tomllib.loads(text)["settings"]["kubernetes"]
    taints = [(key, *value.rsplit(":", 1)) for key, values in kubernetes.get("node-taints", {}).items()
              for value in values]
    return {"cluster": kubernetes["cluster-name"], "labels": dict(kubernetes.get("node-labels", {})),
            "taints": sorted(taints), "max_pods": kubernetes.get("max-pods")}


READERS = {"al2": read_al2, "al2023": read_al2023, "br": read_bottlerocket}


# ------------------------------------------------------------------------------------------------ fixtures, helpers

@pytest.fixture(scope="module")
def sandbox():
    with running(load_scenario(SCENARIO)) as started:
        yield started


@pytest.fixture(scope="module")
def aws(sandbox):
    return {service: client(sandbox, service) for service in ("autoscaling", "ec2")}


@pytest.fixture(scope="module")
def core(sandbox):
    return k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(sandbox.kubeconfig_path)))


def group(aws, nodegroup, sandbox):
    return aws["autoscaling"].describe_auto_scaling_groups(
        AutoScalingGroupNames=[sandbox.aws.asg_view(nodegroup)["name"]])["AutoScalingGroups"][0]


def user_data_of(aws, instance_id: str) -> str:
    """The plain-text user data of the launch template version the instance was launched from."""
    [launched] = aws["autoscaling"].describe_auto_scaling_instances(InstanceIds=[instance_id])["AutoScalingInstances"]
    template = launched["LaunchTemplate"]
    [version] = aws["ec2"].describe_launch_template_versions(
        LaunchTemplateId=template["LaunchTemplateId"], Versions=[template["Version"]])["LaunchTemplateVersions"]
    return base64.b64decode(version["LaunchTemplateData"]["UserData"]).decode()


def instance_of(node) -> str:
    return node.spec.provider_id.rsplit("/", 1)[-1]   # aws:///<az>/<instance id> (SPEC K2)


def nodes_of(core, aws, sandbox, nodegroup) -> list:
    ids = {i["InstanceId"] for i in group(aws, nodegroup, sandbox)["Instances"]}
    return [n for n in core.list_node().items if instance_of(n) in ids]


def as_booted(node) -> dict:
    labels = node.metadata.labels
    assert WELL_KNOWN <= set(labels)
    return {"labels": {k: v for k, v in labels.items() if k not in WELL_KNOWN},
            "taints": sorted((t.key, t.value or "", t.effect) for t in node.spec.taints or ()),
            "max_pods": int(node.status.allocatable["pods"])}


# ------------------------------------------------------------------------------------------------ tests

@pytest.mark.parametrize("nodegroup, tool_labels", [
    ("al2", {"alpha.eksctl.io/cluster-name": CLUSTER, "alpha.eksctl.io/nodegroup-name": "al2"}),  # eksctl's own
    ("al2023", {}),   # terraform-aws-eks: no node-group label unless the user adds one
    ("br", {}),       # the CloudFormation template: none either
])
def test_a_nodes_labels_taints_and_pods_are_its_user_datas(sandbox, aws, core, nodegroup, tool_labels):
    nodes = nodes_of(core, aws, sandbox, nodegroup)
    assert len(nodes) == 2
    spec = next(ng for ng in sandbox.scenario["nodegroups"] if ng["name"] == nodegroup)
    for node in nodes:
        said = READERS[nodegroup](user_data_of(aws, instance_of(node)))
        assert said["cluster"] == CLUSTER
        assert as_booted(node) == {k: said[k] for k in ("labels", "taints", "max_pods")}
        assert not any(key.startswith("eks.amazonaws.com/") for key in node.metadata.labels)
        # ... and the user data says what the node group's tool writes: its labels, then the user's.
        assert said["labels"] == {**tool_labels, **spec["labels"]}
        assert said["taints"] == sorted((t["key"], t["value"], t["effect"]) for t in spec["taints"])
        assert said["max_pods"] == spec["max_pods"]
        assert node.metadata.labels["topology.kubernetes.io/zone"] == node.spec.provider_id.split("/")[3]


def test_a_version_made_from_another_with_a_new_image_keeps_the_user_data_and_labels(sandbox, aws, core):
    ec2, autoscaling = aws["ec2"], aws["autoscaling"]
    before = group(aws, "al2023", sandbox)
    template_id = before["LaunchTemplate"]["LaunchTemplateId"]
    new_image = next(a["id"] for a in sandbox.scenario["amis"] if a["name"] == AL2023_130)
    created = ec2.create_launch_template_version(LaunchTemplateId=template_id, SourceVersion="1",
                                                 LaunchTemplateData={"ImageId": new_image})
    version = str(created["LaunchTemplateVersion"]["VersionNumber"])
    autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=before["AutoScalingGroupName"], DesiredCapacity=3,
        LaunchTemplate={"LaunchTemplateId": template_id, "Version": version})

    def new_node():
        fresh = [i["InstanceId"] for i in group(aws, "al2023", sandbox)["Instances"]
                 if i["LaunchTemplate"]["Version"] == version]
        return next((n for n in core.list_node().items if fresh and instance_of(n) == fresh[0]), None)

    node = wait_for(new_node)
    old = [n for n in nodes_of(core, aws, sandbox, "al2023") if n.metadata.name != node.metadata.name]
    assert user_data_of(aws, instance_of(node)) == user_data_of(aws, instance_of(old[0]))
    assert as_booted(node) == as_booted(old[0])
    assert node.metadata.labels["role"] == "web" and node.status.node_info.kubelet_version.startswith("v1.30")
    [instance] = [i for r in ec2.describe_instances(InstanceIds=[instance_of(node)])["Reservations"]
                  for i in r["Instances"]]
    assert instance["ImageId"] == new_image


def test_an_instance_bootstrapped_for_another_cluster_never_becomes_a_node(sandbox, aws, core):
    ec2, autoscaling = aws["ec2"], aws["autoscaling"]
    before = group(aws, "al2", sandbox)
    template_id = before["LaunchTemplate"]["LaunchTemplateId"]
    other = ("#!/bin/bash\nset -ex\n/etc/eks/bootstrap.sh staging --use-max-pods false "
             "--kubelet-extra-args '--node-labels=team=a --max-pods=17'\n")
    created = ec2.create_launch_template_version(
        LaunchTemplateId=template_id, SourceVersion="1",
        LaunchTemplateData={"UserData": base64.b64encode(other.encode()).decode()})
    version = str(created["LaunchTemplateVersion"]["VersionNumber"])
    autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=before["AutoScalingGroupName"], DesiredCapacity=3,
        LaunchTemplate={"LaunchTemplateId": template_id, "Version": version})
    stray = wait_for(lambda: [i["InstanceId"] for i in group(aws, "al2", sandbox)["Instances"]
                              if i["LaunchTemplate"]["Version"] == version])[0]
    assert read_al2(user_data_of(aws, stray))["cluster"] == "staging"

    def never_joined():
        return [e for e in sandbox.report()["events"]
                if e["kind"] == "node_never_joined" and e["instance_id"] == stray]

    [event] = wait_for(never_joined)
    assert "staging" in event["reason"]
    [instance] = [i for r in ec2.describe_instances(InstanceIds=[stray])["Reservations"] for i in r["Instances"]]
    assert instance["State"]["Name"] == "running"
    assert not [n for n in core.list_node().items if instance_of(n) == stray]
    assert len(nodes_of(core, aws, sandbox, "al2")) == 2
