# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure decisions of an update of an EKS *managed* node group through EKS's own API (SPEC K3, K5, K6, U7, U8).

On a managed node group EKS owns the Auto Scaling group and the launch template, so nothing here plans a
write to them: the plan is an UpdateNodegroupConfig request (when the group's updateConfig differs from what
the playbook asks) and an UpdateNodegroupVersion request, or following an update EKS is already running.

Nothing here talks to AWS. The inputs are the answers of DescribeCluster, DescribeNodegroup, DescribeUpdate,
DescribeAutoScalingGroups and SSM GetParameter exactly as botocore returns them (camelCase for EKS); the
outputs are request payloads for EKS, plain snake_case dicts for the module's result, and UpgradeError.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    API_ERROR,
    UpgradeError,
    invalid_parameter,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.eks_amis import check_kubernetes_version
from ansible_collections.eksops.nodegroup.plugins.module_utils.planning import resolve_max_unavailable

TARGET_OPTIONS = ("kubernetes_version", "release_version", "launch_template_version", "image_id")
UPDATE_STRATEGIES = {"default": "DEFAULT", "minimal": "MINIMAL"}
# EKS's answer when a node group already has an update running; used as the code of our own refusal too.
UPDATE_IN_PROGRESS = "ResourceInUseException"
# Placeholder in the predicted diff for what EKS alone decides (e.g. the release of a Bottlerocket group).
CHOSEN_BY_EKS = "chosen by EKS"

# DescribeNodegroup statuses in which EKS takes no update.
_NOT_UPDATABLE_STATUSES = frozenset(["CREATING", "DELETING", "CREATE_FAILED", "DELETE_FAILED"])
_UPDATE_CONFIG_PARAMS = {"MaxUnavailable": "maxUnavailable", "MaxUnavailablePercentage": "maxUnavailablePercentage",
                         "UpdateStrategy": "updateStrategy"}
# What EKS applies when a node group has no updateConfig (NodegroupUpdateConfig: "The default value is one
# node"; the DEFAULT strategy).
_EKS_DEFAULT_UPDATE_CONFIG = {"maxUnavailable": 1, "updateStrategy": "DEFAULT"}
# The family part of the EKS-optimized AMI SSM parameters, per DescribeNodegroup amiType. Bottlerocket,
# Windows and CUSTOM publish no .../recommended/release_version parameter in this tree.
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
# Amazon Linux release versions: <k8s major>.<minor>.<patch>-<YYYYMMDD> (EKS user guide, AMI versions).
_AMAZON_LINUX_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)-(\d{8})$")


# --- Option checks and the target ---------------------------------------------------------------------------

def validate_options(params):
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
    if params["poll_interval"] < 1:
        raise invalid_parameter("poll_interval", "poll_interval must be at least 1 second")


def ssm_family(ami_type):
    """The SSM path part of the EKS-optimized Amazon Linux AMIs of ``ami_type``, or None (not published)."""
    return _SSM_FAMILY_BY_AMI_TYPE.get(ami_type)


def release_version_ssm_parameter(ami_type, kubernetes_version):
    """The SSM public parameter holding the release EKS picks for ``kubernetes_version``, or None."""
    family = ssm_family(ami_type)
    if family is None:
        return None
    return "/aws/service/eks/optimized-ami/%s/%s/recommended/release_version" % (kubernetes_version, family)


