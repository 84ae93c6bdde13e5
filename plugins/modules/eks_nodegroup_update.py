#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: eks_nodegroup_update
short_description: Update an EKS managed node group through EKS's own API and follow the update to its end
version_added: 0.1.0
description:
  - Updates an EKS B(managed) node group the way EKS supports it (SPEC K3). EKS owns the group's Auto Scaling
    group and launch template; this module never writes to them (doing so makes the group C(DEGRADED) with
    C(Ec2LaunchTemplateVersionMismatch)), and it calls no mutating Auto Scaling or EC2 API.
  - When the group's C(updateConfig) differs from O(max_unavailable), O(max_unavailable_percentage) and
    O(update_strategy), calls C(UpdateNodegroupConfig) first and waits for that update to end, since EKS takes
    one update of a node group at a time.
  - Then calls C(UpdateNodegroupVersion) with the target (a Kubernetes version, an EKS AMI release version, or a
    version of the group's own launch template) and O(force), and follows the update with C(DescribeUpdate)
    until it ends or O(wait_timeout) is reached. EKS runs the four phases itself (setup, scale up, upgrade,
    scale down).
  - A C(Failed) update fails the module with EKS's own error code (C(PodEvictionFailure),
    C(NodeCreationFailure), ...) and EKS's message, naming the resources EKS named.
  - "Idempotent (SPEC K5): a group already on the target with no update in progress is left alone, and the
    result says so. An update to the same target that EKS is already running (started by an earlier run, or
    still running when O(wait_timeout) ended it) is followed, not started again. Any other update in progress
    is refused, naming it, before anything changes."
  - Every input is checked before the first change. Exactly one of O(kubernetes_version), O(release_version),
    O(launch_template_version) and O(image_id) is required.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  cluster_name:
    description:
      - Name of the EKS cluster.
    type: str
    required: true
  nodegroup_name:
    description:
      - Name of the EKS managed node group.
      - A self-managed node group (no C(DescribeNodegroup) answer) is refused; use the collection's rolling
        upgrade modules for it.
    type: str
    required: true
  kubernetes_version:
    description:
      - Update the group to this Kubernetes version (for example C(1.31)), on the latest EKS-optimized AMI release
        EKS has for it. Sent as C(version).
      - Refused when newer than the cluster's control plane (SPEC K6) or older than the group's version (EKS
        cannot roll back), and for a group whose launch template names its own AMI (C(amiType) C(CUSTOM)).
      - For Amazon Linux groups, the release EKS will pick is read from the public SSM parameter
        C(/aws/service/eks/optimized-ami/<version>/<family>/recommended/release_version) of the group's
        C(amiType); a group on that version and release has nothing to do. For other AMI types a group already
        on the version has nothing to do (use O(release_version) to move to a newer release).
    type: str
  release_version:
    description:
      - Update the group to this EKS-optimized AMI release version (for example C(1.31.3-20250103)). Sent as
        C(releaseVersion); for an Amazon Linux release, its Kubernetes version is sent as C(version) too, and is
        checked against the control plane like O(kubernetes_version).
      - Refused for a group whose launch template names its own AMI, and (Amazon Linux) when older than the
        group's release.
    type: str
  launch_template_version:
    description:
      - Update the group to this version number of its own launch template (the one it was created with), sent
        as C(launchTemplate) with the template's id. This is how a group with a custom AMI gets a new AMI.
      - Refused for a group created without a launch template.
    type: int
  image_id:
    description:
      - Not supported by EKS for managed node groups; accepted only to refuse it with what to use instead
        (O(kubernetes_version) or O(release_version), or a new version of the group's launch template with that
        AMI, passed as O(launch_template_version)).
    type: str
  force:
    description:
      - Passed to C(UpdateNodegroupVersion). EKS then replaces nodes whose pods a PodDisruptionBudget keeps from
        being drained, instead of failing with C(PodEvictionFailure).
      - Has no effect on an update already in progress, which keeps the setting it was started with.
    type: bool
    default: false
  max_unavailable:
    description:
      - Nodes EKS updates in parallel (1 to 100), set in the group's C(updateConfig) before the update.
      - Mutually exclusive with O(max_unavailable_percentage). EKS keeps one of the two; setting one clears the
        other.
      - When neither is set, the group's own setting is kept.
    type: int
  max_unavailable_percentage:
    description:
      - Nodes EKS updates in parallel, as a percentage of the group's nodes (1 to 100).
    type: int
  update_strategy:
    description:
      - C(default) launches new nodes before terminating old ones; C(minimal) terminates old nodes first, for
        capacity-constrained groups (SPEC U7). Set in the group's C(updateConfig) as C(DEFAULT) or C(MINIMAL).
      - When not set, the group's own strategy is kept.
    type: str
    choices: [default, minimal]
  wait:
    description:
      - Follow the version update until it ends or O(wait_timeout) is reached.
      - With V(false) the module returns once EKS has accepted the update (it still waits for a configuration
        update it made, which must end before the version update can start).
    type: bool
    default: true
  wait_timeout:
    description:
      - How long to follow the update, in seconds (0 or more), counted from O(following_since).
      - When it ends first, the module returns RV(nodegroup_update.finished=false) and RV(nodegroup_update.timed_out=true) with the update still
        C(InProgress). That is not a failure of the module; EKS goes on, and a run with the same target follows
        the update again.
    type: int
    default: 3600
  update_id:
    description:
      - Follow this version update only, the one an earlier run started (its RV(nodegroup_update.eks_update.id)); the run never
        starts another, and reports the update's end as it is, C(Failed) included. A role that shows progress
        between runs passes it back so that a failed update is reported instead of started again.
      - The id of a configuration update this module started is accepted too; the version update then starts
        once it has ended.
    type: str
  following_since:
    description:
      - When following began, in seconds since the epoch, so that one follow can span several runs of the
        module (a role that shows progress between runs passes back the RV(nodegroup_update.following_since) the first run
        returned). Defaults to the start of this run.
    type: float
  return_after:
    description:
      - Return after this many seconds of following even though the update goes on (RV(nodegroup_update.finished=false),
        RV(nodegroup_update.timed_out=false)), so the caller can show progress and run the module again. Defaults to
        O(wait_timeout).
    type: int
  poll_interval:
    description:
      - Seconds between two C(DescribeUpdate) calls while following an update (at least 1).
    type: int
    default: 15
