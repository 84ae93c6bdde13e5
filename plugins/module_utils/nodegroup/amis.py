# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EKS-optimized AMIs: Kubernetes versions, AMI families and the SSM public parameters that name them (SPEC U1)."""

from __future__ import annotations

from typing import Any
import re

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import ssm as ssm_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import NOT_FOUND, UpgradeError, invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.user_data import AL2, AL2023, BOTTLEROCKET

# The shape of a kubernetes_version option, "1.<minor>" (check_kubernetes_version checks the value).
KUBERNETES_VERSION_RE = re.compile(r"^1\.[0-9]{1,3}$")

# The oldest Kubernetes version EKS offers or has offered since extended support began: extended support (26
# months per version) started with 1.23 (EKS user guide "Understand the Kubernetes version lifecycle on EKS";
# AWS containers blog "Amazon EKS-Optimized Amazon Linux 2023 AMIs Now Available": "Amazon EKS versions 1.23 and
# 1.24 in extended support"); 1.22 and older left EKS before then. It exists to catch a YAML number: an unquoted
# `kubernetes_version: 1.30` is the float 1.3 and reaches a `type: str` option as "1.3" (1.10 -> "1.1", ...,
# 1.90 -> "1.9"), which cannot be told apart from a real "1.3" by its text. Every such truncation is a minor
# below 10, so any bound above 9 catches them all; 1.23 is the highest bound that still accepts every version
# EKS has offered since extended support began. It is deliberately not today's oldest supported version: that
# moves every few months, and for a version EKS no longer serves the SSM lookup (or EKS itself) already answers.
OLDEST_EKS_KUBERNETES_VERSION = (1, 23)

# AMI names -> SSM public parameters (SPEC U1: kubernetes_version follows the family of the current image).
# AL2023 and AL2: amazon-eks-ami CHANGELOG.md (awslabs/amazon-eks-ami; the release notes list every AMI name):
#   amazon-eks-node-al2023-<x86_64|arm64>-<standard|nvidia|neuron>-<k8s>-v<date>, and from release v20240924 to
#   v20241016 the NVIDIA AMIs also carried the driver series: amazon-eks-node-al2023-x86_64-nvidia-560-1.31-v20241016
#   (from v20241024 on: amazon-eks-node-al2023-x86_64-nvidia-1.31-v20241024); the parameters are
#   /aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/<arch>/<variant>/recommended/image_id (EKS user guide
#   "Retrieve recommended Amazon Linux AMI IDs"). AL2: amazon-eks-[gpu-|arm64-]node-<k8s>-v<date> ->
#   .../amazon-linux-2[-gpu|-arm64]/recommended/image_id.
_AL2023_NAME = re.compile(r"^amazon-eks-node-al2023-(?P<arch>x86_64|arm64)-(?P<variant>[a-z]+)(?:-\d+)?-\d+\.\d+-v")
_AL2_NAME = re.compile(r"^amazon-eks-(?P<variant>gpu-|arm64-)?node-\d+\.\d+-v")
_AL2_FAMILIES = {None: "amazon-linux-2", "gpu-": "amazon-linux-2-gpu", "arm64-": "amazon-linux-2-arm64"}
# EKS publishes no AL2 AMI from this version on: "AWS is not releasing an EKS-optimized Amazon Linux 2 AMI for
# Kubernetes 1.33" (EKS user guide, "Review release notes for Kubernetes versions on standard support", 1.33;
# "Amazon Linux 2 AMI deprecation"); awslabs/amazon-eks-ami issue 2545: AL2 AMIs reached end of support on
# November 26, 2025.
AL2_LAST_KUBERNETES_VERSION = (1, 32)
# Bottlerocket: image names are bottlerocket-<platform>-<orchestrator>-<k8s>[-<flavour>]-<arch>-v<version>-<commit>
# with the build architecture, x86_64 or aarch64 (bottlerocket.dev "Variants", artifact file names, e.g.
# bottlerocket-aws-k8s-1.25-nvidia-aarch64-1.13.0; published AMIs add "v": bottlerocket-aws-k8s-1.30-aarch64-v1.20.3-
# 5d9ac849). The SSM parameters say arm64: "/aws/service/bottlerocket/aws-k8s-<k8s>[-flavor]/<x86_64|arm64>/latest/
# image_id", flavour -nvidia or -fips (EKS user guide "Retrieve recommended Bottlerocket AMI IDs"), because
# pubsys maps "aarch64" to "arm64" for the parameter names "to match the names used by EC2"
# (bottlerocket-os/bottlerocket tools/pubsys/policies/ssm/README.md; QUICKSTART-EKS.md: "the valid architecture
# names are x86_64 and arm64 (also known as aarch64)"). The NVIDIA FIPS variants are aws-k8s-<k8s>-nvidia-fips
# (bottlerocket-os/bottlerocket PR 4671; bottlerocket-core-kit settings-defaults aws-k8s-1.33-nvidia-fips).
_BOTTLEROCKET_NAME = re.compile(
    r"^bottlerocket-aws-k8s-\d+\.\d+-(?P<flavour>nvidia-fips-|nvidia-|fips-)?(?P<arch>x86_64|aarch64)-v")
