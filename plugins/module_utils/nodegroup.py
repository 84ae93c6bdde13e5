# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node group discovery shared by the modules: the ASG, its launch template, instances joined with nodes,
and the EKS-optimized AMI lookup."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import random
import re

from ansible_collections.eksops.nodegroup.plugins.module_utils import kinds
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import aws_tags_to_dict
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws_api import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws_api import ec2 as ec2_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws_api import eks as eks_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws_api import ssm as ssm_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    NOT_FOUND,
    UpgradeError,
    invalid_parameter,
    not_found,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.journal import utc_now_iso
from ansible_collections.eksops.nodegroup.plugins.module_utils.k8s import describe_eks_cluster
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube_watch import list_all
from ansible_collections.eksops.nodegroup.plugins.module_utils.planning import (
    SURGE_CAP_DEFAULT,
    int_or_none,
    pick_batch,
    resolve_max_unavailable,
    rolling_parallelism,
    surge_steps,
    validate_surge_settings,
)

# The EC2 tag AWS puts on instances launched from a launch template.
EC2_LT_VERSION_TAG = "aws:ec2launchtemplate:version"

DESCRIBE_INSTANCES_CHUNK = 200

# EKS CreateCluster: "The name can contain only alphanumeric characters (case-sensitive), hyphens, and underscores.
# It must start with an alphanumeric character and can't be longer than 100 characters." CreateNodegroup names
# follow the same rule (63 characters); eksctl, terraform-aws-eks and the CloudFormation template name their
# groups within it, with dots at most (issue 10 item 24: an empty or ";" name reached AWS as an HTML 404).
CLUSTER_NAME_PATTERN = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
NODEGROUP_NAME_PATTERN = re.compile(r"^[0-9A-Za-z][A-Za-z0-9._-]{0,254}$")


def check_names(cluster_name, nodegroup_name):
    """Refuse a cluster or node group name AWS could never hold, naming the parameter, before any call."""
    if not CLUSTER_NAME_PATTERN.match(cluster_name or ""):
        raise invalid_parameter(
            "cluster_name", "cluster_name %r is not an EKS cluster name (letters, digits, - and _, starting with "
            "a letter or digit, at most 100 characters)" % (cluster_name,), value=cluster_name)
    if not NODEGROUP_NAME_PATTERN.match(nodegroup_name or ""):
        raise invalid_parameter(
            "nodegroup_name", "nodegroup_name %r is not a node group name (letters, digits, ., - and _, starting "
            "with a letter or digit)" % (nodegroup_name,), value=nodegroup_name)


# --- Auto Scaling group -------------------------------------------------------------------------------------

def describe_asg(autoscaling, asg_name, parameter="asg_name"):
    """The ASG description; ResourceNotFound naming ``parameter`` when it does not exist."""
    group = autoscaling_api.describe_auto_scaling_group(autoscaling, asg_name)
    if group is None:
        raise not_found(parameter, "Auto Scaling group %r (%s) does not exist" % (asg_name, parameter),
                        asg_name=asg_name)
    return group


def describe_managed_nodegroup(eks, cluster_name, nodegroup_name):
    """DescribeNodegroup's answer, or None when EKS has no managed node group of that name (self-managed)."""
    try:
        return eks_api.describe_nodegroup(eks, cluster_name, nodegroup_name)
    except UpgradeError as err:
        if err.code == NOT_FOUND:
            return None
        raise


class NodegroupRef:
    """A discovered node group: its kind (SPEC K1), its Auto Scaling group, and EKS's record when managed."""

    def __init__(self, cluster_name, nodegroup_name, kind, asg, managed=None):
        self.cluster_name = cluster_name
        self.nodegroup_name = nodegroup_name
        self.kind = kind
        self.asg = asg
        self.managed = managed

    @property
    def asg_name(self):
        return self.asg["AutoScalingGroupName"]

    def with_asg(self, asg):
        """The same node group with a newer description of its Auto Scaling group."""
        return NodegroupRef(self.cluster_name, self.nodegroup_name, self.kind, asg, self.managed)

    @property
    def node_selector(self):
        return kinds.node_selector(self.kind, self.nodegroup_name)

    def refuse_if_managed(self, action):
        """SPEC K3: never write to an Auto Scaling group or launch template EKS owns."""
        if self.kind == kinds.MANAGED:
            raise invalid_parameter(
                "nodegroup_name", "Node group %s of cluster %s is an EKS managed node group: EKS owns its Auto Scaling "
                "group %s and launch template, so this collection does not %s; it upgrades managed node groups "
                "through EKS (eks_nodegroup_update; upgrade_nodegroup.yml does that by itself)"
                % (self.nodegroup_name, self.cluster_name, self.asg_name, action),
                kind=self.kind, asg_name=self.asg_name)


