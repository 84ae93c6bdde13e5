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

__all__ = ["EKS_AMI_OWNER", "asg_name_for", "bootstrap_user_data", "seed_network", "seed_amis",
           "seed_ssm_parameters", "seed_cluster", "seed_nodegroup", "recommended_parameter_name"]

EKS_AMI_OWNER = "602401143452"  # the account that publishes the EKS optimized AMIs
VPC_CIDR = "10.0.0.0/16"
SUBNET_PREFIX = 20  # 4091 addresses per AZ: room for any scenario


def asg_name_for(cluster: str, nodegroup: str) -> str:
    return f"eks-{cluster}-{nodegroup}"


def recommended_parameter_name(kubernetes_version: str, family: str) -> str:
    return f"/aws/service/eks/optimized-ami/{kubernetes_version}/{family}/recommended/image_id"


def seed_network(ec2: EC2Backend, cluster: str, zones: list[str]) -> tuple[str, dict[str, str]]:
    """A VPC with one subnet per AZ; returns (vpc id, {az: subnet id})."""
    vpc = ec2.create_vpc(VPC_CIDR)
    vpc.add_tags({"Name": f"{cluster}-vpc"})
    blocks = ipaddress.IPv4Network(VPC_CIDR).subnets(new_prefix=SUBNET_PREFIX)
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
                  root_device_type="ebs", root_device_name="/dev/xvda", region_name=zone, boot_mode="uefi-preferred")
        ec2.amis[ami.id] = ami


def seed_ssm_parameters(ssm: SimpleSystemManagerBackend, amis: list[dict[str, Any]]) -> None:
    """The public parameters EKS publishes; moto's PutParameter refuses /aws/ names, so they are written
    the way moto loads its own public parameters."""
    for spec in amis:
        if not spec["recommended"]:
            continue
        name = recommended_parameter_name(spec["kubernetes_version"], spec["family"])
        ssm._parameters[name].append(Parameter(
            account_id=ssm.account_id, name=name, value=spec["id"], parameter_type="String", description=None,
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


def bootstrap_user_data(cluster: str, nodegroup: dict[str, Any], family: str, kube_url: str) -> str:
    """The user data EKS puts in a node group's launch template: nodeadm config on AL2023, bootstrap.sh on
    AL2 (base64, as EC2 stores it)."""
    labels = ",".join(f"{k}={v}" for k, v in
                      {"eks.amazonaws.com/nodegroup": nodegroup["name"], **nodegroup["labels"]}.items())
    if family.startswith("amazon-linux-2023"):
        script = (
            'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n--//\n'
            "Content-Type: application/node.eks.aws\n\n"
            "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n"
            f"    name: {cluster}\n    apiServerEndpoint: {kube_url}\n    cidr: 172.20.0.0/16\n"
            f"  kubelet:\n    flags:\n      - --node-labels={labels}\n"
            f"      - --max-pods={nodegroup['max_pods']}\n--//--\n")
    else:
        script = (f"#!/bin/bash\nset -o xtrace\n/etc/eks/bootstrap.sh {cluster} --apiserver-endpoint {kube_url} "
                  f"--use-max-pods false --kubelet-extra-args '--node-labels={labels} "
                  f"--max-pods={nodegroup['max_pods']}'\n")
    return base64.b64encode(script.encode()).decode()


def seed_nodegroup(ec2: EC2Backend, autoscaling: AutoScalingBackend, eks: EKSBackend, scenario: dict[str, Any],
                   nodegroup: dict[str, Any], subnets: dict[str, str], kube_url: str) -> FakeAutoScalingGroup:
    """The node group's launch template and Auto Scaling group (and EKS node group record when managed)."""
    cluster = scenario["cluster"]["name"]
    ami = next(a for a in scenario["amis"] if a["name"] == nodegroup["ami"])
    name = asg_name_for(cluster, nodegroup["name"])
    ownership = {"eks:cluster-name": cluster, "eks:nodegroup-name": nodegroup["name"],
                 f"kubernetes.io/cluster/{cluster}": "owned"}
    instance_tags = {"Name": f"{cluster}-{nodegroup['name']}-Node", **ownership}
    template = ec2.create_launch_template(
        f"{cluster}-{nodegroup['name']}", f"eks-sandbox node group {nodegroup['name']}",
        {"ImageId": ami["id"], "InstanceType": nodegroup["instance_type"],
         "UserData": Base64EncodedString(bootstrap_user_data(cluster, nodegroup, ami["family"], kube_url)),
         "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 2},
         "TagSpecifications": [{"ResourceType": "instance",
                                "Tags": [{"Key": k, "Value": v} for k, v in instance_tags.items()]}]},
        {"launch-template": dict(ownership)})
    group_tags = {**ownership, "k8s.io/cluster-autoscaler/enabled": "true",
                  f"k8s.io/cluster-autoscaler/{cluster}": "owned"}
    group = autoscaling.create_auto_scaling_group(
        name=name, availability_zones=[], desired_capacity=nodegroup["desired_capacity"],
        max_size=nodegroup["max_size"], min_size=nodegroup["min_size"], launch_config_name=None,
        launch_template={"LaunchTemplateId": template.id, "Version": "1"},
        vpc_zone_identifier=",".join(subnets[z] for z in nodegroup["availability_zones"]),
        default_cooldown=None, health_check_period=None, health_check_type=None, load_balancers=[],
        target_group_arns=[], placement_group=None, termination_policies=[],
        tags=[{"Key": k, "Value": v, "PropagateAtLaunch": True} for k, v in group_tags.items()])
    if nodegroup["managed"]:
        record = eks.create_nodegroup(
            cluster_name=cluster, node_role=f"arn:aws:iam::{eks.account_id}:role/{cluster}-node-role",
            nodegroup_name=nodegroup["name"], subnets=[subnets[z] for z in nodegroup["availability_zones"]],
            scaling_config={"minSize": nodegroup["min_size"], "maxSize": nodegroup["max_size"],
                            "desiredSize": nodegroup["desired_capacity"]},
            labels=dict(nodegroup["labels"]),
            taints=[{"key": t["key"], "value": t["value"], "effect": _eks_taint_effect(t["effect"])}
                    for t in nodegroup["taints"]],
            instance_types=[nodegroup["instance_type"]], launch_template={"id": template.id, "version": "1"},
            version=ami["kubernetes_version"],
            release_version=ami["name"], ami_type="CUSTOM")
        record.resources["autoScalingGroups"] = [{"name": name}]
    return group


def _eks_taint_effect(effect: str) -> str:
    """NoSchedule -> NO_SCHEDULE, as the EKS API spells taint effects."""
    return "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(effect)).upper()
