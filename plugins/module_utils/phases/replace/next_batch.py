# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_replace's next batch under the schedule once (SPEC B1), from the group read live, or planned ahead.

Per batch the planner reads the group (one DescribeAutoScalingGroups, one DescribeInstances of the instances new
since the last batch, one node list) and asks schedule.next_batch which old instances go and which of their
terminations lower the desired capacity. Once the desired capacity was accepted as moved (accept_current_capacity)
the remaining batches are EKS's (every termination replaced), which a warning says.

Planned ahead (issue 11 item 4): while a batch waits out its post-drain wait, ``plan_ahead`` reads the group and
plans the batch after it from the group as it will be once Auto Scaling has accepted the batch's terminations
(schedule_ops.after_terminations). The plan is used only when the terminations went exactly as predicted
(``accepted``): Auto Scaling accepted them from a group with the same planning basis as the one read ahead (same
desired capacity, members, live instances and journal; schedule_ops.planning_basis), no desired capacity was
adopted, and no instance was terminated by someone else meanwhile. Then a read right after the terminations would
plan the same batch, and the next batch starts without that read. Otherwise the group is read live, as before, with
the random draws of a plan that was not used given back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
import random

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import schedule
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import schedule_state as schedule_ops
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clients import Clients
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import NOT_FOUND, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.mixed_instances import override_images
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef, describe_asg
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import list_nodegroup_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import Batch, ReplaceState
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import StepFailed


class _Ahead:
    """A batch planned ahead: for the terminations of ``instance_ids``, from a group whose basis was ``basis``;
    ``scheduled`` the batch after them (None: no old instance left), ``rng_state`` the draws it took."""

    def __init__(self, instance_ids: Sequence[str], basis: tuple[Any, ...], scheduled: schedule.ScheduledBatch | None,
                 rng_state: Any) -> None:
        self.instance_ids = sorted(instance_ids)
        self.basis = basis
        self.scheduled = scheduled
        self.rng_state = rng_state