def _tags(asg):
    return aws_tags_to_dict(asg.get("Tags"))


def _check_named_asg(asg, cluster_name, nodegroup_name):
    """The named ASG must be tagged for this cluster, and for this node group as far as its kind's tags tell:
    an untagged group may be another cluster's, whose instances would all look like nodes that never joined."""
    tags = _tags(asg)
    name = asg["AutoScalingGroupName"]
    if not kinds.tagged_for_cluster(tags, cluster_name):
        told = kinds.tagged_cluster(tags)
        raise invalid_parameter(
            "asg_name", "Auto Scaling group %r (asg_name) is not tagged for cluster %s (%s): no %s=%s, %s=%s or %s tag; "
            "refusing to touch a group that may be another cluster's (tag it %s=owned if it is this cluster's)"
            % (name, cluster_name, "it names cluster %s" % told if told else "it names no cluster",
               kinds.EKS_CLUSTER_TAG, cluster_name, kinds.EKSCTL_CLUSTER_TAG, cluster_name,
               kinds.cluster_tag(cluster_name), kinds.cluster_tag(cluster_name)), asg_name=name)
    for told, expected, parameter in ((kinds.tagged_cluster(tags), cluster_name, "cluster_name"),
                                      (kinds.tagged_nodegroup(tags), nodegroup_name, "nodegroup_name")):
        if told is not None and expected and told != expected:
            raise invalid_parameter(
                "asg_name", "Auto Scaling group %r (asg_name) is tagged as %s, not %s (%s); refusing to touch another "
                "node group's Auto Scaling group" % (name, told, expected, parameter), asg_name=name)


def _candidates(autoscaling, eks, cluster_name, nodegroup_name):
    """Every Auto Scaling group that could be the node group, by kind (SPEC K1): [(kind, asg, managed record)]."""
    found = []
    managed = describe_managed_nodegroup(eks, cluster_name, nodegroup_name)
    for group in ((managed or {}).get("resources") or {}).get("autoScalingGroups") or []:
        found.append((kinds.MANAGED, describe_asg(autoscaling, group["name"], parameter="nodegroup_name"), managed))
    eksctl = autoscaling_api.find_auto_scaling_groups(autoscaling, {
        kinds.EKSCTL_CLUSTER_TAG: cluster_name, kinds.EKSCTL_NODEGROUP_TAG: nodegroup_name})
    tagged = autoscaling_api.find_auto_scaling_groups(autoscaling, {kinds.cluster_tag(cluster_name): None})
    found.extend((kinds.SELF_MANAGED_EKSCTL, asg, None) for asg in eksctl)
    found.extend((kinds.SELF_MANAGED, asg, None) for asg in tagged
                 if kinds.self_managed_match(asg["AutoScalingGroupName"], _tags(asg), cluster_name, nodegroup_name))
    unique = {}
    for kind, asg, record in found:
        unique.setdefault(asg["AutoScalingGroupName"], (kind, asg, record))
    return list(unique.values())


