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
  - "A version whose C(ImageId) is a Systems Manager parameter (C(resolve:ssm:<parameter>), EC2 user guide, Use a
    Systems Manager parameter instead of an AMI ID) is read as the AMI the parameter names now
    (C(DescribeLaunchTemplateVersions) with C(ResolveAlias)), which is what the group's next launch runs; a version
    this module creates from it names the target AMI's id, so that the upgrade launches that AMI whatever the
    parameter says later. The diff shows the parameter as C(image_alias)."
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
  - "Infrastructure as code (SPEC W1): on a group that a CloudFormation stack (the EKS node group template), eksctl or
    terraform-aws-eks's self-managed-node-group owns, as its tags and names show, the module refuses to create or pin
    a version with C(OwnedByInfrastructureAsCode), before any change: the owner's next apply would point the group
    back at a version with its own AMI and replace every node without a drain. Upgrade such a group with
    O(use_current_launch_template) after the owner applied the new AMI, or set O(accept_owner_revert)."
  - "An active instance refresh on the group (Pending, InProgress, Cancelling, RollbackInProgress, Baking) is refused
    with C(InstanceRefreshInProgress) before any change (SPEC W2): it replaces nodes without a drain."
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  image_id:
    description:
      - The AMI the new launch template version launches.
      - Exactly one of O(image_id), O(kubernetes_version), O(version) and O(use_current_launch_template) is
        required.
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
  use_current_launch_template:
    description:
      - The target is the launch template version the group uses now, as its infrastructure as code applied it
        (a version number, C($Latest) or C($Default), resolved). Nothing is created, the group's template reference
        is left exactly as it is, and the instances that do not run that version are the old ones.
      - The infrastructure-as-code workflow (SPEC W1) is to change the AMI in terraform or the CloudFormation stack
        with its instance refresh or rolling update off, apply, then upgrade with this.
    type: bool
  accept_owner_revert:
    description:
      - Create and pin the target version even on a group that infrastructure as code owns, knowing that its next
        apply points the group back at a version with its own AMI (and, with an instance refresh or a rolling
        update, replaces every node without a drain) unless the owner's code is changed to match first.
    type: bool
    default: false
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
    default: [AZRebalance, AlarmNotification, ScheduledActions, ReplaceUnhealthy, InstanceRefresh]
extends_documentation_fragment:
  - eksops.nodegroup.nodegroup
  - eksops.nodegroup.lease
  - eksops.nodegroup.aws
  - eksops.nodegroup.aws.validate_certs
  - eksops.nodegroup.attributes.aws_group
attributes:
  check_mode:
    support: full
    description: Reports the version it would create (with its predicted number) and the group change; changes nothing.
  diff_mode:
    support: full
    description: Shows the group's launch template version, AMI, suspended processes and the template's default version
      (and C(image_alias), the SSM parameter a version's AMI was resolved from, when there is one).
notes:
  - Without O(asg_name), when no Auto Scaling group carries the node group's tags, the Auto Scaling group of
    the EKS managed node group O(nodegroup_name) is used.
  - Needs C(ec2:DescribeLaunchTemplates), C(ec2:DescribeLaunchTemplateVersions),
    C(ec2:CreateLaunchTemplateVersion), C(ec2:DescribeImages), C(autoscaling:DescribeAutoScalingGroups),
    C(autoscaling:UpdateAutoScalingGroup), C(autoscaling:CreateOrUpdateTags), C(autoscaling:DeleteTags),
    C(autoscaling:SuspendProcesses), C(autoscaling:DescribeInstanceRefreshes), C(ssm:GetParameter) (with
    O(kubernetes_version)), C(ssm:GetParameters) (a template whose C(ImageId) is C(resolve:ssm:...)),
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
        suspended_processes: [AZRebalance, AlarmNotification, ScheduledActions, ReplaceUnhealthy, InstanceRefresh]
diff:
  description: The group's launch template version, AMI and suspended processes, and the template's default version,
    before and after; C(image_alias) when the version before or after gives its C(ImageId) as an SSM parameter
    (C(null) for a version that names an AMI id).
  returned: in diff mode
  type: dict
"""

from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.launch_template_version import ARGUMENT_SPEC, TARGET_OPTIONS, run
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule


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
