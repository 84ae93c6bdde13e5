# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Amazon EC2 API calls (the client is ``aws_client(params, "ec2")``).

Each function is one call, its errors translated by aws_call; what to make of an answer is the caller's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import aws_call
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.shapes import paginate


@aws_call(lambda ec2, instance_ids: "describe %d EC2 instances" % len(instance_ids))
def describe_instances(ec2: Any, instance_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The instances of those ids (all pages), flattened out of their reservations. DescribeInstances fails as a
    whole (InvalidInstanceID.NotFound) when it does not know one of them."""
    reservations = paginate(ec2, "describe_instances", "Reservations", InstanceIds=list(instance_ids))
    return [instance for reservation in reservations for instance in reservation.get("Instances", [])]


@aws_call("describe launch template {lt_id}")
def describe_launch_template(ec2: Any, lt_id: str) -> dict[str, Any] | None:
    """The launch template of that id, or None."""
    templates = ec2.describe_launch_templates(LaunchTemplateIds=[lt_id])["LaunchTemplates"]
    return templates[0] if templates else None


@aws_call("describe launch template {lt_name}")
def describe_launch_template_named(ec2: Any, lt_name: str) -> dict[str, Any] | None:
    """The launch template of that name, or None."""
    templates = ec2.describe_launch_templates(LaunchTemplateNames=[lt_name])["LaunchTemplates"]
    return templates[0] if templates else None


@aws_call("describe version {version} of launch template {lt_id}")
def describe_launch_template_version(ec2: Any, lt_id: str, version: int | str, resolve_alias: bool = False
                                     ) -> dict[str, Any] | None:
    """One version (a number, "$Latest" or "$Default") of the launch template, or None. ``resolve_alias``: an ImageId
    given as a Systems Manager parameter (resolve:ssm:...) is answered with the AMI id it resolves to now."""
    versions = ec2.describe_launch_template_versions(
        LaunchTemplateId=lt_id, Versions=[str(version)], ResolveAlias=resolve_alias)["LaunchTemplateVersions"]
    return versions[0] if versions else None


@aws_call("describe versions {versions} of launch template {lt_id}")
def describe_launch_template_versions(ec2: Any, lt_id: str, versions: Iterable[str]) -> list[dict[str, Any]]:
    """Those versions (numbers, "$Latest", "$Default") of one launch template, in one call, an ImageId given as a
    Systems Manager parameter answered with the AMI id it resolves to now (ResolveAlias)."""
    return ec2.describe_launch_template_versions(LaunchTemplateId=lt_id, Versions=sorted(set(versions)),
                                                 ResolveAlias=True)["LaunchTemplateVersions"]


# 200 values a filter: the most EC2 takes in one filter (apache/druid pull 1954 met the limit; the API reference
# names no number), so the ids are asked 200 a call.
IMAGE_IDS_PER_CALL = 200


@aws_call(lambda ec2, image_ids: "describe %d AMIs" % len(image_ids))
def describe_images(ec2: Any, image_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The AMIs of those ids this account can see, 200 a call; an id it cannot see (deregistered, not shared) is
    left out rather than failing the call, as a filter does (ImageIds would fail it with InvalidAMIID.NotFound)."""
    images = []
    for start in range(0, len(image_ids), IMAGE_IDS_PER_CALL):
        images.extend(ec2.describe_images(
            Filters=[dict(Name="image-id", Values=list(image_ids[start:start + IMAGE_IDS_PER_CALL]))])["Images"])
    return images


@aws_call("describe AMI {image_id}")
def describe_image(ec2: Any, image_id: str) -> dict[str, Any] | None:
    """The AMI of that id, or None when this account cannot see it."""
    images = ec2.describe_images(ImageIds=[image_id])["Images"]
    return images[0] if images else None


@aws_call("describe instance types {instance_types}")
def describe_instance_type_architectures(ec2: Any, instance_types: Iterable[str]) -> dict[str, list[str]]:
    """{instance type: the architectures it supports} of the types that exist (a group has a few: one page)."""
    answer = ec2.describe_instance_types(InstanceTypes=sorted(set(instance_types)))
    return dict((described["InstanceType"], (described.get("ProcessorInfo") or {}).get("SupportedArchitectures") or [])
                for described in answer["InstanceTypes"])


@aws_call("create a version of launch template {lt_id} from version {source_version} with AMI {image_id}")
def create_launch_template_version(ec2: Any, lt_id: str, source_version: int | str, image_id: str, description: str) -> int:
    """A new version that is ``source_version`` with only the AMI replaced; returns its number."""
    created = ec2.create_launch_template_version(
        LaunchTemplateId=lt_id, SourceVersion=str(source_version), VersionDescription=description,
        LaunchTemplateData=dict(ImageId=image_id))["LaunchTemplateVersion"]
    return int(created["VersionNumber"])


@aws_call("set the default version of launch template {lt_id} to {version}")
def set_default_launch_template_version(ec2: Any, lt_id: str, version: int | str) -> None:
    """ModifyLaunchTemplate's DefaultVersion."""
    ec2.modify_launch_template(LaunchTemplateId=lt_id, DefaultVersion=str(version))