extends_documentation_fragment:
  - eksops.nodegroup.aws
  - eksops.nodegroup.attributes.aws_group
attributes:
  check_mode:
    support: full
    description: Reports the plan (the configuration update and the version update request it would send, or
      the update it would follow) and calls no C(Update*) API.
  diff_mode:
    support: full
    description: Shows the group's version, release version, launch template version and update configuration
      before and after (predicted where the update has not ended; values only EKS decides are shown as
      C(chosen by EKS)).
notes:
  - The node group's C(DescribeNodegroup) status must allow an update (C(ACTIVE), C(UPDATING) or C(DEGRADED)).
  - The result's C(changed) is true when this run called C(UpdateNodegroupConfig) or C(UpdateNodegroupVersion)
    (in check mode, would call). Following an update started earlier is not a change.
  - Needs C(eks:DescribeCluster), C(eks:DescribeNodegroup), C(eks:ListUpdates), C(eks:DescribeUpdate),
    C(eks:UpdateNodegroupConfig), C(eks:UpdateNodegroupVersion), C(ssm:GetParameter) (with
    O(kubernetes_version)), C(ec2:DescribeLaunchTemplateVersions) (with O(launch_template_version)) and
    C(autoscaling:DescribeAutoScalingGroups) (progress). See
    C(docs/iam-policy.json).
seealso:
  - name: Update a managed node group (EKS user guide)
    description: How EKS updates a managed node group, phase by phase.
    link: https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html
  - module: eksops.nodegroup.nodegroup_info
"""

EXAMPLES = r"""
- name: Update the managed node group to Kubernetes 1.31, two nodes at a time
  eksops.nodegroup.eks_nodegroup_update:
    cluster_name: prod
    nodegroup_name: workers
    kubernetes_version: "1.31"
    max_unavailable: 2
  register: node_update