_BOTTLEROCKET_SSM_ARCH = {"x86_64": "x86_64", "aarch64": "arm64"}


def ami_os(image_name: str | None) -> str | None:
    """The OS of an EKS-optimized AMI by its name (user_data.AL2 / AL2023 / BOTTLEROCKET), or None for another AMI."""
    for pattern, family in ((_AL2023_NAME, AL2023), (_AL2_NAME, AL2), (_BOTTLEROCKET_NAME, BOTTLEROCKET)):
        if image_name and pattern.match(image_name):
            return family
    return None


def _version_tuple(kubernetes_version: str) -> tuple[int, int]:
    major, minor = kubernetes_version.split(".")
    return int(major), int(minor)


def check_kubernetes_version(kubernetes_version: Any) -> tuple[int, int]:
    """Refuse, naming kubernetes_version, a value that is not a quoted "1.<minor>" or is older than any version
    EKS supports (OLDEST_EKS_KUBERNETES_VERSION), which is what an unquoted YAML 1.30 arrives as ("1.3").
    Returns (major, minor)."""
    quote = ('quote the value in YAML: kubernetes_version: "1.30", not 1.30 (an unquoted 1.30 is the number 1.3, '
             'which reaches this option as "1.3")')
    if isinstance(kubernetes_version, (float, int)) and not isinstance(kubernetes_version, bool):
        raise invalid_parameter("kubernetes_version", "kubernetes_version must be a string such as \"1.30\", got "
                                "the number %r; %s" % (kubernetes_version, quote),
                                kubernetes_version=kubernetes_version)
    try:
        looks_right = KUBERNETES_VERSION_RE.match(kubernetes_version)
    except TypeError:  # None, a list, ...: not text (no isinstance(str): Python 2 text is unicode)
        looks_right = None
    if not looks_right:
        raise invalid_parameter("kubernetes_version", "kubernetes_version must look like \"1.30\", got %r"
                                % (kubernetes_version,), kubernetes_version=kubernetes_version)
    version = _version_tuple(kubernetes_version)
    if version < OLDEST_EKS_KUBERNETES_VERSION:
        oldest = "%d.%d" % OLDEST_EKS_KUBERNETES_VERSION
        meant = kubernetes_version + "0"
        guess = (" (did you mean \"%s\"?)" % meant
                 if _version_tuple(meant) >= OLDEST_EKS_KUBERNETES_VERSION and version[1] < 10 else "")
        raise invalid_parameter(
            "kubernetes_version", "kubernetes_version %r is older than %s, the oldest Kubernetes version EKS "
            "has supported since extended support began%s; %s" % (kubernetes_version, oldest, guess, quote),
            kubernetes_version=kubernetes_version)
    return version


# The Kubernetes version in an EKS-optimized AMI name (the families above): "-<major>.<minor>-v" (AL2023, AL2) or
# "bottlerocket-aws-k8s-<major>.<minor>-".
_AMI_KUBERNETES_VERSION = re.compile(r"^(?:amazon-eks-.*?-(\d+)\.(\d+)-v|bottlerocket-aws-k8s-(\d+)\.(\d+)-)")


def ami_kubernetes_version(image_name: str | None) -> tuple[int, int] | None:
    """(major, minor) of the Kubernetes version an EKS-optimized AMI is built for, from its name; None for an AMI
    of another name (a custom AMI tells nothing)."""
    match = _AMI_KUBERNETES_VERSION.match(image_name or "")
    if not match:
        return None
    numbers = [int(group) for group in match.groups() if group is not None]
    return numbers[0], numbers[1]


def check_not_newer_than_control_plane(parameter: str, version: tuple[int, int], what: str, cluster_version: str | None) -> None:
    """SPEC K6: refuse a node version (a (major, minor) tuple) newer than the control plane's, as EKS does."""
    if cluster_version and KUBERNETES_VERSION_RE.match(cluster_version) and version > _version_tuple(cluster_version):
        raise invalid_parameter(
            parameter, "%s, newer than the control plane's %s (%s): upgrade the control plane first; kubelets may not "
            "be newer than the API server" % (what, cluster_version, parameter))


