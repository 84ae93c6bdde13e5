#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: nodegroup_setup
short_description: The setup phase of a node group upgrade (discovery, preflight, target version) in one process
version_added: 0.1.0
description:
  - The setup phase as one task, in this order, each step the named module's own code.
    1. Finds the node group and checks the parallelism against it as M(eksops.nodegroup.nodegroup_info) does
    (RV(setup.nodegroup)). 2. Examines the workloads on its nodes as M(eksops.nodegroup.nodegroup_preflight) does
    (RV(setup.preflight), SPEC Z1-Z3). 3. For a self-managed group, creates the target launch template version and points
    the Auto Scaling group at it as M(eksops.nodegroup.launch_template_version) does with
    O(eksops.nodegroup.launch_template_version#module:pin_asg=true) (RV(setup.launch_template)); an EKS managed node group
    is only read, its update goes through EKS (SPEC K3). 4. When that step changed nothing and no upgrade is under
    way, tells whether every instance runs the target already (RV(setup.on_target), SPEC K5). 5. Issue 27 item 3,
    a self-managed group whose upgrade was paused (M(eksops.nodegroup.nodegroup_pause)) is resumed - once the run
    holds the group's lease (claimed here if step 3 did not), the pause request is withdrawn and a line says so
    (RV(setup.resumed_pause)); a run refused with C(UpgradeInProgress) leaves the request to the live run.
  - "The upgrade is refused before step 3, its first change: a O(release_version) for a self-managed group
    (C(InvalidParameter)), a blocking preflight finding (C(PreflightBlocked)), and, with
    O(fail_on_preflight_warnings), any preflight warning (C(InvalidParameter)). Each such message ends with
    C(Nothing was changed.)."
  - One process for the phase instead of three or four module processes (issue 11 item 4).
  - "What it found is shown as it happens through Ansible's display (C(ansible-playbook) output, AWX job output):
    the node group (kind, Auto Scaling group sizes and Availability Zones, launch template version, instances and
    Ready nodes, an unfinished upgrade to resume), then the preflight report."
  - Errors are those of the three modules, with the same C(code) and details; the result then carries what the
    phase had found and done before (RV(setup.nodegroup), RV(setup.preflight), RV(setup.launch_template)).
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  update_strategy:
    description:
      - The upgrade's strategy, for the C(plan) of RV(setup.nodegroup) (M(eksops.nodegroup.nodegroup_info)'s
        O(eksops.nodegroup.nodegroup_info#module:update_strategy)); with C(surge), O(max_surge) is checked too.
    type: str
    choices: [default, minimal, surge]
    default: default
  max_unavailable:
    description:
      - Nodes upgraded in parallel (1 to 100; default 1; with the C(surge) strategy, may be 0), checked against the
        group before anything changes. Mutually exclusive with O(max_unavailable_percentage).
    type: int
  max_unavailable_percentage:
    description:
      - Nodes upgraded in parallel as a percentage (1 to 100) of the group's desired capacity before the upgrade,
        rounded up, at least one.
    type: int
  max_surge:
    description:
      - With the C(surge) strategy, the extra nodes (0 or more), checked with O(max_unavailable) against the group.
    type: int
  post_drain_wait:
    description:
      - The longest a drained node will wait for the cluster's load balancers; the preflight compares the load
        balancers that hold the group's instances with it (M(eksops.nodegroup.nodegroup_preflight)'s
        O(eksops.nodegroup.nodegroup_preflight#module:post_drain_wait)). Not used for an EKS managed node group.
    type: int
  ignore_load_balancer_timeout:
    description:
      - Whether the drains will let a node go that a load balancer still holds after O(post_drain_wait); when not,
        a C(load_balancer_delay) finding blocks the upgrade.
    type: bool
    default: false
  fail_on_preflight_warnings:
    description:
      - Stop before changing anything when the preflight report has any warning.
    type: bool
    default: false
  image_id:
    description:
      - The AMI of the target launch template version.
      - At most one of O(image_id), O(kubernetes_version), O(release_version), O(version) and
        O(use_current_launch_template).
    type: str
  kubernetes_version:
    description:
      - The recommended EKS-optimized AMI for this Kubernetes version, of the AMI family the group uses now (see
        M(eksops.nodegroup.launch_template_version)).
    type: str
  release_version:
    description:
      - An EKS AMI release version, which only an EKS managed node group takes (its update goes through EKS); refused
        for a self-managed group before anything changes.
    type: str
  version:
    description:
      - An existing launch template version number to upgrade to instead of creating one.
    type: int
    aliases: [launch_template_version]
  use_current_launch_template:
    description:
      - The launch template version the group uses now is the target, as its infrastructure as code applied it.
        Nothing is created or pinned (see M(eksops.nodegroup.launch_template_version)). Self-managed groups only;
        refused for an EKS managed node group before anything changes.
    type: bool
  accept_owner_revert:
    description:
      - Create and pin the target version on a group that infrastructure as code owns, which is refused otherwise
        (C(OwnedByInfrastructureAsCode), SPEC W1; see M(eksops.nodegroup.launch_template_version)).
    type: bool
    default: false
  run_id:
    description:
      - Identifier of this upgrade, recorded in the journal. Generated when not given; a journal's run id is kept.
    type: str
  force_new_target:
    description:
      - Retarget an upgrade whose journal names another launch template version, instead of failing with
        C(UpgradeTargetConflict).
    type: bool
    default: false
  allow_downgrade:
    description:
      - Accept a target AMI built for an older Kubernetes version than the current nodes' (SPEC K6).
    type: bool
    default: false
  suspend_processes:
    description:
      - Auto Scaling processes to suspend for the duration of the upgrade, before the group is pointed at the
        target version. Processes already suspended are left alone and not recorded.
    type: list
    elements: str
    default: [AZRebalance, AlarmNotification, ScheduledActions, ReplaceUnhealthy, InstanceRefresh]
extends_documentation_fragment:
  - eksops.nodegroup.nodegroup
  - eksops.nodegroup.lease
  - eksops.nodegroup.aws
  - eksops.nodegroup.k8s
  - eksops.nodegroup.attributes.aws_k8s_groups
  - eksops.nodegroup.attributes.controller
attributes:
  check_mode:
    support: full
    description: Reads and checks as without it, and reports the launch template version it would create and the
      group change (M(eksops.nodegroup.launch_template_version) in check mode); changes nothing.
  diff_mode:
    support: full
    description: The launch template step's diff (the group's launch template version, AMI, suspended processes
      and the template's default version).
notes:
  - Needs what M(eksops.nodegroup.nodegroup_info), M(eksops.nodegroup.nodegroup_preflight) and
    M(eksops.nodegroup.launch_template_version) need. See C(docs/iam-policy.json) and C(docs/rbac.yaml).
seealso:
  - module: eksops.nodegroup.nodegroup_info
  - module: eksops.nodegroup.nodegroup_preflight
  - module: eksops.nodegroup.launch_template_version
"""

EXAMPLES = r"""
- name: Set up the upgrade of the workers node group to Kubernetes 1.30
  eksops.nodegroup.nodegroup_setup:
    cluster_name: prod
    nodegroup_name: workers
    kubernetes_version: "1.30"
    max_unavailable: 2
    post_drain_wait: 90
  register: setup
"""

RETURN = r"""
setup:
  description: What the phase found and did, step by step; on failure, as far as it went.
  returned: always
  type: dict
  contains:
    nodegroup:
      description: The node group before any change, as M(eksops.nodegroup.nodegroup_info) returns it
        (RV(eksops.nodegroup.nodegroup_info#module:nodegroup)), with the plan for the parallelism given; null when
        the group was not found.
      returned: always
      type: dict
    preflight:
      description: The preflight report, as M(eksops.nodegroup.nodegroup_preflight) returns it
        (RV(eksops.nodegroup.nodegroup_preflight#module:preflight)); null when the phase stopped before it.
      returned: always
      type: dict
    launch_template:
      description: The target version, as M(eksops.nodegroup.launch_template_version) returns it
        (RV(eksops.nodegroup.launch_template_version#module:launch_template)); null for an EKS managed node group
        and when the phase stopped before the step.
      returned: always
      type: dict
    on_target:
      description: Whether every instance runs the target already, the version existing, nothing pinned and no
        upgrade under way (SPEC K5); the rest of the upgrade then has nothing to do.
      returned: always
      type: bool
      sample: false
    resumed_pause:
      description: The pause request this run withdrew to resume the upgrade (C(requested), C(requested_at),
        C(requested_by)), or null when the group had none.
      returned: always
      type: dict
      sample: {requested: true, requested_at: "2026-11-28T21:00:00Z", requested_by: alice}
diff:
  description: The launch template step's diff.
  returned: in diff mode, when the step ran
  type: dict
code:
  description: The failing step's code (C(InvalidParameter), C(PreflightBlocked), C(UpgradeTargetConflict), ...).
  returned: failure
  type: str
"""
