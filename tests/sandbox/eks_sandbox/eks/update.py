# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""UpdateNodegroupVersion, run by EKS: a state machine advanced by every tick.

Source: the EKS user guide, "Managed node update behavior" (awsdocs/amazon-eks-user-guide latest/ug/nodes/
managed-node-update-behavior.adoc); its steps are quoted where they are modelled. Timeouts are scenario timings
(eks_drain_timeout_seconds, eks_post_drain_wait_seconds, eks_node_ready_timeout_seconds).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable

from moto.autoscaling.models import AutoScalingBackend, FakeAutoScalingGroup, InstanceState
from moto.ec2.models import EC2Backend

from ..conventions import EKS_IMAGE_LABEL, EKS_NODEGROUP_LABEL, EKS_SOURCE_LT_ID_LABEL, EKS_SOURCE_LT_VERSION_LABEL
from ..kube import objects
from ..kube.api import Api
from .creation import ClusterInfo, new_template_version, update_group
from .drain import NodeDrain, mark_for_removal, nodes_by_instance
from .records import IN_PROGRESS, SUCCESSFUL, ManagedNodegroup, Update

__all__ = ["Target", "UpdateDeps", "VersionUpdate", "resolve_max_unavailable"]

# Auto Scaling lifecycle states of instances that count towards a group's capacity.
_LIVE = ("Pending", "InService")
# "The maximum unavailable has a quota of 100 nodes."
MAX_UNAVAILABLE_QUOTA = 100

# Failure wording as EKS reports it in Update.errors (seen in users' reports: aws/containers-roadmap#1282 for
# PodEvictionFailure, terraform-aws-modules/terraform-aws-eks#3283 for NodeCreationFailure during an upgrade).
POD_EVICTION_FAILURE = "Reached max retries while trying to evict pods from nodes in node group {nodegroup}"
NODE_CREATION_FAILURE = "Couldn't proceed with upgrade process as new nodes are not joining the node group."


def resolve_max_unavailable(update_config: dict[str, Any], size: int) -> int:
    """How many nodes are updated in parallel. maxUnavailablePercentage: "This percentage of nodes are updated in
    parallel, up to 100 nodes at once" (botocore NodegroupUpdateConfig). The rounding is not documented: up, at
    least one node, as issue 10 item 4 records EKS (50 % of 5 nodes updates 3 at a time)."""
    if "maxUnavailablePercentage" in update_config:
        wanted = math.ceil(update_config["maxUnavailablePercentage"] * size / 100)
    else:
        wanted = update_config["maxUnavailable"]
    return max(1, min(wanted, MAX_UNAVAILABLE_QUOTA))


@dataclass(frozen=True)
class Target:
    """What the node group is updated to: the AMI (its Kubernetes and release versions) and, for a node group
    created with a launch template, the version of that template."""

    ami: dict[str, Any]
    source_version: int | None


@dataclass
class UpdateDeps:
    """What EKS's update workflow works with: AWS (in-process moto backends) and the cluster's API."""

    ec2: EC2Backend
    autoscaling: AutoScalingBackend
    cluster: ClusterInfo
    api: Api | None
    timings: dict[str, float]
    event: Callable[..., None]
    rng: random.Random


@dataclass
class _Removal:
    """One node on its way out: drained, then (after the post-drain wait) terminated through the ASG."""

    instance_id: str
    drain: NodeDrain | None          # None: the instance never became a node, there is nothing to drain
    decrement: bool                  # scale-down removes capacity; the upgrade loop lets the ASG replace it
    drained_at: float | None = None