def find_nodegroup(autoscaling, eks, cluster_name, nodegroup_name, asg_name=None):
    """The node group and its kind (SPEC K1): the named Auto Scaling group (its kind from its tags), else the one
    DescribeNodegroup names, the one eksctl tagged, or the plain one tagged kubernetes.io/cluster/<cluster>
    whose Name (or own name) is the node group's. Two matches are refused, naming both."""
    check_names(cluster_name, nodegroup_name)
    if asg_name:
        asg = describe_asg(autoscaling, asg_name)
        _check_named_asg(asg, cluster_name, nodegroup_name)
        kind = kinds.kind_of(_tags(asg))
        managed = None
        if kind == kinds.MANAGED:
            managed = describe_managed_nodegroup(eks, cluster_name, _tags(asg)[kinds.EKS_NODEGROUP_TAG])
        return NodegroupRef(cluster_name, nodegroup_name, kind, asg, managed)
    candidates = _candidates(autoscaling, eks, cluster_name, nodegroup_name)
    if len(candidates) > 1:
        named = ", ".join("%s (%s)" % (asg["AutoScalingGroupName"], kind) for kind, asg, _record in candidates)
        raise invalid_parameter(
            "asg_name", "Several Auto Scaling groups could be node group %s of cluster %s: %s; pass asg_name"
            % (nodegroup_name, cluster_name, named),
            candidates=sorted(asg["AutoScalingGroupName"] for _kind, asg, _record in candidates))
    if candidates:
        kind, asg, managed = candidates[0]
        return NodegroupRef(cluster_name, nodegroup_name, kind, asg, managed)
    # Say which name is wrong: the cluster's, or the node group's.
    describe_eks_cluster(eks, cluster_name)
    raise not_found(
        "nodegroup_name", "No node group %r (nodegroup_name) found in cluster %r: EKS has no managed node group of "
        "that name, no Auto Scaling group is tagged %s=%s and %s=%s, and none tagged %s has a Name tag %s or %s; "
        "pass asg_name" % (nodegroup_name, cluster_name, kinds.EKSCTL_CLUSTER_TAG, cluster_name,
                           kinds.EKSCTL_NODEGROUP_TAG, nodegroup_name, kinds.cluster_tag(cluster_name), nodegroup_name,
                           "%s-%s-Node" % (cluster_name, nodegroup_name)),
        cluster_name=cluster_name, nodegroup_name=nodegroup_name)


def asg_launch_template_spec(asg):
    """{"id", "name", "version", "mixed"} of the launch template an ASG launches from."""
    spec = asg.get("LaunchTemplate")
    mixed = False
    if not spec and asg.get("MixedInstancesPolicy"):
        spec = asg["MixedInstancesPolicy"].get("LaunchTemplate", {}).get("LaunchTemplateSpecification")
        mixed = True
    if not spec:
        raise invalid_parameter(
            "asg_name", "Auto Scaling group %s uses no launch template (launch configurations are not supported)"
            % asg.get("AutoScalingGroupName"), asg_name=asg.get("AutoScalingGroupName"))
    return dict(id=spec.get("LaunchTemplateId"), name=spec.get("LaunchTemplateName"),
                version=str(spec.get("Version") or "$Default"), mixed=mixed)


def asg_launch_template(asg):
    """(launch template id, version string as the ASG has it, e.g. "3" or "$Latest")."""
    spec = asg_launch_template_spec(asg)
    return spec["id"], spec["version"]


def asg_summary(asg):
    """The sizes, processes and AZs of an ASG, snake_case."""
    spec = asg_launch_template_spec(asg)
    return dict(
        name=asg["AutoScalingGroupName"],
        min_size=asg["MinSize"],
        max_size=asg["MaxSize"],
        desired_capacity=asg["DesiredCapacity"],
        suspended_processes=sorted(process["ProcessName"] for process in asg.get("SuspendedProcesses", [])),
        availability_zones=sorted(asg.get("AvailabilityZones", [])),
        launch_template=dict(id=spec["id"], name=spec["name"], version=spec["version"]),
        tags=aws_tags_to_dict(asg.get("Tags")),
    )


def pin_asg_launch_template(autoscaling, asg, lt_id, version):
    """Point the ASG at one exact launch template version number."""
    autoscaling_api.set_launch_template(autoscaling, asg["AutoScalingGroupName"],
                                        dict(LaunchTemplateId=lt_id, Version=str(version)),
                                        mixed=asg_launch_template_spec(asg)["mixed"])


# --- Launch templates -------------------------------------------------------------------------------------

def describe_lt_version(ec2, lt_id, version, parameter="version"):
    """One launch template version (number, "$Latest" or "$Default"); ResourceNotFound naming ``parameter``."""
    try:
        described = ec2_api.describe_launch_template_version(ec2, lt_id, version)
    except UpgradeError as err:
        if err.code == NOT_FOUND or "NotFound" in err.details.get("aws_error_code", ""):
            raise not_found(parameter, "Launch template %s has no version %s (%s)" % (lt_id, version, parameter),
                            launch_template_id=lt_id, **err.details)
        raise
    if described is None:
        raise not_found(parameter, "Launch template %s has no version %s (%s)" % (lt_id, version, parameter),
                        launch_template_id=lt_id)
    return described


