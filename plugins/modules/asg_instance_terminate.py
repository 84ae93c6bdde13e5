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
  - "Refuses, before changing anything, an instance whose Kubernetes node (found by C(spec.providerID)) is not
    cordoned or still runs pods other than DaemonSet pods, mirror pods and finished (Succeeded/Failed) pods:
    the message names the instance, the node and the pods (C(code=PodEvictionFailure)). Drain the nodes first
    with M(eksops.nodegroup.node_drain). An instance without a node (it never joined, or its node is gone)
    may be terminated. In check mode the same problems are reported as warnings."
  - When decrementing during an upgrade (an upgrade journal exists on the group), records the new desired
    capacity in the journal, and lowers MinSize if the decrement needs it (restore puts it back).
  - During an upgrade, fails with C(ClusterAutoscalerActive) before any change when the group's desired capacity is
    not the one the upgrade last set (someone else scaled it; SPEC C3), and protects the replacements from
    scale-in when the upgrade protects the group (journal C(scale_in_protection=ours)).
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

import datetime
from collections.abc import Iterable
from typing import Any
import re
import time

from ansible_collections.eksops.nodegroup.plugins.module_utils.asg_ops import (
    asg_sizes,
    check_capacity_unmoved,
    SCALE_IN_PROTECTION_OURS,
    set_scale_in_protection,
    utc_now,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.group_watch import GroupSnapshot, GroupWatch
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup_nodes import list_nodegroup_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.termination import (
    describe_known_instances,
    terminate_or_gone,
    termination_hooks,
    TerminationWait,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws_api import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.cluster_proof import (
    NODE_READY_TIMEOUT_DEFAULT,
    nodeless_instances,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    CLUSTER_UNREACHABLE,
    NODE_CREATION_FAILURE,
    POD_EVICTION_FAILURE,
    UpgradeError,
    invalid_parameter,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.lease import LEASE_OPTION, claim
from ansible_collections.eksops.nodegroup.plugins.module_utils.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import (
    NODEGROUP_ARGUMENT_SPEC,
    NodegroupRef,
    describe_asg,
    find_module_nodegroup,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodes import (
    termination_check,
    termination_problems_message,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.planning import LEAVING_STATES, launch_failure_error, persistent_launch_failure

ARGUMENT_SPEC = dict(
    NODEGROUP_ARGUMENT_SPEC,
    instance_ids=dict(type="list", elements="str", required=True),
    should_decrement_desired_capacity=dict(type="bool", required=True),
    wait=dict(type="bool", default=True),
    wait_timeout=dict(type="int", default=600),
    wait_for_replacements=dict(type="bool", default=False),
    node_ready_timeout=dict(type="int", default=NODE_READY_TIMEOUT_DEFAULT),
    accept_current_capacity=dict(type="bool", default=False),
    **LEASE_OPTION
)

INSTANCE_ID = re.compile(r"^i-[0-9a-f]{8,17}$")


def validate_params(params: dict[str, Any]) -> None:
    ids = params["instance_ids"]
    if not ids:
        raise invalid_parameter("instance_ids", "instance_ids must name at least one instance")
    bad = [i for i in ids if not INSTANCE_ID.match(i)]
    if bad:
        raise invalid_parameter("instance_ids", "instance_ids: %s is not an EC2 instance id" % ", ".join(bad))
    if params["wait_timeout"] <= 0:
        raise invalid_parameter("wait_timeout", "wait_timeout must be > 0, got %d" % params["wait_timeout"])
    if params["node_ready_timeout"] < 0:
        raise invalid_parameter("node_ready_timeout", "node_ready_timeout must be >= 0, got %d"
                                % params["node_ready_timeout"])
    if params["wait_for_replacements"] and params["should_decrement_desired_capacity"]:
        raise invalid_parameter("wait_for_replacements", "wait_for_replacements needs "
                                "should_decrement_desired_capacity false: with a decrement nothing replaces them")


# EC2 states of an instance outside the group that is on its way out (it left the group once terminated).
GONE_STATES = ("shutting-down", "terminated")


def classify_instances(ec2: Any, asg: dict[str, Any], instance_ids: list[str]) -> tuple[list[str], list[str]]:
    """(to terminate, already leaving or terminated); refuses ids outside the group, naming them.

    An id outside the group that EC2 does not know (InvalidInstanceID.NotFound) is refused too: it never existed
    or was terminated so long ago that EC2 forgot it, and this module cannot tell which; the message says so.
    """
    members = dict((i["InstanceId"], i) for i in asg.get("Instances", []))
    outside = sorted(set(i for i in instance_ids if i not in members))
    gone = []
    if outside:
        described, unknown = describe_known_instances(ec2, outside)
        gone = [i for i in outside if (described.get(i) or {}).get("State", {}).get("Name") in GONE_STATES]
        strangers = [i for i in outside if i not in gone]
        if strangers:
            msg = "instance_ids: %s %s not in Auto Scaling group %s" % (
                ", ".join(strangers), "is" if len(strangers) == 1 else "are", asg["AutoScalingGroupName"])
            if unknown:
                msg += " (EC2 does not know %s: never launched, or terminated long enough ago to be forgotten)" \
                    % ", ".join(unknown)
            raise invalid_parameter("instance_ids", msg, instance_ids=strangers)
    to_terminate, leaving = [], list(gone)
    for instance_id in dict.fromkeys(instance_ids):
        if instance_id in members:
            if members[instance_id].get("LifecycleState") in LEAVING_STATES:
                leaving.append(instance_id)
            else:
                to_terminate.append(instance_id)
    return to_terminate, leaving


class ReplacementsReady:
    """The group is back at its desired capacity and every instance launched since is a Ready node."""

    def __init__(self, initial_ids: Iterable[str], terminated_ids: Iterable[str]) -> None:
        self.initial_ids = set(initial_ids)
        self.terminated_ids = set(terminated_ids)

    def replacements(self, snapshot: GroupSnapshot) -> list[dict[str, Any]]:
        return [i for i in snapshot.instances if i["instance_id"] not in self.initial_ids
                and i["lifecycle_state"] not in LEAVING_STATES]

    def problems(self, snapshot: GroupSnapshot) -> list[str]:
        serving = [i for i in snapshot.instances if i["instance_id"] not in self.terminated_ids
                   and i["lifecycle_state"] not in LEAVING_STATES]
        problems = ["%s (%s): node is not Ready" % (i["instance_id"], i["availability_zone"])
                    for i in self.replacements(snapshot) if not (i["node_name"] and i["ready"])]
        missing = snapshot.asg["DesiredCapacity"] - len(serving)
        if missing > 0:
            problems.append("%d replacement instance(s) not launched yet" % missing)
        return problems

    def __call__(self, snapshot: GroupSnapshot) -> bool:
        return persistent_launch_failure(snapshot.failures) is not None or not self.problems(snapshot)


def check_drained(module: EksopsModule, group: NodegroupRef, instance_ids: list[str]) -> list[dict[str, Any]]:
    """U5: refuse to terminate instances whose node is not cordoned or still runs pods (warn in check mode).
    Returns why each instance without a node has none: the cluster is proven (K4), so it never joined."""
    check = termination_check(module.core_v1(), instance_ids, group.node_selector)
    if check["problems"]:
        message = termination_problems_message(check["problems"])
        if not module.check_mode:
            raise UpgradeError(POD_EVICTION_FAILURE, message, undrained=check["problems"])
        module.warn(message)
    if not check["nodeless"]:
        return []
    if not list_nodegroup_nodes(module.core_v1(), group):
        # Not one instance of the group has a node here: this is not the group's cluster, whatever proved it.
        raise UpgradeError(
            CLUSTER_UNREACHABLE, "None of the instances of Auto Scaling group %s has a node in the Kubernetes API "
            "in use (by spec.providerID): refusing to terminate %s as instances that never joined; check that the "
            "API is cluster %s's. This module changed nothing."
            % (group.asg_name, ", ".join(check["nodeless"]), group.cluster_name),
            asg_name=group.asg_name, instance_ids=check["nodeless"])
    described, not_visible = describe_known_instances(module.aws("ec2"), check["nodeless"])
    nodeless = nodeless_instances(check["nodeless"], described, utc_now(), module.params["node_ready_timeout"])
    for instance in nodeless:
        if instance["instance_id"] in not_visible:
            # A member of the group that DescribeInstances does not know yet: launched a moment ago (EC2's
            # eventual consistency, issue 10 item 11).
            instance["reason"] = "was launched a moment ago: EC2 does not describe it yet, and it has no node"
        module.warn("instance %s %s; it is terminated without a drain" % (instance["instance_id"], instance["reason"]))
    return nodeless


def wait_for_replacements(module: EksopsModule, group: NodegroupRef, initial_ids: list[str], terminated_ids: list[str],
                          started: datetime.datetime, timeout: float) -> list[dict[str, Any]]:
    name = group.asg_name
    condition = ReplacementsReady(initial_ids, terminated_ids)
    watch = GroupWatch(module.aws("autoscaling"), module.aws("ec2"), module.core_v1(), group,
                       activities_since=started)
    held, snapshot = watch.wait(condition, timeout)
    failure = persistent_launch_failure(snapshot.failures)
    if failure is not None:
        raise launch_failure_error(failure, name, what="a replacement")
    replacements = [dict(instance_id=i["instance_id"], availability_zone=i["availability_zone"],
                         node_name=i["node_name"], ready=i["ready"]) for i in condition.replacements(snapshot)]
    if not held:
        raise UpgradeError(NODE_CREATION_FAILURE, "Replacements in Auto Scaling group %s were not ready within %d s "
                           "(wait_timeout): %s" % (name, timeout, "; ".join(condition.problems(snapshot))),
                           asg_name=name, replacements=replacements)
    return replacements


def sizes_after(before: dict[str, int], decrements: int, journal: Journal | None, name: str) -> dict[str, int]:
    """The sizes once ``decrements`` terminations have each lowered the desired capacity: MinSize goes down with
    it during an upgrade (the journal restores it at the scale-down), and is never lowered outside one."""
    after = dict(before)
    if decrements:
        after["desired_capacity"] = before["desired_capacity"] - decrements
        if after["desired_capacity"] < before["min_size"]:
            if journal is None:
                raise invalid_parameter(
                    "should_decrement_desired_capacity",
                    "should_decrement_desired_capacity: decrementing for %d instance(s) takes DesiredCapacity of %s "
                    "to %d, below MinSize %d; outside an upgrade (no journal to restore MinSize from) this module "
                    "does not lower MinSize" % (decrements, name, after["desired_capacity"], before["min_size"]))
            after["min_size"] = after["desired_capacity"]
    return after


def terminate(module: EksopsModule, group: NodegroupRef, journal: Journal | None, to_terminate: list[str],
              leaving: list[str], before: dict[str, int], after: dict[str, int],
              result: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Terminate through the group, then record the desired capacity in the journal. Returns (terminated,
    leaving): an instance someone else terminated meanwhile is leaving, not terminated by this run."""
    autoscaling, ec2, name = module.aws("autoscaling"), module.aws("ec2"), group.asg_name
    decrement = module.params["should_decrement_desired_capacity"]
    if journal is not None and journal.scale_in_protection == SCALE_IN_PROTECTION_OURS:
        # The replacements the group launched for the previous batches hold the pods moved there: protected
        # from scale-in like every node of the upgrade (issue 10 item 22).
        set_scale_in_protection(autoscaling, group.asg, True)
    if after["min_size"] != before["min_size"]:
        autoscaling_api.update_sizes(autoscaling, name, min_size=after["min_size"])
    raced = [i for i in to_terminate if not terminate_or_gone(autoscaling, ec2, name, i, decrement)]
    if raced:
        # Terminated by someone else since the group was described (issue 10 item 11): not this run's change,
        # nor its decrement.
        to_terminate = [i for i in to_terminate if i not in raced]
        leaving = leaving + raced
        result.update(terminated=to_terminate, already_terminated=sorted(leaving))
        if decrement:
            after["desired_capacity"] = before["desired_capacity"] - len(to_terminate)
    # Journal after the change: a crash in between leaves the group below desired_capacity_set, which is
    # never mistaken for the autoscaler scaling up (SPEC C3).
    if decrement and to_terminate and journal is not None:
        write_journal(autoscaling, name, journal.replace(desired_capacity_set=after["desired_capacity"]))
    return to_terminate, leaving


def wait_until_gone(module: EksopsModule, group: NodegroupRef, journal: Journal | None, hooks: list[dict[str, Any]],
                    instance_ids: list[str], started: datetime.datetime, started_clock: float,
                    result: dict[str, Any]) -> None:
    """With ``wait``, until the instances are terminated (through the lifecycle hooks that hold them); with
    ``wait_for_replacements``, until their replacements are Ready nodes (U3), within one wait_timeout (which a
    hook's hold extends)."""
    params = module.params
    autoscaling, ec2, name = module.aws("autoscaling"), module.aws("ec2"), group.asg_name
    extension = 0.0
    if params["wait"]:
        waiter = TerminationWait(ec2, autoscaling, name, hooks)
        pending = waiter.run(instance_ids, params["wait_timeout"])
        result["lifecycle_hook_waits"] = waiter.hook_waits()
        if pending:
            raise waiter.timeout_error(pending, name)
        extension = waiter.extension
    if params["wait_for_replacements"]:
        remaining = max(1.0, params["wait_timeout"] + extension - (time.time() - started_clock))
        result["replacements"] = wait_for_replacements(
            module, group, [i["InstanceId"] for i in group.asg.get("Instances", [])], instance_ids, started, remaining)
        if journal is not None and journal.scale_in_protection == SCALE_IN_PROTECTION_OURS:
            # The replacements hold no pods yet but will: protected like every node of the upgrade (item 22).
            set_scale_in_protection(autoscaling, describe_asg(autoscaling, name), True)


def run(module: EksopsModule) -> dict[str, Any]:
    started_clock = time.time()
    started = utc_now()
    params = module.params
    validate_params(params)
    decrement = params["should_decrement_desired_capacity"]
    autoscaling = module.aws("autoscaling")
    ec2 = module.aws("ec2")
    group = find_module_nodegroup(module, refuse_managed="terminate instances through its Auto Scaling group")
    asg, name, journal = group.asg, group.asg_name, group.journal()
    to_terminate, leaving = classify_instances(ec2, asg, params["instance_ids"])

    before = asg_sizes(asg)
    # SPEC C3, issue 10 items 22 and 24: someone else set the desired capacity during the upgrade; stop at this
    # batch, before any change, not at the scale-down after every old node was replaced (or accept it, item 23).
    journal = check_capacity_unmoved(module, autoscaling, asg, journal)
    after = sizes_after(before, len(to_terminate) if decrement else 0, journal, name)
    result = dict(asg_name=name, terminated=to_terminate, already_terminated=sorted(leaving), before=before,
                  after=after, replacements=[])
    diff = dict(before=dict(before, instance_ids=sorted(i["InstanceId"] for i in asg.get("Instances", []))),
                after=dict(after, instance_ids=sorted(i["InstanceId"] for i in asg.get("Instances", [])
                                                      if i["InstanceId"] not in to_terminate)))
    result["never_joined"] = check_drained(module, group, to_terminate)
    # Read once, before anything changes (an AccessDenied here changes nothing): the hooks that may hold the
    # instances in Terminating:Wait (issue 10 item 14).
    hooks = termination_hooks(autoscaling, name) if params["wait"] and (to_terminate or leaving) else []
    result["lifecycle_hooks"] = hooks
    result["lifecycle_hook_waits"] = []
    if to_terminate or journal is not None:
        claim(module, autoscaling, asg)
    if not module.check_mode:
        to_terminate, leaving = terminate(module, group, journal, to_terminate, leaving, before, after, result)
        wait_until_gone(module, group, journal, hooks, to_terminate + leaving, started, started_clock, result)
    result["elapsed_seconds"] = round(time.time() - started_clock, 1)
    return module.with_diff(dict(changed=bool(to_terminate), termination=result), **diff)


def main() -> None:
    module = EksopsModule(ARGUMENT_SPEC, uses_aws=True, uses_k8s=True, supports_check_mode=True)
    module.run(lambda: run(module))


if __name__ == "__main__":
    main()
