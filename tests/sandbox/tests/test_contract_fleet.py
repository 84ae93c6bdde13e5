# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (boto3 and the kubernetes client against a running sandbox): several clusters in one sandbox (issue 28
item 5, README "Several clusters"), the shipped `fleet` scenario with faster timings. One AWS endpoint serves every
region: ListClusters answers per region, DescribeCluster each cluster's own endpoint and CA, DescribeNodegroup and
DescribeAutoScalingGroups each region's own; the kubeconfig has one context per cluster, named by its ARN as `aws
eks update-kubeconfig` names it, and each cluster's API server has its nodes only. A node boots into the cluster its
user data names; the fleet's bad AMI (the new arm64 one) boots nodes that never become Ready."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from kubernetes import client as k8s, config as k8s_config

from eks_sandbox.recorder import RATE_BUCKET_SECONDS
from eks_sandbox.runtime import AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
from eks_sandbox.scenario.loader import load_scenario
from harness import running, valid, wait_for

FLEET = Path(__file__).resolve().parents[1] / "scenarios" / "fleet.yaml"
FAST = {"instance_pending_seconds": 0.05, "instance_shutdown_seconds": 0.05, "node_boot_seconds": 0.2,
        "node_removal_seconds": 0.05, "pod_start_seconds": 0.05, "controller_interval_seconds": 0.05,
        "sample_interval_seconds": 0.1}
REGIONS = {"us-west-2": ["fleet-canary", "fleet-west"], "eu-west-1": ["fleet-eu"]}
X86_NEW = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240701"
ARM_NEW = "amazon-eks-node-al2023-arm64-standard-1.30-v20240701"


@pytest.fixture(scope="module")
def fleet():
    raw = yaml.safe_load(FLEET.read_text())
    with running(load_scenario({**raw, "timings": FAST})) as sandbox:
        yield sandbox


def aws(sandbox, service: str, region: str) -> Any:
    return boto3.client(service, endpoint_url=sandbox.aws_endpoint, region_name=region,
                        aws_access_key_id=AWS_ACCESS_KEY_ID, aws_secret_access_key=AWS_SECRET_ACCESS_KEY)


def core(sandbox, context: str) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(k8s_config.new_client_from_config(str(sandbox.kubeconfig_path), context=context))


def region_of(cluster: str) -> str:
    return next(region for region, names in REGIONS.items() if cluster in names)


def groups(sandbox, region: str) -> list[dict[str, Any]]:
    autoscaling = aws(sandbox, "autoscaling", region)
    return valid(autoscaling, "DescribeAutoScalingGroups",
                 autoscaling.describe_auto_scaling_groups())["AutoScalingGroups"]


def cluster_of(group: dict[str, Any]) -> str:
    """The cluster a node-group ASG belongs to, by the tag every tool puts on it."""
    tags = {tag["Key"]: tag["Value"] for tag in group["Tags"]}
    if "eks:cluster-name" in tags:
        return tags["eks:cluster-name"]
    return next(key.split("/")[-1] for key in tags if key.startswith("kubernetes.io/cluster/"))


def test_list_clusters_answers_per_region(fleet):
    for region, names in {**REGIONS, "us-east-1": []}.items():
        eks = aws(fleet, "eks", region)
        assert sorted(valid(eks, "ListClusters", eks.list_clusters())["clusters"]) == sorted(names)


def test_describe_cluster_answers_each_clusters_endpoint_and_ca_as_the_kubeconfig_has_them(fleet):
    kubeconfig = yaml.safe_load(fleet.kubeconfig_path.read_text())
    servers = {entry["name"]: entry["cluster"] for entry in kubeconfig["clusters"]}
    contexts = {entry["name"]: entry["context"] for entry in kubeconfig["contexts"]}
    arns = []
    for region, names in REGIONS.items():
        eks = aws(fleet, "eks", region)
        for name in names:
            cluster = valid(eks, "DescribeCluster", eks.describe_cluster(name=name))["cluster"]
            arns.append(cluster["arn"])
            assert cluster["arn"] == f"arn:aws:eks:{region}:123456789012:cluster/{name}"
            assert contexts[cluster["arn"]] == {"cluster": cluster["arn"], "user": cluster["arn"]}
            assert servers[cluster["arn"]]["server"] == cluster["endpoint"]
            assert servers[cluster["arn"]]["certificate-authority-data"] == cluster["certificateAuthority"]["data"]
            assert base64.b64decode(cluster["certificateAuthority"]["data"]).startswith(b"-----BEGIN CERTIFICATE")
    assert sorted(contexts) == sorted(arns) and kubeconfig["current-context"] == arns[0]
    assert len({servers[arn]["server"] for arn in arns}) == 3  # one API server per cluster


def test_describe_nodegroup_answers_the_managed_group_of_that_cluster_and_region(fleet):
    west, eu = aws(fleet, "eks", "us-west-2"), aws(fleet, "eks", "eu-west-1")
    canary = valid(west, "DescribeNodegroup", west.describe_nodegroup(
        clusterName="fleet-canary", nodegroupName="system"))["nodegroup"]
    europe = valid(eu, "DescribeNodegroup", eu.describe_nodegroup(clusterName="fleet-eu",
                                                                  nodegroupName="system"))["nodegroup"]
    assert canary["nodegroupArn"].startswith("arn:aws:eks:us-west-2:123456789012:nodegroup/fleet-canary/system/")
    assert europe["nodegroupArn"].startswith("arn:aws:eks:eu-west-1:123456789012:nodegroup/fleet-eu/system/")
    assert (canary["tags"], europe["tags"]) == ({"upgrade-ring": "canary", "team": "platform"},
                                                {"upgrade-ring": "ring1", "team": "platform"})
    assert valid(west, "ListNodegroups", west.list_nodegroups(clusterName="fleet-west"))["nodegroups"] == []
    with pytest.raises(eu.exceptions.ResourceNotFoundException):  # a cluster of another region is unknown here
        eu.describe_nodegroup(clusterName="fleet-canary", nodegroupName="system")


def test_describe_auto_scaling_groups_answers_each_regions_node_groups_with_their_rings(fleet):
    rings = {}
    for region, names in REGIONS.items():
        for group in groups(fleet, region):
            assert cluster_of(group) in names
            assert [i["LifecycleState"] for i in group["Instances"]] == ["InService"] * 2
            tags = {tag["Key"]: tag for tag in group["Tags"]}
            if "eks:nodegroup-name" not in tags:  # self-managed: the scenario's tags propagate at launch
                rings[(cluster_of(group), group["AutoScalingGroupName"])] = tags["upgrade-ring"]["Value"]
                assert tags["upgrade-ring"]["PropagateAtLaunch"] is True
    assert sorted(rings.values()) == ["canary", "ring1", "ring1", "ring2", "ring2", "ring2"]


def test_each_clusters_api_server_has_its_own_nodes_only(fleet):
    seen: set[str] = set()
    for region, names in REGIONS.items():
        mine: dict[str, set[str]] = {name: set() for name in names}
        for group in groups(fleet, region):
            mine[cluster_of(group)].update(i["InstanceId"] for i in group["Instances"])
        for name in names:
            nodes = core(fleet, f"arn:aws:eks:{region}:123456789012:cluster/{name}").list_node().items
            assert {node.spec.provider_id.rsplit("/", 1)[-1] for node in nodes} == mine[name]
            assert all(node.metadata.labels["topology.kubernetes.io/region"] == region for node in nodes)
            seen.update(node.metadata.name for node in nodes)
    assert len(seen) == 16  # every node's name is unique across the fleet (each cluster its own VPC range)


def _launch_one_with(fleet, region: str, asg_name: str, template_data: dict[str, Any]) -> str:
    """Raise the group by one on a new version of its launch template (`template_data` changed); the new
    instance's id."""
    ec2, autoscaling = aws(fleet, "ec2", region), aws(fleet, "autoscaling", region)
    group = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[asg_name])["AutoScalingGroups"][0]
    before = {i["InstanceId"] for i in group["Instances"]}
    template = group.get("LaunchTemplate") or group["MixedInstancesPolicy"]["LaunchTemplate"][
        "LaunchTemplateSpecification"]
    version = ec2.create_launch_template_version(LaunchTemplateId=template["LaunchTemplateId"], SourceVersion="1",
                                                 LaunchTemplateData=template_data)["LaunchTemplateVersion"]
    autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=asg_name, DesiredCapacity=group["DesiredCapacity"] + 1,
        LaunchTemplate={"LaunchTemplateId": template["LaunchTemplateId"],
                        "Version": str(version["VersionNumber"])})
    return wait_for(lambda: next(iter({i["InstanceId"] for i in autoscaling.describe_auto_scaling_groups(
        AutoScalingGroupNames=[asg_name])["AutoScalingGroups"][0]["Instances"]} - before), None))


def _node_of(fleet, context: str, instance_id: str) -> Any:
    return next((n for n in core(fleet, context).list_node().items if n.spec.provider_id.endswith(instance_id)),
                None)


def _ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or ())


def _asg(fleet, region: str, cluster: str, prefix: str) -> str:
    return next(g["AutoScalingGroupName"] for g in groups(fleet, region)
                if cluster_of(g) == cluster and g["AutoScalingGroupName"].startswith(prefix))


def test_a_node_boots_into_the_cluster_its_user_data_names(fleet):
    """fleet-west's apps group launches an instance with fleet-canary's user data: it joins fleet-canary's API
    server (whose endpoint and name that user data carries), never fleet-west's."""
    ec2 = aws(fleet, "ec2", "us-west-2")
    canary_template = ec2.describe_launch_templates(
        Filters=[{"Name": "launch-template-name", "Values": ["apps-arm-node-group-*"]}])["LaunchTemplates"][0]
    user_data = ec2.describe_launch_template_versions(LaunchTemplateId=canary_template["LaunchTemplateId"])[
        "LaunchTemplateVersions"][0]["LaunchTemplateData"]["UserData"]
    instance = _launch_one_with(fleet, "us-west-2", _asg(fleet, "us-west-2", "fleet-west", "apps-"),
                                {"UserData": user_data})
    canary, west = (f"arn:aws:eks:us-west-2:123456789012:cluster/{name}" for name in ("fleet-canary", "fleet-west"))
    assert _ready(wait_for(lambda: _node_of(fleet, canary, instance), timeout=10))
    assert _node_of(fleet, west, instance) is None


def test_the_fleets_new_arm64_ami_boots_nodes_that_never_become_ready(fleet):
    """The bad AMI of the fleet scenario: apps-arm's new nodes register and stay NotReady, while a node of the new
    x86_64 AMI (fleet-eu's apps) turns Ready."""
    amis = {}
    for region in REGIONS:
        images = aws(fleet, "ec2", region).describe_images(Filters=[{"Name": "name", "Values": [X86_NEW, ARM_NEW]}])
        amis[region] = {image["Name"]: image["ImageId"] for image in images["Images"]}
    bad = _launch_one_with(fleet, "us-west-2", _asg(fleet, "us-west-2", "fleet-canary", "apps-arm-"),
                           {"ImageId": amis["us-west-2"][ARM_NEW]})
    good = _launch_one_with(fleet, "eu-west-1", _asg(fleet, "eu-west-1", "fleet-eu", "eksctl-fleet-eu-nodegroup-apps"),
                            {"ImageId": amis["eu-west-1"][X86_NEW]})
    assert _ready(wait_for(lambda: _node_of(fleet, "arn:aws:eks:eu-west-1:123456789012:cluster/fleet-eu", good),
                           timeout=10))
    canary = "arn:aws:eks:us-west-2:123456789012:cluster/fleet-canary"
    node = wait_for(lambda: _node_of(fleet, canary, bad), timeout=10)
    time.sleep(1.0)  # five node boots' worth: it stays NotReady
    assert not _ready(_node_of(fleet, canary, bad)) and not _ready(node)


def test_the_report_has_one_section_per_cluster_and_the_aws_calls_once(fleet):
    for region in REGIONS:
        aws(fleet, "eks", region).list_clusters()
    report = fleet.report()
    assert sorted(report["clusters"]) == ["fleet-canary", "fleet-eu", "fleet-west"]
    eu = report["clusters"]["fleet-eu"]
    assert (eu["region"], eu["arn"]) == ("eu-west-1", "arn:aws:eks:eu-west-1:123456789012:cluster/fleet-eu")
    assert sorted(eu["nodegroups"]) == ["apps", "legacy", "system"]
    assert eu["nodegroups"]["system"]["eks"]["status"] == "ACTIVE"
    assert all(node["ready"] for node in eu["nodegroups"]["legacy"]["nodes"])
    assert "aws_calls" not in eu and report["aws_calls"]["ListClusters OK"] >= 2
    assert report["controller"]["errors"] == {}


def test_an_owners_apply_names_its_cluster(fleet):
    """POST /apply (eks-sandbox apply --cluster): node group names repeat across clusters, so the cluster is named."""
    def apply(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(fleet.control_url + "/apply", data=json.dumps(body).encode(), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    assert apply({"nodegroup": "legacy", "cluster": "fleet-eu"}) == (200, {"done": []})
    status, answer = apply({"nodegroup": "legacy"})
    assert status == 400 and "no cluster None in the sandbox" in answer["error"]


def _grown(before: dict[str, int], after: dict[str, int], started: float, finished: float) -> int:
    """Requests counted in the tenths of a second from started to finished, between two reports' times."""
    first, last = int(started / RATE_BUCKET_SECONDS), int(finished / RATE_BUCKET_SECONDS)
    return sum(count - before.get(key, 0) for key, count in after.items() if first <= int(key) <= last)


def test_issue28_item4_the_report_times_each_clusters_requests_and_each_regions_aws_calls(fleet):
    """README "Report": k8s_request_times per cluster (its API server's requests), aws_call_times per region its
    signature names, counted per tenth of a second, so that a benchmark reads the request rates per cluster and
    per region of a run."""
    before = fleet.report()
    started = time.time()
    for _index in range(5):
        aws(fleet, "autoscaling", "eu-west-1").describe_auto_scaling_groups()
    for _index in range(3):
        aws(fleet, "ec2", "us-west-2").describe_instances()
    for _index in range(4):
        core(fleet, "arn:aws:eks:us-west-2:123456789012:cluster/fleet-west").list_node()
    core(fleet, "arn:aws:eks:eu-west-1:123456789012:cluster/fleet-eu").list_node(watch=False)
    finished = time.time()
    after = fleet.report()
    grown = {region: _grown(before["aws_call_times"].get(region, {}), times, started, finished)
             for region, times in after["aws_call_times"].items()}
    assert {region: count for region, count in grown.items() if count} == {"eu-west-1": 5, "us-west-2": 3}
    assert {name: _grown(before["clusters"][name]["k8s_request_times"], cluster["k8s_request_times"], started,
                         finished)
            for name, cluster in after["clusters"].items()} == {"fleet-canary": 0, "fleet-west": 4, "fleet-eu": 1}
