# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Auto Scaling group actions shared by asg_surge, asg_instance_terminate and nodegroup_scale_restore.

Sizes, process suspension, termination through the ASG, the C2 node annotation, and ``GroupWatch``: one
LIST+WATCH of the node group's nodes while the ASG (instances, scaling activities) is polled in a background
thread, so a condition over instances joined with nodes is re-checked on every node event and every poll.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re
import threading
import time

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws_api import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import AUTOSCALER_ACTIVE, NOT_FOUND, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.journal import PHASES, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.lease import claim
from ansible_collections.eksops.nodegroup.plugins.module_utils.k8s import translate_k8s_errors
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube_watch import (
    Waker,
    list_all,
    list_then_watch,
    read_body,
    retry_api_call,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.instances import describe_instances, find_instance_nodes, join_instances_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.launch_templates import target_lt_version
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import asg_launch_template, describe_asg
from ansible_collections.eksops.nodegroup.plugins.module_utils.planning import (
    LEAVING_STATES,
    autoscaler_changed,
    launch_failure,
)

# SPEC A1: the processes that would replace or rebalance nodes behind our back.
DEFAULT_SUSPENDED_PROCESSES = ["AZRebalance", "AlarmNotification", "ScheduledActions", "ReplaceUnhealthy"]
# SPEC C2: the cluster autoscaler reads this node annotation and never scales such a node down.
SCALE_DOWN_DISABLED_ANNOTATION = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
# Which nodes got SCALE_DOWN_DISABLED_ANNOTATION from us (value: the journal's run_id), so restore removes
# only ours and leaves an annotation a person set.
SCALE_DOWN_DISABLED_BY_ANNOTATION = "eksops.nodegroup/scale-down-disabled-by"
# Describe calls while waiting: no more often than this (scaling activities are throttled per account).
ASG_POLL_SECONDS = 5.0
# Waiting for a termination: first look after EC2_FIRST_POLL_SECONDS (a quick shutdown is seen quickly), then
# back off (x2) to one DescribeInstances every EC2_POLL_SECONDS.
EC2_FIRST_POLL_SECONDS = 0.5
EC2_POLL_SECONDS = 2.0
MERGE_PATCH = "application/merge-patch+json"
# Not an EKS code: an AWS-side wait (termination) ran out of time.
WAIT_TIMEOUT = "WaitTimeout"
# Lifecycle hooks ("Amazon EC2 Auto Scaling lifecycle hooks", Auto Scaling user guide): a hook on this transition
# holds an instance that the group terminates in TERMINATING_WAIT until whoever owns the hook completes the
# lifecycle action (CompleteLifecycleAction) or the hook's HeartbeatTimeout passes without a heartbeat; the EC2
# instance keeps running meanwhile.
TERMINATING_TRANSITION = "autoscaling:EC2_INSTANCE_TERMINATING"
TERMINATING_WAIT = "Terminating:Wait"
# PutLifecycleHook's defaults, for a description that leaves them out.
HOOK_HEARTBEAT_DEFAULT = 3600
HOOK_DEFAULT_RESULT = "ABANDON"
# EC2's InvalidInstanceID.NotFound message names the ids it does not know ("The instance IDs 'i-1, i-2' do not
# exist").
_INSTANCE_ID = re.compile(r"\bi-[0-9a-f]{8,17}\b")


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def asg_sizes(asg):
    return dict(min_size=asg["MinSize"], max_size=asg["MaxSize"], desired_capacity=asg["DesiredCapacity"])


def suspended_process_names(asg):
    return [process["ProcessName"] for process in asg.get("SuspendedProcesses", [])]


# SetInstanceProtection takes up to 50 instance ids (Amazon EC2 Auto Scaling API Reference).
PROTECTION_CHUNK = 50
SCALE_IN_PROTECTION_OURS, SCALE_IN_PROTECTION_THEIRS = "ours", "theirs"


def scale_in_protection_owner(asg):
    """Who manages the group's scale-in protection during an upgrade (issue 10 item 22): "theirs" when the
    group protects new instances or any instance is protected already, else "ours"."""
    if asg.get("NewInstancesProtectedFromScaleIn") or any(
            i.get("ProtectedFromScaleIn") for i in asg.get("Instances", [])):
        return SCALE_IN_PROTECTION_THEIRS
    return SCALE_IN_PROTECTION_OURS


def set_scale_in_protection(autoscaling, asg, protected):
    """Protect (or unprotect) the group's InService instances whose setting differs, so a desired capacity
    lowered behind the upgrade's back cannot terminate a node that still holds pods: "Instance scale-in protection
    starts when the instance state is InService"; TerminateInstanceInAutoScalingGroup, which the upgrade uses,
    still terminates protected instances (Auto Scaling user guide, "Use instance scale-in protection").
    Returns the ids changed."""
    name = asg["AutoScalingGroupName"]
    ids = sorted(i["InstanceId"] for i in asg.get("Instances", [])
                 if i.get("LifecycleState") == "InService" and bool(i.get("ProtectedFromScaleIn")) != protected)
    for start in range(0, len(ids), PROTECTION_CHUNK):
        chunk = ids[start:start + PROTECTION_CHUNK]
        autoscaling_api.set_instance_protection(autoscaling, name, chunk, protected)
    return ids


def scaling_activities_since(autoscaling, asg_name, since, max_records=100):
    """The ASG's scaling activities that started at or after ``since`` (newest first, one page)."""
    activities = autoscaling_api.describe_scaling_activities(autoscaling, asg_name, max_records)
    return [activity for activity in activities if activity.get("StartTime") is None or activity["StartTime"] >= since]


def activity_summary(activity):
    """A scaling activity in snake_case, for results."""
    start = activity.get("StartTime")
    return dict(
        activity_id=activity.get("ActivityId"),
        start_time=start.isoformat() if hasattr(start, "isoformat") else start,
        status_code=activity.get("StatusCode"),
        description=activity.get("Description"),
        cause=activity.get("Cause"),
        status_message=activity.get("StatusMessage"),
    )


def describe_known_instances(ec2, instance_ids):
    """(EC2 descriptions {instance_id: description}, ids EC2 does not know).

    DescribeInstances fails as a whole with InvalidInstanceID.NotFound when one id is unknown: an instance
    launched a moment ago that has not propagated yet (EC2's API is eventually consistent; the EC2 error codes page
    says so of this code) or one terminated long enough ago that EC2 forgot it. The call is repeated without the
    ids the error names (or, when it names none, once per id), so the others are still described.
    """
    pending = sorted(set(instance_ids))
    unknown = []
    while pending:
        try:
            return describe_instances(ec2, pending), unknown
        except UpgradeError as err:
            if err.code != NOT_FOUND:
                raise
            named = set(_INSTANCE_ID.findall(err.details.get("aws_error_message") or "")) & set(pending)
            if not named:
                break
            unknown.extend(sorted(named))
            pending = [i for i in pending if i not in named]
    found = {}
    for instance_id in pending:
        try:
            found.update(describe_instances(ec2, [instance_id]))
        except UpgradeError as single:
            if single.code != NOT_FOUND:
                raise
            unknown.append(instance_id)
    return found, sorted(unknown)


def _instance_states(ec2, instance_ids):
    """{instance_id: state name}; instances EC2 no longer knows (purged after termination) are left out."""
    found, _unknown = describe_known_instances(ec2, instance_ids)
    return dict((instance_id, description["State"]["Name"]) for instance_id, description in found.items())


def terminate_or_gone(autoscaling, ec2, asg_name, instance_id, decrement):
    """TerminateInstanceInAutoScalingGroup; True when this call terminated the instance, False when it was gone
    already (issue 10 item 11).

    Between the group's description and this call the instance may have been terminated by someone else (another
    run, a scale-in, a health check replacement); AWS then answers ValidationError ("Instance Id not found - No
    managed instance found for instance ID: ..."). Only when the group, described again, is terminating it or no
    longer has it, and EC2 shows it shutting down, terminated or does not know it any more, is that "gone
    already"; any other refusal (e.g. a decrement below MinSize) is raised as it came.
    """
    try:
        autoscaling_api.terminate_instance_in_auto_scaling_group(autoscaling, instance_id, decrement)
        return True
    except UpgradeError as err:
        if err.details.get("aws_error_code") != "ValidationError":
            raise
        members = dict((i["InstanceId"], i.get("LifecycleState")) for i in describe_asg(
            autoscaling, asg_name).get("Instances", []))
        if instance_id in members:
            if members[instance_id] in LEAVING_STATES:
                return False
            raise err
        found, _unknown = describe_known_instances(ec2, [instance_id])
        if (found.get(instance_id) or {}).get("State", {}).get("Name") in (None, "shutting-down", "terminated"):
            return False
        raise err


# --- waiting for terminations, through lifecycle hooks --------------------------------------------------------


def termination_hooks(autoscaling, asg_name):
    """The group's lifecycle hooks on autoscaling:EC2_INSTANCE_TERMINATING, by name, in snake_case:
    {name, heartbeat_timeout, global_timeout, default_result}. One DescribeLifecycleHooks call (it is not paged:
    a group has at most 50 hooks)."""
    hooks = autoscaling_api.describe_lifecycle_hooks(autoscaling, asg_name)
    found = [dict(name=hook["LifecycleHookName"],
                  heartbeat_timeout=hook.get("HeartbeatTimeout") or HOOK_HEARTBEAT_DEFAULT,
                  global_timeout=hook.get("GlobalTimeout"),
                  default_result=hook.get("DefaultResult") or HOOK_DEFAULT_RESULT)
             for hook in hooks if hook.get("LifecycleTransition") == TERMINATING_TRANSITION]
    return sorted(found, key=lambda hook: hook["name"])


def hook_hold_seconds(hooks):
    """How long termination hooks hold an instance in Terminating:Wait when nobody completes their actions and
    nobody records a heartbeat: then each hook's HeartbeatTimeout passes and its DefaultResult (CONTINUE or ABANDON:
    for a terminating instance both let it terminate) applies. AWS does not document whether the actions of
    several hooks run one after the other or together; their sum bounds both."""
    return sum(hook["heartbeat_timeout"] for hook in hooks)


def describe_hooks(hooks):
    """'drain' (HeartbeatTimeout 300 s, DefaultResult CONTINUE), ... for messages."""
    return ", ".join("'%s' (HeartbeatTimeout %d s, DefaultResult %s)"
                     % (hook["name"], hook["heartbeat_timeout"], hook["default_result"]) for hook in hooks)


class TerminationWait:
    """Wait until instances are terminated (or gone from EC2), through the group's termination lifecycle hooks.

    EC2 is polled (DescribeInstances) after ``first_poll`` seconds, then twice as long each time up to ``poll``.
    With ``hooks`` (termination_hooks, read once by the caller), the group is also described, at most every
    ``asg_poll`` seconds, while an instance is not terminated yet: an instance in Terminating:Wait is held by the
    hooks, and the wait's deadline moves to when it was first seen there plus hook_hold_seconds(hooks) plus
    ``timeout`` (for the shutdown after the hooks): the hooks' owner, not this wait, decides when it goes. The
    lifecycle action is never completed here: it belongs to whoever owns the hook.
    """

    def __init__(self, ec2, autoscaling=None, asg_name=None, hooks=(), clock=time, poll=EC2_POLL_SECONDS,
                 first_poll=EC2_FIRST_POLL_SECONDS, asg_poll=ASG_POLL_SECONDS):
        self.ec2 = ec2
        self.autoscaling = autoscaling
        self.asg_name = asg_name
        self.hooks = list(hooks)
        self.clock = clock
        self.poll = poll
        self.first_poll = first_poll
        self.asg_poll = asg_poll
        self.held_since = {}    # instance id -> clock time it was first seen in Terminating:Wait
        self.held_until = {}    # instance id -> clock time it was first seen out of it again
        self.lifecycle = {}     # instance id -> the group's last lifecycle state for it (None: not in the group)
        self.ec2_states = {}    # instance id -> EC2's last state for it
        self.extension = 0.0    # seconds the hooks added to the deadline
        self.timeout = None

    def _observe(self, pending, now):
        try:
            instances = describe_asg(self.autoscaling, self.asg_name).get("Instances", [])
        except UpgradeError as err:
            if err.code != NOT_FOUND:
                raise
            instances = []
        states = dict((i["InstanceId"], i.get("LifecycleState")) for i in instances)
        for instance_id in pending:
            self.lifecycle[instance_id] = states.get(instance_id)
            if states.get(instance_id) == TERMINATING_WAIT:
                self.held_since.setdefault(instance_id, now)
                self.held_until.pop(instance_id, None)
            elif instance_id in self.held_since:
                self.held_until.setdefault(instance_id, now)

    def held_now(self, instance_ids):
        return [i for i in instance_ids if i in self.held_since and i not in self.held_until]

    def run(self, instance_ids, timeout):
        """Returns the ids still not terminated at the deadline (empty when all are)."""
        clock = self.clock
        self.timeout = timeout
        start = clock.time()
        deadline = base_deadline = start + timeout
        hold = hook_hold_seconds(self.hooks)
        pending = sorted(set(instance_ids))
        delay = min(self.first_poll, self.poll)
        next_asg_poll = start
        while pending:
            states = _instance_states(self.ec2, pending)
            self.ec2_states.update(states)
            pending = [i for i in pending if states.get(i, "terminated") != "terminated"]
            for instance_id in set(instance_ids) - set(pending):
                if instance_id in self.held_since:
                    self.held_until.setdefault(instance_id, clock.time())
            now = clock.time()
            if pending and self.hooks and now >= next_asg_poll:
                self._observe(pending, now)
                next_asg_poll = now + self.asg_poll
            held = self.held_now(pending)
            if held:
                deadline = max([deadline] + [self.held_since[i] + hold + timeout for i in held])
            if not pending or now >= deadline:
                break
            # While every instance waits for a hook, nothing changes faster than the group can be polled.
            step = max(delay, self.asg_poll) if held and len(held) == len(pending) else delay
            clock.sleep(min(step, max(0.0, deadline - now)))
            delay = min(self.poll, delay * 2)
        self.extension = deadline - base_deadline
        return pending

    def hook_waits(self, now=None):
        """Each instance seen in Terminating:Wait: {instance_id, lifecycle_hooks, held_seconds, still_held}."""
        now = self.clock.time() if now is None else now
        names = [hook["name"] for hook in self.hooks]
        return [dict(instance_id=i, lifecycle_hooks=names,
                     held_seconds=round(self.held_until.get(i, now) - self.held_since[i], 1),
                     still_held=i not in self.held_until)
                for i in sorted(self.held_since)]

    def timeout_error(self, pending, asg_name):
        """WaitTimeout naming, for each instance, what it waits for (the hooks, by name)."""
        total = self.timeout + self.extension
        why = []
        held = self.held_now(pending)
        for instance_id in pending:
            if instance_id in held:
                why.append("%s is still in Terminating:Wait after %d s, held by lifecycle hook(s) %s: whoever owns the "
                           "hook keeps its action open (RecordLifecycleActionHeartbeat) and has not completed it"
                           % (instance_id, self.clock.time() - self.held_since[instance_id],
                              describe_hooks(self.hooks)))
            else:
                lifecycle = self.lifecycle.get(instance_id, "unknown")
                why.append("%s is %s in EC2%s" % (
                    instance_id, self.ec2_states.get(instance_id, "unknown"),
                    "" if lifecycle == "unknown" else ", %s in the group" % (lifecycle or "no longer")))
        message = "Instances %s of %s were not terminated within %d s (wait_timeout %d s%s): %s" % (
            ", ".join(pending), asg_name, total, self.timeout,
            " plus %d s for termination lifecycle hook(s) %s" % (self.extension, describe_hooks(self.hooks))
            if self.extension else "", "; ".join(why))
        if held:
            message += (". This module never completes another's lifecycle action: let the hook's owner finish, or "
                        "complete it yourself (aws autoscaling complete-lifecycle-action --auto-scaling-group-name %s "
                        "--lifecycle-hook-name <hook> --instance-id <instance> --lifecycle-action-result CONTINUE), "
                        "then rerun" % asg_name)
        return UpgradeError(WAIT_TIMEOUT, message, asg_name=asg_name, instance_ids=pending,
                            lifecycle_hooks=self.hooks, lifecycle_hook_waits=self.hook_waits())


def wait_terminated(ec2, instance_ids, timeout, poll=EC2_POLL_SECONDS, clock=time, first_poll=EC2_FIRST_POLL_SECONDS):
    """Wait until every instance is terminated (or gone); returns the ids still not terminated at timeout.

    Polls after ``first_poll`` seconds, then twice as long each time up to ``poll``. No lifecycle hooks: see
    TerminationWait.
    """
    return TerminationWait(ec2, clock=clock, poll=poll, first_poll=first_poll).run(instance_ids, timeout)


# --- nodes ------------------------------------------------------------------------------------------------

class _Obj:
    def __init__(self, **attrs):
        self.__dict__.update(attrs)


def node_view(raw):
    """A raw node dict (as kube_watch yields) with the attribute shape instances.join_instances_nodes reads."""
    metadata = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    conditions = [_Obj(type=c.get("type"), status=c.get("status"))
                  for c in (raw.get("status") or {}).get("conditions") or []]
    return _Obj(
        metadata=_Obj(name=metadata.get("name"), labels=metadata.get("labels") or {},
                      annotations=metadata.get("annotations") or {}),
        spec=_Obj(provider_id=spec.get("providerID"), unschedulable=spec.get("unschedulable")),
        status=_Obj(conditions=conditions),
        raw=raw,
    )


def patch_node_annotations(core_v1, node_name, annotations):
    """Merge-patch node annotations (a None value removes one); retried on 429/5xx (SPEC P3)."""
    body = {"metadata": {"annotations": annotations}}
    with translate_k8s_errors("annotate node %s" % node_name):
        read_body(retry_api_call(core_v1.patch_node, node_name, body, _content_type=MERGE_PATCH,
                                 _preload_content=False))


def mark_scale_down_disabled(core_v1, nodes, run_id):
    """Give nodes the C2 annotation, recording that we set it; returns the names changed."""
    changed = []
    for node in nodes:
        annotations = node.metadata.annotations or {}
        if annotations.get(SCALE_DOWN_DISABLED_ANNOTATION) == "true":
            continue
        patch_node_annotations(core_v1, node.metadata.name, {
            SCALE_DOWN_DISABLED_ANNOTATION: "true", SCALE_DOWN_DISABLED_BY_ANNOTATION: run_id or "unknown"})
        changed.append(node.metadata.name)
    return changed


def unmark_scale_down_disabled(core_v1, nodes):
    """Remove the C2 annotation from the nodes we gave it to; returns the names changed."""
    changed = []
    for node in nodes:
        if SCALE_DOWN_DISABLED_BY_ANNOTATION in (node.metadata.annotations or {}):
            patch_node_annotations(core_v1, node.metadata.name, {
                SCALE_DOWN_DISABLED_ANNOTATION: None, SCALE_DOWN_DISABLED_BY_ANNOTATION: None})
            changed.append(node.metadata.name)
    return changed


def list_all_nodes(core_v1, label_selector=None, purpose="list nodes"):
    """Nodes as node_view objects: one paged LIST (each page retried as SPEC P3 says), narrowed on the server
    by ``label_selector`` when there is one (SPEC P2). ``purpose`` names the list in an error."""
    with translate_k8s_errors(purpose + (" (%s)" % label_selector if label_selector else "")):
        items, _version = list_all(core_v1.list_node, **selector_kwargs(label_selector))
    return [node_view(item) for item in items]


def list_nodegroup_nodes(core_v1, group):
    """The nodes of the group's instances as node_view objects, matched by spec.providerID and narrowed by the
    kind's node label where it has one (instances.find_instance_nodes)."""
    instance_ids = [instance["InstanceId"] for instance in group.asg.get("Instances", [])]
    with translate_k8s_errors("list the nodes of node group %s (%s)"
                              % (group.nodegroup_name, group.node_selector or "every node")):
        nodes = find_instance_nodes(core_v1.list_node, instance_ids, group.node_selector)
    return [node_view(node) for node in nodes.values()]


def selector_kwargs(label_selector):
    return dict(label_selector=label_selector) if label_selector else {}


# --- waiting on instances and nodes together ----------------------------------------------------------------

class GroupSnapshot:
    """What GroupWatch knows at one moment."""

    def __init__(self, asg, instances, failures, nodes):
        self.asg = asg                  # the latest ASG description
        self.instances = instances      # join_instances_nodes records
        self.failures = failures        # planning.launch_failure dicts, newest first
        self.nodes = nodes              # node_view objects of the node group


class GroupWatch:
    """Node events (LIST+WATCH, narrowed by the kind's node label where it has one) plus ASG polls, as one
    condition loop; instances and nodes are joined by spec.providerID (SPEC K2)."""

    def __init__(self, autoscaling, ec2, core_v1, group, activities_since=None, poll_seconds=ASG_POLL_SECONDS):
        self.autoscaling = autoscaling
        self.ec2 = ec2
        self.core_v1 = core_v1
        self.asg_name = group.asg_name
        self.nodegroup_name = group.nodegroup_name
        self.node_selector = group.node_selector
        self.activities_since = activities_since
        self.poll_seconds = poll_seconds
        self._lock = threading.Lock()
        self._asg = None
        self._failures = []
        self._ec2_cache = {}
        self._poll_error = None

    def poll(self):
        asg = describe_asg(self.autoscaling, self.asg_name)
        unknown = [i["InstanceId"] for i in asg.get("Instances", []) if i["InstanceId"] not in self._ec2_cache]
        # An instance the group launched a moment ago may be unknown to DescribeInstances yet (eventual
        # consistency, issue 10 item 11): it is not visible yet, not an error; the next poll asks again.
        described = describe_known_instances(self.ec2, unknown)[0] if unknown else {}
        failures = []
        if self.activities_since is not None:
            activities = scaling_activities_since(self.autoscaling, self.asg_name, self.activities_since)
            failures = [f for f in (launch_failure(a) for a in activities) if f is not None]
        with self._lock:
            self._ec2_cache.update(described)
            self._asg = asg
            self._failures = failures

    def snapshot(self, raw_nodes):
        nodes = [node_view(raw) for raw in raw_nodes]
        with self._lock:
            asg, failures, ec2_cache = self._asg, list(self._failures), dict(self._ec2_cache)
        instances = join_instances_nodes(asg.get("Instances", []), ec2_cache, nodes)
        return GroupSnapshot(asg, instances, failures, nodes)

    def _poll_loop(self, stop, waker):
        while not stop.wait(self.poll_seconds):
            try:
                self.poll()
            except Exception as exc:  # pylint: disable=broad-except
                with self._lock:
                    self._poll_error = exc
                waker.wake()
                return
            waker.wake()

    def wait(self, condition, timeout):
        """Wait until ``condition(snapshot)`` holds; returns (held, last snapshot).

        An error of a background poll (AWS API failure) is raised here.
        """
        self.poll()
        waker = Waker()
        stop = threading.Event()
        poller = threading.Thread(target=self._poll_loop, args=(stop, waker), name="eksops-asg-poll")
        poller.daemon = True
        poller.start()
        try:
            with translate_k8s_errors("watch nodes of node group %s" % self.nodegroup_name):
                held, objects = list_then_watch(
                    self.core_v1.list_node, timeout=timeout, waker=waker, **selector_kwargs(self.node_selector),
                    condition=lambda objects: self._poll_error is not None or condition(
                        self.snapshot(objects.values())))
        finally:
            stop.set()
            poller.join()
        if self._poll_error is not None:
            raise self._poll_error
        return held, self.snapshot(objects.values())


# --- journal-driven helpers ---------------------------------------------------------------------------------

def advance_phase(current, wanted):
    """The later of two journal phases: a rerun of an earlier step never moves the journal backwards."""
    if current is None or PHASES.index(wanted) > PHASES.index(current):
        return wanted
    return current


def parse_utc_time(value):
    """An ISO 8601 UTC timestamp to the second (the journal's started_at, an instance's launch_time) as an aware
    datetime, or None."""
    if not value:
        return None
    try:
        return datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None


def autoscaler_error(autoscaling, asg, journal):
    """ClusterAutoscalerActive (SPEC C3): the desired capacity is not the one we last set."""
    name = asg["AutoScalingGroupName"]
    since = parse_utc_time(journal.started_at) or utc_now() - datetime.timedelta(hours=1)
    activities = [activity_summary(a) for a in scaling_activities_since(autoscaling, name, since)]
    return UpgradeError(
        AUTOSCALER_ACTIVE,
        "The desired capacity of Auto Scaling group %s is %d, but this upgrade last set it to %d: something else "
        "(the cluster autoscaler?) is scaling the group. Nothing was restored; see scaling_activities"
        % (name, asg["DesiredCapacity"], journal.desired_capacity_set),
        asg_name=name, desired_capacity=asg["DesiredCapacity"], desired_capacity_set=journal.desired_capacity_set,
        scaling_activities=activities)


def check_capacity_unmoved(module, autoscaling, asg, journal):
    """SPEC C3 before a module changes anything during an upgrade: the desired capacity is the one the upgrade last
    set (or the one its decrementing termination under way leaves). Otherwise raise ClusterAutoscalerActive, or,
    with the module's accept_current_capacity, adopt the change (Journal.adopt_desired_capacity) and write it to
    the journal. Returns the journal to go on with."""
    desired = asg["DesiredCapacity"]
    if journal is None or not autoscaler_changed(desired, journal.desired_capacity_set, journal.desired_capacity_pending):
        return journal
    if not module.params["accept_current_capacity"]:
        raise autoscaler_error(autoscaling, asg, journal)
    adopted = journal.adopt_desired_capacity(desired)
    name = asg["AutoScalingGroupName"]
    module.warn("The desired capacity of %s is %d, not the %d this upgrade set: accepted (accept_current_capacity); "
                "the group returns to %s at the end" % (name, desired, journal.desired_capacity_set,
                                                        adopted.original_desired_capacity))
    # The run's lease before this first change: a live run's journal is never rewritten by another.
    claim(module, autoscaling, asg)
    if not module.check_mode:
        write_journal(autoscaling, name, adopted, previous=journal)
    return adopted


def resolve_target(ec2, asg, journal, image_id=None, launch_template_version=None):
    """What new nodes run: {launch_template_id, launch_template_version (int), image_id}.

    The options win, then the journal's target, then the launch template version the ASG points at.
    """
    lt_id, asg_version = asg_launch_template(asg)
    version = launch_template_version or (journal.target_launch_template_version if journal else None)
    # A version from the journal is the ASG's business: a missing one names asg_name, not the option.
    number, version_image = target_lt_version(
        ec2, lt_id, asg_version, version,
        parameter="launch_template_version" if launch_template_version else "asg_name")
    image = image_id or (journal.target_image_id if journal else None) or version_image
    return dict(launch_template_id=lt_id, launch_template_version=number, image_id=image)
