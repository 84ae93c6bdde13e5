# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every node group of a region's EKS clusters, one record each, for the eks_nodegroups inventory plugin (issue 28
item 1). Kinds and owners as discovery and the setup phase tell them (SPEC K1, W1: nodegroup/kinds.py,
nodegroup/ownership.py); a record's ``nodegroup_name`` is the name discovery finds the group by.

The AWS requests are bounded per region, never per Auto Scaling group (docs/inventory.md):

- ListClusters: one page per 100 clusters; DescribeCluster and ListNodegroups: one per cluster chosen;
- DescribeNodegroup: one per EKS managed node group (EKS has no batch describe);
- DescribeAutoScalingGroups: the region's groups in pages of 100, read once and sorted to their cluster by its tag,
  rather than one filtered read per cluster: every self-managed kind tags kubernetes.io/cluster/<name>, and a region
  holds far fewer than 100 groups per cluster, so ceil(groups / 100) pages cost less than one request per cluster;
- DescribeLaunchTemplateVersions: one per launch template of the self-managed groups kept, with all their versions;
- DescribeImages: one per 200 AMIs those versions launch (their names tell the Kubernetes version).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import ec2 as ec2_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import eks as eks_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.shapes import aws_tags_to_dict
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import kinds
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.amis import ami_kubernetes_version
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.ownership import group_owner

# EKS owns a managed node group's Auto Scaling group and launch template (SPEC K3).
EKS_OWNER = "EKS"


def name_matches(name: str, patterns: Iterable[str]) -> bool:
    """Whether ``name`` matches one of the shell-style ``patterns`` (case-sensitive, as EKS names are)."""
    return any(fnmatchcase(name, pattern) for pattern in patterns)


def tags_match(tags: Mapping[str, str], wanted: Mapping[str, str | None]) -> bool:
    """Whether ``tags`` carry every key of ``wanted``, each with a value matching its shell-style pattern (None:
    any value)."""
    return all(key in tags and (pattern is None or fnmatchcase(tags[key], str(pattern)))
               for key, pattern in wanted.items())


def account_of(cluster_arn: str) -> str:
    """The account id of an EKS ARN: arn:<partition>:eks:<region>:<account>:cluster/<name>."""
    return cluster_arn.split(":")[4]


def _cluster_vars(cluster: Mapping[str, Any], region: str) -> dict[str, Any]:
    return dict(cluster_name=cluster["name"], aws_region=region, aws_account_id=account_of(cluster["arn"]),
                cluster_arn=cluster["arn"], cluster_version=cluster.get("version"))


def managed_record(cluster: Mapping[str, Any], region: str, nodegroup: Mapping[str, Any]) -> dict[str, Any]:
    """The host variables of an EKS managed node group from DescribeCluster's and DescribeNodegroup's answers."""
    groups = ((nodegroup.get("resources") or {}).get("autoScalingGroups") or [{}])
    template = nodegroup.get("launchTemplate")
    return dict(
        _cluster_vars(cluster, region), nodegroup_name=nodegroup["nodegroupName"], asg_name=groups[0].get("name"),
        kind=kinds.MANAGED, owner=EKS_OWNER, nodegroup_status=nodegroup.get("status"),
        nodegroup_kubernetes_version=nodegroup.get("version"), nodegroup_release_version=nodegroup.get("releaseVersion"),
        nodegroup_ami_type=nodegroup.get("amiType"), nodegroup_image_id=None, nodegroup_image_name=None,
        launch_template=dict(id=template.get("id"), name=template.get("name"), version=template.get("version"))
        if template else None,
        nodegroup_tags=dict(nodegroup.get("tags") or {}))


def _launch_template(asg: Mapping[str, Any]) -> dict[str, Any] | None:
    """{id, name, version} of the launch template a group launches from (its MixedInstancesPolicy's too), or None
    for a launch configuration."""
    spec = asg.get("LaunchTemplate") or ((asg.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}).get(
        "LaunchTemplateSpecification")
    if not spec:
        return None
    return dict(id=spec.get("LaunchTemplateId"), name=spec.get("LaunchTemplateName"),
                version=str(spec.get("Version") or "$Default"))


