# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AwsSim as the rest of the sandbox and the collection see it: seeding, call recording, injected faults,
instances(), asg_view() and its speed on a 100-instance scenario."""

from __future__ import annotations

import base64
import ipaddress
import statistics
import time
import urllib.error
import urllib.request

import pytest
from botocore.exceptions import ClientError

from eks_sandbox.aws import AwsSim
from eks_sandbox.faults import Faults
from eks_sandbox.recorder import Recorder
from eks_sandbox.scenario.loader import load_scenario

KUBE_URL = "https://127.0.0.1:6443"
KUBE_CA = "-----BEGIN CERTIFICATE-----\nMIIBsandbox\n-----END CERTIFICATE-----\n"
OLD_AMI = "ami-0a1b2c3d4e5f60001"
AL2023 = "amazon-linux-2023/x86_64/standard"


def scenario(**overrides):
    """AwsSim's own scenario (cluster "demo", default timings but two, the AMI catalogue these tests look up;
    overrides replace keys). Not eks_sandbox.kube.testing.scenario: that one's fast timings, TLS-less 1.30
    cluster and merged dict overrides are for the sandbox with its KubeSim, which these tests do not start."""
    spec = {
        "name": "demo",
        "timings": {"instance_pending_seconds": 0.05, "instance_shutdown_seconds": 0.05},
        "amis": [
            {"name": "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", "id": OLD_AMI,
             "kubernetes_version": "1.29"},
            {"name": "amazon-eks-node-al2023-x86_64-standard-1.30-v20240101", "kubernetes_version": "1.30",
             "recommended": True},
            {"name": "amazon-eks-node-1.30-v20240101", "kubernetes_version": "1.30", "family": "amazon-linux-2"},
            {"name": "amazon-eks-node-al2023-x86_64-standard-1.30-v20231201", "kubernetes_version": "1.30",
             "recommended": False},
        ],
        "nodegroups": [
            {"name": "workers", "ami": "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101",
             "labels": {"team": "web"}, "kind": "self_managed_eksctl"},
            {"name": "batch", "ami": "amazon-eks-node-1.30-v20240101", "instance_type": "c5.xlarge",
             "availability_zones": ["us-west-2a", "us-west-2c"], "min_size": 0, "max_size": 4,
             "desired_capacity": 2},
        ],
    }
    spec.update(overrides)
    return load_scenario(spec)


def started(launch_retry_seconds=1.0, **overrides):
    loaded = scenario(**overrides)
    sim = AwsSim(loaded, Recorder(), Faults(overrides.get("faults", []), loaded["seed"]),
                 launch_retry_seconds=launch_retry_seconds)
    sim.start()
    sim.seed(KUBE_URL, KUBE_CA)
    return sim


@pytest.fixture
def seeded():
    sim = started()
    yield sim
    sim.stop()


def group_of(sim, nodegroup):
    """The node group's Auto Scaling group (each tool names it its own way: asg_view knows which)."""
    return sim.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[sim.asg_view(nodegroup)["name"]])["AutoScalingGroups"][0]


def groups_tagged(sim, **tags):
    return sim.client("autoscaling").describe_auto_scaling_groups(
        Filters=[{"Name": f"tag:{key}", "Values": [value]} for key, value in tags.items()])["AutoScalingGroups"]


# ------------------------------------------------------------------------------------------------ seeding

