# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    # How a node is drained and waited for after (drain_step.ARGUMENT_SPEC), for node_drain and node_replace.
    DOCUMENTATION = r"""
options:
  delete_options:
    description:
      - How pods are removed from a node that is drained. Names as in C(kubernetes.core.k8s_drain).
      - Defaults are those of a node upgrade, not of C(kubectl drain) (see each option).
    type: dict
    default: {}
    suboptions:
      terminate_grace_period:
        description:
          - Grace period in seconds given to each pod. A negative value uses each pod's own
            C(terminationGracePeriodSeconds).
        type: int
        default: -1
        aliases: [grace_period]
      force:
        description:
          - Evict pods that no controller manages (they are not recreated) and pods of DaemonSets that no longer
            exist; without it such pods block the drain of their node.
          - When O(delete_options.wait_timeout) passes, or a pod's eviction fails, delete the remaining pods
            (PodDisruptionBudgets are bypassed) instead of failing.
          - Leave on the node the pods of a workload that comes back to it after each eviction, instead of failing
            the node (see RV(eksops.nodegroup.node_drain#module:drain.nodes.returning_workloads)).
        type: bool
        default: false
      ignore_daemonsets:
        description:
          - Leave DaemonSet pods on the node (with a warning). Without it they block the drain.
        type: bool
        default: true
      delete_emptydir_data:
        description:
          - Evict pods using C(emptyDir) volumes (their data is lost, as the node's disk is). Without it they
            block the drain.
        type: bool
        default: true
      disable_eviction:
        description:
          - Delete pods instead of evicting them. This bypasses PodDisruptionBudgets.
        type: bool
        default: false
      wait_timeout:
        description:
          - Seconds, per node, for evictions and the wait until the pods are gone.
        type: int
        default: 900
        aliases: [drain_timeout]
      skip_wait_for_delete_timeout:
        description:
          - When greater than 0, pods whose deletion started more than this many seconds ago are skipped
            instead of waited for.
        type: int
        default: 0
  post_drain_wait:
    description:
      - The longest, in seconds, a node waits after it is empty for the cluster's load balancers to let its
        instance go before it may be terminated; the fixed wait when the cluster has no load balancer the collection
        finds. Owed even when this run evicted nothing (the node may have been labelled just before).
      - Set it above the longest deregistration delay of the cluster's target groups (300 s unless they set
        C(deregistration_delay.timeout_seconds)) less the time the drain itself takes.
    type: int
    default: 60
  post_drain_min_wait:
    description:
      - The shortest wait, in seconds, after a node is empty, at most O(post_drain_wait).
      - Defaults to 0 when the cluster's load balancers were found (their answers say when the node may go), and
        to O(post_drain_wait) when none was.
    type: int
  ignore_load_balancer_timeout:
    description:
      - When a load balancer still holds a drained node's instance after O(post_drain_wait), warn and let the node
        go instead of failing it with C(LoadBalancerDeregistrationTimeout).
    type: bool
    default: false
  eviction_concurrency:
    description:
      - Most eviction or delete requests in flight at once across all nodes (1 to 100).
      - Pods waiting for a PodDisruptionBudget do not count; they wait without sending requests.
    type: int
    default: 10
"""