- name: Move a GPU group to a given AMI release, terminating old nodes first
  eksops.nodegroup.eks_nodegroup_update:
    cluster_name: prod
    nodegroup_name: gpu
    release_version: 1.31.3-20250103
    update_strategy: minimal

- name: Roll a custom-AMI group to version 7 of its launch template, following for at most 30 minutes per run
  eksops.nodegroup.eks_nodegroup_update:
    cluster_name: prod
    nodegroup_name: custom
    launch_template_version: 7
    force: true
    wait_timeout: 1800
  register: node_update
  until: node_update.nodegroup_update.finished
  retries: 6
  delay: 0
"""

RETURN = r"""
msg:
  description: What the run did, in a sentence (for example that the group is already on the target).
  returned: always
  type: str
  sample: Node group workers is already on the target (kubernetes_version 1.31); nothing to do
nodegroup_update:
  description: The plan, the EKS update followed and where the node group stands; on failure, as far as the module got.
  returned: always
  type: dict
  contains:
    following_since:
      description: When following began (O(following_since), else the start of this run), in seconds since the epoch.
      returned: always
      type: float
    timed_out:
      description: Whether O(wait_timeout) has passed since RV(nodegroup_update.following_since) with the update still in progress.
      returned: always
      type: bool
    finished:
      description:
        - Whether there is nothing left to follow; the group is on the target, or the update ended.
        - C(false) when O(wait_timeout) ended the run (or O(wait=false)) with the update still C(InProgress), and
          in check mode when there is something to do.
      returned: always
      type: bool
    plan:
      description: What the run decided, before changing anything.
      returned: always
      type: dict
      contains:
        action:
          description: C(none) (already on the target), C(follow) (an update to the target is in progress) or
            C(start).
          type: str
          sample: start
        message:
          description: The decision in a sentence.
          type: str
        target:
          description: The target option and its value.
          type: dict
          sample: {option: kubernetes_version, value: "1.31"}
        expected_release_version:
          description: The release EKS picks for O(kubernetes_version), from SSM (Amazon Linux only), else null.
          type: str
          sample: 1.31.3-20250103
        follow_update_id:
          description: Id of the update in progress that is followed (action C(follow)).
          type: str
        pending_config_update_id:
          description: Id of a configuration update to the wanted C(updateConfig) still in progress, waited for
            before the version update.
          type: str
        config_update:
          description: The C(UpdateNodegroupConfig) request, as sent to EKS, or null when the group's
            C(updateConfig) already matches.
          type: dict
          sample:
            clusterName: prod
            nodegroupName: workers
            updateConfig: {maxUnavailable: 2, updateStrategy: DEFAULT}
        version_update:
          description: The C(UpdateNodegroupVersion) request, as sent to EKS (action C(start)).
          type: dict
          sample: {clusterName: prod, nodegroupName: workers, force: false, version: "1.31"}
    eks_update:
      description:
        - The EKS update this run started or followed last, as C(DescribeUpdate) last described it; null when there
          is nothing to do.
        - Not named C(update), which Jinja2 would take for the dict method in C(result.update).
      returned: always
      type: dict
      contains:
        id:
          description: The update's id.
          type: str
          sample: a94ebfc3-6bf8-307a-89e6-7dbaa36421f7
        status:
          description: C(InProgress), C(Successful), C(Failed) or C(Cancelled).
          type: str
        type:
          description: C(VersionUpdate), or C(ConfigUpdate) when the run ended while the configuration update ran.
          type: str
        params:
          description: The update's parameters as EKS records them (C(type), C(value)).
          type: list
          elements: dict
          sample: [{type: Version, value: "1.31"}, {type: ReleaseVersion, value: 1.31.3-20250103}]
        errors:
          description: EKS's errors (C(error_code), C(error_message), C(resource_ids)).
          type: list
          elements: dict
        created_at:
          description: When EKS created the update (ISO 8601).
          type: str
    nodegroup:
      description: The node group as C(DescribeNodegroup) describes it at the end of the run.
      returned: always
      type: dict
      contains:
        name:
          description: Node group name.
          type: str
        status:
          description: C(ACTIVE), C(UPDATING), C(DEGRADED), ...
          type: str
        version:
          description: Kubernetes version.
          type: str
        release_version:
          description: AMI release version (for a custom-AMI launch template, the AMI id).
          type: str
        ami_type:
          description: The group's C(amiType).
          type: str
        launch_template:
          description: The group's own launch template (C(id), C(name), C(version)), or null.
          type: dict
        update_config:
          description: C(max_unavailable), C(max_unavailable_percentage) and C(update_strategy) as EKS reports them.
          type: dict
        health_issues:
          description: EKS's health issues (C(code), C(message), C(resource_ids)).
          type: list
          elements: dict
        auto_scaling_groups:
          description: Names of the Auto Scaling groups EKS runs for the group.
          type: list
          elements: str
    progress:
      description:
        - InService instances of the group's Auto Scaling groups (C(nodes_total)) and those launched from the launch
          template version the groups point at (C(nodes_updated)), read with C(DescribeAutoScalingGroups).
        - Until EKS has moved the groups to the new launch template version, early in an update, every node counts
          as updated.
      returned: always
      type: dict
      sample: {nodes_total: 6, nodes_updated: 4}
