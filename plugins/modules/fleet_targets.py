#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: fleet_targets
short_description: Resolve, once, the target of every node group of a fleet for a Kubernetes version
version_added: 0.1.0
description:
  - Issue 28 item 2. C(playbooks/upgrade_fleet.yml) runs it once, per region, before its first wave, and hands
    each node group the answer, so that a new AMI that SSM recommends while the waves run cannot reach some groups
    of a family and not others.
  - For a self-managed node group, the recommended EKS-optimized AMI of its current AMI's family (Amazon Linux
    2023, Amazon Linux 2, Bottlerocket), as O(nodegroups[].nodegroup_image_name) tells it - the SSM parameter the
    upgrade reads for C(kubernetes_version) - given as C(image_id).
  - For an EKS managed node group, the release EKS would pick for O(kubernetes_version) and its amiType - the
    SSM parameter C(eksops.nodegroup.eks_nodegroup_update) reads - given as C(release_version). A group of amiType
    C(CUSTOM) (its AMI is its launch template's) or Windows is refused, naming it.
  - Each distinct SSM parameter is read once. Read-only.
  - With O(fleet_targets), the targets a previous run resolved, nothing is read from SSM - a rerun after a halt,
    or the next job of an AWX workflow, gives each node group the target the first run gave its family.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  kubernetes_version:
    description:
      - The Kubernetes version of the fleet's new nodes (C(1.30)).
    type: str
    required: true
  nodegroups:
    description:
      - The node groups, with the host variables of the C(eksops.nodegroup.eks_nodegroups) inventory.
    type: list
    elements: dict
    required: true
    suboptions:
      host:
        description:
          - The node group's host name, the key of its target in RV(fleet_targets.targets).
        type: str
        required: true
      kind:
        description:
          - C(managed), C(self_managed_eksctl) or C(self_managed).
        type: str
        required: true
        choices: [managed, self_managed_eksctl, self_managed]
      nodegroup_image_name:
        description:
          - A self-managed group's current AMI name (its family decides the SSM parameter).
        type: str
      nodegroup_ami_type:
        description:
          - An EKS managed group's amiType.
        type: str
  fleet_targets:
    description:
      - The targets a previous run of the fleet resolved, as C(playbooks/upgrade_fleet.yml) publishes them - by
        region, each SSM parameter's value (RV(fleet_targets.parameters) of each region's call).
      - Given, nothing is read from SSM; each node group's target is its SSM parameter's value for O(region) in it,
        which must be there and well formed (an AMI id for C(image_id), a release version for
        C(release_version)), else the module fails naming O(fleet_targets).
    type: dict
extends_documentation_fragment:
  - eksops.nodegroup.aws
  - eksops.nodegroup.aws.validate_certs
  - eksops.nodegroup.attributes.aws_group
  - eksops.nodegroup.attributes.read_only
  - eksops.nodegroup.attributes.controller
notes:
  - Needs C(ssm:GetParameter) on the public parameters under C(/aws/service/).
  - SSM parameters are regional; give the node groups of one region per call, with O(region).
seealso:
  - module: eksops.nodegroup.launch_template_version
  - module: eksops.nodegroup.eks_nodegroup_update
"""

EXAMPLES = r"""
- name: Resolve the targets of the fleet's node groups in us-west-2
  eksops.nodegroup.fleet_targets:
    region: us-west-2
    kubernetes_version: "1.30"
    nodegroups:
      - {host: prod/system, kind: managed, nodegroup_ami_type: AL2023_x86_64_STANDARD}
      - {host: prod/apps, kind: self_managed, nodegroup_image_name: amazon-eks-node-al2023-x86_64-standard-1.29-v20240601}

- name: The same node groups, with the targets the fleet's first run resolved (no SSM read)
  eksops.nodegroup.fleet_targets:
    region: us-west-2
    kubernetes_version: "1.30"
    nodegroups:
      - {host: prod/apps, kind: self_managed, nodegroup_image_name: amazon-eks-node-al2023-x86_64-standard-1.29-v20240601}
    fleet_targets:
      us-west-2:
        /aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id: ami-0123456789abcdef0
"""

RETURN = r"""
fleet_targets:
  description: The targets read.
  returned: success
  type: dict
  contains:
    targets:
      description: By host, the target to pass to the upgrade - C(option) (C(image_id) or C(release_version)),
        C(value) and the C(ssm_parameter) it was read from.
      type: dict
      sample:
        prod/system:
          option: release_version
          value: 1.30.0-20240701
          ssm_parameter: /aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/release_version
        prod/apps:
          option: image_id
          value: ami-0abc
          ssm_parameter: /aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id
    parameters:
      description: Each SSM parameter read (or taken from O(fleet_targets)), and its value.
      type: dict
"""
