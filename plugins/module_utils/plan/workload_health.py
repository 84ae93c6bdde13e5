# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health gate's verdict (issue 27 item 1): whether the workloads a batch's drain moved are healthy again.

Pure, over raw Deployment, StatefulSet and pod dicts as the API lists them. A workload is named as the drain
records it (``Kind namespace/name``, members/returning_pods.workload_of: a ReplicaSet's pods count for its
Deployment). Its evicted pods come back under new names (a ReplicaSet's) or the same ones (a StatefulSet's), so
the verdict is the owner's, read as ``kubectl rollout status`` reads it (kubernetes/kubectl
pkg/polymorphichelpers/rollout_status.go, DeploymentStatusViewer and StatefulSetStatusViewer):

- a Deployment is healthy once its controller observed its spec (``status.observedGeneration`` >=
  ``metadata.generation``), every replica is of its current template (``updatedReplicas`` >= ``spec.replicas``, no
  old replica left: ``replicas`` <= ``updatedReplicas``) and ``availableReplicas`` is back to ``spec.replicas``
  (kubectl compares with updatedReplicas, equal to spec.replicas once the rollout is done); a Progressing condition
  with reason ProgressDeadlineExceeded is said (kubernetes pkg/controller/deployment/util, TimedOutReason);
- a StatefulSet once observed, with ``readyReplicas`` back to ``spec.replicas`` and, under the RollingUpdate
  strategy without a partition, ``currentRevision`` equal to ``updateRevision`` (an OnDelete one is judged by its
  ready replicas only);
- any other owner (a bare ReplicaSet, a Job, a custom controller) by its pods only: the API gives no desired count
  the gate could read without knowing the kind.

Whatever the kind, a workload with a pod Pending (not terminating) is not healthy, and the pod is named with the
scheduler's reason (its PodScheduled=False condition's message). A workload gone from the API is healthy: nothing
is left to come back. A pod without a controller is in no workload: when evicted it does not come back, which the
drain's own result says.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# kubernetes pkg/controller/deployment/util/deployment_util.go: TimedOutReason.
PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"


@dataclass(frozen=True)
class WorkloadHealth:
    """One workload's verdict: ``ref`` (``Kind namespace/name``), whether it is ``healthy``, why not (``problems``,
    each a short phrase) and its Pending pods (``pending``, ``name (reason)``)."""

    ref: str
    healthy: bool
    problems: Sequence[str] = field(default_factory=tuple)
    pending: Sequence[str] = field(default_factory=tuple)

    def describe(self) -> str:
        parts = list(self.problems)
        if self.pending:
            parts.append("pending: %s" % ", ".join(self.pending))
        return "%s (%s)" % (self.ref, "; ".join(parts))


def any_batch_gated(batch_soak_seconds: int, canary: bool, zone_order: bool) -> bool:
    """Whether the health gate judges any batch of a run (issue 27 items 1 and 7): every batch with a soak
    (``batch_soak_seconds`` > 0), the canary's last batch with ``canary``, each zone's last batch with
    ``zone_order`` (batch_order zone). The wrapper's time bounds ask it of the options (a canary asked:
    maintenance_window.gate_bound_seconds), node_replace of its plan (canary batches planned:
    phases/replace/health_gate.health_gate)."""
    return batch_soak_seconds > 0 or canary or zone_order


def parse_ref(ref: str) -> tuple[str, str, str]:
    """(kind, namespace, name) of ``Kind namespace/name`` (workload_ref's form)."""
    kind, _space, rest = ref.partition(" ")
    namespace, _slash, name = rest.partition("/")
    return kind, namespace, name


def _int(value: Any, default: int = 0) -> int:
    return default if value is None else int(value)


def _observed(obj: Mapping[str, Any]) -> bool:
    generation = _int((obj.get("metadata") or {}).get("generation"))
    observed = _int((obj.get("status") or {}).get("observedGeneration"))
    return observed >= generation and observed > 0


def deployment_problems(deployment: Mapping[str, Any]) -> list[str]:
    """What keeps a Deployment from healthy (none: healthy), in kubectl rollout status's order."""
    if not _observed(deployment):
        return ["its spec update is not observed yet"]
    status = deployment.get("status") or {}
    desired = _int((deployment.get("spec") or {}).get("replicas"), 1)
    updated = _int(status.get("updatedReplicas"))
    problems = []
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Progressing" and condition.get("reason") == PROGRESS_DEADLINE_EXCEEDED:
            problems.append("it exceeded its progress deadline")
    if updated < desired:
        problems.append("%d of %d new replicas updated" % (updated, desired))
    old = _int(status.get("replicas")) - updated
    if old > 0:
        problems.append("%d old replica(s) pending termination" % old)
    available = _int(status.get("availableReplicas"))
    if available < desired:
        problems.append("available %d/%d" % (available, desired))
    return problems


