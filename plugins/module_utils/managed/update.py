# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure decisions of an update of an EKS *managed* node group through EKS's own API (SPEC K3, K5, U7, U8); its
target is managed/target.py's.

On a managed node group EKS owns the Auto Scaling group and the launch template, so nothing here plans a
write to them: the plan is an UpdateNodegroupConfig request (when the group's updateConfig differs from what
the playbook asks) and an UpdateNodegroupVersion request, or following an update EKS is already running.

Nothing here talks to AWS. The inputs are the answers of DescribeCluster, DescribeNodegroup, DescribeUpdate,
DescribeAutoScalingGroups and SSM GetParameter exactly as botocore returns them (camelCase for EKS); the
outputs are request payloads for EKS, plain snake_case dicts for the module's result, and UpgradeError.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import API_ERROR, UpgradeError

UPDATE_STRATEGIES = {"default": "DEFAULT", "minimal": "MINIMAL"}
# EKS's answer when a node group already has an update running; used as the code of our own refusal too.
UPDATE_IN_PROGRESS = "ResourceInUseException"
# Placeholder in the predicted diff for what EKS alone decides (e.g. the release of a Bottlerocket group).
CHOSEN_BY_EKS = "chosen by EKS"

_UPDATE_CONFIG_PARAMS = {"MaxUnavailable": "maxUnavailable", "MaxUnavailablePercentage": "maxUnavailablePercentage",
                         "UpdateStrategy": "updateStrategy"}
# What EKS applies when a node group has no updateConfig (NodegroupUpdateConfig: "The default value is one
# node"; the DEFAULT strategy).
_EKS_DEFAULT_UPDATE_CONFIG = {"maxUnavailable": 1, "updateStrategy": "DEFAULT"}


# --- updateConfig ------------------------------------------------------------------------------------------

def wanted_update_config(max_unavailable: int | None, max_unavailable_percentage: int | None, update_strategy: str | None) -> dict[str, Any]:
    """The NodegroupUpdateConfig the playbook asks for: only what is set (what is not keeps the group's own)."""
    wanted = {}
    if update_strategy is not None:
        wanted["updateStrategy"] = UPDATE_STRATEGIES[update_strategy]
    if max_unavailable is not None:
        wanted["maxUnavailable"] = max_unavailable
    elif max_unavailable_percentage is not None:
        wanted["maxUnavailablePercentage"] = max_unavailable_percentage
    return wanted


def effective_update_config(update_config: Mapping[str, Any] | None) -> dict[str, Any]:
    """A node group's updateConfig with EKS's defaults filled in (a group may report none, or no strategy)."""
    config = dict((key, value) for key, value in (update_config or {}).items() if value is not None)
    if "maxUnavailable" not in config and "maxUnavailablePercentage" not in config:
        config["maxUnavailable"] = _EKS_DEFAULT_UPDATE_CONFIG["maxUnavailable"]
    config.setdefault("updateStrategy", _EKS_DEFAULT_UPDATE_CONFIG["updateStrategy"])
    return config


