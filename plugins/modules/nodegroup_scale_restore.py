#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
module: nodegroup_scale_restore
short_description: Undo an upgrade's scale-up and clear its journal
version_added: 0.1.0
description:
  - The scale-down phase of an upgrade (EKS managed node group behaviour). Reads the upgrade journal on the
    node group's Auto Scaling group; without one there is nothing to do.
  - If the desired capacity is no longer the value the upgrade last set, something else (the cluster
    autoscaler) is scaling the group, so it stops without restoring and reports the scaling activities since the
    upgrade started. The value a decrementing termination of the upgrade was about to leave (recorded in the
    journal before it, for a crash between the termination and the journal update) counts as set by the upgrade.
  - Otherwise chooses the surplus instances - under the journal's schedule C(once) (SPEC B1) first the nodes the
    scale-up marked surplus (C(eksops.nodegroup/surplus=<run id>), cordoned since, so no pod moved there), then -
    AZ-balanced (within an Availability Zone, instances on another launch
    template version than the group's first, so after a rollback the new nodes go). Those that have no node yet
    (an instance still booting) are terminated first, before any drain, so that no evicted pod can land on them;
    then it drains the others' nodes like any other node (found by instance id when the drain starts), checks that
    none still runs pods other than DaemonSet, mirror or finished ones (C(PodEvictionFailure) otherwise),
    terminates them with a decrement,
    restores MinSize, MaxSize and DesiredCapacity exactly, except a MinSize or MaxSize changed by someone else during
    the upgrade (neither the value before the upgrade nor the one the upgrade set), which it keeps, with a warning
    and in RV(restore.kept_sizes) (the desired capacity is put back within it); removes the scale-in protection the upgrade set (journal
    C(scale_in_protection=ours)), resumes only the processes the upgrade suspended,
    removes the C(cluster-autoscaler.kubernetes.io/scale-down-disabled) annotation the upgrade put on nodes, and
    clears the journal last. Safe to rerun after a crash at any point.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  on_autoscaler:
    description:
      - What to do when the cluster autoscaler changed the desired capacity during the upgrade.
      - C(fail) fails with code C(ClusterAutoscalerActive); C(stop) returns without failing, with
        RV(restore.autoscaler_detected=true). Neither restores anything.
    type: str
    choices: [fail, stop]
    default: fail
  drain_timeout:
    description:
      - Seconds per surplus node for its pods to leave before failing with C(PodEvictionFailure).
    type: int
    default: 900
  post_drain_wait:
    description:
      - The longest, in seconds, a surplus node waits after it is empty for the cluster's load balancers (found by
        their tags, as M(eksops.nodegroup.node_drain) does) to let its instance go; the fixed wait when the cluster
        has none.
    type: int
    default: 60
  post_drain_min_wait:
    description:
      - The shortest wait after a surplus node is empty, at most O(post_drain_wait). Defaults to 0 when the
        cluster's load balancers were found, to O(post_drain_wait) when none was.
    type: int
  ignore_load_balancer_timeout:
    description:
      - Let a surplus node go when a load balancer still holds its instance after O(post_drain_wait), with a
        warning, instead of failing with C(LoadBalancerDeregistrationTimeout).
    type: bool
    default: false
  force:
    description:
      - Delete the pods that PodDisruptionBudgets still protect after O(drain_timeout).
    type: bool
    default: false
  grace_period:
    description:
      - Termination grace period for evicted pods; negative uses each pod's own.
    type: int
    default: -1
  wait_timeout:
    description:
      - Seconds to wait for the surplus instances to terminate.
    type: int
    default: 600
extends_documentation_fragment:
  - eksops.nodegroup.nodegroup
  - eksops.nodegroup.lease
  - eksops.nodegroup.capacity_change
  - eksops.nodegroup.aws
  - eksops.nodegroup.k8s
  - eksops.nodegroup.attributes.aws_k8s_groups
  - eksops.nodegroup.attributes.controller