def statefulset_problems(statefulset: Mapping[str, Any]) -> list[str]:
    """What keeps a StatefulSet from healthy (none: healthy)."""
    if not _observed(statefulset):
        return ["its spec update is not observed yet"]
    spec = statefulset.get("spec") or {}
    status = statefulset.get("status") or {}
    desired = _int(spec.get("replicas"), 1)
    problems = []
    ready = _int(status.get("readyReplicas"))
    if ready < desired:
        problems.append("ready %d/%d" % (ready, desired))
    strategy = spec.get("updateStrategy") or {}
    partition = _int((strategy.get("rollingUpdate") or {}).get("partition"))
    if strategy.get("type", "RollingUpdate") == "RollingUpdate" and not partition \
            and status.get("updateRevision") and status.get("currentRevision") != status.get("updateRevision"):
        problems.append("rolling update to revision %s in progress" % status["updateRevision"])
    return problems


def pending_pods(pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """The Pending pods (not terminating) as ``namespace/name (reason)``, the reason the scheduler's message."""
    pending = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        status = pod.get("status") or {}
        if status.get("phase") != "Pending" or metadata.get("deletionTimestamp"):
            continue
        reason = next((c.get("message") or c.get("reason") for c in status.get("conditions") or []
                       if c.get("type") == "PodScheduled" and c.get("status") == "False"), None)
        pending.append("%s/%s (%s)" % (metadata.get("namespace"), metadata.get("name"), reason or "not started yet"))
    return sorted(pending)


OWNER_PROBLEMS = {"Deployment": deployment_problems, "StatefulSet": statefulset_problems}


def workload_health(ref: str, owner: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]]) -> WorkloadHealth:
    """The verdict of workload ``ref``: ``owner`` its Deployment or StatefulSet as listed (None: another kind, or
    gone), ``pods`` its pods (the reader groups them by workload_of)."""
    kind = parse_ref(ref)[0]
    if kind in OWNER_PROBLEMS and owner is None:
        return WorkloadHealth(ref, True, ("gone",))
    problems = tuple(OWNER_PROBLEMS[kind](owner)) if kind in OWNER_PROBLEMS else ()
    pending = tuple(pending_pods(pods))
    return WorkloadHealth(ref, not problems and not pending, problems, pending)


def verdict(refs: Iterable[str], owners: Mapping[str, Mapping[str, Any]],
            pods: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[WorkloadHealth]:
    """Each workload of ``refs``' verdict, by ref: ``owners`` the Deployments and StatefulSets listed, by ref;
    ``pods`` the pods listed, by their workload's ref."""
    return [workload_health(ref, owners.get(ref), pods.get(ref) or ()) for ref in sorted(set(refs))]


def unhealthy(verdicts: Iterable[WorkloadHealth]) -> list[WorkloadHealth]:
    return [health for health in verdicts if not health.healthy]


def gate_failure_message(label: str, timeout: float, failing: Sequence[WorkloadHealth]) -> str:
    """The HealthGateFailed message: the batch, the timeout and each workload still unhealthy, with why."""
    return ("%s: %d workload(s) the batch moved were not healthy again within health_gate_timeout %d s, so no "
            "further batch starts: %s. Fix them (or what keeps them off the new nodes) and rerun: it goes on with the "
            "old nodes left" % (label, len(failing), timeout, "; ".join(h.describe() for h in failing)))


def record_failed_gate(refs: Sequence[str], length: int, left_out: int = 0) -> str:
    """The journal's record of a failed gate (its health_gate_failed field, one Auto Scaling tag value of at most
    ``length`` characters): the workloads ``refs`` left unhealthy, comma-separated, as many as fit, then ``+N`` for
    the N left out, ``left_out`` (an earlier record's count, issue 27 item 1) included. A name is never cut (a cut
    name cannot be judged again): one too long to fit is left out and the names after it are still kept, so the
    record names none only when none fits on its own (a Deployment's name may be 253 characters, a tag value 256)."""
    refs = sorted(set(refs))
    value = ",".join(refs + (["+%d" % left_out] if left_out else []))
    if len(value) <= length:
        return value
    most = "+%d" % (len(refs) + left_out)  # the longest count the record may end with
    kept = []
    for ref in refs:
        if len(",".join(kept + [ref, most])) <= length:
            kept.append(ref)
    value = ",".join(kept + ["+%d" % (len(refs) + left_out - len(kept))])
    if len(value) > length:
        raise ValueError("a record of %d characters holds no count" % length)
    return value


def recorded_gate(value: str | None) -> tuple[list[str], int]:
    """(the workloads, how many more it left out) of a failed gate's record (record_failed_gate); none: no record."""
    items = [item for item in (value or "").split(",") if item]
    left = [item for item in items if item.startswith("+") and item[1:].isdigit()]
    return [item for item in items if item not in left], sum(int(item[1:]) for item in left)
