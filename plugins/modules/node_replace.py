#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: node_replace
short_description: Replace a node group's old nodes batch by batch (drain, terminate, wait) in one process
version_added: 0.1.0
description:
  - The upgrade phase (SPEC U4, U5, U7) as one task. For each batch of O(batches), in order, it drains the
    nodes of the batch's instances as M(eksops.nodegroup.node_drain) does with O(eksops.nodegroup.node_drain#module:state=drain)
    (cordon and load balancer label, PodDisruptionBudget-paced evictions, the wait after the drain for the
    cluster's load balancers, SPEC B3), then terminates the instances through the Auto Scaling group without
    lowering its desired capacity as M(eksops.nodegroup.asg_instance_terminate) does, and waits for them to be
    terminated (with O(wait_for_replacements), for their replacements to be Ready nodes). With O(schedule=once)
    the batches are planned from the live group and some terminations lower the desired capacity (SPEC B1).
  - The surge strategy's phase (SPEC S3, S4) with O(steps) instead of O(batches). Each step first raises the desired
    capacity to the step's and waits for the new nodes as M(eksops.nodegroup.asg_surge) does with
    O(eksops.nodegroup.asg_surge#module:mode=desired), then drains the step's old nodes and terminates their instances,
    each termination lowering the desired capacity. The progress lines say C(step) for C(batch).
  - A surge step's old nodes are chosen once its new nodes are Ready, from where Auto Scaling placed them, so that
    the group ends with the Availability Zone counts it began with (issue 26 item 2). Auto Scaling puts each launch in
    the zone with the fewest instances, so the old nodes a plan fixed before the launch could leave a 2-2-2 group
    3-2-1. The step replaces as many old nodes as its O(steps[].instance_ids) name, taken among the old instances of
    O(steps) that no step has replaced yet. In check mode, where nothing is launched, they are the step's own.
  - "It is an action plugin that runs on the controller, in the process of the task, whatever the task's host or
    C(delegate_to): one process for the whole phase instead of two module processes per batch, and the work is
    the two modules' own code. The controller's Python needs boto3, botocore and kubernetes."
  - Progress is shown as it happens, one line per batch start and end (node names, instance ids, UTC times) and
    one when a batch's instances are gone, through Ansible's display (C(ansible-playbook) output, AWX job output).
  - Once Auto Scaling has accepted the termination of a batch's instances, the next batch is drained while the
    instances shut down; the wait for them is joined before the next batch's instances are terminated and before
    the task ends, and its failure fails the task. With O(wait_for_replacements) (strategy C(minimal), SPEC U7)
    the replacements gate the next batch.
  - Errors are those of the two modules, with the same C(code) and details; the result then carries what was done
    before (RV(replace)) and the failing step's own result (RV(drain) or RV(termination)), as the module's would. The journal and lease
    behave as with the two modules, so a rerun resumes.
  - During an upgrade, before it cordons the old nodes and again before each batch, fails with
    C(LaunchTemplateVersionChanged) when the group no longer launches from the launch template version the journal
    targets (someone set it back during the upgrade), naming both versions and what to do.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  batches:
    description:
      - The instance ids of each batch, in the order they are replaced (the plan of
        M(eksops.nodegroup.nodegroup_info), RV(eksops.nodegroup.nodegroup_info#module:nodegroup.plan.batches)).
      - The nodes are found by instance id (C(spec.providerID)) when a batch starts.
      - When not given, the phase is planned here as M(eksops.nodegroup.nodegroup_info) plans it, from
        O(update_strategy), O(max_unavailable) or O(max_unavailable_percentage), O(seed) and O(schedule), in the
        same process (the plan line is printed, the plan returned in RV(replace.plan)); then O(batch_size), O(seed),
        O(node_names) and O(run_id) default to the plan's and the journal's, and after the last batch the group's
        old instances left are returned in RV(replace.old_instances_left). An EKS managed node group is refused (SPEC K3).
    type: list
    elements: list
  update_strategy:
    description:
      - For the plan when O(batches) is not given (M(eksops.nodegroup.nodegroup_info)'s
        O(eksops.nodegroup.nodegroup_info#module:update_strategy)).
    type: str
    choices: [default, minimal]
    default: default
  max_unavailable:
    description:
      - For the plan when O(batches) is not given, nodes per batch (1 to 100; default 1). Mutually exclusive with
        O(max_unavailable_percentage).
    type: int
  max_unavailable_percentage:
    description:
      - For the plan when O(batches) is not given, nodes per batch as a percentage (1 to 100) of the group's desired
        capacity before the upgrade, rounded up, at least one.
    type: int
  max_surge:
    description:
      - When neither O(batches) nor O(steps) is given, plan and run the surge strategy's steps here, as
        M(eksops.nodegroup.nodegroup_info) plans them with
        O(eksops.nodegroup.nodegroup_info#module:max_surge), O(max_unavailable) (0 allowed) and O(surge_cap) (SPEC
        S1-S4). The plan line is printed, the plan returned in RV(replace.plan), and the old instances left after the
        last step in RV(replace.old_instances_left), as for batches. Mutually exclusive with O(batches) and O(steps);
        needs the schedule C(eks).
    type: int
  surge_cap:
    description:
      - Upper bound of O(max_surge) + O(max_unavailable) (at most 100), as
        M(eksops.nodegroup.nodegroup_info)'s O(eksops.nodegroup.nodegroup_info#module:surge_cap).
    type: int
    default: 20
  cordon_old_nodes:
    description:
      - Before the first batch, cordon the nodes of every instance of the plan and label them
        C(node.kubernetes.io/exclude-from-external-load-balancers=true) (SPEC U4), as
        M(eksops.nodegroup.node_drain) does with O(eksops.nodegroup.node_drain#module:state=cordon).
      - Not for the minimal strategy (SPEC U7), which adds no capacity first.
      - A stop at the safe point before a later batch (C(UpgradePaused), C(MaintenanceWindowClosed),
        C(AlarmTriggered)) uncordons the nodes cordoned by the run and not drained (the cordoned-by mark of its
        O(run_id)) until a rerun cordons them again, and names them in the failure's C(uncordoned_nodes); the
        nodes of instances leaving the group, those held in quarantine and the surplus nodes of O(schedule=once)
        stay cordoned.
    type: bool
    default: false
  steps:
    description:
      - The surge strategy's steps, in order, as M(eksops.nodegroup.nodegroup_info) plans them with
        O(eksops.nodegroup.nodegroup_info#module:max_surge)
        (RV(eksops.nodegroup.nodegroup_info#module:nodegroup.plan.steps)). Mutually exclusive with O(batches) and
        O(max_surge), which plans them here.
      - Needs the schedule C(eks), and is refused with O(cordon_old_nodes) and O(wait_for_replacements). A step that
        launches no node does not wait for one, and a step with no old instance only launches.
    type: list
    elements: dict
    suboptions:
      desired_capacity:
        description: The desired capacity the step raises the group to before it drains.
        type: int
        required: true
      launch:
        description: New nodes the raise launches; the step waits for them to be Ready when it launches any.
        type: int
        required: true
      instance_ids:
        description:
          - The plan's old instances for the step; the step replaces as many, chosen among those of O(steps) not yet
            replaced once its launch is placed (in check mode these), each termination lowering the desired capacity.
        type: list
        elements: str
        required: true
      step:
        description: The step's number in the plan (not used).
        type: int
      replace:
        description: The plan's count of O(steps[].instance_ids) (not used).
        type: int
      desired_after_launch:
        description: The plan's size after the launch, on a group of old nodes only (not used).
        type: int
      desired_after_terminate:
        description: The plan's size after the terminations, on a group of old nodes only (not used).
        type: int
  suspend_processes:
    description:
      - With O(steps), the Auto Scaling processes the launches suspend, as M(eksops.nodegroup.asg_surge)'s
        O(eksops.nodegroup.asg_surge#module:suspend_processes).
    type: list
    elements: str
    default: [AZRebalance, AlarmNotification, ScheduledActions, ReplaceUnhealthy, InstanceRefresh]
  node_names:
    description:
      - Instance id to node name as planned, for the batch start lines only.
    type: dict
    default: {}
  wait_timeout:
    description:
      - Seconds to wait for a batch's instances to be terminated and, with O(wait_for_replacements), for their
        replacements (M(eksops.nodegroup.asg_instance_terminate)'s O(eksops.nodegroup.asg_instance_terminate#module:wait_timeout)).
    type: int
    default: 600
  wait_for_replacements:
    description:
      - After each batch, wait until the group is back at its desired capacity and the replacements' nodes are
        Ready before the next batch (strategy C(minimal), SPEC U7).
    type: bool
    default: false
  node_ready_timeout:
    description:
      - Seconds an instance may take to register its node (M(eksops.nodegroup.asg_instance_terminate)'s
        O(eksops.nodegroup.asg_instance_terminate#module:node_ready_timeout)).
    type: int
    default: 900
  run_id:
    description:
      - Identifier written to the C(eksops.nodegroup/cordoned-by) annotation of nodes this run cordons or labels.
        Generated when not given.
    type: str
  schedule:
    description:
      - C(eks) replaces the batches of O(batches) in order, every termination replaced by Auto Scaling (EKS's
        schedule; the module's default, for parity when it runs on its own).
      - C(once) (SPEC B1, each pod moves once) plans each batch from the live group instead - the old instances
        left, the new ones the group keeps and the surplus ones M(eksops.nodegroup.asg_surge) marked - and some
        terminations lower the desired capacity instead of waiting for a replacement, so the group ends with the
        instances per Availability Zone it had before the scale-up (the journal's C(start_per_az)) plus the
        surplus, which M(eksops.nodegroup.nodegroup_scale_restore) removes empty. Within a batch the decrementing
        terminations go first.
      - C(once) falls back to C(eks), with a warning, when the journal records no C(start_per_az) (the scale-up
        ran with schedule C(eks), or an older version of this collection started the upgrade), and for the
        remaining batches once the desired capacity was accepted as moved (O(accept_current_capacity)).
      - C(once) is refused with O(wait_for_replacements). In check mode the plan's batches are walked as with C(eks).
    type: str
    choices: [once, eks]
    default: eks
  batch_size:
    description:
      - Old instances per batch for the schedule C(once) (the plan's
        RV(eksops.nodegroup.nodegroup_info#module:nodegroup.plan.batch_size)). Defaults to the size of the largest
        batch of O(batches).
    type: int
  seed:
    description:
      - Seed of the random choice of the old instances of each batch under the schedule C(once) (the plan's
        RV(eksops.nodegroup.nodegroup_info#module:nodegroup.plan.seed)); drawn when not given.
    type: int
  undrainable_nodes:
    description:
      - What a node whose drain ran out of O(delete_options.wait_timeout) with pods still held (C(PodEvictionFailure)
        after evictions were tried - a PodDisruptionBudget that allows none, a pod that does not go) does to the run
        (issue 27 item 5). C(fail) stops the run there, the node cordoned.
      - C(quarantine) leaves such a node cordoned (uncordoned with O(wait_for_replacements) and no
        O(cordon_old_nodes) - the strategy C(minimal), SPEC U7, which adds no capacity first and launches no node
        for it) and labels it C(eksops.nodegroup/quarantined=true), the pods and
        PodDisruptionBudgets that held it in its annotation C(eksops.nodegroup/quarantine-reason); its instance is
        not terminated and stays in the group (a surge step keeps the node it launched for it, and the later steps
        count it). The run goes on with the batch's other nodes and the later batches, then drains each
        quarantined node once more, and fails with C(NodesQuarantined) naming every node, pod and budget that
        still held. A rerun finds the labelled nodes and retries them last.
      - A node whose pods were refused before any eviction (a bare pod, a C(karpenter.sh/do-not-disrupt) annotation;
        only O(delete_options.force) moves them) or that a load balancer kept fails the run either way. Nothing is
        forced unless O(delete_options.force). In check mode, where no drain fails, the nodes an earlier run
        quarantined are left out of the batches and retried last, as the run does.
    type: str
    choices: [fail, quarantine]
    default: fail
  max_quarantined_nodes:
    description:
      - With O(undrainable_nodes=quarantine), how many nodes may be held at once, those an earlier run quarantined
        included (at least 1). The node that makes one more stops the run with C(NodesQuarantined) once the other
        nodes of its batch are replaced, before the next batch; it stays cordoned and labelled like the others.
    type: int
    default: 1
  batch_soak_seconds:
    description:
      - Seconds to wait after each batch (or step) once it ended and its instances are gone (the termination wait is
        joined first), followed by the health gate. C(0) (the default) soaks and gates no batch but the canary's.
      - The health gate goes on only once every workload whose pods the batch's drain evicted or deleted is healthy
        again (RV(eksops.nodegroup.node_drain#module:drain.nodes.workloads)), as C(kubectl rollout status) reads
        it - a Deployment observed, updated and back to its C(spec.replicas) available, a StatefulSet back to its
        ready replicas and revision, any other controller with no pod Pending - and none of their pods is Pending.
        The last batch is gated too.
    type: int
    default: 0
  health_gate_timeout:
    description:
      - Seconds the health gate waits, after the soak, for the workloads to be healthy. Then the task fails with
        C(HealthGateFailed) naming each workload and why (its available or ready replicas, its Pending pods and
        the scheduler's reason); no further batch starts, and a rerun goes on with the old nodes left. The journal
        records those workloads, and a rerun judges them again, up to this timeout, before anything else (before
        the safe point of its first batch and the cordon of O(cordon_old_nodes)); it stops with C(HealthGateFailed)
        again, cordoning and draining nothing, while they are not healthy. Once they are, the record is removed
        (changed). A record that names none of them (each name longer than a tag value) is removed with a warning.
    type: int
    default: 600
  canary:
    description:
      - Replace one old node per Availability Zone first (the plan's first in each zone, in batches of at most the
        plan's batch size), then soak O(canary_soak_seconds) and pass the health gate before any other batch. The
        other batches follow as planned. Under the schedule C(once) the canary's terminations are each replaced
        (the schedule C(eks)), and the batches after them are planned from the group as the canary left it.
      - With the surge strategy the canary is the first step (O(max_surge) new nodes and as many old ones, chosen
        where the launch landed), not one node per zone.
      - Needs the phase planned here (neither O(batches) nor O(steps)).
    type: bool
    default: false
  canary_soak_seconds:
    description:
      - Seconds to soak after the canary's last batch, before its health gate (which runs even with C(0)).
    type: int
    default: 0
  batch_order:
    description:
      - C(random) (the default) replaces the old nodes in the plan's random order (SPEC U5), a batch taking nodes of
        any zone.
      - C(zone) (issue 27 item 7) replaces them one Availability Zone after the other (zones in name order, each
        zone's nodes in the plan's order, after the canary when O(canary)), in batches that never mix zones, and
        gates the last batch of each zone (a soak of O(batch_soak_seconds), then the health gate, even with C(0)),
        so that a bad AMI hurts one zone before the run stops.
      - C(zone) needs the phase planned here (neither O(batches) nor O(steps)) with the schedule C(eks) (every
        termination replaced), and is refused with the surge strategy (O(max_surge)), whose steps take their old
        nodes where Auto Scaling placed their launch so that the group ends with its zone counts.
    type: str
    choices: [random, zone]
    default: random
notes:
  - Needs what M(eksops.nodegroup.node_drain) and M(eksops.nodegroup.asg_instance_terminate) need (see
    C(docs/iam-policy.json) and C(docs/rbac.yaml)), with the credentials of the controller.
extends_documentation_fragment:
  - eksops.nodegroup.drain_options
  - eksops.nodegroup.nodegroup
  - eksops.nodegroup.lease
  - eksops.nodegroup.safe_points
  - eksops.nodegroup.capacity_change
  - eksops.nodegroup.aws
  - eksops.nodegroup.k8s
  - eksops.nodegroup.attributes.aws_k8s_groups
attributes:
  action:
    support: full
    description: The loop runs in an action plugin on the controller.
  async:
    support: none
    description: Runs in the task's own process on the controller; its progress lines show as it happens instead.
  check_mode:
    support: full
    description: Every batch is planned as the two modules plan it in check mode (cordons and terminations
      reported, nothing changed).
  diff_mode:
    support: none
    description: No diff; each batch's changes are in RV(replace) and the progress lines.
"""

EXAMPLES = r"""
- name: Replace the old nodes batch by batch
  eksops.nodegroup.node_replace:
    cluster_name: prod
    nodegroup_name: workers
    batches: "{{ info.nodegroup.plan.batches }}"
    delete_options:
      wait_timeout: 900
    post_drain_wait: 60
"""

RETURN = r"""
replace:
  description: What the loop did (on failure, until the failure).
  returned: always
  type: dict
  contains:
    drained_nodes:
      description: The drain result of every node of the finished batches, by node (M(eksops.nodegroup.node_drain)'s
        RV(eksops.nodegroup.node_drain#module:drain.nodes)).
      type: dict
    replaced_instances:
      description: The instances whose termination Auto Scaling accepted, batch after batch.
      type: list
      elements: str
    never_joined:
      description: Instances terminated without a drain because they never had a node
        (M(eksops.nodegroup.asg_instance_terminate)'s RV(eksops.nodegroup.asg_instance_terminate#module:termination.never_joined)).
      type: list
      elements: dict
    retained_instances:
      description:
        - Instances that Auto Scaling retained (C(Terminating:Retained)) instead of terminating them, because their
          termination lifecycle action was abandoned and the group's instance lifecycle policy retains such instances
          (M(eksops.nodegroup.asg_instance_terminate)'s
          RV(eksops.nodegroup.asg_instance_terminate#module:termination.retained_instances)). Each also has a warning;
          they keep running until terminated by hand.
      type: list
      elements: str
    batches:
      description: One record per batch started, with C(batch) (1-based), C(instance_ids), C(nodes),
        C(decrement_ids) (the instances whose termination lowered the desired capacity), C(at_risk) (the planner
        could not rule out a replacement landing in another Availability Zone than the one that needs it), and
        the epoch times C(started), C(drained) (the drain ended), C(accepted) (Auto Scaling accepted the
        termination), C(gone) (instances terminated) and C(ended) (the batch's end), C(new_nodes_ready) for a surge
        step that launched nodes, and where the instances ran - C(availability_zones) (by instance) and
        C(group_per_az) (the group's instances per AZ, terminating ones aside, when their termination was asked);
        C(retry) (it drains quarantined nodes once more) and C(quarantined) (the nodes it held in quarantine instead
        of terminating them; their instances left C(instance_ids)).
        C(group_per_az) (the group's instances per AZ, terminating ones aside, when their termination was asked).
        A soaked and gated batch (O(batch_soak_seconds), O(canary)) also has C(canary), C(soak_seconds),
        C(workloads) (those the gate judged), and the epoch times C(soak_started), C(soak_ended) and
        C(gate_passed) or C(gate_failed).
      type: list
      elements: dict
    schedule:
      description: The schedule run (O(schedule), or C(eks) when C(once) fell back to it).
      type: str
    cordoned:
      description: With O(cordon_old_nodes), when every old node was cordoned before the first batch (C(at), epoch
        time) and which (C(nodes)); else null.
      type: dict
    quarantined:
      description:
        - With O(undrainable_nodes=quarantine), the nodes held in quarantine at the end, in the order held, each
          with C(node), C(instance_id), C(batch) (the batch that held it; null for one an earlier run quarantined),
          C(retried) (its one more drain failed too), C(evicted) (the pods its drains evicted before they timed
          out), C(pods) (C(pod), C(reason), C(pdb) of each pod that held it) and C(pod_disruption_budgets). A node
          whose retry drained it is in RV(replace.drained_nodes), its record with every pod the run evicted from it.
      type: list
      elements: dict
    at_risk_batches:
      description: The batches (1-based) flagged C(at_risk).
      type: list
      elements: int
    decrements:
      description: Terminations that lowered the desired capacity instead of being replaced.
      type: int
    plan:
      description: The plan, when O(batches) was not given (M(eksops.nodegroup.nodegroup_info)'s
        RV(eksops.nodegroup.nodegroup_info#module:nodegroup.plan)); with O(canary) or O(batch_order=zone) its batches
        in that order, with C(canary_batches) (how many of the first batches are the canary's) and C(zone_ends) (the
        number of each zone's last batch).
      returned: when planned here
      type: dict
      sample: {strategy: rolling, node_count: 6, old_count: 6, batch_size: 1, seed: 42, batches: [[i-0abc], [i-0def]]}
    asg_name:
      description: The node group's Auto Scaling group, when O(batches) was not given.
      returned: when planned here
      type: str
      sample: eks-workers-asg
    old_instances_left:
      description:
        - The group's instances that still run an old launch template version after the last batch (they joined the group
          during the upgrade; a rerun replaces them), when O(batches) was not given and not in check mode.
      returned: when planned here, on success
      type: list
      elements: str
      sample: []
  sample:
    drained_nodes: {}
    replaced_instances: [i-0123456789abcdef0]
    never_joined: []
    retained_instances: []
    batches: [{batch: 1, instance_ids: [i-0123456789abcdef0], nodes: [ip-10-0-1-23.ec2.internal], started: 1764028800.1,
               drained: 1764028821.9, accepted: 1764028822.4, ended: 1764028822.5, gone: 1764028840.0,
               decrement_ids: [], at_risk: false, availability_zones: {i-0123456789abcdef0: us-west-2a},
               group_per_az: {us-west-2a: 4, us-west-2b: 4}}]
    schedule: once
    at_risk_batches: []
    decrements: 0
drain:
  description: On failure in a drain, the drain step's result as M(eksops.nodegroup.node_drain) returns it
    (RV(eksops.nodegroup.node_drain#module:drain)), with the failed node.
  returned: failure
  type: dict
termination:
  description: On failure in a termination, the step's result as M(eksops.nodegroup.asg_instance_terminate)
    returns it (RV(eksops.nodegroup.asg_instance_terminate#module:termination)), when it had one.
  returned: failure
  type: dict
code:
  description: The failing step's code, as M(eksops.nodegroup.node_drain) or M(eksops.nodegroup.asg_instance_terminate)
    return it (C(PodEvictionFailure), C(LoadBalancerDeregistrationTimeout), C(ClusterAutoscalerActive),
    C(UpgradeInProgress), C(NodeCreationFailure), ...), or C(NodesQuarantined) with O(undrainable_nodes=quarantine)
    (the result then has C(failed_nodes), C(quarantined) as RV(replace.quarantined), C(pod_disruption_budgets) and
    C(max_quarantined_nodes_exceeded)).
  returned: failure
  type: str
"""