def kubernetes_minor(version):
    """(major, minor) of "1.30" (or of "1.30.4"), or None."""
    match = re.match(r"^(\d+)\.(\d+)(?:\.\d+)?$", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _release_order(ami_type, release_version):
    """A sortable key of an Amazon Linux release version ((major, minor), patch, date), else None."""
    match = _AMAZON_LINUX_RELEASE.match(release_version or "")
    if ssm_family(ami_type) is None or not match:
        return None
    return (int(match.group(1)), int(match.group(2))), int(match.group(3)), match.group(4)


def _launch_template_label(nodegroup):
    """The name (else the id) of the launch template the group was created with."""
    launch_template = nodegroup.get("launchTemplate") or {}
    return launch_template.get("name") or launch_template.get("id")


def _refuse_image_id(nodegroup, image_id):
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


def _check_not_custom_ami(nodegroup, parameter):
    if nodegroup.get("amiType") == "CUSTOM":
        raise invalid_parameter(
            parameter, "Node group %s runs the AMI named in its launch template (amiType CUSTOM); EKS refuses %s "
            "for it (UpdateNodegroupVersion: 'don't specify version/releaseVersion, or the node group update will "
            "fail'). Put the new AMI in a new version of launch template %s and pass launch_template_version"
            % (nodegroup["nodegroupName"], parameter, _launch_template_label(nodegroup)))


def _check_kubernetes_version(parameter, target, nodegroup, cluster_version):
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


def _release_version_target(release, nodegroup, cluster_version):
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


def _launch_template_version_target(version, nodegroup):
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


def resolve_target(params, nodegroup, cluster_version):
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


# --- updateConfig ------------------------------------------------------------------------------------------

def wanted_update_config(max_unavailable, max_unavailable_percentage, update_strategy):
    """The NodegroupUpdateConfig the playbook asks for: only what is set (what is not keeps the group's own)."""
    wanted = {}
    if update_strategy is not None:
        wanted["updateStrategy"] = UPDATE_STRATEGIES[update_strategy]
    if max_unavailable is not None:
        wanted["maxUnavailable"] = max_unavailable
    elif max_unavailable_percentage is not None:
        wanted["maxUnavailablePercentage"] = max_unavailable_percentage
    return wanted


def effective_update_config(update_config):
    """A node group's updateConfig with EKS's defaults filled in (a group may report none, or no strategy)."""
    config = dict((key, value) for key, value in (update_config or {}).items() if value is not None)
    if "maxUnavailable" not in config and "maxUnavailablePercentage" not in config:
        config["maxUnavailable"] = _EKS_DEFAULT_UPDATE_CONFIG["maxUnavailable"]
    config.setdefault("updateStrategy", _EKS_DEFAULT_UPDATE_CONFIG["updateStrategy"])
    return config


def _parallelism_matches(config, wanted):
    for key in ("maxUnavailable", "maxUnavailablePercentage"):
        if key in wanted:
            return config.get(key) == wanted[key]
    return True


def update_config_request(current, wanted):
    """The updateConfig of an UpdateNodegroupConfig request that gives the group ``wanted``, or None when its
    ``current`` updateConfig (DescribeNodegroup) already matches.

    The request always names the parallelism (the wanted one, else the group's own) with the strategy:
    NodegroupUpdateConfig requires maxUnavailable or maxUnavailablePercentage, and each replaces the other.
    """
    config = effective_update_config(current)
    strategy = wanted.get("updateStrategy", config["updateStrategy"])
    if _parallelism_matches(config, wanted) and config["updateStrategy"] == strategy:
        return None
    request = {}
    for key in ("maxUnavailable", "maxUnavailablePercentage"):
        if key in wanted:
            request[key] = wanted[key]
            break
    else:
        key = "maxUnavailable" if "maxUnavailable" in config else "maxUnavailablePercentage"
        request[key] = config[key]
    request["updateStrategy"] = strategy
    return request


def apply_update_config(current, request):
    """The updateConfig EKS reports after ``request`` (None: unchanged); one parallelism setting clears the other."""
    config = effective_update_config(current)
    if not request:
        return config
    for key in ("maxUnavailable", "maxUnavailablePercentage"):
        if key in request:
            config.pop("maxUnavailable", None)
            config.pop("maxUnavailablePercentage", None)
            config[key] = request[key]
    if "updateStrategy" in request:
        config["updateStrategy"] = request["updateStrategy"]
    return config


# --- Updates EKS is running ---------------------------------------------------------------------------------

def _params(update):
    return dict((param.get("type"), param.get("value")) for param in update.get("params") or [])


def is_target_update(update, target):
    """Whether a VersionUpdate is one to ``target`` (its params name the same version/release/LT version)."""
    if update.get("type") != "VersionUpdate":
        return False
    param = {"kubernetes_version": "Version", "release_version": "ReleaseVersion",
             "launch_template_version": "LaunchTemplateVersion"}[target["option"]]
    return _params(update).get(param) == target["value"]


def is_wanted_config_update(update, wanted):
    """Whether a ConfigUpdate changes only the updateConfig, to values the playbook asks for (a rerun's own)."""
    if update.get("type") != "ConfigUpdate":
        return False
    params = _params(update)
    if not params or any(name not in _UPDATE_CONFIG_PARAMS for name in params):
        return False
    sets_parallelism = "maxUnavailable" in wanted or "maxUnavailablePercentage" in wanted
    for name, value in params.items():
        key = _UPDATE_CONFIG_PARAMS[name]
        # What the playbook sets must be what the update sets; parallelism it leaves open may be anything.
        if (key in wanted or (key != "updateStrategy" and sets_parallelism)) and str(wanted.get(key)) != value:
            return False
    return True


def _describe_update_briefly(update):
    params = ", ".join("%s=%s" % (param.get("type"), param.get("value")) for param in update.get("params") or [])
    return "%s %s (%s%s)" % (update.get("type"), update.get("id"), update.get("status"),
                             ": " + params if params else "")


def _already_on_target(nodegroup, target, expected_release):
    if target["option"] == "kubernetes_version":
        return nodegroup.get("version") == target["value"] and (
            expected_release is None or nodegroup.get("releaseVersion") == expected_release)
    if target["option"] == "release_version":
        return nodegroup.get("releaseVersion") == target["value"]
    return str((nodegroup.get("launchTemplate") or {}).get("version")) == target["value"]


def _target_words(target):
    return "%s %s" % (target["option"], target["value"])


def plan_managed_update(nodegroup, target, wanted_config, in_progress, force=False, expected_release=None):
    """What to do (SPEC K3, K5): nothing, follow our update EKS is running, or start one.

    ``in_progress``: the node group's updates whose status is InProgress (DescribeUpdate answers).
    ``expected_release``: the release EKS picks for a kubernetes_version target (SSM), when known.
    Another update in progress is refused, naming it, since EKS runs one update of a node group at a time.
    Returns {action: none|follow|start, message, target, expected_release_version, follow_update_id,
    pending_config_update_id, config_update (UpdateNodegroupConfig request or None), version_update
    (UpdateNodegroupVersion request or None)}.
    """
    name = nodegroup["nodegroupName"]
    ours_version = [u for u in in_progress if is_target_update(u, target)]
    ours_config = [u for u in in_progress if is_wanted_config_update(u, wanted_config)]
    foreign = [u for u in in_progress if u not in ours_version and u not in ours_config]
    if foreign:
        raise UpgradeError(
            UPDATE_IN_PROGRESS, "Node group %s has another update in progress: %s. EKS runs one update of a node "
            "group at a time; wait for it to end (aws eks describe-update --name %s --nodegroup-name %s "
            "--update-id %s) and run again" % (name, "; ".join(_describe_update_briefly(u) for u in foreign),
                                               nodegroup.get("clusterName"), name, foreign[0].get("id")),
            parameter="nodegroup_name", update_ids=[u.get("id") for u in foreign])
    plan = dict(target=dict(option=target["option"], value=target["value"]),
                expected_release_version=expected_release, follow_update_id=None, pending_config_update_id=None,
                config_update=None, version_update=None)
    if ours_version:
        update = ours_version[0]
        plan.update(action="follow", follow_update_id=update["id"],
                    message="Node group %s: following update %s to %s, already in progress"
                    % (name, update["id"], _target_words(target)))
        return plan
    if _already_on_target(nodegroup, target, expected_release):
        plan.update(action="none", message="Node group %s is already on the target (%s); nothing to do"
                    % (name, _target_words(target)))
        return plan
    names = dict(clusterName=nodegroup["clusterName"], nodegroupName=name)
    update_config = None
    if ours_config:
        plan["pending_config_update_id"] = ours_config[0]["id"]
    else:
        update_config = update_config_request(nodegroup.get("updateConfig"), wanted_config)
    if update_config is not None:
        plan["config_update"] = dict(names, updateConfig=update_config)
    plan.update(action="start", version_update=dict(names, force=bool(force), **target["request"]),
                message="Node group %s: updating to %s%s" % (
                    name, _target_words(target),
                    " after setting updateConfig %s" % update_config if update_config else ""))
    return plan


def plan_follow(nodegroup, target, update, expected_release=None):
    """The plan of a run told which version update to follow (option update_id): follow it, whatever its status,
    and never start another, so a failure of that update is reported rather than retried behind the caller."""
    plan = dict(action="follow", target=dict(option=target["option"], value=target["value"]),
                expected_release_version=expected_release, follow_update_id=update["id"],
                pending_config_update_id=None, config_update=None, version_update=None,
                message="Node group %s: following update %s to %s" % (nodegroup["nodegroupName"], update["id"],
                                                                      _target_words(target)))
    return plan


# --- Following an update ------------------------------------------------------------------------------------

def update_progress(auto_scaling_groups):
    """{nodes_total, nodes_updated} of the node group's ASGs (DescribeAutoScalingGroups): InService instances,
    and those of them launched from the launch template version each group points at now.

    Right after an update starts, before EKS has moved the group to its new launch template version, every node
    counts as updated; the figure means something once the update's setup phase is done.
    """
    total = updated = 0
    for group in auto_scaling_groups:
        spec = group.get("LaunchTemplate") or ((group.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}
                                               ).get("LaunchTemplateSpecification") or {}
        for instance in group.get("Instances") or []:
            if instance.get("LifecycleState") != "InService":
                continue
            total += 1
            launched = instance.get("LaunchTemplate") or {}
            same_template = (launched.get("LaunchTemplateId") == spec.get("LaunchTemplateId")
                             if spec.get("LaunchTemplateId") else
                             launched.get("LaunchTemplateName") == spec.get("LaunchTemplateName"))
            if same_template and spec.get("Version") is not None and \
                    str(launched.get("Version")) == str(spec.get("Version")):
                updated += 1
    return dict(nodes_total=total, nodes_updated=updated)


def is_finished(update):
    return update.get("status") != "InProgress"


def failed_update_error(update, nodegroup_name):
    """The UpgradeError of a Failed (or Cancelled) update: EKS's first errorCode as the code (U8), and every
    error EKS gave quoted with its resource ids."""
    errors = update.get("errors") or []
    quoted = []
    for error in errors:
        text = "%s: %s" % (error.get("errorCode") or "Unknown", error.get("errorMessage") or "(no message)")
        if error.get("resourceIds"):
            text += " (resources: %s)" % ", ".join(error["resourceIds"])
        quoted.append(text)
    cancellation = update.get("cancellation") or {}
    if cancellation.get("reason"):
        quoted.append("cancelled: %s" % cancellation["reason"])
    code = errors[0].get("errorCode") if errors and errors[0].get("errorCode") else API_ERROR
    return UpgradeError(
        code, "EKS update %s (%s) of node group %s is %s: %s" % (
            update.get("id"), update.get("type"), nodegroup_name, update.get("status"),
            "; ".join(quoted) or "EKS gave no error details"),
        update_id=update.get("id"), update_status=update.get("status"),
        eks_errors=[dict(error_code=e.get("errorCode"), error_message=e.get("errorMessage"),
                         resource_ids=list(e.get("resourceIds") or [])) for e in errors])


# --- Result shapes ------------------------------------------------------------------------------------------

def _timestamp(value):
    return value.isoformat() if hasattr(value, "isoformat") else value


def update_summary(update):
    """snake_case result of an EKS Update."""
    if update is None:
        return None
    return dict(
        id=update.get("id"), status=update.get("status"), type=update.get("type"),
        params=[dict(type=p.get("type"), value=p.get("value")) for p in update.get("params") or []],
        errors=[dict(error_code=e.get("errorCode"), error_message=e.get("errorMessage"),
                     resource_ids=list(e.get("resourceIds") or [])) for e in update.get("errors") or []],
        created_at=_timestamp(update.get("createdAt")))


def update_config_summary(update_config):
    config = update_config or {}
    return dict(max_unavailable=config.get("maxUnavailable"),
                max_unavailable_percentage=config.get("maxUnavailablePercentage"),
                update_strategy=config.get("updateStrategy"))


def nodegroup_summary(nodegroup):
    """snake_case result of a DescribeNodegroup answer."""
    launch_template = nodegroup.get("launchTemplate")
    return dict(
        name=nodegroup.get("nodegroupName"), status=nodegroup.get("status"), version=nodegroup.get("version"),
        release_version=nodegroup.get("releaseVersion"), ami_type=nodegroup.get("amiType"),
        launch_template=dict(id=launch_template.get("id"), name=launch_template.get("name"),
                             version=launch_template.get("version")) if launch_template else None,
        update_config=update_config_summary(nodegroup.get("updateConfig")),
        health_issues=[dict(code=i.get("code"), message=i.get("message"), resource_ids=list(i.get("resourceIds") or []))
                       for i in (nodegroup.get("health") or {}).get("issues") or []],
        auto_scaling_groups=[g.get("name") for g in (nodegroup.get("resources") or {}).get("autoScalingGroups") or []])


def diff_state(nodegroup):
    """The fields a managed update changes, for the diff."""
    return dict(version=nodegroup.get("version"), release_version=nodegroup.get("releaseVersion"),
                launch_template_version=(nodegroup.get("launchTemplate") or {}).get("version"),
                update_config=update_config_summary(effective_update_config(nodegroup.get("updateConfig"))))


def predicted_diff_state(nodegroup, plan):
    """diff_state after the plan, as far as it can be known before EKS has done it."""
    after = diff_state(nodegroup)
    if plan["action"] == "none":
        return after
    request = plan["version_update"] or {}
    option, value = plan["target"]["option"], plan["target"]["value"]
    if option == "kubernetes_version":
        after.update(version=value, release_version=plan["expected_release_version"] or CHOSEN_BY_EKS)
    elif option == "release_version":
        after.update(version=request.get("version", after["version"]), release_version=value)
    else:
        after.update(launch_template_version=value, release_version=CHOSEN_BY_EKS)
    after["update_config"] = update_config_summary(
        apply_update_config(nodegroup.get("updateConfig"), (plan["config_update"] or {}).get("updateConfig")))
    return after
