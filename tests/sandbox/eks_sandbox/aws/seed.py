# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Creates a scenario's AWS objects directly in moto's backends (no HTTP: nothing to record, and moto's API
cannot choose AMI ids or write /aws/service parameters)."""

from __future__ import annotations

import base64
import ipaddress
from typing import Any

from moto.autoscaling.models import AutoScalingBackend, FakeAutoScalingGroup
from moto.core.types import Base64EncodedString
from moto.core.utils import utcnow
from moto.ec2.models import EC2Backend
from moto.ec2.models.amis import Ami
from moto.eks.models import EKSBackend
from moto.ssm.models import Parameter, SimpleSystemManagerBackend

from ..conventions import node_group_labels, node_user_data, self_managed_resources

__all__ = ["EKS_AMI_OWNER", "seed_network", "seed_amis", "seed_ssm_parameters", "seed_cluster",
           "seed_self_managed_nodegroup", "recommended_parameter_name"]

EKS_AMI_OWNER = "602401143452"  # the account that publishes the EKS optimized AMIs
VPC_CIDR = "10.0.0.0/16"
SUBNET_PREFIX = 20  # 4091 addresses per AZ: room for any scenario


def recommended_parameter_name(kubernetes_version: str, family: str, value: str = "image_id") -> str:
    """The SSM public parameter of the recommended AMI (value image_id, or release_version on AL2/AL2023,
    image_version on Bottlerocket; Windows publishes image_id only)."""
    if family.startswith("bottlerocket/"):
        return f"/aws/service/bottlerocket/aws-k8s-{kubernetes_version}/{family.split('/', 1)[1]}/latest/{value}"
    if family.startswith("windows/"):
        # "Retrieve recommended Microsoft Windows AMI IDs": /aws/service/ami-windows-latest/Windows_Server-<release>-
        # English-<installation option>-EKS_Optimized-<k8s>/image_id (image_id only).
        edition, year = family.split("/", 1)[1].split("-")
        return (f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-{edition.capitalize()}-"
                f"EKS_Optimized-{kubernetes_version}/{value}")
    return f"/aws/service/eks/optimized-ami/{kubernetes_version}/{family}/recommended/{value}"


def seed_network(ec2: EC2Backend, cluster: str, zones: list[str], cidr: str = VPC_CIDR) -> tuple[str, dict[str, str]]:
    """A VPC with one subnet per AZ; returns (vpc id, {az: subnet id})."""
    vpc = ec2.create_vpc(cidr)
    vpc.add_tags({"Name": f"{cluster}-vpc"})
    blocks = ipaddress.IPv4Network(cidr).subnets(new_prefix=SUBNET_PREFIX)
    subnets = {}
    for zone, block in zip(zones, blocks):
        subnet = ec2.create_subnet(vpc.id, str(block), availability_zone=zone)
        subnet.add_tags({"Name": f"{cluster}-{zone}", f"kubernetes.io/cluster/{cluster}": "shared"})
        subnets[zone] = subnet.id
    return vpc.id, subnets


def seed_amis(ec2: EC2Backend, amis: list[dict[str, Any]], zone: str) -> None:
    for spec in amis:
        ami = Ami(ec2, spec["id"], name=spec["name"], owner_id=EKS_AMI_OWNER, owner_alias="amazon",
                  description=f"EKS Kubernetes Worker AMI ({spec['family']}) for k8s {spec['kubernetes_version']}",
                  virtualization_type="hvm", architecture="arm64" if "arm64" in spec["family"] else "x86_64",
                  # DescribeImages: Platform "windows" for Windows AMIs, absent otherwise (botocore Image.Platform)
                  platform="windows" if spec["family"].startswith("windows/") else None,
                  root_device_type="ebs", root_device_name="/dev/xvda", region_name=zone, boot_mode="uefi-preferred")
        ec2.amis[ami.id] = ami


def seed_ssm_parameters(ssm: SimpleSystemManagerBackend, amis: list[dict[str, Any]]) -> None:
    """The public parameters EKS publishes; moto's PutParameter refuses /aws/ names, so they are written
    the way moto loads its own public parameters."""
    for spec in amis:
        if not spec["recommended"]:
            continue
        values = {"image_id": spec["id"]}
        if spec["family"].startswith("bottlerocket/"):
            # Bottlerocket publishes image_version instead ("1.20.3-5d9ac849"), which eksctl's managed upgrade reads
            # as the release (eksctl-io/eksctl pkg/ami/ssm_resolver.go, pkg/actions/nodegroup/upgrade_test.go).
            values["image_version"] = spec["release_version"]
        elif not spec["family"].startswith("windows/"):  # Windows: the AMI id alone; its name ends with the release
            values["release_version"] = spec["release_version"]
        for value_name, value in values.items():
            name = recommended_parameter_name(spec["kubernetes_version"], spec["family"], value_name)
            ssm._parameters[name].append(Parameter(
                account_id=ssm.account_id, name=name, value=value, parameter_type="String", description=None,
                allowed_pattern=None, keyid=None, last_modified_date=utcnow(), version=1, data_type="text"))


def seed_cluster(eks: EKSBackend, scenario: dict[str, Any], vpc_id: str, subnet_ids: list[str],
                 kube_url: str, kube_ca_pem: str | None) -> None:
    cluster = eks.create_cluster(
        name=scenario["cluster"]["name"],
        role_arn=f"arn:aws:iam::{eks.account_id}:role/{scenario['cluster']['name']}-cluster-role",
        resources_vpc_config={"subnetIds": subnet_ids, "securityGroupIds": [], "vpcId": vpc_id,
                              "endpointPublicAccess": True, "endpointPrivateAccess": False,
                              "publicAccessCidrs": ["0.0.0.0/0"]},
        version=scenario["cluster"]["kubernetes_version"])
    cluster.endpoint = kube_url
    cluster.certificate_authority = (
        {"data": base64.b64encode(kube_ca_pem.encode()).decode()} if kube_ca_pem else {})


def seed_self_managed_nodegroup(ec2: EC2Backend, autoscaling: AutoScalingBackend, scenario: dict[str, Any],
                                nodegroup: dict[str, Any], subnets: dict[str, str], kube_url: str,
                                kube_ca_pem: str | None) -> FakeAutoScalingGroup:
    """A self-managed node group's launch template and Auto Scaling group, as eksctl, terraform-aws-eks or the
    CloudFormation template make them (aws/conventions.py)."""
    cluster = scenario["cluster"]["name"]
    ami = next(a for a in scenario["amis"] if a["name"] == nodegroup["ami"])
    made = self_managed_resources(cluster, nodegroup)
    user_data = node_user_data(scenario, nodegroup, ami["family"], kube_url, kube_ca_pem,
                               node_group_labels(cluster, nodegroup))
    template = ec2.create_launch_template(
        made.launch_template_name, f"node group {nodegroup['name']} of cluster {cluster}",
        {"ImageId": ami["id"], "InstanceType": nodegroup["instance_type"], "UserData": Base64EncodedString(user_data),
         "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 2}}, {})
    spec = {"LaunchTemplateId": template.id, "Version": "1"}
    mixed = mixed_instances_policy(scenario, nodegroup, spec)
    return autoscaling.create_auto_scaling_group(
        name=made.asg_name, availability_zones=[], desired_capacity=nodegroup["desired_capacity"],
        max_size=nodegroup["max_size"], min_size=nodegroup["min_size"], launch_config_name=None,
        launch_template=None if mixed else spec, mixed_instances_policy=mixed,
        vpc_zone_identifier=",".join(subnets[z] for z in nodegroup["availability_zones"]),
        default_cooldown=None, health_check_period=None, health_check_type=None, load_balancers=[],
        target_group_arns=[], placement_group=None, termination_policies=[],
        # The scenario's tags too, propagated at launch as the tools do (eksctl's nodeGroups[].tags, terraform-aws-eks's
        # self-managed-node-group `tags`, CloudFormation stack tags); the tool's own tags win a clash.
        tags=[{"Key": k, "Value": v, "PropagateAtLaunch": True}
              for k, v in {**nodegroup["tags"], **made.asg_tags}.items()])


def mixed_instances_policy(scenario: dict[str, Any], nodegroup: dict[str, Any],
                           spec: dict[str, str]) -> dict[str, Any] | None:
    """The scenario's mixed_instances as the API's MixedInstancesPolicy (None without one)."""
    mixed = nodegroup.get("mixed_instances")
    if not mixed:
        return None
    ami_ids = {a["name"]: a["id"] for a in scenario["amis"]}
    overrides = []
    for override in mixed["overrides"]:
        entry = {"InstanceType": override["instance_type"]}
        if override["weighted_capacity"] is not None:
            entry["WeightedCapacity"] = str(override["weighted_capacity"])
        if override["ami"] is not None:
            entry["ImageId"] = ami_ids[override["ami"]]
        overrides.append(entry)
    return {"LaunchTemplate": {"LaunchTemplateSpecification": dict(spec), "Overrides": overrides},
            "InstancesDistribution": {
                "OnDemandAllocationStrategy": "prioritized",
                "OnDemandBaseCapacity": mixed["on_demand_base_capacity"],
                "OnDemandPercentageAboveBaseCapacity": mixed["on_demand_percentage_above_base_capacity"],
                "SpotAllocationStrategy": mixed["spot_allocation_strategy"]}}
