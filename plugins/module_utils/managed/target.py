# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The target of an EKS managed node group update (SPEC K3, K5, K6): the options checked, and the
UpdateNodegroupVersion request they make, from DescribeNodegroup's and DescribeCluster's answers. Pure: nothing here
talks to AWS."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
import re

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError, invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.amis import check_kubernetes_version
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.parallelism import resolve_max_unavailable

TARGET_OPTIONS = ("kubernetes_version", "release_version", "launch_template_version", "image_id")
# DescribeUpdate no more often than this while following an update (the sandbox's tests poll this fast).
MIN_POLL_INTERVAL = 0.05
# DescribeNodegroup statuses in which EKS takes no update.
_NOT_UPDATABLE_STATUSES = frozenset(["CREATING", "DELETING", "CREATE_FAILED", "DELETE_FAILED"])
# The family part of the EKS-optimized AMI SSM parameters, per DescribeNodegroup amiType. Bottlerocket,
# Windows and CUSTOM publish no .../recommended/release_version parameter in this tree (Bottlerocket's is below).
_SSM_FAMILY_BY_AMI_TYPE = {
    "AL2_x86_64": "amazon-linux-2",
    "AL2_x86_64_GPU": "amazon-linux-2-gpu",
    "AL2_ARM_64": "amazon-linux-2-arm64",
    "AL2023_x86_64_STANDARD": "amazon-linux-2023/x86_64/standard",
    "AL2023_ARM_64_STANDARD": "amazon-linux-2023/arm64/standard",
    "AL2023_x86_64_NEURON": "amazon-linux-2023/x86_64/neuron",
    "AL2023_x86_64_NVIDIA": "amazon-linux-2023/x86_64/nvidia",
    "AL2023_ARM_64_NVIDIA": "amazon-linux-2023/arm64/nvidia",
}
# Bottlerocket: a group's releaseVersion is the Bottlerocket version ("1.20.3-5d9ac849"), and the newest one for a
# Kubernetes version is published as /aws/service/bottlerocket/aws-k8s-<k8s>[-fips]/<x86_64|arm64>/latest/image_version
# (eksctl-io/eksctl pkg/ami/ssm_resolver.go MakeManagedSSMParameterName, which eksctl's managed node group upgrade
# reads; its NVIDIA types share the plain variant's parameter there).
_BOTTLEROCKET_VARIANT_BY_AMI_TYPE = {
    "BOTTLEROCKET_x86_64": ("", "x86_64"),
    "BOTTLEROCKET_x86_64_NVIDIA": ("", "x86_64"),
    "BOTTLEROCKET_ARM_64": ("", "arm64"),
    "BOTTLEROCKET_ARM_64_NVIDIA": ("", "arm64"),
    "BOTTLEROCKET_x86_64_FIPS": ("-fips", "x86_64"),
    "BOTTLEROCKET_x86_64_NVIDIA_FIPS": ("-fips", "x86_64"),
    "BOTTLEROCKET_ARM_64_FIPS": ("-fips", "arm64"),
    "BOTTLEROCKET_ARM_64_NVIDIA_FIPS": ("-fips", "arm64"),
}
# Windows: a group's releaseVersion is "<k8s major>.<minor>-<release date>" (EKS user guide, "Retrieve Windows AMI
# version information": "k8s_major_version.k8s_minor_version-release_date", e.g. 1.31-2024.11.12). SSM publishes
# the newest AMI's id only, /aws/service/ami-windows-latest/Windows_Server-<year>-English-<Core|Full>-EKS_Optimized-
# <k8s>/image_id ("Retrieve recommended Microsoft Windows AMI IDs"; eksctl pkg/ami/ssm_resolver.go), and that AMI's
# name ends with the release (eksctl pkg/ami/auto_resolver.go looks them up as
# Windows_Server-2022-English-Core-EKS_Optimized-<k8s>-*).
_WINDOWS_IMAGE_BY_AMI_TYPE = {
    "WINDOWS_CORE_2019_x86_64": "Windows_Server-2019-English-Core",
    "WINDOWS_FULL_2019_x86_64": "Windows_Server-2019-English-Full",
    "WINDOWS_CORE_2022_x86_64": "Windows_Server-2022-English-Core",
    "WINDOWS_FULL_2022_x86_64": "Windows_Server-2022-English-Full",
    "WINDOWS_CORE_2025_x86_64": "Windows_Server-2025-English-Core",
    "WINDOWS_FULL_2025_x86_64": "Windows_Server-2025-English-Full",
}
_WINDOWS_RELEASE_IN_NAME = re.compile(r"-EKS_Optimized-(\d+\.\d+-\d{4}\.\d{2}\.\d{2})$")
# Amazon Linux release versions: <k8s major>.<minor>.<patch>-<YYYYMMDD> (EKS user guide, AMI versions).
_AMAZON_LINUX_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)-(\d{8})$")