def lt_version_image(version_description):
    """The AMI of a launch template version description, or None."""
    return (version_description.get("LaunchTemplateData") or {}).get("ImageId")


def target_lt_version(ec2, lt_id, asg_version, named=None, parameter="launch_template_version"):
    """(version number, AMI) of the launch template version new nodes run: ``named`` when given
    (ResourceNotFound naming ``parameter``), else the one the ASG points at (``asg_version``, a number or
    "$Latest"/"$Default"; ResourceNotFound naming asg_name)."""
    described = describe_lt_version(ec2, lt_id, named or asg_version, parameter=parameter if named else "asg_name")
    return int(described["VersionNumber"]), lt_version_image(described)


def describe_image(ec2, image_id, parameter="image_id"):
    """The AMI description; ResourceNotFound naming ``parameter`` when it does not exist (or is not visible)."""
    try:
        image = ec2_api.describe_image(ec2, image_id)
    except UpgradeError as err:
        if err.code == NOT_FOUND or err.details.get("aws_error_code", "").startswith("InvalidAMIID"):
            raise not_found(parameter, "AMI %s (%s) does not exist or is not visible to this account"
                            % (image_id, parameter), image_id=image_id)
        raise
    if image is None:
        raise not_found(parameter, "AMI %s (%s) does not exist or is not visible to this account"
                        % (image_id, parameter), image_id=image_id)
    return image


# --- EKS-optimized AMIs (SSM public parameters) -----------------------------------------------------------

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


def _version_tuple(kubernetes_version):
    major, minor = kubernetes_version.split(".")
    return int(major), int(minor)


def check_kubernetes_version(kubernetes_version):
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


def ami_kubernetes_version(image_name):
    """(major, minor) of the Kubernetes version an EKS-optimized AMI is built for, from its name; None for an AMI
    of another name (a custom AMI tells nothing)."""
    match = _AMI_KUBERNETES_VERSION.match(image_name or "")
    if not match:
        return None
    numbers = [int(group) for group in match.groups() if group is not None]
    return numbers[0], numbers[1]


def check_not_newer_than_control_plane(parameter, version, what, cluster_version):
    """SPEC K6: refuse a node version (a (major, minor) tuple) newer than the control plane's, as EKS does."""
    if cluster_version and KUBERNETES_VERSION_RE.match(cluster_version) and version > _version_tuple(cluster_version):
        raise invalid_parameter(
            parameter, "%s, newer than the control plane's %s (%s): upgrade the control plane first; kubelets may not "
            "be newer than the API server" % (what, cluster_version, parameter))


def check_version_change(parameter, target_image_name, current_image_name, cluster_version, allow_downgrade):
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


def eks_ami_ssm_parameter(image_name, kubernetes_version):
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


def resolve_eks_ami(ssm, image_name, kubernetes_version):
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


# --- Instances and nodes ----------------------------------------------------------------------------------

def describe_instances(ec2, instance_ids):
    """EC2 descriptions of ``instance_ids`` (chunked, paged): {instance_id: description}."""
    found = {}
    ids = sorted(set(instance_ids))
    for start in range(0, len(ids), DESCRIBE_INSTANCES_CHUNK):
        chunk = ids[start:start + DESCRIBE_INSTANCES_CHUNK]
        for instance in ec2_api.describe_instances(ec2, chunk):
            found[instance["InstanceId"]] = instance
    return found


def instance_id_of(node):
    """The EC2 instance id in a node's providerID (aws:///<az>/<instance-id>), or None."""
    spec = node.get("spec", {}) if isinstance(node, dict) else node.spec
    if isinstance(spec, dict):
        provider_id = spec.get("providerID") or spec.get("provider_id")
    else:
        provider_id = getattr(spec, "provider_id", None) if spec is not None else None
    if not provider_id or not provider_id.startswith("aws://"):
        return None
    instance_id = provider_id.rstrip("/").rsplit("/", 1)[-1]
    return instance_id if instance_id.startswith("i-") else None


