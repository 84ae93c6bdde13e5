#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
module: asg_instance_terminate
short_description: Terminate node group instances through their Auto Scaling group
version_added: 0.1.0
description:
  - Terminates instances with TerminateInstanceInAutoScalingGroup, with or without decrementing the
    group's desired capacity, and waits until they are terminated.
  - Without decrement the group launches replacements; O(wait_for_replacements) waits until the group is
    back at its desired capacity and every replacement's node is Ready.
  - Refuses instances that are not in the group, naming them (also one EC2 does not know at all, which never
    existed or was terminated long ago). Instances already terminated or terminating are not an error, nor is one
    that another actor terminates between this module's look at the group and its TerminateInstanceInAutoScalingGroup
    call (AWS then answers C(ValidationError) C(No managed instance found)); it is reported in
    RV(termination.already_terminated).
  - "Lifecycle hooks: the group's termination lifecycle hooks (C(autoscaling:EC2_INSTANCE_TERMINATING)) are read
    once, before anything changes. While an instance it terminates is held in C(Terminating:Wait) by them, the wait
    goes on up to the hooks' C(HeartbeatTimeout) (added up) beyond O(wait_timeout), and the result and any timeout
    error name the hooks waited for. The module never completes a lifecycle action itself: that belongs to whoever
    owns the hook (a Lambda function, a node termination handler)."
  - "Instance lifecycle policies: when an abandoned termination lifecycle action leaves an instance in
    C(Terminating:Retained) (the group's policy retains it), the wait for that instance ends: it will not terminate by
    itself. It is reported in RV(termination.retained_instances) with a warning giving the command that terminates
    it."
  - "Refuses, before changing anything, an instance whose Kubernetes node (found by C(spec.providerID)) is not
    cordoned or still runs pods other than DaemonSet pods, mirror pods and finished (Succeeded/Failed) pods:
    the message names the instance, the node and the pods (C(code=PodEvictionFailure)). Drain the nodes first
    with M(eksops.nodegroup.node_drain). An instance without a node (it never joined, or its node is gone)
    may be terminated. In check mode the same problems are reported as warnings."
  - When decrementing during an upgrade (an upgrade journal exists on the group), records the desired capacity
    the terminations will leave (C(desired_capacity_pending)) before them and the new desired capacity once
    Auto Scaling accepted them, so that a run killed in between is resumed without a node added back, and lowers
    MinSize if the decrement needs it (restore puts it back).
  - During an upgrade, fails with C(ClusterAutoscalerActive) before any change when the group's desired capacity is
    not the one the upgrade last set (someone else scaled it; SPEC C3), and protects the replacements from
    scale-in when the upgrade protects the group (journal C(scale_in_protection=ours)).
  - During an upgrade, fails with C(LaunchTemplateVersionChanged) before any change when the group no longer launches
    from the launch template version the journal targets (someone set it back during the upgrade), as the replacements
    would be old nodes. The message names both versions and what to do.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  instance_ids:
    description:
      - EC2 instance ids to terminate; each must belong to the group.
    type: list
    elements: str
    required: true
  should_decrement_desired_capacity:
    description:
      - Lower the desired capacity by one per instance (no replacement), or keep it (the group replaces them).
    type: bool
    required: true
  wait:
    description:
      - Wait until the instances are terminated.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for the termination and, with O(wait_for_replacements), for the replacements.
      - An instance held in C(Terminating:Wait) by the group's termination lifecycle hooks is waited for this long
        plus the hooks' C(HeartbeatTimeout) (added up), counted from when it was first seen waiting.
    type: int
    default: 600
  wait_for_replacements:
    description:
      - Also wait until the group is back at its desired capacity and the replacement instances' nodes are
        Ready. Only without O(should_decrement_desired_capacity).
    type: bool
    default: false
  node_ready_timeout:
    description:
      - Seconds an instance may take to register its node. An instance to terminate that has no node is
        reported (RV(termination.never_joined)) as still joining when younger, else as one that never
        joined; with another API endpoint than the cluster's, InService instances older than this without a
        node disprove the cluster (SPEC K4).
    type: int
    default: 900
notes:
  - Needs, in the cluster, C(list) on nodes and pods; in AWS, C(autoscaling:DescribeLifecycleHooks) besides the
    describe and terminate calls (see C(docs/iam-policy.json)).
extends_documentation_fragment:
  - eksops.nodegroup.nodegroup
  - eksops.nodegroup.lease
  - eksops.nodegroup.capacity_change
  - eksops.nodegroup.aws
  - eksops.nodegroup.k8s
  - eksops.nodegroup.attributes.aws_k8s_groups
attributes:
  check_mode:
    support: full
    description: Reports the instances it would terminate and the group's sizes after, and changes nothing.
  diff_mode:
    support: full
    description: Shows the group's sizes and instance ids before and after.
"""

EXAMPLES = r"""
- name: Replace two drained nodes (the group launches new ones)
  eksops.nodegroup.asg_instance_terminate:
    cluster_name: prod
    nodegroup_name: workers
    instance_ids: [i-0123456789abcdef0, i-0fedcba9876543210]
    should_decrement_desired_capacity: false
    wait_for_replacements: true

- name: Remove a drained surplus node
  eksops.nodegroup.asg_instance_terminate:
    cluster_name: prod
    nodegroup_name: workers
    instance_ids: [i-0123456789abcdef0]
    should_decrement_desired_capacity: true
"""

RETURN = r"""
termination:
  description: What was terminated.
  returned: success
  type: dict
  contains:
    asg_name:
      description: The Auto Scaling group.
      type: str
      sample: eks-workers-1a2b3c
    terminated:
      description: Instances this run asked the group to terminate.
      type: list
      elements: str
      sample: [i-0123456789abcdef0]
    already_terminated:
      description:
        - Requested instances that were already terminated or terminating, including one another actor terminated
          between this module's look at the group and its termination request.
      type: list
      elements: str
      sample: []
    lifecycle_hooks:
      description:
        - The group's termination lifecycle hooks (read when the module waits for terminations), each with its
          heartbeat timeout (seconds), global timeout and default result.
      type: list
      elements: dict
      sample: [{name: drain, heartbeat_timeout: 300, global_timeout: 30000, default_result: CONTINUE}]
    lifecycle_hook_waits:
      description:
        - Each instance that was held in C(Terminating:Wait), with the hooks it waited for and for how long.
      type: list
      elements: dict
      sample: [{instance_id: i-0123456789abcdef0, lifecycle_hooks: [drain], held_seconds: 42.0, still_held: false}]
    retained_instances:
      description:
        - Instances that Auto Scaling retained instead of terminating them (lifecycle state C(Terminating:Retained))
          because their termination lifecycle action was abandoned (C(ABANDON), or a hook timeout whose default result is
          C(ABANDON)) and the group's instance lifecycle policy retains such instances
          (C(RetentionTriggers.TerminateHookAbandon=retain)). They are not waited for any further.
        - They no longer count toward the group's desired capacity, but keep running, and costing, until terminated by
          hand (C(aws ec2 terminate-instances --instance-ids ...)); the module warns once for each.
        - Empty without O(wait) (the module does not look) and in check mode.
      type: list
      elements: str
      sample: [i-0123456789abcdef0]
    before:
      description: MinSize, MaxSize and DesiredCapacity before.
      type: dict
      sample: {min_size: 3, max_size: 12, desired_capacity: 12}
    after:
      description: MinSize, MaxSize and DesiredCapacity after.
      type: dict
      sample: {min_size: 3, max_size: 12, desired_capacity: 11}
    never_joined:
      description:
        - Instances terminated without a node, each with why it has none (SPEC K2, K4) - the cluster is proven,
          so such an instance never joined it; it was still booting, or it failed the node-ready wait.
      type: list
      elements: dict
      sample: [{instance_id: i-0abc, launched_seconds_ago: 1200, reason: "never joined the cluster: ..."}]
    replacements:
      description: Instances launched to replace the terminated ones (with O(wait_for_replacements)).
      type: list
      elements: dict
      sample: [{instance_id: i-0abc, availability_zone: us-west-2a, node_name: ip-10-0-1-5.internal, ready: true}]
    availability_zones:
      description: The Availability Zone of each instance terminated, by instance id, as the group was read first.
      type: dict
      sample: {i-0abc: us-west-2a}
    group_per_az:
      description: The group's instances per Availability Zone (terminating ones aside) as it was read first.
      type: dict
      sample: {us-west-2a: 4, us-west-2b: 4}
    elapsed_seconds:
      description: Seconds the module ran.
      type: float
      sample: 12.5
diff:
  description: The group's sizes and instance ids before and after (the instances to terminate left out).
  returned: in diff mode
  type: dict
undrained:
  description: When the module refuses undrained instances, each of them with its node.
  returned: failure
  type: list
  elements: dict
  contains:
    instance_id:
      description: The instance.
      type: str
    node:
      description: Its node.
      type: str
    cordoned:
      description: Whether the node is cordoned.
      type: bool
    pods:
      description: Pods (C(namespace/name)) still on the node that are not DaemonSet, mirror or finished pods.
      type: list
      elements: str
  sample: [{instance_id: i-0123456789abcdef0, node: ip-10-0-1-5.internal, cordoned: true, pods: [default/web-1]}]
"""

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.asg_instance_terminate import ARGUMENT_SPEC, run


def main() -> None:
    module = EksopsModule(ARGUMENT_SPEC, uses_aws=True, uses_k8s=True, supports_check_mode=True)
    module.run(lambda: run(module))


if __name__ == "__main__":
    main()