class LivePlanner:
    """next_batch for the schedule once (see the module docstring)."""

    def __init__(self, params: Mapping[str, Any], clients: Clients, group: NodegroupRef, warn: Callable[[str], None],
                 node_names: dict[str, str | None]) -> None:
        self.params = params
        self.clients = clients
        self.group = group
        self.warn = warn
        self.node_names = node_names
        planned = params["batches"]
        self.batch_size = params["batch_size"] or max([len(b) for b in planned] or [1])
        self.rng = random.Random(params["seed"])
        self.fallback = False
        # EC2 descriptions by instance id, for the phase (the plan's too): each batch describes only the new ones.
        self.described = clients.instance_descriptions
        self._ahead = None   # planned during the post-drain wait, not yet confirmed by the terminations
        self._next = None    # confirmed: the next call answers it
        self.override_images: dict[str, str] | None = None  # read once, with the group (SPEC W2)
        # Issue 27 item 5: the instances held in quarantine now; live in the group, never in a batch.
        self.excluded: Callable[[], set[str]] = set

    def __call__(self, state: ReplaceState) -> Batch | None:
        del state
        ahead, self._next, self._ahead = self._next, None, None
        if ahead is not None:
            self.rng.setstate(ahead.rng_state)
            scheduled = ahead.scheduled
        else:
            scheduled = self._plan_live()
        if scheduled is None:
            return None
        return Batch(scheduled.instance_ids, decrement_ids=scheduled.decrement_ids, at_risk=scheduled.at_risk)

    def plan_first(self) -> None:
        """Plan the first batch from the group read live, as the first call would (called while every old node is
        cordoned: the cordon changes nothing the planner reads). A failure is left to the first call to meet."""
        state = self.rng.getstate()
        try:
            self._next = _Ahead([], (), self._plan_live(), self.rng.getstate())
        finally:
            self.rng.setstate(state)

    def _plan_live(self) -> schedule.ScheduledBatch | None:
        asg, joined, nodes = self._read()
        journal = self._journal(asg)
        if not self.fallback and self._capacity_accepted(journal, asg):
            self.fallback = True
            self.warn("schedule once: the desired capacity of %s was accepted as moved (accept_current_capacity); "
                      "the remaining old nodes are replaced with EKS's schedule (every termination replaced), and "
                      "the cordoned surplus nodes are removed empty at the scale-down" % self.group.asg_name)
        return self._choose(asg, joined, nodes, journal, self.rng)

    def plan_ahead(self, batch: Batch) -> None:
        """Plan the batch after ``batch`` from the group as it will be once ``batch``'s terminations are accepted
        (called while ``batch`` waits out its post-drain wait, before its terminations)."""
        self._ahead = None
        asg, joined, nodes = self._read()
        journal = self._planning_journal(asg)
        if journal is None or (not self.fallback and self._capacity_accepted(journal, asg)):
            return  # the live read says why, or warns of the fallback
        predicted_asg, predicted_joined, predicted_journal = schedule_ops.after_terminations(
            asg, joined, journal, batch.instance_ids, batch.decrement_ids)
        rng = random.Random()
        rng.setstate(self.rng.getstate())
        scheduled = self._choose(predicted_asg, predicted_joined, nodes, predicted_journal, rng)
        self._ahead = _Ahead(batch.instance_ids, schedule_ops.planning_basis(asg), scheduled, rng.getstate())

    def accepted(self, rounds: Sequence[Any]) -> None:
        """Auto Scaling accepted a batch's termination ``rounds`` (terminate_step.Termination, in order): the batch
        planned ahead is the next one when they went as predicted (see the module docstring), else none is (a batch
        planned before a canary batch the planner did not choose, loop.canary_first, is not the next one)."""
        ahead, self._ahead, self._next = self._ahead, None, None
        if ahead is None or not rounds:
            return
        terminated = sorted(i for r in rounds for i in r.result.get("terminated") or [])
        if schedule_ops.planning_basis(rounds[0].group.asg) == ahead.basis and terminated == ahead.instance_ids \
                and not any(r.result.get("already_terminated") for r in rounds) \
                and all(r.journal == r.group.journal() for r in rounds):
            self._next = ahead

    def _read(self) -> tuple[dict[str, Any], list[dict[str, Any]], list[Any]]:
        clients = self.clients
        asg, joined, nodes = schedule_ops.read_group(clients.aws("autoscaling"), clients.aws("ec2"), clients.core_v1(),
                                                     self.group, describe_asg, list_nodegroup_nodes, self.described)
        self.node_names.update((i["instance_id"], i["node_name"]) for i in joined if i.get("node_name"))
        if self.override_images is None:
            self.override_images = override_images(clients.aws("ec2"), asg)
        return asg, joined, nodes

    def _planning_journal(self, asg: dict[str, Any]) -> Journal | None:
        """The group's journal when the schedule once can plan from it (it records start_per_az), else None."""
        journal = self.group.with_asg(asg).journal()
        return journal if journal is not None and journal.start_per_az is not None else None

    def _journal(self, asg: dict[str, Any]) -> Journal:
        journal = self._planning_journal(asg)
        if journal is None:
            raise StepFailed(UpgradeError(NOT_FOUND, "The upgrade journal of Auto Scaling group %s is "
                                          "gone or lost its start_per_az during the upgrade phase: no further batch "
                                          "is started" % self.group.asg_name, asg_name=self.group.asg_name))
        return journal

    def _capacity_accepted(self, journal: Journal, asg: Mapping[str, Any]) -> bool:
        return schedule_ops.capacity_accepted(journal, asg["DesiredCapacity"], self.params["accept_current_capacity"])

    def _choose(self, asg: Mapping[str, Any], joined: Sequence[Mapping[str, Any]], nodes: Sequence[Any],
                journal: Journal, rng: random.Random) -> schedule.ScheduledBatch | None:
        excluded = self.excluded()
        if self.fallback:
            return schedule_ops.eks_batch([i for i in joined if i["instance_id"] not in excluded], journal,
                                          self.batch_size, rng, self.override_images or {})
        surplus = schedule_ops.marked_surplus(nodes, journal.run_id)
        view = schedule_ops.group_view(asg, joined, journal, surplus, self.override_images or {}, excluded)
        return schedule.next_batch(view, self.batch_size, rng)