def validate_options(params: Mapping[str, Any]) -> None:
    """Refuse inconsistent options before any AWS call: exactly one target, parallelism, timings."""
    given = [name for name in TARGET_OPTIONS if params[name] is not None]
    if len(given) != 1:
        raise invalid_parameter("/".join(given or TARGET_OPTIONS), "Exactly one of %s is required (given: %s)"
                                % (", ".join(TARGET_OPTIONS), ", ".join(given) or "none"))
    if params["kubernetes_version"] is not None:
        check_kubernetes_version(params["kubernetes_version"])
    if params["release_version"] is not None and not params["release_version"]:
        raise invalid_parameter("release_version", "release_version must not be empty")
    if params["launch_template_version"] is not None and params["launch_template_version"] < 1:
        raise invalid_parameter("launch_template_version", "launch_template_version must be a version number "
                                "(1 or more), got %r" % (params["launch_template_version"],))
    # Checks range (1..100) and exclusivity, naming the option; the node count itself is EKS's to compute.
    resolve_max_unavailable(params["max_unavailable"], params["max_unavailable_percentage"], node_count=0)
    if params["wait_timeout"] < 0:
        raise invalid_parameter("wait_timeout", "wait_timeout must be 0 or more seconds")
    if params.get("return_after") is not None and params["return_after"] < 0:
        raise invalid_parameter("return_after", "return_after must be 0 or more seconds")
    if params["poll_interval"] < MIN_POLL_INTERVAL:
        raise invalid_parameter("poll_interval", "poll_interval must be at least %s seconds" % MIN_POLL_INTERVAL)


def ssm_family(ami_type: str | None) -> str | None:
    """The SSM path part of the EKS-optimized Amazon Linux AMIs of ``ami_type``, or None (not published)."""
    return _SSM_FAMILY_BY_AMI_TYPE.get(ami_type)


def release_version_ssm_parameter(ami_type: str | None, kubernetes_version: str) -> str | None:
    """The SSM public parameter holding the release EKS picks for ``kubernetes_version`` (Amazon Linux's
    release_version, Bottlerocket's image_version), or None (CUSTOM). For Windows, the newest AMI's id: its name
    holds the release (windows_release)."""
    family = ssm_family(ami_type)
    if family is not None:
        return "/aws/service/eks/optimized-ami/%s/%s/recommended/release_version" % (kubernetes_version, family)
    if ami_type in _BOTTLEROCKET_VARIANT_BY_AMI_TYPE:
        flavour, arch = _BOTTLEROCKET_VARIANT_BY_AMI_TYPE[ami_type]
        return "/aws/service/bottlerocket/aws-k8s-%s%s/%s/latest/image_version" % (kubernetes_version, flavour, arch)
    if ami_type in _WINDOWS_IMAGE_BY_AMI_TYPE:
        return "/aws/service/ami-windows-latest/%s-EKS_Optimized-%s/image_id" % (
            _WINDOWS_IMAGE_BY_AMI_TYPE[ami_type], kubernetes_version)
    return None


