# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CreateNodegroup as EKS does it, and the launch template versions EKS writes (at creation and at each update).

Sources: the EKS user guide, "Customize managed nodes with launch templates" (awsdocs/amazon-eks-user-guide
latest/ug/nodes/launch-templates.adoc): without a launch template "the Amazon EKS API creates one automatically";
with one, EKS copies it into its own template eks-<uuid> and merges the user's user data with its own ("your user
data is merged with Amazon EKS user data required for nodes to join the cluster"; user data "must be in the MIME
multi-part archive format for Amazon Linux AMIs and TOML format for Bottlerocket AMIs"). The node labels are
those of "Managed node update behavior" (nodegroup-image, nodegroup; sourceLaunchTemplateId/Version only for a
custom launch template) and "Managed node groups" (capacityType); real EKS-generated user data (terraform-aws-
modules/terraform-aws-eks issues #1770, #2297) shows exactly these.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from moto.autoscaling.models import AutoScalingBackend, FakeAutoScalingGroup
from moto.core.types import Base64EncodedString
from moto.ec2.models import EC2Backend
from moto.ec2.models.launch_templates import LaunchTemplate

from ..bootstrap import OS_BOTTLEROCKET, OS_WINDOWS, merge_user_data, os_of_ami_family, render_user_data
from ..conventions import (EKS_IMAGE_LABEL, EKS_NODEGROUP_LABEL, EKS_SOURCE_LT_ID_LABEL, EKS_SOURCE_LT_VERSION_LABEL,
                           managed_resources)
from .records import CUSTOM_AMI, ManagedNodegroup, eks_taint

__all__ = ["ClusterInfo", "create_managed_nodegroup", "custom_ami_user_data", "new_template_version", "update_group"]

METADATA_OPTIONS = {"HttpTokens": "required", "HttpPutResponseHopLimit": 2}

# The user's own launch template for `launch_template: custom`: user data in the format the guide requires, with
# nothing that starts or configures the kubelet (its example is a MIME multi-part archive with a shell script).
_USER_SCRIPT = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="==MYBOUNDARY=="\n\n--==MYBOUNDARY==\n'
                'Content-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash\n'
                'echo "Running custom user data script"\n\n--==MYBOUNDARY==--\n')
_USER_TOML = '[settings.kernel]\nlockdown = "integrity"\n'
# Windows: the guide's example ("Windows user data").
_USER_POWERSHELL = '<powershell>\nWrite-Host "Running custom user data script"\n</powershell>\n'


@dataclass(frozen=True)
class ClusterInfo:
    """What EKS's user data tells a node about its cluster (DescribeCluster's endpoint and CA)."""

    name: str
    endpoint: str
    ca_b64: str | None
    account_id: str
    region: str


def _b64(text: str) -> Base64EncodedString:
    return Base64EncodedString(base64.b64encode(text.encode()).decode())


def _text(user_data: Any) -> str:
    return base64.b64decode(str(user_data)).decode() if user_data else ""


def _eks_user_data(cluster: ClusterInfo, spec: dict[str, Any], ami: dict[str, Any],
                   source: tuple[LaunchTemplate, int] | None) -> str:
    """EKS's part of the user data, in the AMI family's format, with the labels EKS writes."""
    labels = {EKS_IMAGE_LABEL: ami["id"], **managed_resources(cluster.name, spec)[1].node_labels}
    if source is not None:
        template, number = source
        labels.update({EKS_SOURCE_LT_ID_LABEL: template.id, EKS_SOURCE_LT_VERSION_LABEL: str(number)})
    labels.update(spec["labels"])
    return render_user_data(os_of_ami_family(ami["family"]), cluster_name=cluster.name,
                            api_server_endpoint=cluster.endpoint, certificate_authority=cluster.ca_b64,
                            labels=labels, taints=spec["taints"], max_pods=spec["max_pods"])


def custom_ami_user_data(cluster: ClusterInfo, spec: dict[str, Any], ami: dict[str, Any]) -> str:
    """The user data of a node group whose launch template names its AMI: the whole bootstrap, the user's to write
    ("Customizing managed nodes with launch templates", Specifying an AMI: "When specifying an AMI, Amazon EKS
    doesn't merge any user data. Rather, you're responsible for supplying the required bootstrap commands for nodes
    to join the cluster"), with the labels eksctl's documented custom AMI example passes (userdocs/src/usage/
    nodegroup-managed.md: --node-labels=eks.amazonaws.com/nodegroup=<group>,eks.amazonaws.com/nodegroup-image=<ami>)."""
    labels = {EKS_NODEGROUP_LABEL: spec["name"], EKS_IMAGE_LABEL: ami["id"], **spec["labels"]}
    return render_user_data(os_of_ami_family(ami["family"]), cluster_name=cluster.name,
                            api_server_endpoint=cluster.endpoint, certificate_authority=cluster.ca_b64,
                            labels=labels, taints=spec["taints"], max_pods=spec["max_pods"])


def _template_data(cluster: ClusterInfo, spec: dict[str, Any], ami: dict[str, Any],
                   source: tuple[LaunchTemplate, int] | None) -> dict[str, Any]:
    """The data of a version of EKS's own launch template: its own settings, or a copy of the user's template
    version with the AMI added and the user data merged; with a custom AMI, the user's version as it is (its AMI,
    its user data: "Amazon EKS doesn't merge any user data")."""
    if spec["launch_template"] == CUSTOM_AMI:
        template, number = source
        return dict(template.get_version(number).data)
    eks_part = _eks_user_data(cluster, spec, ami, source)
    if source is None:
        tags = [{"Key": "eks:cluster-name", "Value": cluster.name},
                {"Key": "eks:nodegroup-name", "Value": spec["name"]}]
        # Assumption: EKS's template tags instances and volumes (terraform-aws-eks issue #3022 reports those two
        # resource types in it); the values are EKS's node-group tags.
        return {"ImageId": ami["id"], "InstanceType": spec["instance_type"], "UserData": _b64(eks_part),
                "MetadataOptions": dict(METADATA_OPTIONS),
                "TagSpecifications": [{"ResourceType": kind, "Tags": [dict(t) for t in tags]}
                                      for kind in ("instance", "volume")]}
    template, number = source
    data = dict(template.get_version(number).data)
    data["ImageId"] = ami["id"]
    data["UserData"] = _b64(merge_user_data(_text(data.get("UserData")), eks_part))
    return data