def find_instance_nodes(list_node, instance_ids, node_selector=None, clock=None):
    """{instance_id: raw node} for the nodes whose spec.providerID (aws:///<az>/<instance-id>) names one of
    ``instance_ids`` (SPEC K2); instances without a node (never joined, or gone) are left out.

    Nodes cannot be selected by providerID on the server: one paged LIST, narrowed by ``node_selector`` (the
    node group's label, where its kind sets one: P2), and a second of every node only if some instance was not
    among them (a node whose bootstrap left the label out must not pass for no node).
    """
    wanted = set(instance_ids)
    found = {}
    for selector in ([node_selector] if node_selector else []) + [None]:
        kwargs = dict(label_selector=selector) if selector else {}
        items, _version = list_all(list_node, clock=clock, **kwargs)
        for node in items:
            instance_id = instance_id_of(node)
            if instance_id in wanted:
                found[instance_id] = node
        if len(found) == len(wanted):
            break
    return found


def node_is_ready(node):
    conditions = (node.status.conditions if node.status else None) or []
    return any(condition.type == "Ready" and condition.status == "True" for condition in conditions)


def _launched_lt_version(asg_instance, ec2_instance):
    """The launch template version an instance was launched from: the ASG's record, else the EC2 launch tag."""
    version = int_or_none((asg_instance.get("LaunchTemplate") or {}).get("Version"))
    if version is None and ec2_instance:
        version = int_or_none(aws_tags_to_dict(ec2_instance.get("Tags")).get(EC2_LT_VERSION_TAG))
    return version


def join_instances_nodes(asg_instances, ec2_instances, nodes):
    """One dict per ASG instance, joined with its EC2 description and Kubernetes node (by providerID).

    ``ec2_instances``: {instance_id: description} or a list of descriptions.
    """
    if not isinstance(ec2_instances, dict):
        ec2_instances = dict((instance["InstanceId"], instance) for instance in ec2_instances)
    nodes_by_instance = {}
    for node in nodes:
        instance_id = instance_id_of(node)
        if instance_id:
            nodes_by_instance[instance_id] = node
    joined = []
    for asg_instance in asg_instances:
        instance_id = asg_instance["InstanceId"]
        ec2_instance = ec2_instances.get(instance_id) or {}
        node = nodes_by_instance.get(instance_id)
        labels = dict(node.metadata.labels or {}) if node is not None else {}
        joined.append(dict(
            instance_id=instance_id,
            availability_zone=asg_instance.get("AvailabilityZone")
            or (ec2_instance.get("Placement") or {}).get("AvailabilityZone"),
            lifecycle_state=asg_instance.get("LifecycleState"),
            health_status=asg_instance.get("HealthStatus"),
            launch_template_version=_launched_lt_version(asg_instance, ec2_instance),
            image_id=ec2_instance.get("ImageId"),
            launch_time=utc_now_iso(ec2_instance["LaunchTime"]) if ec2_instance.get("LaunchTime") else None,
            node_name=node.metadata.name if node is not None else None,
            ready=node_is_ready(node) if node is not None else False,
            unschedulable=bool(node.spec.unschedulable) if node is not None and node.spec is not None else False,
            labels=labels,
        ))
    return joined


def resolve_launch_template_id(ec2, spec):
    """The launch template id of an ASG's spec (which may name the template instead)."""
    if spec.get("id"):
        return spec["id"]
    template = ec2_api.describe_launch_template_named(ec2, spec["name"])
    if template is None:
        raise not_found("asg_name", "The ASG's launch template %s does not exist" % spec.get("name"))
    return template["LaunchTemplateId"]


def describe_launch_template(ec2, lt_id):
    """The launch template (name, DefaultVersionNumber, LatestVersionNumber)."""
    template = ec2_api.describe_launch_template(ec2, lt_id)
    if template is None:
        raise not_found("asg_name", "Launch template %s does not exist" % lt_id, launch_template_id=lt_id)
    return template


# --- Pure decisions -----------------------------------------------------------------------------------------

def plan_launch_template_version(asg_version, current, latest, target_image_id=None, named=None):
    """What launch_template_version must do (SPEC U1), given descriptions of LT versions.

    ``asg_version``: the version string on the ASG now; ``current``: the version it resolves to (the source);
    ``latest``: $Latest; ``named``: the version the user named, else ``target_image_id`` is the new AMI.
    Reuses, rather than creates, a version whose data already is the source's with the new image: the
    current one, or $Latest (a rerun after a crash between create and pin).
    Returns {source_version, target_version (predicted when create), create, pin, image_id, previous_image_id}.
    """
    source_version = int(current["VersionNumber"])
    create = False
    if named is not None:
        target_version = int(named["VersionNumber"])
        target_image_id = lt_version_image(named)
    else:
        if not target_image_id:
            raise ValueError("plan_launch_template_version needs target_image_id or named")
        wanted_data = dict(current.get("LaunchTemplateData") or {}, ImageId=target_image_id)
        if (current.get("LaunchTemplateData") or {}) == wanted_data:
            target_version = source_version
        elif (latest.get("LaunchTemplateData") or {}) == wanted_data:
            target_version = int(latest["VersionNumber"])
        else:
            target_version = int(latest["VersionNumber"]) + 1
            create = True
    return dict(
        source_version=source_version,
        target_version=target_version,
        create=create,
        pin=str(asg_version) != str(target_version),
        image_id=target_image_id,
        previous_image_id=lt_version_image(current),
    )


