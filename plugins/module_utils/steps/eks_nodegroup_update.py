# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The EKS managed update step: eks_nodegroup_update's work (SPEC K3, K5, K6, W4), for its module or its action on
the controller, which follows EKS's update in one task for as long as EKS works, with progress lines (issue 29 item
3: the role's self-including task file died of RecursionError after about 200 polls).

``module`` is anything with the EksopsModule surface used here: ``params`` (ARGUMENT_SPEC), ``check_mode``,
``aws(service)``, ``with_diff`` and ``fail_upgrade``; and ``progress`` when someone reads progress lines as they come
(StepContext.progress in the action; a module process has none).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
import time

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import ec2 as ec2_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import eks as eks_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import ssm as ssm_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    NOT_FOUND,
    UpgradeError,
    invalid_parameter,
    not_found,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.host import clock as clocks
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.waiter import Backoff, Waiter
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import with_blockers
from ansible_collections.eksops.nodegroup.plugins.module_utils.managed.evictions import EvictionWatch
from ansible_collections.eksops.nodegroup.plugins.module_utils.managed.target import (
    release_in_image_name,
    managed_update_target,
    validate_options,
    windows_release,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.managed.update import (
    diff_state,
    failed_update_error,
    update_finished,
    nodegroup_summary,
    plan_follow,
    plan_managed_update,
    predicted_diff_state,
    seconds_left,
    UPDATE_IN_PROGRESS,
    update_progress,
    UPDATE_STRATEGIES,
    update_summary,
    wanted_update_config,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import read_eks_cluster
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.launch_templates import describe_lt_version, resolve_launch_template_id
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import describe_managed_nodegroup

ARGUMENT_SPEC = dict(
    cluster_name=dict(type="str", required=True),
    nodegroup_name=dict(type="str", required=True),
    kubernetes_version=dict(type="str"),
    release_version=dict(type="str"),
    launch_template_version=dict(type="int"),
    image_id=dict(type="str"),
    force=dict(type="bool", default=False),
    max_unavailable=dict(type="int"),
    max_unavailable_percentage=dict(type="int"),
    update_strategy=dict(type="str", choices=sorted(UPDATE_STRATEGIES)),
    wait=dict(type="bool", default=True),
    wait_timeout=dict(type="int", default=3600),
    update_id=dict(type="str"),
    following_since=dict(type="float"),
    return_after=dict(type="int"),
    poll_interval=dict(type="float", default=15),
)
# The targets and the parallelism are checked by validate_options, naming the parameter (SPEC U8).
CONSTRAINTS = {}


# --- Reading EKS, SSM and Auto Scaling ----------------------------------------------------------------------

def managed_nodegroup(eks: Any, cluster_name: str, nodegroup_name: str) -> dict[str, Any]:
    nodegroup = describe_managed_nodegroup(eks, cluster_name, nodegroup_name)
    if nodegroup is None:
        raise not_found("nodegroup_name", "Cluster %s has no EKS managed node group %s (nodegroup_name); a "
                        "self-managed group is upgraded with the collection's rolling upgrade modules instead"
                        % (cluster_name, nodegroup_name), cluster_name=cluster_name, nodegroup_name=nodegroup_name)
    return nodegroup


def read_expected_release(module: Any, target: dict[str, Any], nodegroup: dict[str, Any]) -> str | None:
    """The release EKS picks for a kubernetes_version target, from the public SSM parameter (for Windows, from the
    name of the AMI it names; None, with a warning, when that name does not say)."""
    name = target["ssm_parameter"]
    try:
        value = ssm_api.get_parameter(module.aws("ssm"), name)
    except UpgradeError as err:
        if err.code == NOT_FOUND:
            raise invalid_parameter(
                "kubernetes_version", "No EKS-optimized AMI release is published for Kubernetes %s and amiType %s "
                "(kubernetes_version): SSM parameter %s does not exist" % (target["value"], nodegroup.get("amiType"),
                                                                           name), ssm_parameter=name)
        raise
    if not release_in_image_name(nodegroup.get("amiType")):
        return value
    image_name = (ec2_api.describe_image(module.aws("ec2"), value) or {}).get("Name")
    release = windows_release(image_name)
    if release is None:
        module.warn("The release of AMI %s (SSM parameter %s) cannot be read from its name %r: kubernetes_version "
                    "%s alone decides whether node group %s has anything to do; give release_version to move it to "
                    "a release" % (value, name, image_name, target["value"], nodegroup["nodegroupName"]))
    return release


def describe_update(eks: Any, nodegroup: dict[str, Any], update_id: str, parameter: str | None = None) -> dict[str, Any]:
    """DescribeUpdate's answer; with ``parameter``, an unknown update is ResourceNotFound naming it."""
    try:
        return eks_api.describe_update(eks, nodegroup["clusterName"], nodegroup["nodegroupName"], update_id)
    except UpgradeError as err:
        if parameter and err.code == NOT_FOUND:
            raise not_found(parameter, "Node group %s has no update %s (%s)" % (nodegroup["nodegroupName"],
                                                                                update_id, parameter), **err.details)
        raise


def updates_in_progress(eks: Any, nodegroup: dict[str, Any]) -> list[dict[str, Any]]:
    """The node group's updates whose status is InProgress (ListUpdates gives ids only)."""
    update_ids = eks_api.list_updates(eks, nodegroup["clusterName"], nodegroup["nodegroupName"])
    described = [describe_update(eks, nodegroup, update_id) for update_id in update_ids]
    return [update for update in described if not update_finished(update)]


def read_progress(autoscaling: Any, nodegroup: dict[str, Any]) -> dict[str, int]:
    names = [group["name"] for group in (nodegroup.get("resources") or {}).get("autoScalingGroups") or []]
    if not names:
        return update_progress([])
    return update_progress(autoscaling_api.describe_auto_scaling_groups(autoscaling, names))


# --- Changing the node group (EKS API only) -----------------------------------------------------------------

def start_update(call: Callable[[Any, dict[str, Any]], dict[str, Any]], eks: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Send an Update* request (``call``: a function of aws/eks.py); EKS's ResourceInUseException becomes a clear
    "another update" refusal."""
    try:
        return call(eks, request)
    except UpgradeError as err:
        if err.details.get("aws_error_code") == "ResourceInUseException":
            raise UpgradeError(
                UPDATE_IN_PROGRESS, "Node group %s has another update in progress (EKS: %s); wait for it to end "
                "and run again" % (request["nodegroupName"], err.details.get("aws_error_message")),
                parameter="nodegroup_name", **err.details)
        raise


def follow_update(eks: Any, nodegroup: dict[str, Any], update: dict[str, Any], waiter: Waiter,
                  poll_interval: float, on_poll: Callable[[dict[str, Any]], None] = lambda update: None
                  ) -> dict[str, Any]:
    """``update`` described every ``poll_interval`` seconds until ``update_finished`` or ``waiter``'s deadline (a
    loop, not a task per poll: SPEC W4); ``on_poll`` is given each description. Returns the last one."""
    def described() -> dict[str, Any]:
        answer = describe_update(eks, nodegroup, update["id"])
        on_poll(answer)
        return answer

    return waiter.poll(described, Backoff.every(poll_interval), seen=update)[1]


def _time_left(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return ", less than a minute left" if seconds < 60 else ", about %d min left" % round(seconds / 60)


class ProgressLines:
    """What a person following EKS's update reads (``log``): a line when the update's status or the count of
    updated nodes changes, with the time left at the pace seen so far."""

    def __init__(self, autoscaling: Any, nodegroup: dict[str, Any], log: Callable[[str], None]) -> None:
        self.autoscaling = autoscaling
        self.nodegroup = nodegroup
        self.log = log
        self.first: tuple[float, dict[str, int]] | None = None
        self.shown: tuple[str, int] | None = None

    def __call__(self, update: dict[str, Any]) -> None:
        progress = read_progress(self.autoscaling, self.nodegroup)
        now = clocks.SYSTEM_CLOCK.now()
        if self.first is None or progress["nodes_updated"] < self.first[1]["nodes_updated"]:
            # The pace counts from the lowest count: early in an update every node counts as updated.
            self.first = (now, progress)
        # Not on a change of the total alone: it moves with every instance that enters or leaves service.
        if self.shown == (update["status"], progress["nodes_updated"]):
            return
        self.shown = (update["status"], progress["nodes_updated"])
        left = seconds_left(self.first[1], progress, now - self.first[0])
        self.log("EKS update %s of node group %s: %s; %d of %d nodes run the new launch template version%s" % (
            update["id"], self.nodegroup["nodegroupName"], update["status"], progress["nodes_updated"],
            progress["nodes_total"], _time_left(left)))


def carry_out(module: Any, eks: Any, nodegroup: dict[str, Any], plan: dict[str, Any],
              in_progress: list[dict[str, Any]], result: dict[str, Any], follow_for: float) -> dict[str, Any]:
    """Start (or follow) the plan's updates; returns the update followed last. Keeps result["changed"] and
    result["nodegroup_update"]["eks_update"] current, so a failure on the way still reports them. Follows for ``follow_for``
    seconds at most."""
    params = module.params
    waiter = Waiter(update_finished, follow_for)
    by_id = dict((update["id"], update) for update in in_progress)
    # Progress is read (DescribeAutoScalingGroups) and shown only where a person follows it: the action's output.
    show = getattr(module, "progress", None)
    progress_lines = ProgressLines(module.aws("autoscaling"), nodegroup, show) if show else (lambda update: None)

    def follow(update: dict[str, Any], wait: bool = True) -> dict[str, Any]:
        result["nodegroup_update"]["eks_update"] = update_summary(update)
        if wait:
            update = follow_update(eks, nodegroup, update, waiter, params["poll_interval"], progress_lines)
            result["nodegroup_update"]["eks_update"] = update_summary(update)
        return update

    if plan["action"] == "follow":
        return follow(by_id[plan["follow_update_id"]], wait=params["wait"])
    config_update = by_id.get(plan["pending_config_update_id"])
    if plan["config_update"]:
        config_update = start_update(eks_api.update_nodegroup_config, eks, plan["config_update"])
        result["changed"] = True
    if config_update is not None:
        # EKS takes the version update only once the configuration update has ended.
        config_update = follow(config_update)
        if config_update["status"] != "Successful":
            return config_update
    update = start_update(eks_api.update_nodegroup_version, eks, plan["version_update"])
    result["changed"] = True
    return follow(update, wait=params["wait"])


def follow_window(params: dict[str, Any], following_since: float, started_at: float) -> tuple[float, bool]:
    """(seconds this run follows, whether that reaches the end of wait_timeout): return_after, but never past
    wait_timeout after following_since (both following_since and started_at, this run's start, are wall-clock
    epoch seconds)."""
    to_timeout = following_since + params["wait_timeout"] - started_at
    return_after = params["return_after"] if params["return_after"] is not None else to_timeout
    return min(to_timeout, return_after), to_timeout <= return_after


def update_and_report(module: Any, eks: Any, nodegroup: dict[str, Any], plan: dict[str, Any],
                      in_progress: list[dict[str, Any]], result: dict[str, Any], follow_for: float) -> dict[str, Any]:
    """Carry the plan out and put the outcome in ``result``, with the evictions EKS made meanwhile (counted from the
    cluster, proven to be cluster_name's before the first change, SPEC K4); a failure on the way (a Failed update:
    with EKS's error code) fails the module with the result so far. Returns the final DescribeNodegroup answer."""
    evictions = EvictionWatch(module.core_v1(), nodegroup["nodegroupName"], module.warn)
    evictions.start()
    failure = update = None
    try:
        update = carry_out(module, eks, nodegroup, plan, in_progress, result, follow_for)
    except UpgradeError as err:
        failure = err
    finally:
        result["nodegroup_update"]["evictions"] = evictions.stop()
    if failure is not None:
        module.fail_upgrade(failure, **result)
    final = managed_nodegroup(eks, nodegroup["clusterName"], nodegroup["nodegroupName"])
    result["nodegroup_update"].update(nodegroup=nodegroup_summary(final), finished=update["status"] == "Successful")
    if update["status"] in ("Failed", "Cancelled"):
        result["nodegroup_update"]["progress"] = read_progress(module.aws("autoscaling"), final)
        module.fail_upgrade(with_blockers(failed_update_error(update, nodegroup["nodegroupName"]), update, module.core_v1),
                            **result)
    result["msg"] = outcome_message(nodegroup, plan, update)
    return final


def outcome_message(nodegroup: dict[str, Any], plan: dict[str, Any], update: dict[str, Any]) -> str:
    """The sentence for an update that is Successful or still InProgress."""
    name = nodegroup["nodegroupName"]
    if update["status"] == "Successful":
        return "Node group %s is on %s %s: update %s ended Successful" % (
            name, plan["target"]["option"], plan["target"]["value"], update["id"])
    return ("%s %s of node group %s is still InProgress; run again with the same target to keep following it"
            % (update["type"], update["id"], name))


def run(module: Any) -> dict[str, Any]:
    params = module.params
    validate_options(params)
    eks = module.aws("eks")
    cluster_version = read_eks_cluster(eks, params["cluster_name"]).get("version")
    nodegroup = managed_nodegroup(eks, params["cluster_name"], params["nodegroup_name"])
    target = managed_update_target(params, nodegroup, cluster_version)
    if target["option"] == "launch_template_version":
        # SPEC K5: checked before any change, not left to EKS after the updateConfig has been changed.
        ec2 = module.aws("ec2")
        describe_lt_version(ec2, resolve_launch_template_id(ec2, nodegroup["launchTemplate"]), target["value"],
                            parameter="launch_template_version")
    expected_release = read_expected_release(module, target, nodegroup) \
        if target["ssm_parameter"] else None
    named = describe_update(eks, nodegroup, params["update_id"], "update_id") if params["update_id"] else None
    if named is not None and named.get("type") == "VersionUpdate":
        in_progress = [named]
        plan = plan_follow(nodegroup, target, named, expected_release)
    else:
        # No update named, or our own configuration update (its version update is still to start).
        in_progress = updates_in_progress(eks, nodegroup)
        plan = plan_managed_update(
            nodegroup, target,
            wanted_update_config(params["max_unavailable"], params["max_unavailable_percentage"],
                                 params["update_strategy"]),
            in_progress, force=params["force"], expected_release=expected_release)
    followed = [update for update in in_progress if update["id"] == plan["follow_update_id"]]
    started_at = time.time()
    following_since = params["following_since"] if params["following_since"] is not None else started_at
    update_result = dict(plan=plan, finished=plan["action"] == "none",
                         eks_update=update_summary(followed[0]) if followed else None,
                         nodegroup=nodegroup_summary(nodegroup), following_since=following_since, timed_out=False,
                         evictions=None)
    result = dict(changed=False, msg=plan["message"], nodegroup_update=update_result)
    final = nodegroup
    if plan["action"] == "start" and module.check_mode:
        result["changed"] = True
    elif plan["action"] != "none" and not module.check_mode:
        follow_for, reaches_timeout = follow_window(params, following_since, started_at)
        final = update_and_report(module, eks, nodegroup, plan, in_progress, result, follow_for)
        # An update still running after a follow that used up wait_timeout: the caller stops waiting.
        update_result["timed_out"] = params["wait"] and not update_result["finished"] and reaches_timeout
    update_result["progress"] = read_progress(module.aws("autoscaling"), final)
    return module.with_diff(result, before=diff_state(nodegroup), after=diff_state(final) if update_result["finished"]
                            else predicted_diff_state(nodegroup, plan))