def check_version_change(parameter: str, target_image_name: str | None, current_image_name: str | None, cluster_version: str | None,
                         allow_downgrade: bool) -> None:
    """SPEC K6 and issue 10 item 19, before any change: the new nodes' Kubernetes version (from the target AMI's
    name) is not newer than the control plane's, as EKS refuses it, and not older than the nodes' own unless
    ``allow_downgrade`` (EKS cannot roll a node group back at all). AMIs of other names are not judged."""
    target = ami_kubernetes_version(target_image_name)
    if target is None:
        return
    words = "%d.%d" % target
    check_not_newer_than_control_plane(parameter, target, "The target AMI %s is for Kubernetes %s"
                                       % (target_image_name, words), cluster_version)
    current = ami_kubernetes_version(current_image_name)
    if current is not None and target < current and not allow_downgrade:
        raise invalid_parameter(
            parameter, "The target AMI %s is for Kubernetes %s, older than the nodes' %d.%d (AMI %s; %s): that is a "
            "downgrade, which EKS never does to a node group; set allow_downgrade=true if it is meant"
            % (target_image_name, words, current[0], current[1], current_image_name, parameter))


def eks_ami_ssm_parameter(image_name: str | None, kubernetes_version: str) -> str:
    """The SSM public parameter holding the recommended AMI of the same family as ``image_name``.

    AL2023 ``amazon-eks-node-al2023-<arch>-<variant>[-<driver>]-<k8s>-v...`` ->
    ``.../amazon-linux-2023/<arch>/<variant>/...``;
    AL2 ``amazon-eks-[gpu-|arm64-]node-<k8s>-v...`` -> ``.../amazon-linux-2[-gpu|-arm64]/...``;
    Bottlerocket ``bottlerocket-aws-k8s-<k8s>-[nvidia-|fips-|nvidia-fips-]<x86_64|aarch64>-v...`` ->
    ``/aws/service/bottlerocket/aws-k8s-<k8s>[-<flavour>]/<x86_64|arm64>/latest/image_id``.
    """
    check_kubernetes_version(kubernetes_version)
    name = image_name or ""
    match = _AL2023_NAME.match(name)
    if match:
        return "/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/recommended/image_id" % (
            kubernetes_version, match.group("arch"), match.group("variant"))
    match = _AL2_NAME.match(name)
    if match:
        return "/aws/service/eks/optimized-ami/%s/%s/recommended/image_id" % (
            kubernetes_version, _AL2_FAMILIES[match.group("variant")])
    match = _BOTTLEROCKET_NAME.match(name)
    if match:
        flavour = (match.group("flavour") or "").rstrip("-")
        variant = "aws-k8s-%s%s" % (kubernetes_version, "-" + flavour if flavour else "")
        return "/aws/service/bottlerocket/%s/%s/latest/image_id" % (
            variant, _BOTTLEROCKET_SSM_ARCH[match.group("arch")])
    raise invalid_parameter(
        "kubernetes_version", "Cannot tell which EKS-optimized AMI family the current image %r belongs to, so "
        "kubernetes_version cannot be resolved; pass image_id instead" % (image_name,), image_name=image_name)


def resolve_eks_ami(ssm: Any, image_name: str | None, kubernetes_version: str) -> tuple[str, str]:
    """(image_id, parameter name) of the recommended EKS-optimized AMI for ``kubernetes_version``."""
    parameter_name = eks_ami_ssm_parameter(image_name, kubernetes_version)
    try:
        value = ssm_api.get_parameter(ssm, parameter_name)
    except UpgradeError as err:
        if err.code == NOT_FOUND:
            msg = ("No EKS-optimized AMI is published for Kubernetes %s (kubernetes_version) in the family of the "
                   "current image %s: SSM parameter %s does not exist"
                   % (kubernetes_version, image_name, parameter_name))
            no_al2 = _version_tuple(kubernetes_version) > AL2_LAST_KUBERNETES_VERSION
            if no_al2 and _AL2_NAME.match(image_name or ""):
                msg += ("; EKS publishes no Amazon Linux 2 (AL2) AMIs from Kubernetes %d.%d on (the last are for "
                        "%d.%d): move this node group to Amazon Linux 2023 (AL2023). AL2023 nodes join with nodeadm, "
                        "not /etc/eks/bootstrap.sh, so the user data changes too: create a launch template version "
                        "with an AL2023 AMI (/aws/service/eks/optimized-ami/%s/amazon-linux-2023/...) and nodeadm "
                        "user data, then pass it as version (or its AMI as image_id)"
                        % (AL2_LAST_KUBERNETES_VERSION[0], AL2_LAST_KUBERNETES_VERSION[1] + 1,
                           AL2_LAST_KUBERNETES_VERSION[0], AL2_LAST_KUBERNETES_VERSION[1], kubernetes_version))
            raise invalid_parameter("kubernetes_version", msg, ssm_parameter=parameter_name, image_name=image_name)
        raise
    return value, parameter_name