def journal_conflict(journal, lt_id, target_version):
    """True when an upgrade journal exists for another launch template version than this target."""
    return journal is not None and not journal.targets(lt_id, target_version)


def random_batches(old, batch_size, rng):
    """All old instances split into batches of instance ids, each drawn with planning.pick_batch (SPEC U5)."""
    batches = []
    remaining = list(old)
    while remaining:
        batch = pick_batch(remaining, batch_size, rng)
        if not batch:
            raise ValueError("batch_size must be > 0 while old instances remain")
        chosen = set(instance["instance_id"] for instance in batch)
        batches.append([instance["instance_id"] for instance in batch])
        remaining = [instance for instance in remaining if instance["instance_id"] not in chosen]
    return batches


def upgrade_plan(old, node_count, az_count, update_strategy="default", max_unavailable=None,
                 max_unavailable_percentage=None, max_surge=None, surge_cap=SURGE_CAP_DEFAULT, seed=None,
                 group_size=None):
    """The upgrade plan for the given parameters: strategy, parallelism, surge and the random batches.

    ``max_surge`` given selects the surge strategy (SPEC S1-S4, max_unavailable may then be 0); otherwise
    ``update_strategy`` default (U2: pre-scale by max(2 x AZs, max_unavailable)) or minimal (U7: no pre-scale).
    A percentage is of ``group_size``, the group's size before the upgrade (``node_count``, the nodes there are
    now, when not given), so a resumed run, with the group surged, keeps the same parallelism (issue 10 item 4).
    ``seed`` makes the batches reproducible; without one a seed is drawn and reported.
    """
    size = node_count if group_size is None else group_size
    if max_surge is not None:
        if update_strategy == "minimal":
            raise invalid_parameter("max_surge", "max_surge selects the surge strategy; it cannot be combined "
                                    "with update_strategy=minimal")
        if max_unavailable is None and max_unavailable_percentage is not None:
            max_unavailable = resolve_max_unavailable(None, max_unavailable_percentage, size)
        max_unavailable = max_unavailable or 0
        validate_surge_settings(max_surge, max_unavailable, surge_cap)
        strategy, surge, batch_size = "surge", max_surge, max_surge + max_unavailable
        steps = surge_steps(len(old), max_surge, max_unavailable)
    else:
        strategy = "minimal" if update_strategy == "minimal" else "rolling"
        resolved = rolling_parallelism(size, az_count, max_unavailable, max_unavailable_percentage,
                                       minimal=strategy == "minimal")
        max_unavailable, surge, batch_size = resolved["max_unavailable"], resolved["surge"], resolved["batch_size"]
        steps = None
    if seed is None:
        seed = random.SystemRandom().randrange(2 ** 31)
    return dict(
        strategy=strategy,
        node_count=node_count,
        group_size=size,
        # The desired capacity while the old nodes are replaced (rolling and minimal: the scale-up's; surge: the
        # highest step's), for a person to read (a dry run, issue 10 item 9).
        desired_capacity_during=size + surge,
        old_count=len(old),
        max_unavailable=max_unavailable,
        max_surge=max_surge,
        surge=surge,
        batch_size=batch_size,
        seed=seed,
        batches=random_batches(old, batch_size, random.Random(seed)),
        steps=steps,
    )


# --- Module options ------------------------------------------------------------------------------------------

# The options naming the node group, shared by the modules that find its ASG with find_asg (documentation:
# the eksops.nodegroup.nodegroup doc fragment). Modules start from a deep copy so that none shares option dicts.
NODEGROUP_ARGUMENT_SPEC = dict(
    cluster_name=dict(type="str", required=True),
    nodegroup_name=dict(type="str", required=True),
    asg_name=dict(type="str"),
)
