#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: nodegroup_info
short_description: Describe an EKS node group for an upgrade, and plan it
version_added: 0.1.0
description:
  - Read-only. Finds a node group and tells its kind (SPEC K1) - C(managed) (an EKS managed node group),
    C(self_managed_eksctl) (an eksctl unmanaged node group) or C(self_managed) (a plain Auto Scaling group, as
    terraform-aws-eks or the CloudFormation node group template make it) - and describes its Auto Scaling
    group, its launch template, its instances joined with their Kubernetes nodes by C(spec.providerID), which
    instances are old and which new for a target, the Availability Zones, the upgrade journal, EKS's own record
    of a managed node group, and the upgrade plan for the given parallelism settings (self-managed groups only -
    EKS plans a managed group's update itself).
  - The plan's batches are drawn at random (SPEC U5); O(seed) makes them reproducible.
  - Scales to large groups with a fixed number of calls (discovery - one C(DescribeNodegroup) and two filtered
    Auto Scaling group describes -, EC2 instance describes in chunks of 200, paged node LISTs narrowed by the
    kind's node label where it has one), never one call per instance.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  target:
    description:
      - What instances must run to count as new, to split old from new.
      - An AMI id (C(ami-...)), or a launch template version (a number, C($Latest) or C($Default)), whose AMI
        and number both must match.
      - Defaults to the target of the upgrade under way (its journal's launch template version), so that a node it
        replaced stays new when someone points the group back at the old version; without an upgrade, to the launch
        template version the group uses now.
    type: str
  update_strategy:
    description:
      - C(default) pre-scales the group by the larger of twice its Availability Zones and the parallelism
        (EKS rolling update); C(minimal) does not pre-scale (old nodes go first).
      - Ignored when O(max_surge) is given (surge strategy).
    type: str
    choices: [default, minimal]
    default: default
  max_unavailable:
    description:
      - Nodes upgraded in parallel (1 to 100; default 1). With O(max_surge), may be 0.
      - Mutually exclusive with O(max_unavailable_percentage).
    type: int
  max_unavailable_percentage:
    description:
      - Nodes upgraded in parallel as a percentage (1 to 100) of the group's desired capacity before the upgrade
        (the one recorded in the journal while an upgrade is under way), rounded up, at least one.
    type: int
  max_surge:
    description:
      - Plan a surge upgrade (GKE style) with this many extra nodes (0 or more); O(max_surge) plus
        O(max_unavailable) is at most O(surge_cap) and at least 1.
    type: int
  surge_sizing:
    description:
      - How the plan sizes the scale-up of the C(default) strategy (issue 11 item 2, SPEC B2), as
        M(eksops.nodegroup.asg_surge) does. C(eks) is the larger of twice the Availability Zones and the parallelism;
        C(per_az) the fewest launches that reach every Availability Zone holding old nodes under Auto Scaling's
        balanced placement from the group's instances per zone, or the parallelism if larger, never more than
        C(eks) (the journal's surge while an upgrade is under way).
    type: str
    choices: [eks, per_az]
    default: eks
  surge_cap:
    description:
      - Upper bound of O(max_surge) + O(max_unavailable) for a surge upgrade (at most 100).
    type: int
    default: 20
  seed:
    description:
      - Seed for the random batch order; the seed used is returned either way.
    type: int
  schedule:
    description:
      - The schedule RV(nodegroup.plan) plans as its C(schedule) (issue 11 item 1, SPEC B1). C(eks) is EKS's (every
        termination replaced). C(once) (rolling strategy only) also plans which terminations lower the desired capacity, from the
        instances per Availability Zone before the scale-up (the journal's C(start_per_az) once recorded) and where
        Auto Scaling is expected to put the surge; M(eksops.nodegroup.node_replace) plans the same way from the live
        group, batch by batch, so the real batches may differ.
    type: str
    choices: [once, eks]
    default: eks
extends_documentation_fragment:
  - eksops.nodegroup.nodegroup
  - eksops.nodegroup.aws
  - eksops.nodegroup.k8s
  - eksops.nodegroup.attributes.aws_k8s_groups
  - eksops.nodegroup.attributes.read_only
notes:
  - Needs C(autoscaling:DescribeAutoScalingGroups), C(ec2:DescribeInstances), C(ec2:DescribeLaunchTemplates),
    C(ec2:DescribeImages) (with an AMI O(target)),
    C(ec2:DescribeLaunchTemplateVersions), C(eks:DescribeNodegroup) (discovery of managed node groups),
    C(eks:DescribeCluster), and on Kubernetes C(list) on nodes.
seealso:
  - module: eksops.nodegroup.launch_template_version
"""

EXAMPLES = r"""
- name: Describe the workers node group and plan a rolling upgrade, three nodes at a time
  eksops.nodegroup.nodegroup_info:
    cluster_name: prod
    nodegroup_name: workers
    max_unavailable: 3
  register: info

- name: Show the old instances and the batches
  ansible.builtin.debug:
    msg: "{{ info.nodegroup.old_instances | length }} old instances in {{ info.nodegroup.plan.batches | length }} batches"

- name: Plan a surge upgrade to a given AMI
  eksops.nodegroup.nodegroup_info:
    cluster_name: prod
    nodegroup_name: workers
    target: ami-0123456789abcdef0
    max_surge: 2
    max_unavailable: 1
    seed: 42
"""

RETURN = r"""
nodegroup:
  description: The node group, its instances and the upgrade plan.
  returned: always
  type: dict
  contains:
    kind:
      description: The node group's kind (SPEC K1).
      type: str
      sample: self_managed
    node_selector:
      description:
        - The label selector of the node group's nodes where its kind labels them (C(eks.amazonaws.com/nodegroup)
          for a managed group, C(alpha.eksctl.io/nodegroup-name) for an eksctl group), else null. Nodes are matched
          to instances by C(spec.providerID) either way.
      type: str
      sample: alpha.eksctl.io/nodegroup-name=workers
    managed:
      description:
        - EKS's record of a managed node group (null for a self-managed one).
        - Has status, version, release_version, ami_type, launch_template (a custom one, else null),
          update_config, health_issues and scaling_config.
      type: dict
    asg_name:
      description: Name of the Auto Scaling group.
      type: str
      sample: workers-20240101120000000000000001
    asg:
      description: The Auto Scaling group's sizes, suspended processes, Availability Zones, launch template and tags.
      type: dict
      sample:
        name: workers-20240101120000000000000001
        min_size: 3
        max_size: 12
        desired_capacity: 6
        suspended_processes: []
        availability_zones: [us-west-2a, us-west-2b, us-west-2c]
        launch_template: {id: lt-0123456789abcdef0, name: workers, version: "1"}
        tags: {"Name": workers, "kubernetes.io/cluster/demo": owned}
    launch_template:
      description: The group's launch template, its default and latest versions, and the target.
      type: dict
      sample:
        id: lt-0123456789abcdef0
        name: workers
        version: "1"
        default_version: 1
        latest_version: 2
        target_version: 2
        target_image_id: ami-0a1b2c3d4e5f60002
    instances:
      description:
        - Every instance of the group, joined with its node (by the node's providerID).
        - Each has instance_id, availability_zone, lifecycle_state, health_status, launch_template_version,
          image_id, launch_time, node_name (null until the node registers), ready, unschedulable, labels.
      type: list
      elements: dict
    old_instances:
      description: Ids of the instances that do not run the target (the ones an upgrade replaces).
      type: list
      elements: str
    new_instances:
      description: Ids of the instances that run the target.
      type: list
      elements: str
    orphan_nodes:
      description:
        - Names of nodes carrying the node group's label whose instance is not in the group (always empty for
          a kind that labels no node).
      type: list
      elements: str
    azs:
      description: The group's Availability Zones, each with its number of instances, old and new.
      type: list
      elements: dict
      sample: [{name: us-west-2a, instances: 2, old: 2, new: 0}]
    journal:
      description: The upgrade journal recorded on the group, or null when no upgrade is under way.
      type: dict
    plan:
      description:
        - The upgrade plan for the given parameters (null for a managed node group). C(strategy) is C(rolling), C(minimal) or C(surge);
          C(surge) is the number of nodes added before (rolling) or during (surge) the upgrade; C(batches) lists
          the old instance ids replaced together, in order; C(steps) is the surge schedule (surge only).
        - Each surge step launches C(launch) new nodes by raising the desired capacity to C(desired_capacity), then
          replaces C(replace) old nodes, C(instance_ids) in the plan's order (M(eksops.nodegroup.node_replace) takes
          as many once the step's launch is placed, to keep the zones balanced; C(desired_after_launch) and
          C(desired_after_terminate) count the old nodes only). C(size_range) is the range the group's size stays in (SPEC S4, surge only).
        - C(max_unavailable) is resolved (a percentage of C(group_size), the desired capacity before the upgrade);
          C(desired_capacity_during) is C(group_size) plus C(surge); C(surge_sizing) is how a rolling surge was sized
          (null for the other strategies).
        - C(schedule) is the schedule of the terminations (O(schedule); C(eks) for the minimal and surge strategies).
          For C(once) it also has C(start_per_az) (instances per AZ before the scale-up), C(batches) (each with
          C(instance_ids), C(decrement_ids) and C(at_risk)), C(surplus) (surplus new nodes per AZ, removed empty at the
          scale-down), C(decrements), C(end_per_az) and C(at_risk_batches) (1-based).
      type: dict
      sample:
        strategy: rolling
        node_count: 6
        group_size: 6
        desired_capacity_during: 12
        old_count: 6
        max_unavailable: 1
        max_surge: null
        surge: 6
        surge_sizing: eks
        batch_size: 1
        seed: 42
        batches: [[i-0abc], [i-0def]]
        steps: null
        size_range: null
        schedule: {schedule: eks}
"""

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.nodegroup_info import ARGUMENT_SPEC, describe_nodegroup


def main() -> None:
    module = EksopsModule(
        ARGUMENT_SPEC,
        uses_aws=True,
        uses_k8s=True,
        mutually_exclusive=[["max_unavailable", "max_unavailable_percentage"]],
        supports_check_mode=True,
    )
    module.run(lambda: dict(changed=False, nodegroup=describe_nodegroup(module)))


if __name__ == "__main__":
    main()