attributes:
  check_mode:
    support: full
    description: Reports the plan (sizes, surplus instances, processes to resume) and changes nothing.
  diff_mode:
    support: partial
    description: Shows the group's sizes and suspended processes before and after the restore, and after it the sizes
      kept because someone changed them during the upgrade (C(kept_sizes)).
    details: No diff when the module stops for the cluster autoscaler (RV(restore.autoscaler_detected)), even after it
      drained or terminated surplus nodes.
"""

EXAMPLES = r"""
- name: Scale the node group back down after its upgrade
  eksops.nodegroup.nodegroup_scale_restore:
    cluster_name: prod
    nodegroup_name: workers

- name: Restore, but only report when the cluster autoscaler is active
  eksops.nodegroup.nodegroup_scale_restore:
    cluster_name: prod
    nodegroup_name: workers
    on_autoscaler: stop
  register: restore
"""

RETURN = r"""
restore:
  description: What the restore did (or would do in check mode); on failure, what it did before failing.
  returned: always
  type: dict
  contains:
    asg_name:
      description: The Auto Scaling group.
      type: str
      sample: eks-workers-1a2b3c
    journal_found:
      description: Whether there was an upgrade journal to restore from.
      type: bool
      sample: true
    autoscaler_detected:
      description: Whether the desired capacity was changed by someone else (nothing was restored then).
      returned: always
      type: bool
      sample: false
    scaling_activities:
      description: The group's scaling activities since the upgrade started, when the autoscaler was detected.
      returned: when the autoscaler was detected
      type: list
      elements: dict
      sample: [{activity_id: 1a2b, status_code: Successful, description: Launching a new EC2 instance, cause: ...}]
    before:
      description: MinSize, MaxSize and DesiredCapacity before.
      type: dict
      sample: {min_size: 3, max_size: 12, desired_capacity: 12}
    after:
      description: MinSize, MaxSize and DesiredCapacity after (the values before the upgrade, but for RV(restore.kept_sizes)).
      type: dict
      sample: {min_size: 3, max_size: 12, desired_capacity: 6}
    kept_sizes:
      description:
        - MinSize or MaxSize changed by someone else during the upgrade (neither the value before the upgrade nor
          the one the upgrade last set), kept instead of restored; C(size) is C(min_size) or C(max_size).
      type: list
      elements: dict
      sample: [{size: max_size, aws_name: MaxSize, before_upgrade: 10, set_by_upgrade: 16, found: 20}]
    removed_instances:
      description: The surplus instances drained and terminated.
      type: list
      elements: dict
      sample: [{instance_id: i-0abc, availability_zone: us-west-2a, node_name: ip-10-0-1-5.internal}]
    drain:
      description: Per-node drain results of the surplus nodes.
      type: dict
      sample: {}
    resumed_processes:
      description: The processes resumed (only those the upgrade suspended).
      type: list
      elements: str
      sample: [AZRebalance]
    unprotected_instances:
      description: Instances whose scale-in protection, set by the upgrade, was removed.
      returned: when the upgrade had set scale-in protection
      type: list
      elements: str
      sample: [i-0abc]
    schedule:
      description: The journal's schedule (SPEC B1; C(eks) when the journal records none, C(null) without a journal).
      type: str
      sample: once
    surplus_nodes_with_pods:
      description:
        - How many of the drained surplus nodes held pods to move (evicted or deleted). Under the schedule C(once)
          the surplus removed first is the nodes the scale-up marked, which no pod moved to; the count should be 0.
      type: int
      sample: 0
    released_surplus_nodes:
      description:
        - Surplus nodes the scale-up marked (schedule C(once)) that the group keeps, as a desired capacity accepted
          above the size before the upgrade needs them; uncordoned and unmarked.
      returned: when the group was restored
      type: list
      elements: str
      sample: []
    unannotated_nodes:
      description: Nodes whose scale-down-disabled annotation was removed.
      type: list
      elements: str
      sample: [ip-10-0-1-5.internal]
    elapsed_seconds:
      description: Seconds the module ran.
      type: float
      sample: 140.2
diff:
  description: The group's sizes and suspended processes before and after the restore.
  returned: in diff mode, when there is a journal to restore from and the cluster autoscaler was not detected
  type: dict
"""