class VersionUpdate:
    """One UpdateNodegroupVersion, from setup to Successful or Failed (update.status)."""

    def __init__(self, deps: UpdateDeps, record: ManagedNodegroup, update: Update, target: Target, force: bool):
        self.deps = deps
        self.record = record
        self.update = update
        self.target = target
        self.force = force
        self.minimal = record.update_config.get("updateStrategy") == "MINIMAL"
        self.phase = "setup"
        self.version_number = 0           # EKS's launch template version the new nodes come from
        self.original: tuple[int, int, int] = (0, 0, 0)   # (min, max, desired) before the update
        self.expected_desired = 0         # the desired capacity EKS itself last set
        self.max_unavailable = 1
        self.deadline = 0.0
        self.removals: dict[str, _Removal] = {}

    # --------------------------------------------------------------------------------------------- helpers

    @property
    def done(self) -> bool:
        return self.update.status != IN_PROGRESS

    def _event(self, kind: str, **fields: Any) -> None:
        self.deps.event(kind, nodegroup=self.record.name, update_id=self.update.id, **fields)

    def _group(self) -> FakeAutoScalingGroup:
        return self.deps.autoscaling.autoscaling_groups[self.record.asg_name]

    def _set_group(self, launch_template: dict[str, str] | None = None, **sizes: int | None) -> None:
        update_group(self.deps.autoscaling, self.record.asg_name, launch_template, **sizes)

    def _live(self) -> list[InstanceState]:
        return [s for s in self._group().instance_states if s.lifecycle_state in _LIVE]

    def _is_new(self, state: InstanceState) -> bool:
        template, number = getattr(state.instance, "sandbox_launch_template", (None, None))
        return template is not None and template.id == self.record.template_id and number == self.version_number

    def _expected_labels(self) -> dict[str, str]:
        """'New nodes should have Amazon EKS applied labels' (with the sourceLaunchTemplate* labels for a
        node group created with a launch template)."""
        labels = {EKS_NODEGROUP_LABEL: self.record.name, EKS_IMAGE_LABEL: self.target.ami["id"]}
        # With a custom AMI, EKS merges nothing into the user data: the sourceLaunchTemplate* labels come from EKS's
        # part of it, which such a node group has not (eks/creation.py custom_ami_user_data).
        if self.record.source_template is not None and not self.record.custom_ami:
            labels[EKS_SOURCE_LT_ID_LABEL] = self.record.source_template["id"]
            labels[EKS_SOURCE_LT_VERSION_LABEL] = str(self.target.source_version)
        return labels

    def _unready_new_instances(self) -> list[str]:
        """New instances without a Ready node carrying EKS's labels ([] when every new node is good)."""
        nodes = nodes_by_instance(self.deps.api.store)
        expected = self._expected_labels().items()
        missing = []
        for state in self._live():
            if not self._is_new(state):
                continue
            node = nodes.get(state.instance.id)
            if node is None or not objects.node_ready(node) or \
                    not expected <= (node["metadata"].get("labels") or {}).items():
                missing.append(state.instance.id)
        return missing

    # --------------------------------------------------------------------------------------------- phases

    def step(self, now: float) -> None:
        if not self.done:
            getattr(self, f"_{self.phase}")(now)

    def _enter(self, phase: str, **fields: Any) -> None:
        self.phase = phase
        self._event("eks_update_phase", phase=phase, **fields)

    def _setup(self, now: float) -> None:
        # "It creates a new Amazon EC2 launch template version for the Auto Scaling group that's associated with
        # your node group. ... It updates the Auto Scaling group to use the latest launch template version.
        # It determines the maximum quantity of nodes to upgrade in parallel using the updateConfig property."
        record, group = self.record, self._group()
        self.version_number = new_template_version(self.deps.ec2, self.deps.cluster, record, self.target.ami,
                                                   self.target.source_version)
        self._set_group(launch_template={"LaunchTemplateId": record.template_id, "Version": str(self.version_number)})
        record.template_version = self.version_number
        self.original = (group.min_size, group.max_size, group.desired_capacity)
        self.expected_desired = group.desired_capacity
        self.max_unavailable = resolve_max_unavailable(record.update_config, group.desired_capacity)
        self._event("eks_update_phase", phase="setup", launch_template_version=self.version_number,
                    max_unavailable=self.max_unavailable)
        if self.minimal:
            # The minimal strategy "terminates the old instances before launching the new instances": no scale up.
            self._enter("upgrade")
            return
        # "It increments the Auto Scaling Group's maximum size and desired size by the larger of either: Up to
        # twice the number of Availability Zones that the Auto Scaling group is deployed in. The maximum
        # unavailable of upgrade."
        surge = max(2 * len(set(group.availability_zones)), self.max_unavailable)
        self.expected_desired = group.desired_capacity + surge
        self._set_group(max_size=group.max_size + surge, desired_capacity=self.expected_desired)
        self.deadline = now + self.deps.timings["eks_node_ready_timeout_seconds"]
        self._enter("scale_up", surge=surge, max_size=group.max_size, desired=self.expected_desired)

    def _scale_up(self, now: float) -> None:
        # "After scaling the Auto Scaling group, it checks if the nodes using the latest configuration are present
        # in the node group. This step succeeds only when it meets these criteria: At least one new node is
        # launched in every Availability Zone where the node exists. Every new node should be in Ready state.
        # New nodes should have Amazon EKS applied labels."
        live = self._live()
        old_zones = {s.availability_zone for s in live if not self._is_new(s)}
        unready = self._unready_new_instances()
        good_zones = {s.availability_zone for s in live if self._is_new(s) and s.instance.id not in unready}
        if old_zones <= good_zones and not unready:
            self._mark_old_nodes()
            self._enter("upgrade")
        elif now >= self.deadline:
            self._fail("NodeCreationFailure", NODE_CREATION_FAILURE, unready or [self.record.asg_name])

    def _mark_old_nodes(self) -> None:
        # "It marks nodes as unschedulable to avoid scheduling new Pods. It also labels nodes with
        # node.kubernetes.io/exclude-from-external-load-balancers=true to remove the nodes from load balancers
        # before terminating the nodes."
        nodes = nodes_by_instance(self.deps.api.store)
        for state in self._live():
            node = nodes.get(state.instance.id)
            if not self._is_new(state) and node is not None:
                mark_for_removal(self.deps.api, node["metadata"]["name"])

    def _upgrade(self, now: float) -> None:
        # "It randomly selects a node that needs to be upgraded, up to the maximum unavailable configured for the
        # node group. ... It repeats the previous upgrade steps until there are no nodes in the node group that
        # are deployed with the earlier version of the launch template."
        for removal in list(self.removals.values()):
            self._advance(removal, now)
            if self.done:
                return
        old = [s for s in self._live() if not self._is_new(s) and s.instance.id not in self.removals]
        if self.minimal and not self._replacements_ready(now):
            return
        free = self.max_unavailable - len(self.removals)
        if old and free > 0:
            for state in self.deps.rng.sample(old, min(free, len(old))):
                self._start_removal(state.instance.id, now, decrement=False)
        elif not old and not self.removals:
            if self.minimal:
                self._succeed()
            else:
                self._enter("scale_down")

    def _replacements_ready(self, now: float) -> bool:
        """Minimal strategy: the ASG replaces each terminated node ("The Auto Scaling Group creates a new node to
        replace the missing capacity"); the next nodes go only once the replacements are Ready (assumption: the
        guide does not say; this keeps at most maxUnavailable nodes unavailable)."""
        if self.removals:
            return False
        unready = self._unready_new_instances()
        short = len(self._live()) < self._group().desired_capacity
        if not unready and not short:
            self.deadline = 0.0
            return True
        self.deadline = self.deadline or now + self.deps.timings["eks_node_ready_timeout_seconds"]
        if now >= self.deadline:
            self._fail("NodeCreationFailure", NODE_CREATION_FAILURE, unready or [self.record.asg_name])
        return False

    def _scale_down(self, now: float) -> None:
        # "The scale down phase decrements the Auto Scaling group maximum size and desired size by one to return
        # to values before the update started. If the Upgrade workflow determines that the Cluster Autoscaler is
        # scaling up the node group during the scale down phase of the workflow, it exits immediately without
        # bringing the node group back to its original size."
        group = self._group()
        if group.desired_capacity > self.expected_desired:
            self._event("eks_scale_down_skipped", reason="the cluster autoscaler scaled the node group up",
                        desired=group.desired_capacity)
            self._succeed()
            return
        for removal in list(self.removals.values()):
            self._advance(removal, now)
        if self.removals:
            return
        original_min, original_max, original_desired = self.original
        if group.desired_capacity > original_desired:
            # The instance the ASG's termination policy scales in is drained first, as EKS's termination
            # lifecycle hook does ("Node updates and terminations automatically drain nodes", "Managed node
            # groups"); the decrement happens when it is terminated.
            self._start_removal(self._scale_in_victim(group).instance.id, now, decrement=True)
        else:
            if group.max_size != original_max:
                self._set_group(max_size=original_max)
            self._succeed()

    # --------------------------------------------------------------------------------------------- removals

    def _start_removal(self, instance_id: str, now: float, decrement: bool) -> None:
        node = nodes_by_instance(self.deps.api.store).get(instance_id)
        drain = None
        if node is not None:
            name = node["metadata"]["name"]
            mark_for_removal(self.deps.api, name)
            drain = NodeDrain(self.deps.api, name, now)
        self.removals[instance_id] = _Removal(instance_id, drain, decrement)
        self._event("eks_drain_started", instance_id=instance_id, node=drain and drain.node_name)

    def _advance(self, removal: _Removal, now: float) -> None:
        # Upgrade phase: "It drains the Pods from the node. If the Pods don't leave the node within 15 minutes and
        # there's no force flag, the upgrade phase fails with a PodEvictionFailure error. ... It cordons the node
        # after every Pod is evicted and waits for 60 seconds. ... It sends a termination request to the Auto
        # Scaling Group for the cordoned node."
        drain = removal.drain
        if drain is not None and removal.drained_at is None:
            remaining = drain.step()
            timed_out = now - drain.started_at >= self.deps.timings["eks_drain_timeout_seconds"]
            if remaining and timed_out:
                if self.force:
                    drain.delete_remaining()
                elif removal.decrement:
                    # Scale-in without force: "if it takes more than 15 minutes, the node is terminated regardless
                    # of whether all Pods on the node are terminated" ("Managed node groups").
                    self._event("eks_drain_gave_up", node=drain.node_name, pods=remaining)
                    remaining = []
                else:
                    self._event("eks_drain_failed", node=drain.node_name, pods=remaining,
                                refusals=dict(drain.refusals))
                    self._fail("PodEvictionFailure", POD_EVICTION_FAILURE.format(nodegroup=self.record.name),
                               [drain.node_name])
                    return
            if remaining:
                return
            removal.drained_at = now
            self._event("eks_node_drained", node=drain.node_name, seconds=round(now - drain.started_at, 3))
        wait = self.deps.timings["eks_post_drain_wait_seconds"] if drain is not None else 0.0
        if now - (removal.drained_at or now) >= wait:
            self._terminate(removal)

    def _terminate(self, removal: _Removal) -> None:
        group = self._group()
        self.deps.autoscaling.terminate_instance(removal.instance_id, removal.decrement)
        if removal.decrement:
            self.expected_desired = group.desired_capacity
            self._set_group(max_size=max(self.original[1], group.max_size - 1))
        del self.removals[removal.instance_id]
        self._event("eks_instance_terminated", instance_id=removal.instance_id, decrement=removal.decrement,
                    desired=group.desired_capacity, max_size=group.max_size)

    @staticmethod
    def _scale_in_victim(group: FakeAutoScalingGroup) -> InstanceState:
        """The instance the ASG's default termination policy picks (as aws/capacity.py applies it): from the AZ
        with the most instances (the first listed on a tie), the oldest launch template version, the oldest."""
        live = [s for s in group.instance_states if s.lifecycle_state in _LIVE and not s.protected_from_scale_in]
        order = list(dict.fromkeys(group.availability_zones))
        count = {zone: sum(s.availability_zone == zone for s in live) for zone in order}
        zone = max(order, key=lambda z: (count[z], -order.index(z)))
        return min((s for s in live if s.availability_zone == zone),
                   key=lambda s: (getattr(s.instance, "sandbox_launch_template", (None, 0))[1] or 0,
                                  s.instance.launch_time))

    # --------------------------------------------------------------------------------------------- outcomes

    def _succeed(self) -> None:
        record = self.record
        record.version = self.target.ami["kubernetes_version"]
        record.release_version = record.release_of(self.target.ami)
        record.ami = self.target.ami
        if record.source_template is not None:
            record.source_template["version"] = self.target.source_version
        self.update.status = SUCCESSFUL
        self._enter("done", status=SUCCESSFUL, release_version=record.release_version)

    def _fail(self, code: str, message: str, resource_ids: list[str]) -> None:
        self.update.fail(code, message, resource_ids)
        self._enter("done", status=self.update.status, error=code, resource_ids=list(resource_ids))