diff:
  description: Version, release version, launch template version and update configuration before and after.
  returned: in diff mode
  type: dict
code:
  description: On failure, EKS's error code of a failed update (C(PodEvictionFailure), C(NodeCreationFailure),
    ...), C(ResourceInUseException) for another update in progress, or the collection's code.
  returned: failure
  type: str
  sample: PodEvictionFailure
"""

from collections.abc import Callable
from typing import Any
import time

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws_api import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws_api import eks as eks_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws_api import ssm as ssm_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    NOT_FOUND,
    UpgradeError,
    invalid_parameter,
    not_found,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube_watch import SYSTEM_CLOCK
from ansible_collections.eksops.nodegroup.plugins.module_utils.managed_target import resolve_target, validate_options
from ansible_collections.eksops.nodegroup.plugins.module_utils.managed_update import (
    diff_state,
    failed_update_error,
    is_finished,
    nodegroup_summary,
    plan_follow,
    plan_managed_update,
    predicted_diff_state,
    UPDATE_IN_PROGRESS,
    update_progress,
    UPDATE_STRATEGIES,
    update_summary,
    wanted_update_config,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.k8s import describe_cluster
from ansible_collections.eksops.nodegroup.plugins.module_utils.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.launch_templates import describe_lt_version, resolve_launch_template_id
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import describe_managed_nodegroup

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
    poll_interval=dict(type="int", default=15),
)


# --- Reading EKS, SSM and Auto Scaling ----------------------------------------------------------------------

def describe_nodegroup(eks: Any, cluster_name: str, nodegroup_name: str) -> dict[str, Any]:
    nodegroup = describe_managed_nodegroup(eks, cluster_name, nodegroup_name)
    if nodegroup is None:
        raise not_found("nodegroup_name", "Cluster %s has no EKS managed node group %s (nodegroup_name); a "
                        "self-managed group is upgraded with the collection's rolling upgrade modules instead"
                        % (cluster_name, nodegroup_name), cluster_name=cluster_name, nodegroup_name=nodegroup_name)
    return nodegroup


def read_expected_release(ssm: Any, target: dict[str, Any], nodegroup: dict[str, Any]) -> str:
    """The release EKS picks for a kubernetes_version target, from the public SSM parameter."""
    name = target["ssm_parameter"]
    try:
        return ssm_api.get_parameter(ssm, name)
    except UpgradeError as err:
        if err.code == NOT_FOUND:
            raise invalid_parameter(
                "kubernetes_version", "No EKS-optimized AMI release is published for Kubernetes %s and amiType %s "
                "(kubernetes_version): SSM parameter %s does not exist" % (target["value"], nodegroup.get("amiType"),
                                                                           name), ssm_parameter=name)
        raise


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
    return [update for update in described if not is_finished(update)]


def read_progress(autoscaling: Any, nodegroup: dict[str, Any]) -> dict[str, int]:
    names = [group["name"] for group in (nodegroup.get("resources") or {}).get("autoScalingGroups") or []]
    if not names:
        return update_progress([])
    return update_progress(autoscaling_api.describe_auto_scaling_groups(autoscaling, names))


# --- Changing the node group (EKS API only) -----------------------------------------------------------------

def start_update(call: Callable[[Any, dict[str, Any]], dict[str, Any]], eks: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Send an Update* request (``call``: an aws_api.eks function); EKS's ResourceInUseException becomes a clear
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


def follow_update(eks: Any, nodegroup: dict[str, Any], update: dict[str, Any], deadline: float,
                  poll_interval: float) -> dict[str, Any]:
    """``update`` described every ``poll_interval`` seconds until it ends or ``deadline``; its last description."""
    while not is_finished(update):
        remaining = deadline - SYSTEM_CLOCK.now()
        if remaining <= 0:
            break
        SYSTEM_CLOCK.sleep(min(poll_interval, remaining))
        update = describe_update(eks, nodegroup, update["id"])
    return update


def carry_out(module: EksopsModule, eks: Any, nodegroup: dict[str, Any], plan: dict[str, Any],
              in_progress: list[dict[str, Any]], result: dict[str, Any], follow_for: float) -> dict[str, Any]:
    """Start (or follow) the plan's updates; returns the update followed last. Keeps result["changed"] and
    result["nodegroup_update"]["eks_update"] current, so a failure on the way still reports them. Follows for ``follow_for``
    seconds at most."""
    params = module.params
    deadline = SYSTEM_CLOCK.now() + follow_for
    by_id = dict((update["id"], update) for update in in_progress)

    def follow(update: dict[str, Any], wait: bool = True) -> dict[str, Any]:
        result["nodegroup_update"]["eks_update"] = update_summary(update)
        if wait:
            update = follow_update(eks, nodegroup, update, deadline, params["poll_interval"])
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


def update_and_report(module: EksopsModule, eks: Any, nodegroup: dict[str, Any], plan: dict[str, Any],
                      in_progress: list[dict[str, Any]], result: dict[str, Any], follow_for: float) -> dict[str, Any]:
    """Carry the plan out and put the outcome in ``result``; a failure on the way (a Failed update: with EKS's
    error code) fails the module with the result so far. Returns the final DescribeNodegroup answer."""
    try:
        update = carry_out(module, eks, nodegroup, plan, in_progress, result, follow_for)
    except UpgradeError as err:
        module.fail_upgrade(err, **result)
    final = describe_nodegroup(eks, nodegroup["clusterName"], nodegroup["nodegroupName"])
    result["nodegroup_update"].update(nodegroup=nodegroup_summary(final), finished=update["status"] == "Successful")
    if update["status"] in ("Failed", "Cancelled"):
        result["nodegroup_update"]["progress"] = read_progress(module.aws("autoscaling"), final)
        module.fail_upgrade(failed_update_error(update, nodegroup["nodegroupName"]), **result)
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


def run(module: EksopsModule) -> dict[str, Any]:
    params = module.params
    validate_options(params)
    eks = module.aws("eks")
    cluster_version = describe_cluster(eks, params["cluster_name"]).get("version")
    nodegroup = describe_nodegroup(eks, params["cluster_name"], params["nodegroup_name"])
    target = resolve_target(params, nodegroup, cluster_version)
    if target["option"] == "launch_template_version":
        # SPEC K5: checked before any change, not left to EKS after the updateConfig has been changed.
        ec2 = module.aws("ec2")
        describe_lt_version(ec2, resolve_launch_template_id(ec2, nodegroup["launchTemplate"]), target["value"],
                            parameter="launch_template_version")
    expected_release = read_expected_release(module.aws("ssm"), target, nodegroup) \
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
                         nodegroup=nodegroup_summary(nodegroup), following_since=following_since, timed_out=False)
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


def main() -> None:
    module = EksopsModule(ARGUMENT_SPEC, uses_aws=True, supports_check_mode=True)
    module.run(lambda: run(module))


if __name__ == "__main__":
    main()