def release_in_image_name(ami_type: str | None) -> bool:
    """Whether release_version_ssm_parameter names an AMI whose name holds the release (Windows)."""
    return ami_type in _WINDOWS_IMAGE_BY_AMI_TYPE


def windows_release(image_name: str | None) -> str | None:
    """The EKS release of an EKS-optimized Windows AMI from its name (...-EKS_Optimized-1.31-2024.11.12 ->
    1.31-2024.11.12), or None."""
    match = _WINDOWS_RELEASE_IN_NAME.search(image_name or "")
    return match.group(1) if match else None


def kubernetes_minor(version: str | None) -> tuple[int, int] | None:
    """(major, minor) of "1.30" (or of "1.30.4"), or None."""
    match = re.match(r"^(\d+)\.(\d+)(?:\.\d+)?$", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _release_order(ami_type: str | None, release_version: str | None) -> tuple[tuple[int, int], int, str] | None:
    """A sortable key of an Amazon Linux release version ((major, minor), patch, date), else None."""
    match = _AMAZON_LINUX_RELEASE.match(release_version or "")
    if ssm_family(ami_type) is None or not match:
        return None
    return (int(match.group(1)), int(match.group(2))), int(match.group(3)), match.group(4)


def _launch_template_label(nodegroup: Mapping[str, Any]) -> str | None:
    """The name (else the id) of the launch template the group was created with."""
    launch_template = nodegroup.get("launchTemplate") or {}
    return launch_template.get("name") or launch_template.get("id")


def _refuse_image_id(nodegroup: Mapping[str, Any], image_id: str) -> UpgradeError:
    name = nodegroup["nodegroupName"]
    if nodegroup.get("launchTemplate"):
        instead = ("create a version of the node group's launch template %s with ImageId %s and pass its number "
                   "as launch_template_version" % (_launch_template_label(nodegroup), image_id))
        if nodegroup.get("amiType") != "CUSTOM":
            instead = "use kubernetes_version or release_version for an EKS-optimized AMI, or " + instead
    else:
        instead = ("use kubernetes_version or release_version (the group has no launch template of its own, so it "
                   "runs the EKS-optimized AMIs only)")
    return invalid_parameter(
        "image_id", "EKS managed node group %s cannot be updated to an AMI id (image_id %s): "
        "UpdateNodegroupVersion takes a Kubernetes version, an EKS AMI release version or a launch template "
        "version. Instead, %s" % (name, image_id, instead), image_id=image_id)


def _check_not_custom_ami(nodegroup: Mapping[str, Any], parameter: str) -> None:
    if nodegroup.get("amiType") == "CUSTOM":
        raise invalid_parameter(
            parameter, "Node group %s runs the AMI named in its launch template (amiType CUSTOM); EKS refuses %s "
            "for it (UpdateNodegroupVersion: 'don't specify version/releaseVersion, or the node group update will "
            "fail'). Put the new AMI in a new version of launch template %s and pass launch_template_version"
            % (nodegroup["nodegroupName"], parameter, _launch_template_label(nodegroup)))


def _check_kubernetes_version(parameter: str, target: str, nodegroup: Mapping[str, Any], cluster_version: str | None) -> None:
    """K6 (not newer than the control plane) and EKS's no-rollback rule, for a target minor version."""
    wanted = kubernetes_minor(target)
    control_plane = kubernetes_minor(cluster_version)
    if control_plane is not None and wanted > control_plane:
        raise invalid_parameter(
            parameter, "%s %s is newer than the control plane of cluster %s (%s); upgrade the cluster first "
            "(nodes may not run a newer Kubernetes than the control plane)"
            % (parameter, target, nodegroup.get("clusterName"), cluster_version), cluster_version=cluster_version)
    current = kubernetes_minor(nodegroup.get("version"))
    if current is not None and wanted < current:
        raise invalid_parameter(
            parameter, "%s %s is older than node group %s's Kubernetes version %s; EKS cannot roll a node group "
            "back" % (parameter, target, nodegroup["nodegroupName"], nodegroup["version"]))


def _release_version_target(release: str, nodegroup: Mapping[str, Any], cluster_version: str | None) -> dict[str, Any]:
    _check_not_custom_ami(nodegroup, "release_version")
    request = {"releaseVersion": release}
    ami_type = nodegroup.get("amiType")
    order = _release_order(ami_type, release)
    if ssm_family(ami_type) is not None and order is None:
        # Refused here, before any change, rather than by EKS after the updateConfig has been changed.
        raise invalid_parameter(
            "release_version", "release_version %r is not an Amazon Linux EKS AMI release version such as "
            "1.30.4-20240917 (node group %s has amiType %s)" % (release, nodegroup["nodegroupName"], ami_type))
    if order is not None:
        # Amazon Linux releases name their Kubernetes version; send it too, as the AWS CLI example does, so EKS
        # never reads a missing version as "the cluster's".
        request["version"] = "%d.%d" % order[0]
        _check_kubernetes_version("release_version", request["version"], nodegroup, cluster_version)
        current = _release_order(ami_type, nodegroup.get("releaseVersion"))
        if current is not None and order < current:
            raise invalid_parameter(
                "release_version", "release_version %s is older than node group %s's release %s; EKS cannot roll "
                "a node group back" % (release, nodegroup["nodegroupName"], nodegroup["releaseVersion"]))
    return dict(option="release_version", value=release, request=request, ssm_parameter=None)


def _launch_template_version_target(version: int, nodegroup: Mapping[str, Any]) -> dict[str, Any]:
    launch_template = nodegroup.get("launchTemplate")
    if not launch_template:
        raise invalid_parameter(
            "launch_template_version", "Node group %s was created without a launch template of its own, so it has "
            "no launch template version to update to (launch_template_version); use kubernetes_version or "
            "release_version" % nodegroup["nodegroupName"])
    # EKS takes the template's id or its name, not both: the id when DescribeNodegroup gives it.
    reference = {"id": launch_template["id"]} if launch_template.get("id") else {"name": launch_template["name"]}
    reference["version"] = str(version)
    return dict(option="launch_template_version", value=str(version), request={"launchTemplate": reference},
                ssm_parameter=None)


def managed_update_target(params: Mapping[str, Any], nodegroup: Mapping[str, Any], cluster_version: str | None) -> dict[str, Any]:
    """The target of the update, from the one target option given (validate_options ran) and the
    DescribeNodegroup / DescribeCluster answers; refusals name the option.

    Returns {option, value, request (UpdateNodegroupVersion fields besides the names and force),
    ssm_parameter (where EKS's choice of release for a kubernetes_version can be read, or None)}.
    """
    status = nodegroup.get("status")
    if status in _NOT_UPDATABLE_STATUSES:
        raise invalid_parameter("nodegroup_name", "Node group %s is %s; EKS updates only an ACTIVE (or DEGRADED) "
                                "node group" % (nodegroup["nodegroupName"], status), status=status)
    if params["image_id"] is not None:
        raise _refuse_image_id(nodegroup, params["image_id"])
    if params["release_version"] is not None:
        return _release_version_target(params["release_version"], nodegroup, cluster_version)
    if params["launch_template_version"] is not None:
        return _launch_template_version_target(params["launch_template_version"], nodegroup)
    version = params["kubernetes_version"]
    _check_not_custom_ami(nodegroup, "kubernetes_version")
    _check_kubernetes_version("kubernetes_version", version, nodegroup, cluster_version)
    return dict(option="kubernetes_version", value=version, request={"version": version},
                ssm_parameter=release_version_ssm_parameter(nodegroup.get("amiType"), version))
