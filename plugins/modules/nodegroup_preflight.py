#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: nodegroup_preflight
short_description: Find the workloads a node group upgrade will disrupt, before anything changes
version_added: 0.1.0
description:
  - Read-only. Looks at the pods on the node group's nodes and at the Deployments and PodDisruptionBudgets they
    belong to, and reports what an upgrade will do to them (SPEC Z1, Z2, Z3), so a person reads it before any
    node is touched.
  - "Checks: C(single_replica) (a Deployment with one replica is down while its node drains);
    C(no_pdb) (a Deployment with no PodDisruptionBudget may lose all its pods of a batch at once);
    C(blocking_pdb) (minAvailable equal to the replicas, or maxUnavailable 0: eviction is never allowed and the
    drain fails with PodEvictionFailure unless force); C(multiple_pdbs) (several budgets select the same pods:
    eviction answers 500); C(tolerates_all) (a Deployment tolerating every taint reschedules onto cordoned nodes);
    C(prestop_exceeds_grace) (a C(sleep) preStop hook at least as long as terminationGracePeriodSeconds is cut
    short); C(unmanaged_pod) (a pod without a controller is only removed with force and never comes back);
    C(do_not_disrupt) (a pod annotated C(karpenter.sh/do-not-disrupt=true) or
    C(cluster-autoscaler.kubernetes.io/safe-to-evict=false) refuses its node's drain unless force, which evicts
    it, and so do the pods of a node annotated C(karpenter.sh/do-not-disrupt=true));
    with O(post_drain_wait), C(load_balancer_delay) (a target group or Classic Load Balancer of the cluster that
    holds the group's instances drains them for longer than O(post_drain_wait): a node it still holds that long
    after its drain would fail with C(LoadBalancerDeregistrationTimeout), SPEC B3; blocking unless
    O(ignore_load_balancer_timeout))."
  - "Blocking checks, which stop the upgrade before anything changes (each finding has C(blocking));
    C(autoscaler_deleting) (a node tainted C(ToBeDeletedByClusterAutoscaler) - the cluster autoscaler is draining
    it and will terminate its instance with a decrement of the desired capacity, which the upgrade would take
    for the autoscaler moving the group half-way (SPEC C1, C3)). A node tainted
    C(DeletionCandidateOfClusterAutoscaler) only warns (C(autoscaler_candidate))."
  - The node group's nodes are those of its Auto Scaling group's instances, matched by C(spec.providerID),
    whatever its kind (SPEC K1, K2). Pods are listed per node with a C(spec.nodeName) field selector, never all
    pods of the cluster.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  post_drain_wait:
    description:
      - The longest a drained node will wait for the cluster's load balancers (see M(eksops.nodegroup.node_drain));
        when given, the load balancers that hold the group's instances are compared with it.
    type: int
  ignore_load_balancer_timeout:
    description:
      - Whether the drains will let a node go that a load balancer still holds after O(post_drain_wait); when not,
        a C(load_balancer_delay) finding blocks the upgrade.
    type: bool
    default: false
extends_documentation_fragment:
  - eksops.nodegroup.nodegroup
  - eksops.nodegroup.aws
  - eksops.nodegroup.k8s
  - eksops.nodegroup.attributes.aws_k8s_groups
  - eksops.nodegroup.attributes.read_only
"""

EXAMPLES = r"""
- name: Preflight report for the workers node group
  eksops.nodegroup.nodegroup_preflight:
    cluster_name: prod
    nodegroup_name: workers
  register: preflight
"""

RETURN = r"""
preflight:
  description: What the preflight found on the node group's pods and nodes.
  returned: always
  type: dict
  contains:
    warnings_found:
      description:
        - Each finding, with the check that raised it, the object, a sentence for a person, C(blocking) (true when
          the upgrade must not start) and C(nodes), the node group's nodes it concerns (a pod's node, the nodes a
          Deployment's pods run on; none for a load balancer).
      returned: always
      type: list
      elements: dict
      sample:
        - check: single_replica
          kind: Deployment
          namespace: payments
          name: billing
          message: "Deployment payments/billing has 1 replica: it is unavailable while its node drains."
          blocking: false
          nodes: [ip-10-0-1-23.us-west-2.compute.internal]
    blocking:
      description: The findings with C(blocking) true; the upgrade stops before any change while there are any.
      returned: always
      type: list
      elements: dict
    pods_examined:
      description: Number of pods found on the node group's nodes.
      returned: always
      type: int
      sample: 42
    pods_to_move:
      description:
        - By node name, the number of pods a drain would move off the node (neither DaemonSet, mirror nor finished
          pods); every node of the group is listed.
        - The upgrade report divides the pods it evicted by these counts of the nodes it drained
          (C(disruptions_per_old_pod)).
      returned: always
      type: dict
      sample:
        ip-10-0-1-17.eu-west-1.compute.internal: 12
        ip-10-0-2-41.eu-west-1.compute.internal: 9
"""

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.nodegroup_preflight import ARGUMENT_SPEC, run


def main() -> None:
    module = EksopsModule(
        ARGUMENT_SPEC,
        uses_aws=True,
        uses_k8s=True,
        supports_check_mode=True,
    )
    module.run(lambda: run(module))


if __name__ == "__main__":
    main()
