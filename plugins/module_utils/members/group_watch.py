# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``GroupWatch``: one LIST+WATCH of the node group's nodes while the ASG (instances, scaling activities) is
polled in a background thread, so a condition over instances joined with nodes is re-checked on every node
event and every poll."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
import threading

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.asg_state import ASG_POLL_SECONDS, scaling_activities_since
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import join_instances_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import translate_k8s_errors
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.waiter import Backoff, Waiter
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import Waker
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import describe_asg
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import node_view, selector_kwargs
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.launch_failures import launch_failure
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.termination import describe_known_instances

if TYPE_CHECKING:
    import datetime

    from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef


class GroupSnapshot:
    """What GroupWatch knows at one moment."""

    def __init__(self, asg: dict[str, Any], instances: list[dict[str, Any]], failures: list[dict[str, Any]], nodes: list[Any]) -> None:
        self.asg = asg                  # the latest ASG description
        self.instances = instances      # join_instances_nodes records
        self.failures = failures        # launch_failures.launch_failure dicts, newest first
        self.nodes = nodes              # node_view objects of the node group


# The first poll of the group after the one a wait starts with; never more often than once a second.
FIRST_POLL_SECONDS = 1.0


class GroupWatch:
    """Node events (LIST+WATCH, narrowed by the kind's node label where it has one) plus ASG polls, as one
    condition loop; instances and nodes are joined by spec.providerID (SPEC K2)."""

    def __init__(self, autoscaling: Any, ec2: Any, core_v1: Any, group: NodegroupRef, activities_since: datetime.datetime | None = None,
                 poll_seconds: float = ASG_POLL_SECONDS) -> None:
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

    def poll(self) -> None:
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

    def snapshot(self, raw_nodes: Iterable[dict[str, Any]]) -> GroupSnapshot:
        nodes = [node_view(raw) for raw in raw_nodes]
        with self._lock:
            asg, failures, ec2_cache = self._asg, list(self._failures), dict(self._ec2_cache)
        instances = join_instances_nodes(asg.get("Instances", []), ec2_cache, nodes)
        return GroupSnapshot(asg, instances, failures, nodes)

    def _poll_loop(self, stop: threading.Event, waker: Waker) -> None:
        # Issue 11 item 4: a replacement shows in the group within seconds; poll once a second at first, then back
        # off (x2) to poll_seconds (scaling activities are throttled per account).
        for delay in Backoff(FIRST_POLL_SECONDS, self.poll_seconds).delays():
            if stop.wait(delay):
                return
            try:
                self.poll()
            except Exception as exc:  # pylint: disable=broad-except
                with self._lock:
                    self._poll_error = exc
                waker.wake()
                return
            waker.wake()

    def wait(self, waiter: Waiter) -> tuple[bool, GroupSnapshot]:
        """Wait until ``waiter``'s predicate holds of a GroupSnapshot, until its deadline; returns (held, last
        snapshot). An error of a background poll (AWS API failure) is raised here.
        """
        self.poll()
        waker = Waker()
        stop = threading.Event()
        poller = threading.Thread(target=self._poll_loop, args=(stop, waker), name="eksops-asg-poll")
        poller.daemon = True
        poller.start()
        try:
            with translate_k8s_errors("watch nodes of node group %s" % self.nodegroup_name):
                held, objects = waiter.list_then_watch(
                    self.core_v1.list_node, lambda objects: self.snapshot(objects.values()),
                    interrupted=lambda: self._poll_error is not None, waker=waker,
                    **selector_kwargs(self.node_selector))
        finally:
            stop.set()
            poller.join()
        if self._poll_error is not None:
            raise self._poll_error
        return held, self.snapshot(objects.values())
