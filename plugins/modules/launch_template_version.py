#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: launch_template_version
short_description: Point a node group's Auto Scaling group at a launch template version with the target AMI
version_added: 0.1.0
description:
  - Setup phase of a node group upgrade (EKS managed node group behaviour, SPEC U1).
  - Creates a new version of the Auto Scaling group's launch template from the version the group uses now
    (C(SourceVersion)), with only the AMI replaced, or uses an existing version named by O(version).
  - Then points the group at that exact version B(number), never C($Latest), so later changes to the
    template cannot change what the upgrade launches.
  - Idempotent. When the group already uses a version with the target AMI and otherwise unchanged data, or the
    template's latest version already is the current one with the new AMI (a rerun after a crash), no version
    is created.
  - Everything is validated (AMI, launch template version, SSM parameter) before anything changes.
  - "Upgrade journal: before it changes the group's launch template version, the module records the upgrade on
    the group as C(eksops.nodegroup/*) tags (phase C(setup), O(run_id), previous and target launch template
    version, launch template id, target AMI), unless a journal exists already. The later phases and a rerun
    after a crash read it. If a journal exists for another target, the module fails with
    C(UpgradeTargetConflict) and changes nothing, unless O(force_new_target=true), which retargets
    the journal and keeps its other fields (original sizes, suspended processes, run id)."
  - "Before the group is pointed at the target version, the Auto Scaling processes in O(suspend_processes) that are
    not suspended yet are recorded in the journal and suspended (SPEC A1), so that AZRebalance or
    ReplaceUnhealthy cannot launch or terminate instances while the upgrade runs;
    M(eksops.nodegroup.nodegroup_scale_restore) resumes only those."
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  image_id:
    description:
      - The AMI the new launch template version launches.
      - Exactly one of O(image_id), O(kubernetes_version) and O(version) is required.
    type: str
  kubernetes_version:
    description:
      - Use the recommended EKS-optimized AMI for this Kubernetes version (for example C(1.30)), read from the
        public SSM parameter of the same AMI family as the image the group uses now (Amazon Linux 2023
        architecture and variant, Amazon Linux 2 standard/arm64/GPU, or Bottlerocket).
    type: str
  version:
    description:
      - Use this existing launch template version number instead of creating one.
    type: int
    aliases: [launch_template_version]
  description:
    description:
      - Description of the new launch template version.
      - Defaults to a text naming the AMI and the source version.
    type: str
  set_default:
    description:
      - Also make the target version the launch template's default version.
    type: bool
    default: false
  pin_asg:
    description:
      - Point the Auto Scaling group at the target version number.
      - With V(false) the version is created (or found) but the group and the journal are left alone.
    type: bool
    default: true
  run_id:
    description:
      - Identifier of this upgrade, recorded in the journal and on the nodes the upgrade cordons.
      - Generated when not given. Ignored when a journal exists already (its run id is kept).
    type: str
  force_new_target:
    description:
      - Retarget an upgrade whose journal names another launch template version, instead of failing with
        C(UpgradeTargetConflict).
    type: bool
    default: false
  allow_downgrade:
    description:
      - Accept a target AMI built for an older Kubernetes version than the one the current nodes run (judged from
        EKS-optimized AMI names; a custom AMI's name tells nothing). Without it such a target is refused before
        any change, as is, always, one newer than the control plane (SPEC K6).
    type: bool
    default: false
  suspend_processes:
    description:
      - Auto Scaling processes to suspend for the duration of the upgrade, before the group is pointed at the
        target version (with O(pin_asg) only). Processes already suspended are left alone and not recorded.
      - C(Launch) and C(Terminate) cannot be suspended, as the upgrade needs them.
    type: list
    elements: str
    default: [AZRebalance, AlarmNotification, ScheduledActions, ReplaceUnhealthy]
extends_documentation_fragment:
  - eksops.nodegroup.nodegroup
  - eksops.nodegroup.lease
  - eksops.nodegroup.aws
  - eksops.nodegroup.attributes.aws_group
attributes:
  check_mode:
    support: full
    description: Reports the version it would create (with its predicted number) and the group change; changes nothing.
  diff_mode:
    support: full
    description: Shows the group's launch template version, AMI, suspended processes and the template's default version.
notes:
  - Without O(asg_name), when no Auto Scaling group carries the node group's tags, the Auto Scaling group of
    the EKS managed node group O(nodegroup_name) is used.
  - Needs C(ec2:DescribeLaunchTemplates), C(ec2:DescribeLaunchTemplateVersions),
    C(ec2:CreateLaunchTemplateVersion), C(ec2:DescribeImages), C(autoscaling:DescribeAutoScalingGroups),
    C(autoscaling:UpdateAutoScalingGroup), C(autoscaling:CreateOrUpdateTags), C(autoscaling:DeleteTags),
    C(autoscaling:SuspendProcesses), C(ssm:GetParameter) (with O(kubernetes_version)),
    C(ec2:ModifyLaunchTemplate) (with O(set_default)), C(eks:DescribeNodegroup) (discovery of managed node
    groups). See C(docs/iam-policy.json).
seealso:
  - module: eksops.nodegroup.nodegroup_info
"""

EXAMPLES = r"""
- name: Upgrade the workers to the recommended EKS AMI for Kubernetes 1.30
  eksops.nodegroup.launch_template_version:
    cluster_name: prod
    nodegroup_name: workers
    kubernetes_version: "1.30"
    region: us-west-2
  register: setup

- name: Use a specific AMI and make the new version the template's default
  eksops.nodegroup.launch_template_version:
    cluster_name: prod
    nodegroup_name: workers
    image_id: ami-0123456789abcdef0
    set_default: true

- name: Roll back to an existing launch template version, replacing an unfinished upgrade's target
  eksops.nodegroup.launch_template_version:
    cluster_name: prod
    nodegroup_name: workers
    asg_name: eks-workers-asg
    version: 7
    force_new_target: true
"""

RETURN = r"""
launch_template:
  description: The launch template, the version the group used before and the target version, the group it is
    for and the upgrade journal written on that group.
  returned: always
  type: dict
  contains:
    id:
      description: Launch template id.
      type: str
      sample: lt-0123456789abcdef0
    name:
      description: Launch template name.
      type: str
      sample: eks-workers
    previous_version:
      description:
        - The version number the group used before the upgrade (its C($Latest)/C($Default) resolved).
        - When the journal records an upgrade under way (a rerun after a crash, when the group may already use
          the target), the journal's previous version.
      type: int
      sample: 3
    version:
      description: The target version number (in check mode, the number the new version would get).
      type: int
      sample: 4
    previous_image_id:
      description: The AMI of RV(launch_template.previous_version).
      type: str
      sample: ami-0a1b2c3d4e5f60001
    image_id:
      description: The AMI of the target version.
      type: str
      sample: ami-0a1b2c3d4e5f60002
    created:
      description: Whether a new launch template version was (or in check mode would be) created.
      type: bool
    pinned:
      description: Whether the group was (or in check mode would be) pointed at the target version.
      type: bool
    default_version:
      description: The launch template's default version number after the run.
      type: int
      sample: 1
    ssm_parameter:
      description: The SSM parameter the AMI was read from (with O(kubernetes_version) only).
      type: str
      returned: when O(kubernetes_version) is given
      sample: /aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id
    asg_name:
      description: Name of the node group's Auto Scaling group.
      type: str
      sample: eks-workers-asg
    journal:
      description: The upgrade journal on the group after the run (C(null) when there is none).
      type: dict
      sample:
        run_id: 4f1c2b7a9d0e8f12
        phase: setup
        started_at: "2026-01-01T10:00:00Z"
        previous_launch_template_version: "3"
        target_launch_template_version: "4"
        launch_template_id: lt-0123456789abcdef0
        target_image_id: ami-0a1b2c3d4e5f60002
        suspended_processes: [AZRebalance, AlarmNotification, ScheduledActions, ReplaceUnhealthy]
diff:
  description: The group's launch template version, AMI and suspended processes, and the template's default version,
    before and after.
  returned: in diff mode
  type: dict
"""

from typing import Any
from ansible_collections.eksops.nodegroup.plugins.module_utils.asg_ops import (
    DEFAULT_SUSPENDED_PROCESSES,
    suspended_process_names,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws_api import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws_api import ec2 as ec2_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    UPGRADE_TARGET_CONFLICT,
    UpgradeError,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.k8s import describe_cluster
from ansible_collections.eksops.nodegroup.plugins.module_utils.lease import LEASE_OPTION, claim
from ansible_collections.eksops.nodegroup.plugins.module_utils.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.eks_amis import (
    check_kubernetes_version,
    check_not_newer_than_control_plane,
    check_version_change,
    resolve_eks_ami,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.launch_templates import (
    describe_image,
    describe_launch_template,
    describe_lt_version,
    journal_conflict,
    lt_version_image,
    pin_asg_launch_template,
    plan_launch_template_version,
    resolve_launch_template_id,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import asg_launch_template_spec, find_module_nodegroup, NODEGROUP_ARGUMENT_SPEC
from ansible_collections.eksops.nodegroup.plugins.module_utils.planning import (
    plan_suspension,
    validate_suspend_processes,
)

ARGUMENT_SPEC = dict(
    NODEGROUP_ARGUMENT_SPEC,
    image_id=dict(type="str"),
    kubernetes_version=dict(type="str"),
    version=dict(type="int", aliases=["launch_template_version"]),
    description=dict(type="str"),
    set_default=dict(type="bool", default=False),
    pin_asg=dict(type="bool", default=True),
    run_id=dict(type="str"),
    force_new_target=dict(type="bool", default=False),
    allow_downgrade=dict(type="bool", default=False),
    suspend_processes=dict(type="list", elements="str", default=list(DEFAULT_SUSPENDED_PROCESSES)),
    **LEASE_OPTION
)
TARGET_OPTIONS = ["image_id", "kubernetes_version", "version"]


def resolve_target(module: EksopsModule, ec2: Any, lt_id: str,
                   current: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """(target image id or None, named version description or None, SSM parameter or None); validated."""
    params = module.params
    if params["version"] is not None:
        named = describe_lt_version(ec2, lt_id, params["version"], parameter="version")
        image_id = lt_version_image(named)
        if image_id:
            describe_image(ec2, image_id, parameter="version")
        return image_id, named, None
    if params["image_id"]:
        describe_image(ec2, params["image_id"], parameter="image_id")
        return params["image_id"], None, None
    # K6 first: a version newer than the control plane is refused as such, not as an AMI SSM does not publish.
    check_not_newer_than_control_plane(
        "kubernetes_version", check_kubernetes_version(params["kubernetes_version"]),
        "Kubernetes %s" % params["kubernetes_version"],
        describe_cluster(module.aws("eks"), params["cluster_name"]).get("version"))
    current_image_id = lt_version_image(current)
    current_image = describe_image(ec2, current_image_id, parameter="kubernetes_version") if current_image_id else {}
    image_id, ssm_parameter = resolve_eks_ami(module.aws("ssm"), current_image.get("Name"),
                                              params["kubernetes_version"])
    describe_image(ec2, image_id, parameter="kubernetes_version")
    return image_id, None, ssm_parameter


def check_target_version(module: EksopsModule, ec2: Any, plan: dict[str, Any], nodes_image_id: str | None) -> None:
    """K6 skew and downgrade, judged from the AMIs' names, before any change. ``nodes_image_id``: the AMI the
    nodes ran before this upgrade (the journal's, on a rerun after the group was pinned to the target)."""
    if not plan["image_id"] or plan["image_id"] == nodes_image_id:
        return
    params = module.params
    parameter = next(name for name in TARGET_OPTIONS if params[name] is not None)
    names = dict((image_id, describe_image(ec2, image_id, parameter=parameter).get("Name"))
                 for image_id in (plan["image_id"], nodes_image_id) if image_id)
    cluster_version = describe_cluster(module.aws("eks"), params["cluster_name"]).get("version")
    check_version_change(parameter, names.get(plan["image_id"]), names.get(nodes_image_id),
                         cluster_version, params["allow_downgrade"])


def journal_for(module: EksopsModule, journal: Journal | None, asg: dict[str, Any], lt_id: str,
                plan: dict[str, Any]) -> tuple[Journal | None, list[str]]:
    """(The journal to write before pinning, or None when the existing one stays as it is; the processes to
    suspend before pinning, SPEC A1)."""
    updated = retargeted_journal(module, journal, asg["AutoScalingGroupName"], lt_id, plan)
    if not module.params["pin_asg"]:
        return updated, []
    base = updated or journal
    ours, to_suspend = plan_suspension(base.suspended_processes, module.params["suspend_processes"],
                                       suspended_process_names(asg))
    if ours != base.suspended_processes:
        updated = base.replace(suspended_processes=ours)
    return updated, to_suspend


def retargeted_journal(module: EksopsModule, journal: Journal | None, asg_name: str, lt_id: str,
                       plan: dict[str, Any]) -> Journal | None:
    """The journal of this target, or None when the existing one already is."""
    target_fields = dict(
        previous_launch_template_version=str(plan["source_version"]),
        target_launch_template_version=str(plan["target_version"]),
        launch_template_id=lt_id,
        target_image_id=plan["image_id"],
    )
    if journal is None:
        return Journal.start(phase="setup", run_id=module.params["run_id"], **target_fields)
    if not journal_conflict(journal, lt_id, plan["target_version"]):
        return None
    if not module.params["force_new_target"]:
        this_target = ("a new version with %s" % plan["image_id"] if plan["create"]
                       else "version %s (%s)" % (plan["target_version"], plan["image_id"]))
        raise UpgradeError(
            UPGRADE_TARGET_CONFLICT,
            "Auto Scaling group %s has an unfinished upgrade (run %s, phase %s) to launch template %s version %s "
            "(%s), but this run targets %s. Finish or restore that upgrade first, or set force_new_target=true "
            "to retarget it" % (asg_name, journal.run_id, journal.phase, journal.launch_template_id,
                                journal.target_launch_template_version, journal.target_image_id, this_target),
            parameter="force_new_target", journal=journal.to_dict())
    return journal.retargeted(lt_id, str(plan["target_version"]), plan["image_id"], str(plan["source_version"]))


def create_version(module: EksopsModule, ec2: Any, lt_id: str, plan: dict[str, Any]) -> int:
    """Create the new version from SourceVersion with only the AMI replaced; returns its number."""
    description = module.params["description"] or "eksops.nodegroup: %s from version %s" % (
        plan["image_id"], plan["source_version"])
    return ec2_api.create_launch_template_version(ec2, lt_id, plan["source_version"], plan["image_id"], description)


def apply_changes(module: EksopsModule, asg: dict[str, Any], lt_id: str, plan: dict[str, Any], pin: bool, set_default: bool,
                  journal: Journal | None, new_journal: Journal | None, to_suspend: list[str]) -> Journal | None:
    """Create the version, record the journal, suspend the processes, pin the group, set the default: in that
    order, so a crash leaves a state a rerun picks up. Returns the journal written (or None)."""
    autoscaling, ec2 = module.aws("autoscaling"), module.aws("ec2")
    asg_name = asg["AutoScalingGroupName"]
    created_version = None
    changed = []  # what is done already when a later step fails (issue 10 item 24: "Nothing was changed" was said)
    try:
        if plan["create"]:
            created_version = plan["target_version"] = create_version(module, ec2, lt_id, plan)
            changed.append("created launch template version %s" % created_version)
            if new_journal is not None:
                new_journal = new_journal.replace(target_launch_template_version=str(plan["target_version"]))
        if new_journal is not None:
            write_journal(autoscaling, asg_name, new_journal, previous=journal or Journal())
            changed.append("wrote the upgrade journal")
        autoscaling_api.suspend_processes(autoscaling, asg_name, to_suspend)
        if to_suspend:
            changed.append("suspended processes %s" % ", ".join(to_suspend))
        if pin:
            pin_asg_launch_template(autoscaling, asg, lt_id, plan["target_version"])
            changed.append("pointed the group at version %s" % plan["target_version"])
        if set_default:
            ec2_api.set_default_launch_template_version(ec2, lt_id, plan["target_version"])
    except UpgradeError as err:
        if not changed:
            raise
        # Something is done already: say so (changed, and what), a rerun picks it up from the journal.
        err.msg = "%s (before that, this run %s)" % (err.msg, "; ".join(changed))
        done = dict(asg_name=asg_name, id=lt_id)
        if created_version is not None:
            done.update(version=created_version, image_id=plan["image_id"], created=True)
        module.fail_upgrade(err, changed=True, launch_template=done)
    return new_journal


def previous_of_upgrade(ec2: Any, lt_id: str, plan: dict[str, Any], journal: Journal | None) -> tuple[int, str | None]:
    """(version, AMI) the group used before the upgrade: the journal's, when it records one of this template,
    since a rerun after a crash finds the group on the target already (a rollback goes back to it)."""
    recorded = journal.previous_launch_template_version if journal is not None else None
    if journal is None or journal.launch_template_id != lt_id or not recorded \
            or str(recorded) == str(plan["source_version"]):
        return plan["source_version"], plan["previous_image_id"]
    previous = describe_lt_version(ec2, lt_id, recorded, parameter="asg_name")
    return int(previous["VersionNumber"]), lt_version_image(previous)


def run(module: EksopsModule) -> dict[str, Any]:
    params = module.params
    validate_suspend_processes(params["suspend_processes"])
    autoscaling, ec2 = module.aws("autoscaling"), module.aws("ec2")
    group = find_module_nodegroup(
        module, refuse_managed="create versions of its launch template or point its Auto Scaling group at one")
    asg, asg_name = group.asg, group.asg_name
    spec = asg_launch_template_spec(asg)
    lt_id = resolve_launch_template_id(ec2, spec)
    template = describe_launch_template(ec2, lt_id)
    current = describe_lt_version(ec2, lt_id, spec["version"], parameter="asg_name")
    latest = describe_lt_version(ec2, lt_id, template["LatestVersionNumber"], parameter="asg_name")
    image_id, named, ssm_parameter = resolve_target(module, ec2, lt_id, current)
    plan = plan_launch_template_version(spec["version"], current, latest, image_id, named)
    journal = Journal.from_tags(asg.get("Tags"), asg_name=asg_name)
    check_target_version(module, ec2, plan, previous_of_upgrade(ec2, lt_id, plan, journal)[1])
    pin = plan["pin"] and params["pin_asg"]

    new_journal, to_suspend = journal_for(module, journal, asg, lt_id, plan) if pin or journal is not None \
        else (None, [])
    default_version = int(template["DefaultVersionNumber"])
    set_default = params["set_default"] and default_version != plan["target_version"]

    if plan["create"] or pin or set_default or new_journal is not None or to_suspend:
        claim(module, autoscaling, asg)
    if not module.check_mode:
        new_journal = apply_changes(module, asg, lt_id, plan, pin, set_default, journal, new_journal, to_suspend)
    if set_default:
        default_version = plan["target_version"]
    final_journal = new_journal if new_journal is not None else journal
    previous_version, previous_image_id = previous_of_upgrade(ec2, lt_id, plan, final_journal)

    launch_template = dict(
        id=lt_id, name=template.get("LaunchTemplateName") or spec["name"],
        previous_version=previous_version, version=plan["target_version"],
        previous_image_id=previous_image_id, image_id=plan["image_id"],
        created=plan["create"], pinned=pin, default_version=default_version, asg_name=asg_name,
        journal=final_journal.to_dict() if final_journal is not None else None)
    if ssm_parameter:
        launch_template["ssm_parameter"] = ssm_parameter
    result = dict(changed=bool(plan["create"] or pin or set_default or new_journal is not None or to_suspend),
                  launch_template=launch_template)
    after_version = str(plan["target_version"]) if pin else spec["version"]
    suspended_before = sorted(suspended_process_names(asg))
    return module.with_diff(
        result,
        before=dict(asg_name=asg_name, launch_template_version=spec["version"],
                    image_id=plan["previous_image_id"], default_version=int(template["DefaultVersionNumber"]),
                    suspended_processes=suspended_before),
        after=dict(asg_name=asg_name, launch_template_version=after_version,
                   image_id=plan["image_id"] if pin else plan["previous_image_id"],
                   default_version=default_version,
                   suspended_processes=sorted(set(suspended_before) | set(to_suspend))),
    )


def main() -> None:
    module = EksopsModule(
        ARGUMENT_SPEC,
        uses_aws=True,
        mutually_exclusive=[TARGET_OPTIONS],
        required_one_of=[TARGET_OPTIONS],
        supports_check_mode=True,
    )
    module.run(lambda: run(module))


if __name__ == "__main__":
    main()
