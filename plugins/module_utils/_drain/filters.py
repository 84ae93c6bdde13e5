# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which pods a drain removes, waits for, leaves or refuses (D3-D10, Z3), as kubectl's pkg/drain/filters.go:
each filter returns None (pass) or a Verdict, run in SPEC order; the first that skips or refuses decides."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.pods import (
    DO_NOT_DISRUPT,
    controller_of,
    disruption_annotation,
    has_local_storage,
    is_finished,
    is_mirror,
    parse_time,
    pod_ref,
)

if TYPE_CHECKING:
    import datetime

    from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.options import DrainOptions
    from ansible_collections.eksops.nodegroup.plugins.module_utils.members.returning_pods import ReturnTracker


WARN = "warn"      # pass, with a warning
SKIP = "skip"      # leave the pod on the node
REFUSE = "refuse"  # the pod blocks the drain of its node (D10)


class Verdict:
    def __init__(self, kind: str, reason: str) -> None:
        self.kind = kind
        self.reason = reason

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Verdict) and (self.kind, self.reason) == (other.kind, other.reason)

    def __repr__(self) -> str:
        return "Verdict(%r, %r)" % (self.kind, self.reason)


def deleting_filter(pod: Mapping[str, Any], options: DrainOptions, daemonset_exists: Callable[[str, str], bool],
                    now: datetime.datetime) -> Verdict | None:
    """D4: skip pods terminating for longer than skip_wait_for_delete_timeout (when > 0)."""
    deleted_at = parse_time((pod.get("metadata") or {}).get("deletionTimestamp"))
    timeout = options.skip_wait_for_delete_timeout
    if deleted_at is not None and timeout > 0 and (now - deleted_at).total_seconds() > timeout:
        return Verdict(SKIP, "terminating for more than %d s (skip_wait_for_delete_timeout)" % timeout)
    return None


def daemonset_filter(pod: Mapping[str, Any], options: DrainOptions, daemonset_exists: Callable[[str, str], bool],
                     now: datetime.datetime) -> Verdict | None:
    """D5: DaemonSet pods are skipped (ignore_daemonsets) or refuse; orphans go only with force."""
    controller = controller_of(pod)
    if controller is None or controller.get("kind") != "DaemonSet" or is_finished(pod):
        return None
    namespace = (pod.get("metadata") or {}).get("namespace")
    daemonset = "%s/%s" % (namespace, controller.get("name"))
    if not daemonset_exists(namespace, controller.get("name")):
        if options.force:
            return Verdict(WARN, "DaemonSet %s is gone; deleting its pod (force)" % daemonset)
        return Verdict(REFUSE, "DaemonSet %s is gone (use force to delete the pod)" % daemonset)
    if options.ignore_daemonsets:
        return Verdict(SKIP, "DaemonSet-managed pod (ignore_daemonsets)")
    return Verdict(REFUSE, "DaemonSet-managed pod (set ignore_daemonsets)")


def mirror_filter(pod: Mapping[str, Any], options: DrainOptions, daemonset_exists: Callable[[str, str], bool],
                  now: datetime.datetime) -> Verdict | None:
    """D6: static (mirror) pods cannot be evicted; skipped silently."""
    if is_mirror(pod):
        return Verdict(SKIP, "mirror pod")
    return None


def _not_to_disrupt(pod: Mapping[str, Any], options: DrainOptions, annotated: str | None, what: str) -> Verdict | None:
    """Issue 27 item 6, for a pod ``what`` (the pod, or one on the node) says is annotated ``annotated``: refused
    without force, evicted with it and a warning; None for a finished pod or no annotation."""
    if annotated is None or is_finished(pod):
        return None
    if options.force:
        return Verdict(WARN, "%s annotated %s; evicted all the same (force)" % (what, annotated))
    return Verdict(REFUSE, "%s annotated %s, which asks not to disrupt it (use force)" % (what, annotated))


def disruption_filter(pod: Mapping[str, Any], options: DrainOptions, daemonset_exists: Callable[[str, str], bool],
                      now: datetime.datetime) -> Verdict | None:
    """Issue 27 item 6: a pod annotated not to be disrupted (karpenter.sh/do-not-disrupt=true,
    cluster-autoscaler.kubernetes.io/safe-to-evict=false) refuses its node's drain; with force it is evicted, with a
    warning. (After the DaemonSet and mirror filters: the drain leaves those pods on the node anyway.)"""
    return _not_to_disrupt(pod, options, disruption_annotation(pod), "pod")


def node_disruption_filter(node: Mapping[str, Any]) -> Callable[..., Verdict | None] | None:
    """Issue 27 item 6: on a node annotated karpenter.sh/do-not-disrupt=true, every pod its drain would move
    refuses the drain without force (with force it goes, with a warning); None for a node not so annotated. Run
    after the pod filters, so that the pods the drain leaves anyway (DaemonSet, mirror) are left."""
    annotation = disruption_annotation(node, asks=(DO_NOT_DISRUPT,))
    if annotation is None:
        return None

    def filter_node(pod: Mapping[str, Any], options: DrainOptions, daemonset_exists: Callable[[str, str], bool],
                    now: datetime.datetime) -> Verdict | None:
        return _not_to_disrupt(pod, options, annotation, "on a node")

    return filter_node


