# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Draining one node (D2-D16, Z3): LIST, plan, remove through the shared scheduler, watch until every pod is
gone, then wait for the load balancers to let the node go (B3), watching for pods that land on the cordoned node."""

from __future__ import annotations

import datetime
import functools
import json
import threading
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain import eviction
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.api import ApiException
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.budget_gate import matching_pdbs, no_disruption_reason
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.cordon import LEFT_PODS_ANNOTATION, node_state
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.deadlines import Deadline, PdbWaitTracker, force_wait_seconds
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.filters import (
    node_disruption_filter,
    NOT_EVICTED_AGAIN,
    REFUSE,
    NodePlan,
    SKIP,
    plan_node,
    refusal_message,
    returning_filter,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.pods import is_gone, pod_instance_key, pod_ref
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.post_drain import PostDrainWait
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.scheduler import (
    REQUESTED,
    SETTLED_FAILED,
    SETTLED_GONE,
    SETTLED_LEFT,
    PodRemoval,
    RemovalJob,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import instance_id_of
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import TRANSPORT_ERRORS, Waker, jittered, list_all, list_then_watch
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.returning_pods import Returning, ReturnTracker, workload_of, workload_ref


REASON_DRAIN = "EksopsDrain"
REASON_DRAIN_FAILED = "EksopsDrainFailed"


class NodeDrain:
    """Draining one node: LIST, plan, remove through the shared scheduler, watch until gone (D2-D16)."""

    def __init__(self, engine: Any, node: dict[str, Any], result: Any) -> None:
        self.engine = engine
        self.api = engine.api
        self.options = engine.options
        self.node = node
        self.name = node["metadata"]["name"]
        self.result = result
        self.lock = threading.Condition()
        self.in_flight = 0
        self.stopped = False
        self.waker = Waker()
        self.pods = {}          # pod_instance_key -> _PodState
        self.seen = set()       # pod_instance_key of every pod planned so far
        self.late_refused = []  # failure entries of pods refused by a filter after the first LIST
        self.pdb_wait = PdbWaitTracker(engine.api.clock)
        self.returns = ReturnTracker(node)   # Z3: workloads whose pods come back to this node
        self.returning_filter = returning_filter(self.returns)
        # Issue 27 item 6: a node that asks not to be disrupted refuses the moves of its pods without force.
        self.node_filters = tuple(f for f in (node_disruption_filter(node),) if f is not None)

    def log(self, message: str) -> None:
        self.engine.log("node %s: %s" % (self.name, message))

    def run(self) -> None:
        try:
            self._run()
        finally:
            for returning in self.returns.returning():
                self.result.returning_workloads.append(returning.to_dict())

    def _run(self) -> None:
        deadline = Deadline(self.api.clock.now(), self.options.drain_timeout)
        listed = self._list(deadline)
        plan = self._plan(listed[0])
        if plan.blocked:
            self.result.failed.extend(plan.refused)
            self.result.error = refusal_message(self.name, plan.refused)
            self._finish_failed()
            return
        if plan.remove:
            self.result.changed = True
        if self.options.check_mode:
            removed = self.result.deleted if self.options.disable_eviction else self.result.evicted
            removed.extend(pod_ref(pod) for pod in plan.remove)
            return
        if self._remove_in_rounds(plan, listed, deadline):
            self._finish_drained()

    def _list(self, deadline: Deadline) -> tuple[list[dict[str, Any]], str | None]:
        """The node's pods and the LIST's resourceVersion: one LIST (P2) within the node's deadline."""
        return list_all(self.api.list_pods, deadline=deadline.expires_at, clock=self.api.clock,
                        **self.api.node_pod_selectors(self.name, self.options.pod_selectors))

    def _plan(self, pods: list[dict[str, Any]]) -> NodePlan:
        self.seen.update(pod_instance_key(pod) for pod in pods)
        plan = plan_node(pods, self.options, self.api.daemonset_exists, datetime.datetime.now(datetime.timezone.utc),
                         self.node_filters)
        self.result.skipped.extend(plan.skipped)
        self.result.warnings.extend(plan.warnings)
        return plan

    def _remove_in_rounds(self, plan: NodePlan, listed: tuple[list[dict[str, Any]], str | None], deadline: Deadline) -> bool:
        """Remove the planned pods, then the ones that land on the node; False when the node failed (recorded).

        Pods land on a cordoned node (Z3: a Deployment tolerating every taint, pods bound by spec.nodeName): each
        round removes what the node holds, then the post-drain wait watches for newcomers. A pod of a workload this
        drain removed pods of comes back at most once or twice before the returning filter stops evicting that
        workload (refused without force, left with it). Every round but the first needs a newcomer, and
        newcomers after the deadline (after the one forced round, with force) fail the node, so this ends.
        """
        method = "delete" if self.options.disable_eviction else "evict"
        to_remove, to_wait, forced = plan.remove, plan.wait, False
        if self.engine.gate is not None:
            to_remove = self.engine.gate.longest_first(to_remove)
        while True:
            remaining = []
            if not self.late_refused:
                remaining, objects = self._remove_and_wait(to_remove, to_wait, method, deadline, listed)
            if remaining and self.options.force and not forced and not self.late_refused:
                forced = True
                remaining, objects = self._force_delete(remaining)
            if remaining or self.late_refused:
                self._record_failures(remaining, deadline)
                self._finish_failed()
                return False
            # U5, B3: wait even when nothing was evicted (a node cordoned and labelled earlier, holding only
            # DaemonSet pods): the load balancers still need the time to drop it before it is terminated.
            # Watched from the last LIST's resourceVersion over what the node held since: the replay also shows
            # pods that came between the end of the last watch and now, and costs no LIST.
            self.engine.emptied(self.name)
            wait = PostDrainWait(self.options, self.engine.load_balancers, instance_id_of(self.node), self.api.clock)
            arrived = wait.run(functools.partial(self._watch_for_arrivals, listed=(list(objects.values()), listed[1])),
                               self.log)
            if arrived is None:
                if wait.settle(self.result, self.options.ignore_load_balancer_timeout):
                    return True
                self._finish_failed()
                return False
            listed = self._list(deadline)
            to_remove, to_wait = arrived.remove, arrived.wait

    def _force_delete(self, remaining: list[PodRemoval]) -> tuple[list[PodRemoval], dict[tuple[str, str | None], dict[str, Any]]]:
        """U5 with force: DELETE what eviction did not remove, waiting the pods' grace period and some slack."""
        self.log("force: deleting %d pod(s) that eviction did not remove" % len(remaining))
        pods = [state.pod for state in remaining]
        deadline = Deadline(self.api.clock.now(), force_wait_seconds(pods, self.options.grace_period))
        return self._remove_and_wait(pods, [], "delete", deadline, None)

    def _finish_drained(self) -> None:
        result = self.result
        summary = "drained: %d pod(s) evicted, %d deleted" % (len(result.evicted), len(result.deleted))
        returning = self.returns.returning()
        if returning:
            self._record_left(returning)
            summary += "; left %s (force)" % "; ".join(
                "%d pod(s) of %s" % (len(r.pods), r.describe()) for r in returning)
        if result.changed:
            self.api.record_event(self.node, REASON_DRAIN, summary, log=self.engine.log)
        self.log(summary)

    def _adopt(self, objects: dict[tuple[str, str | None], dict[str, Any]]) -> NodePlan | None:
        """Plan the pods that appeared on the node since it was listed; returns their NodePlan, or None.

        Skips and warnings are recorded; a refused newcomer fails the node (``late_refused``).
        """
        new = [pod for pod in objects.values() if pod_instance_key(pod) not in self.seen]
        if not new:
            return None
        self.seen.update(pod_instance_key(pod) for pod in new)
        plan = plan_node(new, self.options, self.api.daemonset_exists, datetime.datetime.now(datetime.timezone.utc),
                         (self.returning_filter,) + self.node_filters)
        self.result.skipped.extend(plan.skipped)
        self.result.warnings.extend(plan.warnings)
        for decision in plan.decisions:
            returning = self.returns.flagged(decision.pod) if decision.action in (SKIP, REFUSE) else None
            if returning is not None and decision.reason.startswith(returning.ref):
                returning.pods.append(pod_ref(decision.pod))
                self.log("%s: %s" % (pod_ref(decision.pod), decision.reason))
        self.late_refused.extend(entry if entry["reason"].endswith(NOT_EVICTED_AGAIN)
                                 else dict(entry, reason="%s; it arrived during the drain" % entry["reason"])
                                 for entry in plan.refused)
        if self.options.force:
            self._leave_returning()
        arrivals = [pod_ref(pod) for pod in plan.remove + plan.wait] + [entry["pod"] for entry in plan.refused]
        if arrivals:
            self.log("%d pod(s) arrived on the cordoned node: %s" % (len(arrivals), ", ".join(sorted(arrivals))))
        if plan.remove:
            self.result.changed = True
        return plan

    def _watch_for_arrivals(self, seconds: float, listed: tuple[list[dict[str, Any]], str | None]) -> NodePlan | None:
        """Watch the node's pods for ``seconds`` from ``listed`` ((pods, resourceVersion) as list_then_watch
        takes it); the NodePlan of the pods that arrived (to remove, to wait for, or refused), or None."""
        arrived = []

        def newcomer(objects: dict[tuple[str, str | None], dict[str, Any]]) -> bool:
            plan = self._adopt(objects)
            if plan is not None and (plan.remove or plan.wait or plan.refused):
                arrived.append(plan)
            return bool(arrived)

        list_kwargs = self.api.node_pod_selectors(self.name, self.options.pod_selectors)
        list_then_watch(self.api.list_pods, timeout=seconds, condition=newcomer, listed=listed, clock=self.api.clock,
                        **list_kwargs)
        return arrived[0] if arrived else None

    def _leave_returning(self) -> None:
        """Z3 with force: the queued removals of pods of workloads that come back are dropped; their pods are
        left on the node (the jobs in flight see the flag in attempt_removal)."""
        for job in self.engine.scheduler.cancel(lambda job: job.drain is self and self.returns.flagged(job.pod)):
            self._leave(job.pod)

    def _leave(self, pod: dict[str, Any]) -> None:
        returning = self.returns.flagged(pod)
        if not self._settle(pod, SETTLED_LEFT, reason="%s; left on the node" % returning.ref):
            return
        ref = pod_ref(pod)
        returning.pods.append(ref)
        self.result.skipped.append(dict(pod=ref, reason="%s: %s; left on the node to go with it (force)"
                                        % (returning.ref, returning.why)))
        self.log("%s: not evicted: %s" % (ref, returning.describe()))

    def _record_left(self, returning: list[Returning]) -> None:
        """Z3 with force: say which workloads' pods were left, on the node (so the check before its termination,
        U5, lets them go with it) and in the warnings."""
        for entry in returning:
            self.result.warnings.append("%s; %d pod(s) left on the node to go with it (force): %s"
                                        % (entry.describe(), len(entry.pods), ", ".join(sorted(entry.pods))))
        value = json.dumps(dict(run_id=self.options.run_id, workloads=sorted(entry.ref for entry in returning)),
                           sort_keys=True)
        if (self.node["metadata"].get("annotations") or {}).get(LEFT_PODS_ANNOTATION) == value:
            return
        try:
            self.node = self.api.patch_node(self.name, {"metadata": {"annotations": {LEFT_PODS_ANNOTATION: value}}})
        except ApiException as exc:
            # Best effort: without the mark the check before the termination refuses these pods (the safe side).
            self.result.warnings.append("could not annotate the node %s (HTTP %s): terminating its instance will be "
                                        "refused while these pods run" % (LEFT_PODS_ANNOTATION, exc.status))
            return
        self.result.changed = True
        self.result.after = node_state(self.node)

    def _finish_failed(self) -> None:
        self.log(self.result.error)
        if not self.options.check_mode:
            self.api.record_event(self.node, REASON_DRAIN_FAILED, self.result.error, "Warning", log=self.engine.log)

    def _remove_and_wait(self, to_remove: list[dict[str, Any]], to_wait: list[dict[str, Any]], method: str, deadline: Deadline,
                         listed: tuple[list[dict[str, Any]], str | None] | None) -> tuple[list[PodRemoval], dict[tuple[str, str | None], dict[str, Any]]]:
        """Remove pods and wait until every one is gone or failed, or the deadline. Returns the _PodStates left
        and the node's pods as last seen.

        Pods that land on the node meanwhile are removed the same way (with ``method``, within ``deadline``);
        a newcomer that a filter refuses ends the wait at once.
        """
        tracked = []
        clock = self.api.clock

        def track(removals: list[dict[str, Any]], waits: list[dict[str, Any]]) -> None:
            for pod in waits:
                state = self.pods[pod_instance_key(pod)] = PodRemoval(pod, REQUESTED)
                tracked.append(state)
            for pod in removals:
                state = self.pods[pod_instance_key(pod)] = PodRemoval(pod)
                tracked.append(state)
                job = RemovalJob(self, pod, method, deadline)
                with self.lock:
                    self.in_flight += 1
                    state.job = job
                # Z3: a pod of a workload that lost one to this drain and came back waits a jittered backoff.
                delay = self.returns.take_delay(pod)
                self.engine.scheduler.submit(job, deadline.next_attempt(clock.now(), delay) if delay else None)

        track(to_remove, to_wait)

        def settled(objects: dict[tuple[str, str | None], dict[str, Any]]) -> bool:
            plan = self._adopt(objects)
            if plan is not None and not plan.refused:
                track(plan.remove, plan.wait)
            if self.late_refused:
                return True
            return all(is_gone(s.pod, objects) or s.state in (SETTLED_FAILED, SETTLED_LEFT) for s in tracked)

        list_kwargs = self.api.node_pod_selectors(self.name, self.options.pod_selectors)
        _done, objects = list_then_watch(self.api.list_pods, timeout=deadline.remaining(clock.now()),
                                         condition=settled, listed=listed, waker=self.waker, clock=clock,
                                         **list_kwargs)
        self._stop_jobs()
        self.result.pdb_wait_seconds = self.pdb_wait.seconds()
        left = []
        for state in tracked:
            if is_gone(state.pod, objects):
                state.state = SETTLED_GONE
            elif state.state != SETTLED_LEFT:
                left.append(state)
        return left, objects

    def _stop_jobs(self) -> None:
        """Cancel this node's queued removals and wait for the ones in flight (they see ``stopped``)."""
        with self.lock:
            self.stopped = True
        while True:
            for job in self.engine.scheduler.cancel(lambda job: job.drain is self):
                self._settle(job.pod, SETTLED_FAILED, reason=self.pods[pod_instance_key(job.pod)].reason
                             or self._unremoved_reason(job))
            with self.lock:
                if not self.in_flight:
                    self.stopped = False
                    return
                # A job that was running during cancel() may have been queued again: cancel once more.
                self.lock.wait(0.1)

    def _unremoved_reason(self, job: RemovalJob) -> str:
        returning = self.returns.flagged(job.pod)
        if returning is not None:
            return "%s came back to the cordoned node; %s" % (returning.ref, NOT_EVICTED_AGAIN)
        if job.deadline.expired(self.api.clock.now()):
            return "not removed within the deadline"
        return "not evicted: the drain of the node stopped"

    def _settle(self, pod: dict[str, Any], state: str, reason: str | None = None, pdb: str | None = None, pdb_related: bool = False) -> bool:
        """Record the final outcome of a pod's removal job (once: a job may sit in the queue twice)."""
        with self.lock:
            pod_state = self.pods[pod_instance_key(pod)]
            if pod_state.job.done:
                return False
            pod_state.job.done = True
            pod_state.state = state
            if reason is not None:
                pod_state.reason = reason
            if pdb is not None:
                pod_state.pdb = pdb
            pod_state.pdb_related = pod_state.pdb_related or pdb_related
            self.pdb_wait.release(pod_instance_key(pod))
            self.in_flight -= 1
            self.lock.notify_all()
        if state in (SETTLED_FAILED, SETTLED_LEFT):
            self.waker.wake()
        return True

    def _held_by_pdb(self, job: RemovalJob) -> None:
        """Count PDB wait for ``job``'s pod (caller holds self.lock); a settled job may still be finishing an
        attempt: it stays released."""
        if not job.done:
            self.pdb_wait.block(pod_instance_key(job.pod))

    def attempt_removal(self, job: RemovalJob) -> float | None:
        clock = self.api.clock
        now = clock.now()
        pod_state = self.pods[pod_instance_key(job.pod)]
        if self.stopped or job.deadline.expired(now):
            self._settle(job.pod, SETTLED_FAILED, reason=pod_state.reason or "not removed within the deadline")
            return None
        if self.returns.flagged(job.pod) is not None:
            # Z3: its workload comes back to this node; evicting this pod would only bring another.
            if self.options.force:
                self._leave(job.pod)
            else:
                self._settle(job.pod, SETTLED_FAILED, reason=self._unremoved_reason(job))
            return None
        gate = self.engine.gate
        if gate is not None and job.method == "evict":
            if not job.budget_known:
                job.budget = gate.budget_of(job.pod)
                job.budget_known = True
            if not gate.admit(job, now):
                with self.lock:
                    if not pod_state.pdb_related:
                        pod_state.reason = no_disruption_reason(job.budget[1])
                    pod_state.pdb = job.budget[1]
                    pod_state.pdb_related = True
                    self._held_by_pdb(job)
                return job.deadline.next_attempt(now, jittered(self.engine.pdb_retry_seconds * 0.8, spread=0.5))  # 0.8-1.2x
        outcome = self._send(job)
        job.attempt += 1
        ref = pod_ref(job.pod)
        if outcome.kind == eviction.ACCEPTED:
            (self.result.evicted if job.method == "evict" else self.result.deleted).append(ref)
            workload = workload_of(job.pod)
            if workload is not None:
                self.result.workloads.add(workload_ref(workload))
            self._settle(job.pod, REQUESTED)
            return None
        if outcome.kind in (eviction.GONE, eviction.TERMINATING_NAMESPACE):
            self._settle(job.pod, REQUESTED)
            return None
        pdb_related = outcome.kind in (eviction.PDB_BLOCKED, eviction.MULTIPLE_PDBS)
        if outcome.kind == eviction.PDB_BLOCKED and gate is not None and job.method == "evict":
            gate.refused(job)
        if outcome.kind in eviction.RETRY_OUTCOMES:
            with self.lock:
                pod_state.reason = outcome.message
                pod_state.pdb = outcome.pdb or pod_state.pdb
                pod_state.pdb_related = pod_state.pdb_related or pdb_related
                if outcome.kind == eviction.PDB_BLOCKED:
                    self._held_by_pdb(job)
            if outcome.kind != eviction.PDB_BLOCKED:
                self.log("%s: %s %s; retrying in %.1f s" % (ref, job.method, outcome.message, outcome.retry_in))
            return job.deadline.next_attempt(now, outcome.retry_in)
        self.log("%s: %s failed: %s" % (ref, job.method, outcome.message))
        self._settle(job.pod, SETTLED_FAILED, reason=outcome.message, pdb=outcome.pdb, pdb_related=pdb_related)
        return None

    def _send(self, job: RemovalJob) -> eviction.EvictionOutcome:
        """One removal request; its EvictionOutcome. The ReturnTracker sees it sent and whether it was accepted
        (a replacement may land before the answer)."""
        self.returns.sending(job.pod)
        outcome = None
        try:
            self.api.remove_pod(job.pod, job.method, self.options.grace_period)
            outcome = eviction.classify_eviction(200)
        except ApiException as exc:
            engine = self.engine
            outcome = eviction.classify_eviction(exc.status, exc.headers, exc.body, job.attempt, server_errors=job.server_errors,
                                                 pdb_retry_seconds=engine.pdb_retry_seconds, server_error_retries=engine.server_error_retries)
            job.server_errors += exc.status == 500
        except TRANSPORT_ERRORS as exc:
            outcome = eviction.classify_eviction(None, None, str(exc), job.attempt)
        finally:
            self.returns.sent(job.pod, outcome is not None and outcome.kind == eviction.ACCEPTED)
        return outcome

    def _record_failures(self, remaining: list[PodRemoval], deadline: Deadline) -> None:
        entries, expired = list(self.late_refused), deadline.expired(self.api.clock.now())
        for state in remaining:
            reason = state.reason or ("still terminating" if state.state == REQUESTED else "not removed")
            if expired:
                reason = "%s (drain_timeout=%d s)" % (reason, self.options.drain_timeout)
            elif state.state != SETTLED_FAILED and self.returns.returning():
                reason = "%s when the drain stopped" % reason
            elif state.state != SETTLED_FAILED:
                reason = "%s when a pod that arrived was refused" % reason
            pdb = state.pdb
            if pdb is None and state.pdb_related:
                namespace = state.pod["metadata"].get("namespace")
                names = matching_pdbs(state.pod, self.api.pdbs_in(namespace))
                pdb = ",".join(names) or None
            entries.append(dict(pod=pod_ref(state.pod), reason=reason, pdb=pdb))
        self.result.fail_eviction(entries, self.returns.returning(), self.options.force, expired and not self.late_refused)
