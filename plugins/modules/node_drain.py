#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: node_drain
short_description: Cordon, drain or uncordon Kubernetes nodes the way kubectl drain does, politely
version_added: 0.1.0
description:
  - Cordons (C(spec.unschedulable=true)), drains or uncordons one node (O(name)) or several (O(names)), or the
    nodes of EC2 instances (O(instance_ids)).
  - "O(state=drain) cordons every node first, labels it C(node.kubernetes.io/exclude-from-external-load-balancers=true)
    (O(exclude_from_load_balancers)) and annotates it C(eksops.nodegroup/cordoned-by) with the run id and what the
    run changed (C(<run_id>) when it set both, C(<run_id>; set=unschedulable) or C(<run_id>; set=label) when the
    node already had the other), then drains the
    nodes concurrently with C(kubectl drain) semantics: pods are listed per node with a C(spec.nodeName) field
    selector; already terminating, DaemonSet, mirror, emptyDir and unmanaged pods are filtered in that order; if
    any pod of a node is refused, nothing on that node is evicted and every refused pod is reported."
  - Pods are evicted through the C(policy/v1) Eviction API with the pod's UID as precondition, so
    PodDisruptionBudgets are respected. A refusal by a PodDisruptionBudget (HTTP 429) is retried every 5 seconds
    with jitter, a 429 with C(Retry-After) after that delay; a pod covered by several PodDisruptionBudgets
    (HTTP 500) fails at once. Other server errors (500, 502, 503, 504) and dropped connections are retried with
    backoff; a plain 500 fails the pod after 4 retries.
  - "Evictions are paced by the PodDisruptionBudgets themselves: the module watches the budgets of the pods'
    namespaces and sends an eviction for a pod covered by one budget only while that budget allows a disruption
    (at most one probe per budget every 5 seconds otherwise), instead of retrying every blocked pod as
    C(kubectl drain) does."
  - "O(delete_options.wait_timeout) is one deadline per node for evictions and the wait for the pods to go.
    When it passes, the module fails with C(code=PodEvictionFailure) naming the pods and the
    PodDisruptionBudgets that blocked them, and the node stays cordoned; with O(delete_options.force) the
    remaining pods are deleted instead (PodDisruptionBudgets bypassed)."
  - Deletion is awaited with one watch per node, not by polling each pod.
  - "Pods that land on a node while it is drained are seen on that watch and removed the same way, until the
    node holds only skipped pods; one that a filter refuses fails the node. Such pods still there when
    O(delete_options.wait_timeout) passes fail the node with C(PodEvictionFailure) (with O(delete_options.force)
    they are deleted once, and what lands after that fails the node)."
  - "A workload whose pods come back to the cordoned node (a pod that lands there after a pod of the same
    Deployment, StatefulSet or other controller was evicted from it: it tolerates every taint or the
    C(node.kubernetes.io/unschedulable) taint, it is pinned to the node as a DaemonSet's pods are, or, a second
    time, its controller binds it with C(spec.nodeName)) is not evicted again: evicting it only brings another
    (an eviction storm, with the workload at 0 Ready). Without O(delete_options.force) the node fails at once
    with C(PodEvictionFailure) naming the workload (C(Kind namespace/name)) and why, and stays cordoned. With
    O(delete_options.force) its pods are left on the node to go with it, reported in RV(drain.nodes.returning_workloads),
    RV(drain.nodes.skipped) and a warning, and the node is annotated C(eksops.nodegroup/left-pods) so that
    C(asg_instance_terminate) lets these pods go with the instance (an uncordon removes the annotation). A pod
    that comes back once with nothing in its spec to explain it is evicted again after a jittered backoff."
  - "After a node is empty the module waits until the cluster's load balancers have let its instance go (SPEC
    B3): with O(cluster_name) and O(exclude_from_load_balancers), it finds the cluster's ELBv2 target groups (tag
    C(elbv2.k8s.aws/cluster) or C(kubernetes.io/cluster/<cluster_name>)) and Classic Load Balancers (tag
    C(kubernetes.io/cluster/<cluster_name>)), and waits until none of them lists the instance as registered or
    draining, for at least O(post_drain_min_wait) and at most O(post_drain_wait) seconds. An instance still held
    then fails the node with C(LoadBalancerDeregistrationTimeout) naming the load balancer (it stays cordoned),
    unless O(ignore_load_balancer_timeout). Target groups of C(ip) targets hold pods, which leave them through the
    drain itself. When the cluster has no such load balancer (or the AWS credentials may not list them: a warning
    says so), nothing better is known than a fixed wait of O(post_drain_min_wait), by default O(post_drain_wait)."
  - The node's pods are watched during the wait; a pod that lands then is removed and the wait starts over.
  - Records a Kubernetes Event on each node it changes (reasons C(EksopsCordon), C(EksopsDrain),
    C(EksopsDrainFailed), C(EksopsUncordon); source C(eksops-nodegroup)).
  - Never cordons or drains a node carrying the cluster autoscaler's C(ToBeDeletedByClusterAutoscaler) taint
    (fails with C(code=ClusterAutoscalerActive)), and never changes taints.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  name:
    description:
      - The node to act on. Exactly one of O(name), O(names) and O(instance_ids) is required.
    type: str
  names:
    description:
      - Several nodes to act on; with O(state=drain) they are all cordoned first, then drained concurrently.
    type: list
    elements: str
  instance_ids:
    description:
      - EC2 instance ids whose nodes to act on, found by the nodes' C(spec.providerID)
        (C(aws:///<az>/<instance-id>)) at the time of the run.
      - An instance without a node (it never joined the cluster, or its node is gone) is not an error; RV(drain.instances)
        maps it to null.
    type: list
    elements: str
  nodegroup_name:
    description:
      - "The node group the nodes belong to (needs O(cluster_name)), and a scope that is checked: every node named
        (O(name), O(names), or the nodes of O(instance_ids)) must be the group's, that is its C(spec.providerID)
        names an instance of the group's Auto Scaling group (or one the group is terminating, still tagged
        C(aws:autoscaling:groupName) with it). Otherwise the module fails with C(InvalidParameter) before any
        change, naming each node outside, its instance and the Auto Scaling group (and node-group label) it has.
        Without O(nodegroup_name) any node can be named. An instance of O(instance_ids) that has no node is not
        checked: there is nothing to act on."
      - With O(instance_ids), where its kind labels
        its nodes (C(eks.amazonaws.com/nodegroup), C(alpha.eksctl.io/nodegroup-name)) the nodes are looked for among those
        first (one smaller LIST); instances not found there, or all of them for a kind without a label, are
        looked for among all nodes. Nodes are matched to instances by C(spec.providerID) either way.
      - With a Kubernetes API endpoint other than the one C(DescribeCluster) gives for O(cluster_name), the node
        group's instances prove the cluster (SPEC K4); without O(nodegroup_name) the module then fails.
    type: str
  asg_name:
    description:
      - The node group's Auto Scaling group, when discovery by O(nodegroup_name) finds several (see the
        C(nodegroup_info) module).
    type: str
  state:
    description:
      - V(cordon) marks the nodes unschedulable (and labels them, see O(exclude_from_load_balancers)).
      - V(drain) cordons, then evicts the pods.
      - V(uncordon) makes the nodes schedulable again and removes the C(eksops.nodegroup/cordoned-by) annotation;
        the exclusion label is removed only where the annotation says this collection set it. With O(run_id),
        only nodes annotated by that run are touched, and only what that run set is undone (a node an operator
        had cordoned before stays cordoned).
    type: str
    choices: [cordon, drain, uncordon]
    default: drain
  pod_selectors:
    description:
      - Label selectors; only pods matching all of them are drained.
      - In the syntax of C(kubectl --selector) (the API server's C(labelSelector)) C(key), C(!key), C(key=value),
        C(key==value), C(key!=value), C(key in (v1,v2)), C(key notin (v1,v2)), C(key>n), C(key<n), joined by
        commas; keys may have a DNS prefix (C(example.com/tier)).
      - They are checked as the API server parses them before anything is requested. An invalid selector fails
        with C(InvalidParameter) naming O(pod_selectors), and no node is cordoned.
    type: list
    elements: str
    aliases: [label_selectors]
  exclude_from_load_balancers:
    description:
      - When cordoning, also label the node C(node.kubernetes.io/exclude-from-external-load-balancers=true), so
        the service controller removes it from load balancers before its pods go.
    type: bool
    default: true
  lease_id:
    description:
      - The id of the run this call belongs to (the playbooks draw one per run; needs O(nodegroup_name)). Before
        the first cordon the module claims the run's lease on the node group's Auto Scaling group (tag
        C(eksops.nodegroup/lease)), and fails with C(UpgradeInProgress), before any change, while another live
        run holds it (issue 10 item 21). Without it, no lease is claimed or checked.
    type: str
  run_id:
    description:
      - Identifier written to the C(eksops.nodegroup/cordoned-by) annotation of nodes this run cordons or labels.
        Generated when not given.
      - With O(state=uncordon), only nodes annotated with this run id are uncordoned.
    type: str
  cluster_name:
    description:
      - Name of the EKS cluster, used to reach the Kubernetes API with an EKS token when no kubeconfig or
        O(host) is given, and to find the cluster's load balancers by their tags (see O(post_drain_wait)).
    type: str
extends_documentation_fragment:
  - eksops.nodegroup.drain_options
  - eksops.nodegroup.aws
  - eksops.nodegroup.k8s
  - eksops.nodegroup.attributes.aws_k8s_groups
attributes:
  check_mode:
    support: full
    description: Lists per node what would be evicted, deleted, skipped or refused; nothing is cordoned or evicted.
  diff_mode:
    support: full
    description: Shows each node's C(spec.unschedulable), labels and C(eksops.nodegroup/cordoned-by) and
      C(eksops.nodegroup/left-pods) annotations before and after.
notes:
  - "Option names follow C(kubernetes.core.k8s_drain): O(delete_options.terminate_grace_period) is the
    C(grace_period) of the upgrade playbooks and C(kubectl drain --grace-period);
    O(delete_options.wait_timeout) is C(drain_timeout) (C(kubectl drain --timeout));
    O(delete_options.delete_emptydir_data), O(delete_options.ignore_daemonsets), O(delete_options.force),
    O(delete_options.disable_eviction) and O(delete_options.skip_wait_for_delete_timeout) are the
    C(kubectl drain) flags of the same names; O(pod_selectors) is C(kubectl drain --pod-selector)."
  - Needs, in the cluster, C(get)/C(patch) on nodes, C(list)/C(watch)/C(delete) on pods, C(create) on
    pods/eviction and events, C(get) on daemonsets and C(list)/C(watch) on poddisruptionbudgets (without the
    latter, evictions are not paced but still respect the budgets).
seealso:
  - name: kubectl drain
    description: The behaviour this module matches.
    link: https://kubernetes.io/docs/tasks/administer-cluster/safely-drain-node/
"""

EXAMPLES = r"""
- name: Drain a node, respecting PodDisruptionBudgets for up to 15 minutes
  eksops.nodegroup.node_drain:
    name: ip-10-0-1-23.us-west-2.compute.internal
    cluster_name: prod
    region: us-west-2

- name: Drain two nodes at once, deleting what PodDisruptionBudgets still protect after 10 minutes
  eksops.nodegroup.node_drain:
    names:
      - ip-10-0-1-23.us-west-2.compute.internal
      - ip-10-0-2-45.us-west-2.compute.internal
    delete_options:
      wait_timeout: 600
      force: true
    post_drain_wait: 30
    kubeconfig: ~/.kube/config

- name: Show what a drain would do
  eksops.nodegroup.node_drain:
    name: ip-10-0-1-23.us-west-2.compute.internal
  check_mode: true
  register: plan

- name: Cordon only
  eksops.nodegroup.node_drain:
    name: ip-10-0-1-23.us-west-2.compute.internal
    state: cordon
    run_id: upgrade-2024-06-01

- name: Drain the nodes of two instances (an instance without a node is skipped)
  eksops.nodegroup.node_drain:
    instance_ids: [i-0123456789abcdef0, i-0fedcba9876543210]
    nodegroup_name: workers
    cluster_name: prod

- name: Undo the cordons of that run
  eksops.nodegroup.node_drain:
    names: "{{ nodes_to_restore }}"
    state: uncordon
    run_id: upgrade-2024-06-01
"""

RETURN = r"""
drain:
  description: What was done to each node, and the requests it took.
  returned: always
  type: dict
  contains:
    nodes:
      description: What happened on each node (in check mode, what would happen).
      returned: always
      type: dict
      contains:
        cordoned:
          description: Whether the node is unschedulable after the run.
          type: bool
        changed:
          description: Whether the run changed the node or its pods.
          type: bool
        evicted:
          description: Pods (C(namespace/name)) whose eviction was accepted.
          type: list
          elements: str
        deleted:
          description: Pods deleted (O(delete_options.disable_eviction), or O(delete_options.force) after the timeout).
          type: list
          elements: str
        workloads:
          description:
            - The workloads (C(Kind namespace/name), a ReplicaSet's Deployment by its C(pod-template-hash)) of the
              pods evicted or deleted; a pod without a controller is in none. M(eksops.nodegroup.node_replace)'s
              health gate judges them.
          type: list
          elements: str
        skipped:
          description: Pods left on the node, with the reason (DaemonSet, mirror pod, long-terminating, with
            O(delete_options.force) a workload that comes back to the node).
          type: list
          elements: dict
          contains:
            pod:
              description: C(namespace/name).
              type: str
            reason:
              description: Why the pod was skipped.
              type: str
        failed:
          description: Pods that refused or could not be removed; the node stays cordoned.
          type: list
          elements: dict
          contains:
            pod:
              description: C(namespace/name).
              type: str
            reason:
              description: Why (filter refusal, eviction error, timeout, a workload that comes back to the node).
              type: str
            pdb:
              description: Name(s) of the PodDisruptionBudget(s) that blocked the pod, comma separated, or null.
              type: str
        warnings:
          description: Pods removed with a warning (emptyDir data, no controller), and workloads left on the node
            because they come back to it (O(delete_options.force)).
          type: list
          elements: str
        returning_workloads:
          description:
            - Workloads whose pods came back to the cordoned node after an eviction, which the drain stopped
              evicting (an eviction storm averted). Without O(delete_options.force) they fail the node; with it their
              pods are left on the node.
          type: list
          elements: dict
          contains:
            workload:
              description: C(Kind namespace/name), e.g. C(Deployment default/web) (a ReplicaSet's Deployment by its
                C(pod-template-hash)).
              type: str
            cause:
              description: C(tolerates_all), C(tolerates_cordon), C(pinned) (node affinity or selector on this node) or
                C(bound) (its controller sets C(spec.nodeName)).
              type: str
            reason:
              description: Why its pods come back, in words.
              type: str
            removed:
              description: Its pods whose eviction (or deletion) from this node was accepted.
              type: int
            returned:
              description: Its pods that landed on the node after that.
              type: int
            pods:
              description: Its pods on the node that were not evicted again (C(namespace/name)).
              type: list
              elements: str
        pdb_wait_seconds:
          description:
            - Wall time, in seconds (one decimal), during which at least one pod of the node was held back by a
              PodDisruptionBudget, either refused by the API server (HTTP 429) or held because its budget allowed
              no disruption. Pods blocked at the same time count once; a pod's wait ends when its eviction is
              accepted or fails. C(0.0) when no budget got in the way, and for O(state=cordon) and O(state=uncordon).
          type: float
        post_drain_waited_seconds:
          description: Seconds (one decimal) the node waited after it was empty, for its load balancers or the fixed wait.
          type: float
        load_balancers:
          description: The names of the target groups and Classic Load Balancers that held the node's instance during
            the wait after its drain (SPEC B3).
          type: list
          elements: str
        error:
          description: Why the node failed, or null.
          type: str
      sample:
        ip-10-0-1-23.us-west-2.compute.internal:
          cordoned: true
          changed: true
          evicted: [default/web-6d4b7-abcde]
          deleted: []
          workloads: [Deployment default/web]
          skipped: [{pod: kube-system/aws-node-x2k9l, reason: DaemonSet-managed pod (ignore_daemonsets)}]
          failed: []
          warnings: []
          pdb_wait_seconds: 12.4
          post_drain_waited_seconds: 21.5
          load_balancers: [k8s-default-web-3c1f0e2a9b]
          returning_workloads: []
          error: null
    instances:
      description: With O(instance_ids), the node of each instance, or null when the instance has no node.
      returned: when O(instance_ids) is given
      type: dict
      sample: {i-0123456789abcdef0: ip-10-0-1-23.us-west-2.compute.internal, i-0fedcba9876543210: null}
    requests_made:
      description: Number of Kubernetes API requests the module made (each LIST page and WATCH counts as one).
      returned: always
      type: int
      sample: 14
diff:
  description: Per node, C(spec.unschedulable), labels and the C(eksops.nodegroup/cordoned-by) and
    C(eksops.nodegroup/left-pods) annotations before and after.
  returned: in diff mode
  type: dict
failed_nodes:
  description: Nodes that could not be drained (only on failure).
  returned: failure
  type: list
  elements: str
code:
  description: C(PodEvictionFailure), C(ClusterAutoscalerActive), C(AccessDenied), C(ClusterUnreachable),
    C(ResourceNotFound) or C(InvalidParameter) on failure.
  returned: failure
  type: str
"""

from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.node_drain import ARGUMENT_SPEC, run
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule


def main() -> None:
    module = EksopsModule(
        ARGUMENT_SPEC,
        uses_aws=True,
        uses_k8s=True,
        supports_check_mode=True,
        mutually_exclusive=[("name", "names", "instance_ids")],
        required_one_of=[("name", "names", "instance_ids")],
        required_by=dict(nodegroup_name="cluster_name", asg_name="nodegroup_name", lease_id="nodegroup_name"),
    )
    module.run(lambda: run(module))


if __name__ == "__main__":
    main()
