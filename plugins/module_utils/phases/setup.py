# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The setup phase in one process (issue 11 item 4): nodegroup_info's discovery, nodegroup_preflight's report,
launch_template_version's change, and (when that changed nothing) whether every instance runs the target already,
each the module's own code (nodegroup_describe, preflight_step, launch_template_step) run with one Clients.

Everything that refuses the upgrade is checked before the launch template step, its first change: a release
version for a self-managed group, a blocking preflight finding, and preflight warnings when told to stop on them.
Then (issue 27 item 3) a paused upgrade is resumed: its pause request withdrawn, once this run holds the lease.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import launch_template_version as launch_template_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import nodegroup_info as nodegroup_describe
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import nodegroup_preflight as preflight_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    INVALID_PARAMETER,
    PREFLIGHT_BLOCKED,
    UpgradeError,
    invalid_parameter,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.kinds import MANAGED
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import LEASE_OPTION, claim
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import (
    NODEGROUP_ARGUMENT_SPEC,
    describe_asg,
    find_module_nodegroup,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.pause import (
    PAUSE_TAG,
    PauseRequest,
    clear_pause,
    parse_pause,
    request_summary,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import StepFailed
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import StepContext, group_options, validated

_DESCRIBE = nodegroup_describe.ARGUMENT_SPEC
_TEMPLATE = launch_template_step.ARGUMENT_SPEC
TARGET_OPTIONS = ["image_id", "kubernetes_version", "release_version", "version", "use_current_launch_template"]

# nodegroup_setup's options: the three modules' (as they spell them), the release version a managed group takes,
# and whether preflight warnings stop the upgrade.
ARGUMENT_SPEC = dict(
    NODEGROUP_ARGUMENT_SPEC,
    update_strategy=dict(type="str", choices=["default", "minimal", "surge"], default="default"),
    max_unavailable=_DESCRIBE["max_unavailable"],
    max_unavailable_percentage=_DESCRIBE["max_unavailable_percentage"],
    max_surge=_DESCRIBE["max_surge"],
    post_drain_wait=preflight_step.ARGUMENT_SPEC["post_drain_wait"],
    ignore_load_balancer_timeout=preflight_step.ARGUMENT_SPEC["ignore_load_balancer_timeout"],
    fail_on_preflight_warnings=dict(type="bool", default=False),
    image_id=_TEMPLATE["image_id"],
    kubernetes_version=_TEMPLATE["kubernetes_version"],
    release_version=dict(type="str"),
    version=_TEMPLATE["version"],
    use_current_launch_template=_TEMPLATE["use_current_launch_template"],
    accept_owner_revert=_TEMPLATE["accept_owner_revert"],
    run_id=_TEMPLATE["run_id"],
    force_new_target=_TEMPLATE["force_new_target"],
    allow_downgrade=_TEMPLATE["allow_downgrade"],
    suspend_processes=_TEMPLATE["suspend_processes"],
    **LEASE_OPTION
)

# How the progress lines name each node-group kind (SPEC K1).
KIND_NAMES = {
    MANAGED: "an EKS managed node group: EKS owns its Auto Scaling group and launch template, so the upgrade goes "
             "through EKS's own update (UpdateNodegroupVersion), followed to the end",
    "self_managed_eksctl": "a self-managed node group made by eksctl: this collection runs the setup, scale_up, "
                           "upgrade and scale_down phases itself",
    "self_managed": "a self-managed node group (a plain Auto Scaling group, as terraform-aws-eks or the CloudFormation "
                    "node group template make it): this collection runs the setup, scale_up, upgrade and scale_down "
                    "phases itself",
}


def group_lines(nodegroup: Mapping[str, Any], nodegroup_name: str) -> list[str]:
    """The node group before the upgrade, for a person."""
    asg, template, journal = nodegroup["asg"], nodegroup["launch_template"], nodegroup["journal"]
    ready = sum(1 for instance in nodegroup["instances"] if instance["ready"])
    return [
        "Node group %s is %s." % (nodegroup_name, KIND_NAMES.get(nodegroup["kind"], nodegroup["kind"])),
        "Auto Scaling group %s: min %s, max %s, desired %s, AZs %s" % (
            nodegroup["asg_name"], asg["min_size"], asg["max_size"], asg["desired_capacity"],
            ", ".join(asg["availability_zones"])),
        "Launch template %s version %s (%d instances, %d nodes Ready)" % (
            template["id"], template["version"], len(nodegroup["instances"]), ready),
        "Unfinished upgrade found (run %s, phase %s, target version %s): resuming it." % (
            journal["run_id"], journal["phase"], journal["target_launch_template_version"])
        if journal else "No upgrade under way.",
    ]


def preflight_lines(preflight: Mapping[str, Any]) -> list[str]:
    """The preflight report (SPEC Z1-Z3), for a person."""
    findings = preflight["warnings_found"]
    if not findings:
        return ["Preflight: no warnings for the %d pods on the node group." % preflight["pods_examined"]]
    head = "Preflight: %d warning(s) for the %d pods on the node group:" % (len(findings), preflight["pods_examined"])
    return [head] + ["- " + finding["message"] for finding in findings]


def refusal(params: Mapping[str, Any], nodegroup: Mapping[str, Any],
            preflight: Mapping[str, Any] | None) -> UpgradeError | None:
    """Why the upgrade must not start on what was found (None: it may). ``preflight`` None: before the preflight."""
    if preflight is None:
        if params["release_version"] is not None and nodegroup["kind"] != MANAGED:
            return invalid_parameter(
                "release_version",
                "release_version names an EKS AMI release, which only an EKS managed node group takes; node group "
                "%s is %s: give kubernetes_version or image_id instead. Nothing was changed."
                % (params["nodegroup_name"], nodegroup["kind"]))
        if params["use_current_launch_template"] and nodegroup["kind"] == MANAGED:
            return invalid_parameter(
                "use_current_launch_template",
                "use_current_launch_template rolls a self-managed node group onto the launch template version its "
                "Auto Scaling group uses; node group %s is an EKS managed node group, whose update EKS runs: give "
                "kubernetes_version, release_version or launch_template_version (of your custom launch template) "
                "instead. Nothing was changed." % params["nodegroup_name"])
        return None
    if preflight["blocking"]:
        return UpgradeError(PREFLIGHT_BLOCKED, "%s Nothing was changed."
                            % " ".join(finding["message"] for finding in preflight["blocking"]))
    if params["fail_on_preflight_warnings"] and preflight["warnings_found"]:
        # A refusal of the caller's own choice, not of an input's value: no parameter to correct.
        return UpgradeError(INVALID_PARAMETER, "the preflight report has %d warning(s) and fail_on_preflight_warnings "
                            "is true; nothing was changed." % len(preflight["warnings_found"]))
    return None


def _describe_options(params: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """nodegroup_info's options for a read of the group."""
    described = group_options(params, lease=False)
    described.update(options)
    return validated(_DESCRIBE, described)


def _template_options(params: Mapping[str, Any], asg_name: str) -> dict[str, Any]:
    """launch_template_version's options, as the setup role gave them."""
    template = group_options(params)
    template.update(asg_name=asg_name, pin_asg=True, **dict(
        (name, params[name]) for name in ("image_id", "kubernetes_version", "version", "run_id", "force_new_target",
                                          "allow_downgrade", "suspend_processes", "use_current_launch_template",
                                          "accept_owner_revert")))
    return validated(_TEMPLATE, template)


class SetupPhase:
    """The phase's steps, each with its own options in the phase's ``context`` (StepContext.with_params: one Clients);
    ``progress`` prints what they find; ``result`` holds what they found and did, step by step."""

    def __init__(self, context: StepContext, progress: Callable[[str], None]) -> None:
        self.context = context
        self.params = context.params
        self.progress = progress
        self.found: dict[str, Any] = dict(nodegroup=None, preflight=None, launch_template=None, on_target=False,
                                          resumed_pause=None)
        self.group = None  # the node group the discovery found, for the preflight
        self.result: dict[str, Any] = dict(changed=False, setup=self.found)

    def _context(self, options: Mapping[str, Any]) -> StepContext:
        return self.context.with_params(options)

    def _refuse_if(self, error: UpgradeError | None) -> None:
        if error is not None:
            raise StepFailed(error, self.result)

    def run(self) -> dict[str, Any]:
        """The phase's result: changed; setup, with nodegroup, preflight, launch_template (None for a managed group:
        EKS owns it, SPEC K3) and on_target (SPEC K5); in diff mode, the launch template step's diff. Raises
        StepFailed."""
        try:
            nodegroup = self._discover()
            self._preflight(nodegroup)
            if nodegroup["kind"] != MANAGED:
                self._launch_template(nodegroup)
                self._resume(nodegroup)
        except UpgradeError as err:
            raise StepFailed(err, self.result) from err
        return self.result

    def _discover(self) -> dict[str, Any]:
        """nodegroup_info's read of the group, with the parallelism checked against it once (issue 10 items 2, 4,
        18), printed."""
        strategy = self.params["update_strategy"]
        options = _describe_options(
            self.params, update_strategy="minimal" if strategy == "minimal" else "default",
            max_unavailable=self.params["max_unavailable"],
            max_unavailable_percentage=self.params["max_unavailable_percentage"],
            max_surge=self.params["max_surge"] if strategy == "surge" else None)
        context = self._context(options)
        self.group = find_module_nodegroup(context)
        nodegroup = self.found["nodegroup"] = nodegroup_describe.describe_nodegroup(context, self.group)
        for line in group_lines(nodegroup, self.params["nodegroup_name"]):
            self.progress(line)
        self._refuse_if(refusal(self.params, nodegroup, None))
        return nodegroup

    def _preflight(self, nodegroup: Mapping[str, Any]) -> None:
        """SPEC Z1-Z3: what the upgrade will do to the workloads, printed before anything changes."""
        options = group_options(self.params, lease=False)
        options.update(asg_name=nodegroup["asg_name"],
                       ignore_load_balancer_timeout=self.params["ignore_load_balancer_timeout"],
                       # EKS drains a managed node group itself, with its own wait: only this collection's compare.
                       post_drain_wait=None if nodegroup["kind"] == MANAGED else self.params["post_drain_wait"])
        preflight = self.found["preflight"] = preflight_step.run(
            self._context(validated(preflight_step.ARGUMENT_SPEC, options)), self.group)["preflight"]
        for line in preflight_lines(preflight):
            self.progress(line)
        self._refuse_if(refusal(self.params, nodegroup, preflight))

    def _launch_template(self, nodegroup: Mapping[str, Any]) -> None:
        """The target version, created and pinned (launch_template_version); then SPEC K5: with the group already on
        the target (the version existed, nothing pinned, no upgrade under way), whether every instance runs it."""
        try:
            step = launch_template_step.run(self._context(_template_options(self.params, nodegroup["asg_name"])))
        except StepFailed as failed:
            # A later change failed after an earlier one was made: the step says what is done (changed, and which).
            self.result["changed"] = failed.result.get("changed", False)
            self.found["launch_template"] = failed.result.get("launch_template")
            failed.result = self.result
            raise
        template = self.found["launch_template"] = step["launch_template"]
        self.result["changed"] = step["changed"]
        if "diff" in step:
            self.result["diff"] = step["diff"]
        if template["journal"] is None and not template["created"]:
            on_target = nodegroup_describe.describe_nodegroup(self._context(
                _describe_options(self.params, asg_name=nodegroup["asg_name"], target=str(template["version"]))))
            self.found["on_target"] = not on_target["old_instances"]

    def _resume(self, nodegroup: Mapping[str, Any]) -> None:
        """Issue 27 item 3: the upgrade playbook run again resumes a paused upgrade. Its pause request is withdrawn
        only once this run holds the group's lease (claimed here unless the launch template step did): a run refused
        with UpgradeInProgress leaves the request to the live run it was asked of."""
        tags = nodegroup["asg"].get("tags") or {}
        if PAUSE_TAG not in tags:
            return
        request = parse_pause(tags[PAUSE_TAG])
        autoscaling = self.context.aws("autoscaling")
        asg = describe_asg(autoscaling, nodegroup["asg_name"])
        claim(self.context, autoscaling, asg)
        if not self.context.check_mode:
            clear_pause(autoscaling, asg)
            self.result["changed"] = True
        self.found["resumed_pause"] = request_summary(request)
        self.progress(resume_line(request, nodegroup["asg_name"], self.context.check_mode))


def resume_line(request: PauseRequest, asg_name: str, check_mode: bool) -> str:
    """The progress line of a run that resumes a paused upgrade."""
    asked = "asked at %s" % request.asked_at() if request.asked_at() else "asked"
    by = " by %s" % request.requested_by if request.requested_by else ""
    withdrawn = "would be withdrawn" if check_mode else "is withdrawn"
    return ("Resuming a paused upgrade: the pause %s%s %s (tag %s on Auto Scaling group %s); the upgrade goes on from "
            "where its journal says it stopped." % (asked, by, withdrawn, PAUSE_TAG, asg_name))