def test_each_nodegroup_asg_is_found_by_its_tools_tags(seeded):
    # eksctl tags the group with the cluster and node group names (SPEC K1); terraform-aws-eks only with Name
    # and the cluster ownership tag.
    [group] = groups_tagged(seeded, **{"alpha.eksctl.io/cluster-name": "demo",
                                       "alpha.eksctl.io/nodegroup-name": "workers"})
    [batch] = groups_tagged(seeded, **{"kubernetes.io/cluster/demo": "owned", "Name": "batch"})
    assert batch["AutoScalingGroupName"] == seeded.asg_view("batch")["name"] != group["AutoScalingGroupName"]
    tags = {t["Key"]: t["Value"] for t in group["Tags"]}
    assert tags["kubernetes.io/cluster/demo"] == "owned"
    assert not any(key.startswith("eks:") for key in tags), "only EKS tags its managed groups eks:*"
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == (3, 12, 6)
    assert group["LaunchTemplate"]["Version"] == "1"
    assert seeded.asg_view("workers") == {
        "name": group["AutoScalingGroupName"], "min": 3, "max": 12, "desired": 6, "suspended_processes": [],
        "tags": tags, "launch_template": {"id": group["LaunchTemplate"]["LaunchTemplateId"], "version": "1"},
        "instance_refreshes": [], "mixed_instances_policy": None, "spot_instances": []}


def test_the_vpc_has_one_subnet_per_az_and_each_asg_spans_its_azs(seeded):
    ec2 = seeded.client("ec2")
    vpc = next(v for v in ec2.describe_vpcs()["Vpcs"] if v["CidrBlock"] == "10.0.0.0/16")
    subnets = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc["VpcId"]]}])["Subnets"]
    assert sorted(s["AvailabilityZone"] for s in subnets) == ["us-west-2a", "us-west-2b", "us-west-2c"]
    assert all(ipaddress.ip_network(s["CidrBlock"]).subnet_of(ipaddress.ip_network("10.0.0.0/16")) for s in subnets)
    zone_of = {s["SubnetId"]: s["AvailabilityZone"] for s in subnets}
    for nodegroup, zones in (("workers", {"us-west-2a", "us-west-2b", "us-west-2c"}),
                             ("batch", {"us-west-2a", "us-west-2c"})):
        group = group_of(seeded, nodegroup)
        assert {zone_of[s] for s in group["VPCZoneIdentifier"].split(",")} == zones
        assert {i["AvailabilityZone"] for i in group["Instances"]} == zones