def local_storage_filter(pod: Mapping[str, Any], options: DrainOptions, daemonset_exists: Callable[[str, str], bool],
                         now: datetime.datetime) -> Verdict | None:
    """D7: emptyDir data is lost; allowed (with a warning) only with delete_emptydir_data."""
    if not has_local_storage(pod) or is_finished(pod):
        return None
    if options.delete_emptydir_data:
        return Verdict(WARN, "pod with emptyDir data; the data is deleted")
    return Verdict(REFUSE, "pod with emptyDir data (set delete_emptydir_data)")


def unreplicated_filter(pod: Mapping[str, Any], options: DrainOptions, daemonset_exists: Callable[[str, str], bool],
                        now: datetime.datetime) -> Verdict | None:
    """D8: a pod without a controller is not recreated; allowed (with a warning) only with force."""
    if is_finished(pod) or controller_of(pod) is not None:
        return None
    if options.force:
        return Verdict(WARN, "pod not managed by a controller; it is not recreated (force)")
    return Verdict(REFUSE, "pod not managed by a controller (use force)")


POD_FILTERS = (deleting_filter, daemonset_filter, mirror_filter, disruption_filter, local_storage_filter,
               unreplicated_filter)


NOT_EVICTED_AGAIN = "not evicted again"


def returning_filter(tracker: ReturnTracker) -> Callable[..., Verdict | None]:
    """Z3, for pods that land on the node after it was listed (after the filters above, as kubectl's drain
    adds its own filters to the list): a pod of a workload whose pods come back to the cordoned node is not
    evicted again. Without force it refuses (the node fails, naming the workload and why); with force it is
    left on the node, to go with the node's termination."""

    def filter_returning(pod: Mapping[str, Any], options: DrainOptions, daemonset_exists: Callable[[str, str], bool],
                         now: datetime.datetime) -> Verdict | None:
        returning = tracker.arrived(pod)
        if returning is None:
            return None
        if options.force:
            return Verdict(SKIP, "%s: %s; left on the node to go with it (force)" % (returning.ref, returning.why))
        return Verdict(REFUSE, "%s came back to the cordoned node; %s" % (returning.ref, NOT_EVICTED_AGAIN))

    return filter_returning


REMOVE = "remove"  # evict (or delete)
WAIT = "wait"      # already terminating: wait for it, send nothing


class PodDecision:
    def __init__(self, pod: dict[str, Any], action: str, reason: str | None = None, warnings: Iterable[str] = ()) -> None:
        self.pod = pod
        self.action = action
        self.reason = reason
        self.warnings = list(warnings)

    def __repr__(self) -> str:
        return "PodDecision(%s, %r, %r, %r)" % (pod_ref(self.pod), self.action, self.reason, self.warnings)


def decide_pod(pod: dict[str, Any], options: DrainOptions, daemonset_exists: Callable[[str, str], bool],
               now: datetime.datetime, filters: Iterable[Callable[..., Verdict | None]] = POD_FILTERS) -> PodDecision:
    """Run the filters in SPEC order (D3); the first one that skips or refuses decides."""
    warnings = []
    for pod_filter in filters:
        verdict = pod_filter(pod, options, daemonset_exists, now)
        if verdict is None:
            continue
        if verdict.kind in (SKIP, REFUSE):
            return PodDecision(pod, verdict.kind, verdict.reason, warnings)
        warnings.append(verdict.reason)
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return PodDecision(pod, WAIT, "already terminating", warnings)
    return PodDecision(pod, REMOVE, None, warnings)


class NodePlan:
    """What draining one node means for each of its pods."""

    def __init__(self, decisions: list[PodDecision]) -> None:
        self.decisions = decisions
        self.remove = [d.pod for d in decisions if d.action == REMOVE]
        self.wait = [d.pod for d in decisions if d.action == WAIT]
        self.skipped = [dict(pod=pod_ref(d.pod), reason=d.reason) for d in decisions if d.action == SKIP]
        self.refused = [dict(pod=pod_ref(d.pod), reason=d.reason, pdb=None) for d in decisions if d.action == REFUSE]
        self.warnings = ["%s: %s" % (pod_ref(d.pod), warning) for d in decisions for warning in d.warnings]

    @property
    def blocked(self) -> bool:
        """D10: one refused pod means nothing on the node is evicted."""
        return bool(self.refused)


def plan_node(pods: Iterable[dict[str, Any]], options: DrainOptions, daemonset_exists: Callable[[str, str], bool],
              now: datetime.datetime, extra_filters: Iterable[Callable[..., Verdict | None]] = ()) -> NodePlan:
    filters = POD_FILTERS + tuple(extra_filters)
    return NodePlan([decide_pod(pod, options, daemonset_exists, now, filters) for pod in pods])


def refusal_message(node_name: str, refused: Iterable[Mapping[str, Any]]) -> str:
    """D10: every refused pod, grouped by reason."""
    by_reason = {}
    for entry in refused:
        by_reason.setdefault(entry["reason"], []).append(entry["pod"])
    parts = ["%s: %s" % (reason, ", ".join(sorted(pods))) for reason, pods in sorted(by_reason.items())]
    return "cannot drain node %s, nothing was evicted: %s" % (node_name, "; ".join(parts))