def _parallelism_matches(config: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    for key in ("maxUnavailable", "maxUnavailablePercentage"):
        if key in wanted:
            return config.get(key) == wanted[key]
    return True


def update_config_request(current: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> dict[str, Any] | None:
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


def apply_update_config(current: Mapping[str, Any] | None, request: Mapping[str, Any] | None) -> dict[str, Any]:
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

def _params(update: Mapping[str, Any]) -> dict[str | None, str | None]:
    return dict((param.get("type"), param.get("value")) for param in update.get("params") or [])


def is_target_update(update: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
    """Whether a VersionUpdate is one to ``target`` (its params name the same version/release/LT version)."""
    if update.get("type") != "VersionUpdate":
        return False
    param = {"kubernetes_version": "Version", "release_version": "ReleaseVersion",
             "launch_template_version": "LaunchTemplateVersion"}[target["option"]]
    return _params(update).get(param) == target["value"]


def is_wanted_config_update(update: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
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


def _describe_update_briefly(update: Mapping[str, Any]) -> str:
    params = ", ".join("%s=%s" % (param.get("type"), param.get("value")) for param in update.get("params") or [])
    return "%s %s (%s%s)" % (update.get("type"), update.get("id"), update.get("status"),
                             ": " + params if params else "")


def _already_on_target(nodegroup: Mapping[str, Any], target: Mapping[str, Any], expected_release: str | None) -> bool:
    if target["option"] == "kubernetes_version":
        return nodegroup.get("version") == target["value"] and (
            expected_release is None or nodegroup.get("releaseVersion") == expected_release)
    if target["option"] == "release_version":
        return nodegroup.get("releaseVersion") == target["value"]
    return str((nodegroup.get("launchTemplate") or {}).get("version")) == target["value"]


def _target_words(target: Mapping[str, Any]) -> str:
    return "%s %s" % (target["option"], target["value"])


def plan_managed_update(nodegroup: Mapping[str, Any], target: Mapping[str, Any], wanted_config: Mapping[str, Any],
                        in_progress: Sequence[Mapping[str, Any]], force: bool = False, expected_release: str | None = None) -> dict[str, Any]:
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


def plan_follow(nodegroup: Mapping[str, Any], target: Mapping[str, Any], update: Mapping[str, Any],
                expected_release: str | None = None) -> dict[str, Any]:
    """The plan of a run told which version update to follow (option update_id): follow it, whatever its status,
    and never start another, so a failure of that update is reported rather than retried behind the caller."""
    plan = dict(action="follow", target=dict(option=target["option"], value=target["value"]),
                expected_release_version=expected_release, follow_update_id=update["id"],
                pending_config_update_id=None, config_update=None, version_update=None,
                message="Node group %s: following update %s to %s" % (nodegroup["nodegroupName"], update["id"],
                                                                      _target_words(target)))
    return plan


# --- Following an update ------------------------------------------------------------------------------------

def seconds_left(first: Mapping[str, int], now: Mapping[str, int], elapsed: float) -> float | None:
    """The time EKS needs for the nodes not yet updated, at the pace seen since ``first`` (``elapsed`` seconds
    ago); None until a node was updated in between (early in an update every node counts as updated, so the count
    first drops)."""
    done = now["nodes_updated"] - first["nodes_updated"]
    if done <= 0 or elapsed <= 0:
        return None
    return (now["nodes_total"] - now["nodes_updated"]) * elapsed / done


def update_progress(auto_scaling_groups: Iterable[Mapping[str, Any]]) -> dict[str, int]:
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


def update_finished(update: Mapping[str, Any]) -> bool:
    return update.get("status") != "InProgress"


def failed_update_error(update: Mapping[str, Any], nodegroup_name: str) -> UpgradeError:
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

def _timestamp(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value


def update_summary(update: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """snake_case result of an EKS Update."""
    if update is None:
        return None
    return dict(
        id=update.get("id"), status=update.get("status"), type=update.get("type"),
        params=[dict(type=p.get("type"), value=p.get("value")) for p in update.get("params") or []],
        errors=[dict(error_code=e.get("errorCode"), error_message=e.get("errorMessage"),
                     resource_ids=list(e.get("resourceIds") or [])) for e in update.get("errors") or []],
        created_at=_timestamp(update.get("createdAt")))


def update_config_summary(update_config: Mapping[str, Any] | None) -> dict[str, Any]:
    config = update_config or {}
    return dict(max_unavailable=config.get("maxUnavailable"),
                max_unavailable_percentage=config.get("maxUnavailablePercentage"),
                update_strategy=config.get("updateStrategy"))


def nodegroup_summary(nodegroup: Mapping[str, Any]) -> dict[str, Any]:
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


def diff_state(nodegroup: Mapping[str, Any]) -> dict[str, Any]:
    """The fields a managed update changes, for the diff."""
    return dict(version=nodegroup.get("version"), release_version=nodegroup.get("releaseVersion"),
                launch_template_version=(nodegroup.get("launchTemplate") or {}).get("version"),
                update_config=update_config_summary(effective_update_config(nodegroup.get("updateConfig"))))


def predicted_diff_state(nodegroup: Mapping[str, Any], plan: Mapping[str, Any]) -> dict[str, Any]:
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
