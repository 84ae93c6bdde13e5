#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: workload_health
short_description: Wait until a cluster's Deployments and StatefulSets are healthy - the upgrade's health gate
version_added: 0.1.0
description:
  - Issue 28 item 2. The health gate the upgrade runs after a batch (issue 27 item 1, M(eksops.nodegroup.node_replace)
    O(eksops.nodegroup.node_replace#module:health_gate_timeout)), over every Deployment and StatefulSet of the
    cluster, or of O(namespaces). C(playbooks/upgrade_fleet.yml) runs it on the previous ring's clusters after
    C(fleet_bake_seconds), before a ring's first wave.
  - A Deployment is healthy as C(kubectl rollout status) judges it (its new replicas all updated and available, no
    old one left, its spec observed); a StatefulSet when its replicas are ready on its update revision; neither
    with a Pending pod. Polled until all are healthy, or fails with C(HealthGateFailed) after
    O(health_gate_timeout), naming each workload and why.
  - Every EKS API server serves apps/v1 Deployments and StatefulSets, so a 404 on either list (the request reached
    another server, or a path a proxy rewrote) fails the module with C(ResourceNotFound), naming the cluster.
  - Read-only. In check mode the workloads are listed, not waited for.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  cluster_name:
    description:
      - The EKS cluster (its API server is proven to be this cluster's, SPEC K4; an EKS token is built for it when
        no kubeconfig is given).
    type: str
    required: true
  namespaces:
    description:
      - The namespaces whose workloads are judged; all by default.
    type: list
    elements: str
  health_gate_timeout:
    description:
      - Seconds to wait for every workload to be healthy.
    type: int
    default: 600
  where:
    description:
      - What the gate follows, for the message of a failure (C(After the bake of ring canary)).
    type: str
    default: the health gate
extends_documentation_fragment:
  - eksops.nodegroup.aws
  - eksops.nodegroup.k8s
  - eksops.nodegroup.attributes.aws_k8s_groups
attributes:
  check_mode:
    support: full
    description: Lists the workloads; does not wait.
  diff_mode:
    support: N/A
    description: Changes nothing, so there is no diff.
notes:
  - Needs C(list) on C(deployments), C(statefulsets) and C(pods) (docs/rbac.yaml), and C(eks:DescribeCluster).
seealso:
  - module: eksops.nodegroup.node_replace
"""

EXAMPLES = r"""
- name: Wait until the canary cluster's workloads are healthy after the bake
  eksops.nodegroup.workload_health:
    cluster_name: prod-canary
    health_gate_timeout: 300
    where: After the bake of ring canary
"""

RETURN = r"""
health:
  description: The workloads judged.
  returned: success
  type: dict
  contains:
    workloads:
      description: Each Deployment and StatefulSet, C(Kind namespace/name).
      type: list
      elements: str
      sample: [Deployment default/web, StatefulSet data/db]
    healthy_at:
      description: When all were healthy (ISO 8601 UTC); null in check mode.
      type: str
"""

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.fleet_bake import ARGUMENT_SPEC, run


def main() -> None:
    module = EksopsModule(ARGUMENT_SPEC, uses_aws=True, uses_k8s=True, supports_check_mode=True)
    module.run(lambda: run(module))


if __name__ == "__main__":
    main()
