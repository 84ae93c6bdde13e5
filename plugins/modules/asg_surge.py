#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
module: asg_surge
short_description: Scale a node group's Auto Scaling group up before replacing its nodes
version_added: 0.1.0
description:
  - Raises the MaxSize (when needed) and DesiredCapacity of the node group's Auto Scaling group so new nodes
    are launched before old ones are drained, as EKS managed node groups do in their scale-up phase, or to
    an absolute size for one step of a surge upgrade.
  - Records the original sizes and the processes it suspends in the upgrade journal (tags on the ASG)
    B(before) changing anything, so a rerun never surges twice and M(eksops.nodegroup.nodegroup_scale_restore)
    can undo it.
  - Protects the group's InService instances from scale-in before the group grows, and the new ones once they
    are Ready, so a desired capacity set back behind the upgrade's back cannot terminate a node that still holds
    pods (recorded as C(scale_in_protection=ours) in the journal; the restore removes the protection). A group
    that used scale-in protection already is left alone (C(theirs)).
  - With O(wait), waits until every new instance has a Ready node (matched by its C(spec.providerID)) that
    carries the labels the node group's own tool sets (C(alpha.eksctl.io/nodegroup-name) for an eksctl group,
    none for a plain self-managed group) and, in C(rolling) mode, at least one new node is Ready in every
    Availability Zone that has old nodes.
  - Fails fast with the launch error when a launch fails in a way no retry fixes (instance or vCPU quota, no free
    addresses, an invalid launch template, AMI or instance profile). A capacity error
    (C(InsufficientInstanceCapacity)) ends the wait only after 3 failed launches in one Availability Zone since
    the wait began. Auto Scaling launches a failed instance in another zone; when that leaves a zone with old
    nodes without a new one (C(rolling)), one more instance is asked for (desired capacity and MaxSize up by one,
    journalled first), which Auto Scaling launches in the zone with the fewest instances. A zone still without a new
    node once 3 instances were asked for so ends the wait with its capacity error.
  - Refuses an EKS managed node group, whose Auto Scaling group EKS owns (see M(eksops.nodegroup.eks_nodegroup_update)).
  - During an upgrade, fails with C(LaunchTemplateVersionChanged) before any change when the group no longer launches
    from the launch template version the journal targets (someone set it back during the upgrade), as its new nodes
    would start with the old configuration. The message names both versions and what to do.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  mode:
    description:
      - C(rolling) raises the desired capacity by the larger of twice the number of Availability Zones of
        the ASG and the resolved maximum unavailable (EKS scale-up phase).
      - C(explicit) raises it by O(surge).
      - C(desired) sets it to O(desired_capacity) (one step of a surge upgrade).
      - In every mode the increase is from the desired capacity before the upgrade (from the journal), so a
        rerun never adds a second surge. The desired capacity is never lowered.
      - A C(rolling) rerun reaches the desired capacity the journal records once it records the surge, without
        recomputing it (a relaunch after a capacity error included). Past the scale-up (phase C(upgrade) or
        C(scale_down)) it adds nothing - the surge is in place, and the desired capacity the upgrade's terminations
        set since (lowered by each decrement of the schedule C(once)) is kept, so no node is launched that the
        scale-down would drain with moved pods (issue 25 item 1). That is the journal's C(desired_capacity_set), or
        the desired capacity now where decrementing terminations under way explain it (from
        C(desired_capacity_pending) up).
    type: str
    choices: [rolling, explicit, desired]
    default: rolling
  surge_sizing:
    description:
      - How C(rolling) mode sizes the surge (issue 11 item 2, SPEC B2). C(eks) is the larger of twice the number of
        Availability Zones of the ASG and the resolved maximum unavailable (EKS's scale-up phase).
      - C(per_az) is the surge sized to need - the fewest launches that put a new node in every Availability Zone
        that holds old nodes, or the resolved maximum unavailable, whichever is larger, and never more than C(eks)
        would add. Auto Scaling launches into the zone with the fewest instances and no launch can be sent to a
        zone, so the count is the one that reaches every such zone from the group's instances per zone now,
        however Auto Scaling breaks ties between zones with equally few instances (a 2-node group over 3 zones,
        1-1-0, takes 4 - the first launch goes to the empty zone, and after it the three zones tie).
      - The surge is recorded in the journal; a rerun of C(per_az) takes the recorded one, never a second surge.
      - Ignored in the other modes.
    type: str
    choices: [eks, per_az]
    default: eks
  surge:
    description:
      - Number of nodes to add in C(explicit) mode (0 to 100).
      - How C(rolling) mode sizes the surge is O(surge_sizing).
    type: int
  desired_capacity:
    description:
      - The desired capacity to reach in C(desired) mode; at most 100 above the group's desired capacity before
        the upgrade (the journal's, while an upgrade is under way).
    type: int
  max_unavailable:
    description:
      - Nodes upgraded in parallel (1 to 100); used in C(rolling) mode. Defaults to 1 when neither this nor
        O(max_unavailable_percentage) is set.
    type: int
  max_unavailable_percentage:
    description:
      - Nodes upgraded in parallel as a percentage (1 to 100) of the group's desired capacity before the upgrade
        (the one recorded in the journal while an upgrade is under way), rounded up, at least 1. Mutually
        exclusive with O(max_unavailable).
    type: int
  suspend_processes:
    description:
      - Auto Scaling processes to suspend for the duration of the upgrade. Processes that are already
        suspended are left alone and not recorded, so restore resumes only the ones this module suspended.
      - C(Launch) and C(Terminate) cannot be suspended here, as the surge needs them.
      - M(eksops.nodegroup.launch_template_version) suspends them already in the setup phase, before the group
        is pointed at the new version; then this module finds them recorded and changes nothing.
    type: list
    elements: str
    default: [AZRebalance, AlarmNotification, ScheduledActions, ReplaceUnhealthy, InstanceRefresh]
  pending_decrement:
    description:
      - Instances the caller terminates with a decrement of the desired capacity once this step's new nodes
        are Ready (the old nodes of a surge step).
      - The journal records the desired capacity they will leave (C(desired_capacity_pending)) before anything
        changes, so that a crash between their termination and the journal update is not taken for the cluster
        autoscaler by M(eksops.nodegroup.nodegroup_scale_restore) (SPEC C3).
    type: int
    default: 0
  wait:
    description:
      - Wait until the new nodes are Ready and validated.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for the new nodes before failing with C(NodeCreationFailure).
    type: int
    default: 900
  image_id:
    description:
      - AMI of the new nodes, to tell them from old ones. Defaults to the journal's target, else the AMI of
        the launch template version the ASG uses.
    type: str
  launch_template_version:
    description:
      - Launch template version number of the new nodes. Defaults to the journal's target, else the version
        the ASG uses.
    type: str
  schedule:
    description:
      - The schedule of the upgrade's terminations (SPEC B1), recorded in the journal with the scale-up; C(rolling)
        mode only.
      - C(eks) is EKS's - every old node's termination is replaced, and the scale-down removes the surge.
      - C(once) (each pod moves once) also records, before the surge, the live instances per Availability Zone
        (C(start_per_az)); once the new nodes are validated, the new nodes beyond those counts
        (RV(surge.surplus_nodes)) get the annotation C(eksops.nodegroup/surplus=<run id>), are cordoned and
        labelled C(node.kubernetes.io/exclude-from-external-load-balancers=true), so no evicted pod lands on them;
        M(eksops.nodegroup.node_replace) then lowers the desired capacity on some terminations and
        M(eksops.nodegroup.nodegroup_scale_restore) removes them empty.
      - A rerun keeps what the journal records and refuses another schedule than the journal's. When the journal
        recorded the surge without a schedule (an older version of this collection), C(once) goes on as C(eks),
        with a warning.
      - C(once) is refused in the other modes.
    type: str
    choices: [once, eks]
    default: eks
  label_surge_nodes:
    description:
      - Annotate the new nodes C(cluster-autoscaler.kubernetes.io/scale-down-disabled=true) once they are
        validated, so the cluster autoscaler does not remove the surge;
        M(eksops.nodegroup.nodegroup_scale_restore) removes the annotation. Needs O(wait).
    type: bool
    default: true
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
    description: Reports the planned sizes and processes without changing anything.
  diff_mode:
    support: full
    description: Shows the group's sizes, suspended processes, schedule and instances per Availability Zone before
      and after the planned scale-up, and after it the surplus nodes marked (schedule C(once)).
notes:
  - "Journal phase: C(scale_up) is recorded before anything changes, C(upgrade) once the new nodes are validated
    (or, without O(wait), once the sizes are set): a rerun then knows the old nodes were being replaced."
"""

EXAMPLES = r"""
- name: Scale up before a rolling upgrade (twice the AZ count, at least max_unavailable)
  eksops.nodegroup.asg_surge:
    cluster_name: prod
    nodegroup_name: workers
    max_unavailable: 2

- name: Scale up only as far as putting a new node in every zone with old nodes needs
  eksops.nodegroup.asg_surge:
    cluster_name: prod
    nodegroup_name: workers
    surge_sizing: per_az

- name: One step of a surge upgrade
  eksops.nodegroup.asg_surge:
    cluster_name: prod
    nodegroup_name: workers
    mode: desired
    desired_capacity: 7
    wait_timeout: 600
"""

RETURN = r"""
surge:
  description: What the scale-up did (or would do in check mode).
  returned: success
  type: dict
  contains:
    asg_name:
      description: The Auto Scaling group.
      type: str
      sample: eks-workers-1a2b3c
    surge:
      description: Nodes above the desired capacity before the upgrade.
      type: int
      sample: 6
    surge_sizing:
      description: How the surge was sized (O(surge_sizing); C(null) outside C(rolling) mode).
      type: str
      sample: per_az
    before:
      description: MinSize, MaxSize and DesiredCapacity before this run.
      type: dict
      sample: {min_size: 3, max_size: 12, desired_capacity: 6}
    after:
      description: MinSize, MaxSize and DesiredCapacity after this run.
      type: dict
      sample: {min_size: 3, max_size: 12, desired_capacity: 12}
    relaunched:
      description:
        - Instances asked for beyond the planned surge because a capacity error left an Availability Zone with old
          nodes without a new one (Auto Scaling launched elsewhere); included in C(surge) and C(after).
      returned: when an instance was asked for again
      type: int
      sample: 1
    new_nodes:
      description: The new instances and their nodes (empty without O(wait)).
      type: list
      elements: dict
      sample: [{instance_id: i-0abc, availability_zone: us-west-2a, node_name: ip-10-0-1-5.internal, ready: true}]
    suspended_processes:
      description: The processes the upgrade suspended (recorded in the journal; restore resumes these).
      type: list
      elements: str
      sample: [AZRebalance, ReplaceUnhealthy]
    schedule:
      description: The schedule recorded in the journal (C(eks) when C(once) fell back to it; C(null) outside
        C(rolling) mode).
      type: str
      sample: once
    start_per_az:
      description: The instances per Availability Zone before the surge (schedule C(once); C(null) otherwise).
      type: dict
      sample: {us-west-2a: 2, us-west-2b: 2, us-west-2c: 2}
    surplus_nodes:
      description:
        - The new nodes marked surplus, cordoned and excluded from load balancers (schedule C(once)); removed empty
          at the scale-down. Empty in check mode and without O(wait), as the new nodes are not there to choose from.
      type: list
      elements: dict
      sample: [{instance_id: i-0abc, availability_zone: us-west-2c, node_name: ip-10-0-3-5.internal}]
    target:
      description:
        - How new nodes are recognised. C(override_images) maps the instance types that a mixed instances override
          launches from an AMI or launch template of its own to that AMI; such instances are new when they run it.
      type: dict
      sample: {launch_template_id: lt-0abc, launch_template_version: 4, image_id: ami-0abc, override_images: {}}
    elapsed_seconds:
      description: Seconds the module ran.
      type: float
      sample: 95.2
diff:
  description: The group's sizes and suspended processes before and after the planned scale-up.
  returned: in diff mode
  type: dict
"""