def self_managed_record(cluster: Mapping[str, Any], region: str, asg: Mapping[str, Any]) -> dict[str, Any]:
    """The host variables of a self-managed node group from its Auto Scaling group (its image filled later)."""
    tags = aws_tags_to_dict(asg.get("Tags"))
    asg_name = asg["AutoScalingGroupName"]
    owner = group_owner(asg_name, tags, cluster["name"])
    return dict(
        _cluster_vars(cluster, region), nodegroup_name=kinds.self_managed_name(asg_name, tags, cluster["name"]),
        asg_name=asg_name, kind=kinds.kind_of(tags), owner=owner.tool if owner else None, nodegroup_status=None,
        nodegroup_kubernetes_version=None, nodegroup_release_version=None, nodegroup_ami_type=None,
        nodegroup_image_id=None, nodegroup_image_name=None, launch_template=_launch_template(asg),
        nodegroup_tags=tags)


def chosen_version(versions: Sequence[Mapping[str, Any]], version: str) -> Mapping[str, Any] | None:
    """Which of a template's described versions a group's version string ("3", "$Latest", "$Default") names."""
    if version == "$Latest":
        return max(versions, key=lambda described: described["VersionNumber"], default=None)
    if version == "$Default":
        return next((described for described in versions if described.get("DefaultVersion")), None)
    return next((described for described in versions if str(described["VersionNumber"]) == version), None)


def fill_images(ec2: Any, records: Sequence[dict[str, Any]]) -> None:
    """Set each self-managed record's AMI (the image id of the launch template version its group launches) and the
    Kubernetes version its name tells (EKS-optimized AMIs; null for another AMI): one DescribeLaunchTemplateVersions
    per launch template, one DescribeImages per 200 AMIs."""
    wanted: dict[str, set[str]] = {}
    for record in records:
        template = record["launch_template"]
        if record["kind"] != kinds.MANAGED and template and template["id"]:
            wanted.setdefault(template["id"], set()).add(template["version"])
    described = dict((lt_id, ec2_api.describe_launch_template_versions(ec2, lt_id, versions))
                     for lt_id, versions in sorted(wanted.items()))
    for record in records:
        template = record["launch_template"]
        if template and template["id"] in described:
            version = chosen_version(described[template["id"]], template["version"])
            record["nodegroup_image_id"] = (version or {}).get("LaunchTemplateData", {}).get("ImageId")
    image_ids = sorted(set(record["nodegroup_image_id"] for record in records if record["nodegroup_image_id"]))
    names = dict((image["ImageId"], image.get("Name")) for image in ec2_api.describe_images(ec2, image_ids)) \
        if image_ids else {}
    for record in records:
        if record["nodegroup_image_id"]:
            record["nodegroup_image_name"] = names.get(record["nodegroup_image_id"])
            version = ami_kubernetes_version(record["nodegroup_image_name"])
            record["nodegroup_kubernetes_version"] = "%d.%d" % version if version else None


def region_nodegroups(client: Callable[[str], Any], region: str, clusters: Iterable[str],
                      tags: Mapping[str, str | None]) -> list[dict[str, Any]]:
    """The records of every node group, of every kind, of the region's clusters whose names match ``clusters``
    (shell-style patterns) and whose tags match ``tags`` (tags_match); ``client(service)``: the region's client."""
    eks = client("eks")
    names = [name for name in eks_api.list_clusters(eks) if name_matches(name, clusters)]
    described = dict((name, eks_api.describe_cluster(eks, name)) for name in sorted(names))
    records = [managed_record(cluster, region, eks_api.describe_nodegroup(eks, name, nodegroup))
               for name, cluster in described.items() for nodegroup in eks_api.list_nodegroups(eks, name)]
    if described:
        for asg in autoscaling_api.describe_all_auto_scaling_groups(client("autoscaling")):
            group_tags = aws_tags_to_dict(asg.get("Tags"))
            cluster = described.get(kinds.tagged_cluster(group_tags) or "")
            if cluster and kinds.kind_of(group_tags) != kinds.MANAGED:
                records.append(self_managed_record(cluster, region, asg))
    records = [record for record in records if tags_match(record["nodegroup_tags"], tags)]
    if any(record["kind"] != kinds.MANAGED for record in records):
        fill_images(client("ec2"), records)
    return records