def create_managed_nodegroup(ec2: EC2Backend, autoscaling: AutoScalingBackend, cluster: ClusterInfo,
                             spec: dict[str, Any], ami: dict[str, Any], subnets: dict[str, str]
                             ) -> tuple[ManagedNodegroup, FakeAutoScalingGroup]:
    """The launch template(s), the Auto Scaling group and EKS's record of a new managed node group."""
    nodegroup_uuid, made = managed_resources(cluster.name, spec)
    source = None
    if spec["launch_template"] == "custom":
        user_parts = {OS_BOTTLEROCKET: _USER_TOML, OS_WINDOWS: _USER_POWERSHELL}
        user_part = user_parts.get(os_of_ami_family(ami["family"]), _USER_SCRIPT)
        custom = ec2.create_launch_template(
            f"{spec['name']}-custom", f"launch template of node group {spec['name']}",
            {"InstanceType": spec["instance_type"], "MetadataOptions": dict(METADATA_OPTIONS),
             "UserData": _b64(user_part)}, {})
        source = (custom, 1)
    elif spec["launch_template"] == CUSTOM_AMI:
        custom = ec2.create_launch_template(
            f"{spec['name']}-custom-ami", f"launch template of node group {spec['name']}",
            {"ImageId": ami["id"], "InstanceType": spec["instance_type"], "MetadataOptions": dict(METADATA_OPTIONS),
             "UserData": _b64(custom_ami_user_data(cluster, spec, ami))}, {})
        source = (custom, 1)
    zones = spec["availability_zones"]
    template = ec2.create_launch_template(
        made.launch_template_name, "", _template_data(cluster, spec, ami, source),
        {"launch-template": {"eks:cluster-name": cluster.name, "eks:nodegroup-name": spec["name"]}})
    group = autoscaling.create_auto_scaling_group(
        name=made.asg_name, availability_zones=[], desired_capacity=spec["desired_capacity"],
        max_size=spec["max_size"], min_size=spec["min_size"], launch_config_name=None,
        launch_template={"LaunchTemplateId": template.id, "Version": "1"},
        vpc_zone_identifier=",".join(subnets[z] for z in zones), default_cooldown=None, health_check_period=None,
        health_check_type=None, load_balancers=[], target_group_arns=[], placement_group=None,
        termination_policies=[],
        tags=[{"Key": k, "Value": v, "PropagateAtLaunch": True} for k, v in made.asg_tags.items()])
    record = ManagedNodegroup(
        name=spec["name"], cluster=cluster.name, uuid=nodegroup_uuid,
        arn=f"arn:aws:eks:{cluster.region}:{cluster.account_id}:nodegroup/{cluster.name}/{spec['name']}/"
            f"{nodegroup_uuid}",
        spec=spec, version=ami["kubernetes_version"], release_version="", ami=ami,
        subnets=[subnets[z] for z in zones],
        node_role=f"arn:aws:iam::{cluster.account_id}:role/{cluster.name}-node-role",
        asg_name=made.asg_name, template_id=template.id, template_version=1,
        source_template=None if source is None else {"id": source[0].id, "name": source[0].name, "version": 1},
        min_size=spec["min_size"], max_size=spec["max_size"], update_config=_update_config(spec["update_config"]),
        labels=dict(spec["labels"]), taints=[eks_taint(t) for t in spec["taints"]])
    record.release_version = record.release_of(ami)
    return record, group


def new_template_version(ec2: EC2Backend, cluster: ClusterInfo, record: ManagedNodegroup, ami: dict[str, Any],
                         source_version: int | None) -> int:
    """Setup phase step 1 ("Managed node update behavior"): "a new Amazon EC2 launch template version ... uses
    the target AMI or a custom launch template version for the update". Returns its number."""
    source = None
    if record.source_template is not None:
        source = (ec2.get_launch_template(record.source_template["id"]), source_version)
    template = ec2.get_launch_template(record.template_id)
    return template.create_version(_template_data(cluster, record.spec, ami, source), "").number


def _update_config(config: dict[str, Any]) -> dict[str, Any]:
    """The scenario's update_config as NodegroupUpdateConfig."""
    if config["max_unavailable_percentage"] is not None:
        size = {"maxUnavailablePercentage": config["max_unavailable_percentage"]}
    else:
        size = {"maxUnavailable": config["max_unavailable"]}
    return {**size, "updateStrategy": config["update_strategy"]}


def update_group(autoscaling: AutoScalingBackend, name: str, launch_template: dict[str, str] | None = None,
                 **sizes: int | None) -> None:
    """UpdateAutoScalingGroup as EKS calls it: min_size, max_size, desired_capacity and/or launch_template."""
    sizes = {"min_size": None, "max_size": None, "desired_capacity": None, **sizes}
    autoscaling.update_auto_scaling_group(
        name=name, availability_zones=[], launch_config_name=None, launch_template=launch_template or {},
        vpc_zone_identifier=None, health_check_period=None, health_check_type=None, **sizes)
