#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: fleet_ring_health
short_description: Judge a ring of a fleet after its bake - its node groups and its clusters' workloads, at once
version_added: 0.1.0
description:
  - Issue 28 item 2. C(playbooks/upgrade_fleet.yml) runs it after C(fleet_bake_seconds), before a ring's first wave,
    on the previous ring; the filter C(eksops.nodegroup.fleet_bake_halt) judges its result.
  - Each node group of O(nodegroups) is read as M(eksops.nodegroup.nodegroup_info) reads it (its instances and
    nodes, old and new against its target in O(targets)); each cluster of O(clusters) is judged as
    M(eksops.nodegroup.workload_health) judges it (every Deployment and StatefulSet through the upgrade's health
    gate, waiting up to O(health_gate_timeout)).
  - Each node group and cluster is reached with its own O(nodegroups[].region), O(nodegroups[].profile),
    O(nodegroups[].kubeconfig) and O(nodegroups[].context) - never the task's, which C(module_defaults) set to the
    host that runs it; one left unset falls back as in the node group's own tasks (E(AWS_PROFILE),
    E(K8S_AUTH_KUBECONFIG), E(K8S_AUTH_CONTEXT)) - and with the task's other AWS and Kubernetes options (an endpoint,
    TLS, the request budgets). Its API server is proven to be its cluster's (SPEC K4) before it is read.
  - All of them at once, in threads of one process, rather than one module process after another (4-51 s before
    every ring, docs/performance.md). A node group or cluster that cannot be read is a result of its own, with its
    C(msg) and C(code) (C(ApiError) for an unexpected error); the others are still judged.
  - Read-only. In check mode the workloads are listed, not waited for.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  nodegroups:
    description:
      - The ring's node groups, as the fleet plan lists them (C(bake_nodegroups) of the filter
        C(eksops.nodegroup.fleet_plan)).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description:
          - The node group's name in the fleet (its inventory host), which its result carries.
        type: str
        required: true
      cluster_name:
        description:
          - Its EKS cluster.
        type: str
        required: true
      nodegroup_name:
        description:
          - The node group.
        type: str
        required: true
      asg_name:
        description:
          - Its Auto Scaling group, when the inventory knows it.
        type: str
      region:
        description:
          - Its AWS region.
        type: str
        required: true
      profile:
        description:
          - The AWS profile of its account; none, the controller's credentials.
        type: str
      kubeconfig:
        description:
          - The kubeconfig of its runs, when they have one of their own.
        type: path
      context:
        description:
          - The kubeconfig context of its cluster; none, a kubeconfig's current context, or without a kubeconfig an
            EKS token for O(nodegroups[].cluster_name).
        type: str
  clusters:
    description:
      - The ring's clusters, once each, as the fleet plan lists them (C(bake_clusters)).
    type: list
    elements: dict
    default: []
    suboptions:
      cluster_name:
        description:
          - The EKS cluster.
        type: str
        required: true
      region:
        description:
          - Its AWS region.
        type: str
        required: true
      profile:
        description:
          - The AWS profile of its account; none, the controller's credentials.
        type: str
      kubeconfig:
        description:
          - The kubeconfig of its node groups' runs, when they have one of their own.
        type: path
      context:
        description:
          - Its kubeconfig context; none, a kubeconfig's current context, or without a kubeconfig an EKS token for
            O(clusters[].cluster_name).
        type: str
  targets:
    description:
      - The fleet's targets by node group name, as M(eksops.nodegroup.fleet_targets) returns them
        (RV(eksops.nodegroup.fleet_targets#module:fleet_targets.targets)). A node group whose target is an
        C(image_id) is read against it; the others against their launch template.
    type: dict
    default: {}
  health_gate_timeout:
    description:
      - Seconds to wait for every workload of a cluster to be healthy.
    type: int
    default: 600
  where:
    description:
      - What the judgement follows, for the message of a failure (C(After the bake of ring canary)).
    type: str
    default: the health gate
extends_documentation_fragment:
  - eksops.nodegroup.aws
  - eksops.nodegroup.k8s
  - eksops.nodegroup.attributes.aws_k8s_groups
  - eksops.nodegroup.attributes.controller
attributes:
  check_mode:
    support: full
    description: Reads the node groups and lists the workloads; does not wait.
  diff_mode:
    support: N/A
    description: Changes nothing, so there is no diff.
notes:
  - Needs what M(eksops.nodegroup.nodegroup_info) and M(eksops.nodegroup.workload_health) need.
seealso:
  - module: eksops.nodegroup.nodegroup_info
  - module: eksops.nodegroup.workload_health
"""

EXAMPLES = r"""
- name: Judge the canary ring after its bake
  eksops.nodegroup.fleet_ring_health:
    nodegroups:
      - {name: prod-canary/system, cluster_name: prod-canary, nodegroup_name: system, region: us-west-2}
    clusters:
      - {cluster_name: prod-canary, region: us-west-2}
    health_gate_timeout: 300
    where: After the bake of ring canary
  register: canary
"""

RETURN = r"""
ring:
  description: The ring's judgement.
  returned: success
  type: dict
  contains:
    nodegroups:
      description:
        - Each node group's reading, in the order given - C(name) and C(nodegroup) as
          RV(eksops.nodegroup.nodegroup_info#module:nodegroup) - or, when it could not be read, C(name), C(failed),
          C(msg) and C(code).
      type: list
      elements: dict
    clusters:
      description:
        - Each cluster's judgement, in the order given - C(cluster_name) and C(health) as
          RV(eksops.nodegroup.workload_health#module:health) - or, when its workloads were not all healthy in time
          or could not be read, C(cluster_name), C(failed), C(msg) and C(code) (C(HealthGateFailed),
          C(ClusterUnreachable), ...).
      type: list
      elements: dict
"""