def test_launch_template_carries_ami_type_bootstrap_and_tags(seeded):
    group = group_of(seeded, "workers")
    data = seeded.client("ec2").describe_launch_template_versions(
        LaunchTemplateId=group["LaunchTemplate"]["LaunchTemplateId"], Versions=["1"])[
        "LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert data["ImageId"] == OLD_AMI and data["InstanceType"] == "m5.large"
    user_data = base64.b64decode(data["UserData"]).decode()
    assert "kind: NodeConfig" in user_data and "name: demo" in user_data
    assert "--node-labels=alpha.eksctl.io/cluster-name=demo,alpha.eksctl.io/nodegroup-name=workers,team=web" \
        in user_data
    assert "eks.amazonaws.com/" not in user_data, "no EKS label on a self-managed group"
    batch = group_of(seeded, "batch")
    batch_data = seeded.client("ec2").describe_launch_template_versions(
        LaunchTemplateId=batch["LaunchTemplate"]["LaunchTemplateId"], Versions=["1"])[
        "LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert "/etc/eks/bootstrap.sh demo" in base64.b64decode(batch_data["UserData"]).decode()


def test_amis_are_registered_with_the_scenarios_names_and_ids(seeded):
    images = seeded.client("ec2").describe_images(Owners=["602401143452"])["Images"]
    assert {i["Name"]: i["ImageId"] for i in images} == {a["name"]: a["id"] for a in seeded.scenario["amis"]}
    named = seeded.client("ec2").describe_images(
        Filters=[{"Name": "name", "Values": ["amazon-eks-node-al2023-x86_64-standard-1.29-*"]}])["Images"]
    assert [i["ImageId"] for i in named] == [OLD_AMI]


def test_ssm_holds_the_recommended_ami_per_version_and_family(seeded):
    ssm = seeded.client("ssm")
    by_name = {a["name"]: a["id"] for a in seeded.scenario["amis"]}
    expected = {
        f"/aws/service/eks/optimized-ami/1.29/{AL2023}/recommended/image_id":
            by_name["amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"],
        f"/aws/service/eks/optimized-ami/1.30/{AL2023}/recommended/image_id":
            by_name["amazon-eks-node-al2023-x86_64-standard-1.30-v20240101"],
        "/aws/service/eks/optimized-ami/1.30/amazon-linux-2/recommended/image_id":
            by_name["amazon-eks-node-1.30-v20240101"],
    }
    for name, ami_id in expected.items():
        parameter = ssm.get_parameter(Name=name)["Parameter"]
        assert (parameter["Value"], parameter["Type"]) == (ami_id, "String")


def test_describe_cluster_points_at_the_simulated_api_server(seeded):
    eks = seeded.client("eks")
    cluster = eks.describe_cluster(name="demo")["cluster"]
    assert cluster["endpoint"] == KUBE_URL
    assert base64.b64decode(cluster["certificateAuthority"]["data"]).decode() == KUBE_CA
    assert (cluster["status"], cluster["version"]) == ("ACTIVE", "1.30")
    # Only managed node groups have an EKS record (their side is tested in test_eks_nodegroups.py).
    assert eks.list_nodegroups(clusterName="demo")["nodegroups"] == [], "self-managed groups are not EKS's"


def test_without_tls_the_cluster_has_no_certificate_authority():
    sim = AwsSim(scenario(), Recorder(), Faults([]))
    with sim:
        sim.seed("http://127.0.0.1:8080", None)
        cluster = sim.client("eks").describe_cluster(name="demo")["cluster"]
    assert cluster["endpoint"] == "http://127.0.0.1:8080"
    assert not cluster.get("certificateAuthority", {}).get("data")


def test_initial_instances_are_running_and_described_for_the_kubernetes_side(seeded):
    instances = seeded.instances()
    assert len(instances) == 8
    workers = [i for i in instances if i["nodegroup"] == "workers"]
    assert {i["state"] for i in instances} == {"running"}
    assert {i["image_id"] for i in workers} == {OLD_AMI}
    assert {i["launch_template_version"] for i in instances} == {1}
    assert {i["instance_type"] for i in instances if i["nodegroup"] == "batch"} == {"c5.xlarge"}
    for instance in instances:
        assert instance["private_dns_name"].endswith(".us-west-2.compute.internal")
        assert instance["asg_name"] == group_of(seeded, instance["nodegroup"])["AutoScalingGroupName"]
    described = {i["InstanceId"]: i for r in seeded.client("ec2").describe_instances()["Reservations"]
                 for i in r["Instances"]}
    for instance in instances:
        assert described[instance["instance_id"]]["PrivateDnsName"] == instance["private_dns_name"]
        assert described[instance["instance_id"]]["Placement"]["AvailabilityZone"] == instance["availability_zone"]


# ------------------------------------------------------------------------------------------------ recording

def test_every_call_is_recorded_by_operation_and_error_code(seeded):
    before = seeded.recorder.aws_calls()
    seeded.client("autoscaling").describe_auto_scaling_groups()
    seeded.client("ec2").describe_instances()
    seeded.client("ssm").get_parameter(Name=f"/aws/service/eks/optimized-ami/1.29/{AL2023}/recommended/image_id")
    seeded.client("eks").describe_cluster(name="demo")
    seeded.client("eks").list_nodegroups(clusterName="demo")
    with pytest.raises(ClientError):
        seeded.client("eks").describe_cluster(name="nope")
    with pytest.raises(ClientError):
        seeded.client("autoscaling").set_desired_capacity(
            AutoScalingGroupName=group_of(seeded, "workers")["AutoScalingGroupName"], DesiredCapacity=99)
    after = seeded.recorder.aws_calls()
    added = {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key, 0)}
    assert added == {
        "DescribeAutoScalingGroups OK": 2,  # one more from group_of()
        "DescribeInstances OK": 1, "GetParameter OK": 1, "DescribeCluster OK": 1, "ListNodegroups OK": 1,
        "DescribeCluster ResourceNotFoundException": 1, "SetDesiredCapacity ValidationError": 1,
    }


# ------------------------------------------------------------------------------------------------ faults

@pytest.mark.parametrize("service, action, code, call", [
    ("autoscaling", "DescribeAutoScalingGroups", "Throttling", lambda c: c.describe_auto_scaling_groups()),
    ("ec2", "DescribeInstances", "RequestLimitExceeded", lambda c: c.describe_instances()),
    ("ssm", "GetParameters", "ThrottlingException", lambda c: c.get_parameters(Names=["/x"])),
    ("eks", "DescribeCluster", "ThrottlingException", lambda c: c.describe_cluster(name="demo")),
])
def test_injected_errors_arrive_in_each_protocols_wire_format(service, action, code, call):
    sim = started(faults=[{"type": "aws_error", "action": action, "code": code, "count": 1}])
    try:
        with pytest.raises(ClientError) as excinfo:
            call(sim.client(service, retries={"mode": "standard", "total_max_attempts": 1}))
        assert excinfo.value.response["Error"]["Code"] == code
        assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        call(sim.client(service))
        calls = sim.recorder.aws_calls()
        assert (calls[f"{action} {code}"], calls[f"{action} OK"]) == (1, 1)
    finally:
        sim.stop()


def test_botocore_retries_injected_throttling_until_the_call_succeeds():
    sim = started(faults=[{"type": "aws_error", "action": "DescribeAutoScalingGroups", "code": "Throttling",
                           "count": 1}])
    try:
        answer = sim.client("autoscaling", retries={"mode": "standard", "total_max_attempts": 3}
                            ).describe_auto_scaling_groups()
        assert answer["ResponseMetadata"]["RetryAttempts"] == 1
        assert len(answer["AutoScalingGroups"]) == 2
    finally:
        sim.stop()


def test_launch_failure_is_a_failed_activity_and_the_launch_goes_to_another_az():
    sim = started(faults=[{"type": "launch_failure", "availability_zone": "us-west-2b",
                           "code": "InsufficientInstanceCapacity", "count": 1}])
    try:
        autoscaling = sim.client("autoscaling")
        name = group_of(sim, "workers")["AutoScalingGroupName"]
        autoscaling.set_desired_capacity(AutoScalingGroupName=name, DesiredCapacity=7)
        sim.tick()
        activities = autoscaling.describe_scaling_activities(AutoScalingGroupName=name)["Activities"]
        failed = [a for a in activities if a["StatusCode"] == "Failed"]
        assert len(failed) == 1
        assert failed[0]["StatusMessage"].startswith(
            "We currently do not have sufficient m5.large capacity in the Availability Zone you requested "
            "(us-west-2b).")
        assert failed[0]["Description"].startswith("Launching a new EC2 instance.  Status Reason: We currently")
        assert '"Availability Zone": "us-west-2b"' in failed[0]["Details"]
        new = [i for i in group_of(sim, "workers")["Instances"] if i["LifecycleState"] == "Pending"]
        assert len(new) == 1 and new[0]["AvailabilityZone"] != "us-west-2b"
        assert any(e["kind"] == "launch_failure" and e["availability_zone"] == "us-west-2b"
                   for e in sim.recorder.events())
    finally:
        sim.stop()


def test_failed_launches_are_retried_on_later_ticks():
    sim = started(
        launch_retry_seconds=0.02,
        nodegroups=[{"name": "gpu", "ami": "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101",
                     "availability_zones": ["us-west-2b"], "min_size": 0, "max_size": 3, "desired_capacity": 1}],
        faults=[{"type": "launch_failure", "availability_zone": "us-west-2b", "count": 2}])
    try:
        autoscaling = sim.client("autoscaling")
        name = group_of(sim, "gpu")["AutoScalingGroupName"]
        autoscaling.set_desired_capacity(AutoScalingGroupName=name, DesiredCapacity=2)
        sim.tick()
        sim.tick()  # within the retry delay: no new attempt
        assert [a["StatusCode"] for a in autoscaling.describe_scaling_activities(
            AutoScalingGroupName=name)["Activities"]][:1] == ["Failed"]
        deadline = time.monotonic() + 2
        while len(group_of(sim, "gpu")["Instances"]) < 2 and time.monotonic() < deadline:
            time.sleep(0.03)
            sim.tick()
        codes = [a["StatusCode"] for a in autoscaling.describe_scaling_activities(
            AutoScalingGroupName=name)["Activities"]]
        assert codes.count("Failed") == 2 and len(group_of(sim, "gpu")["Instances"]) == 2
    finally:
        sim.stop()


def test_autoscaler_fault_fires_once_when_the_old_nodes_are_gone():
    sim = started(faults=[{"type": "autoscaler", "nodegroup": "workers", "increase_by": 2,
                           "when": "old_nodes_gone"}])
    try:
        autoscaling, ec2 = sim.client("autoscaling"), sim.client("ec2")
        group = group_of(sim, "workers")
        name, template_id = group["AutoScalingGroupName"], group["LaunchTemplate"]["LaunchTemplateId"]
        autoscaling.update_auto_scaling_group(AutoScalingGroupName=name, MaxSize=6)
        sim.tick()
        assert group_of(sim, "workers")["DesiredCapacity"] == 6, "old nodes still run: no scale-up yet"
        ec2.create_launch_template_version(LaunchTemplateId=template_id, SourceVersion="1",
                                           LaunchTemplateData={"ImageId": sim.scenario["amis"][1]["id"]})
        autoscaling.update_auto_scaling_group(AutoScalingGroupName=name,
                                              LaunchTemplate={"LaunchTemplateId": template_id, "Version": "2"})
        for instance in group["Instances"]:
            autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=instance["InstanceId"],
                                                                 ShouldDecrementDesiredCapacity=False)
        sim.tick()
        after = group_of(sim, "workers")
        assert (after["DesiredCapacity"], after["MaxSize"]) == (8, 8)
        sim.tick()
        assert group_of(sim, "workers")["DesiredCapacity"] == 8, "fires once"
        assert [e["desired"] for e in sim.recorder.events() if e["kind"] == "autoscaler_scale_up"] == [8]
        activity = autoscaling.describe_scaling_activities(AutoScalingGroupName=name, MaxRecords=1)["Activities"][0]
        assert "explicitly set group desired capacity changing the desired capacity from 6 to 8" in activity["Cause"]
    finally:
        sim.stop()


# ------------------------------------------------------------------------------------------------ lifecycle, speed

def test_one_sandbox_per_process(seeded):
    with pytest.raises(RuntimeError, match="another AwsSim is running"):
        AwsSim(scenario(), Recorder(), Faults([])).start()


def test_stop_closes_the_endpoint():
    sim = AwsSim(scenario(), Recorder(), Faults([]))
    url = sim.start()
    sim.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=2)


def test_a_100_instance_scenario_seeds_in_seconds_and_ticks_cheaply():
    ami = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
    began = time.perf_counter()
    sim = started(nodegroups=[
        {"name": f"group{i}", "ami": ami, "min_size": 10, "max_size": 60, "desired_capacity": 50}
        for i in range(2)])
    seeding = time.perf_counter() - began
    try:
        assert len(sim.instances()) == 100
        assert seeding < 5
        durations = []
        for dummy in range(20):
            began = time.perf_counter()
            sim.tick()
            durations.append(time.perf_counter() - began)
        assert statistics.median(durations) < 0.02
    finally:
        sim.stop()
