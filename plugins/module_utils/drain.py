# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain engine: cordon, filter, evict, wait (SPEC section 3, D1-D16, with P2-P5, C1, U4, U5, Z3).

Public API (stable, used by asg_surge / nodegroup_scale_restore):

- ``drain_nodes(core_v1, node_names, options, *, log=None) -> DrainResult``
- ``cordon_nodes(core_v1, node_names, *, run_id, exclude_from_load_balancers=True, check_mode=False, log=None)``
- ``uncordon_nodes(core_v1, node_names, *, run_id=None, check_mode=False, log=None)``
- ``resolve_instance_nodes(core_v1, instance_ids, node_selector=None)`` (nodes by spec.providerID)
- ``read_nodes(core_v1, node_names)`` (the nodes, before any change)
- ``parse_label_selector(text)`` (a pod_selectors string checked as the API server parses it)
- ``undrained_instances(core_v1, instance_ids, node_selector=None)`` (the check before a termination, U5)

``options`` is a dict (or DrainOptions) with the SPEC names: drain_timeout, grace_period, force,
ignore_daemonsets, delete_emptydir_data, disable_eviction, skip_wait_for_delete_timeout, pod_selectors,
exclude_from_load_balancers, post_drain_wait, eviction_concurrency, run_id, check_mode.

The decisions (filters, eviction outcomes, deadlines, result shape) are plain functions over raw pod dicts;
the I/O around them is thin. Every API call goes through ``KubeApi`` so the run can report how many
requests it made.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import heapq
import itertools
import json
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    AUTOSCALER_ACTIVE,
    POD_EVICTION_FAILURE,
    UpgradeError,
    invalid_parameter,
    not_found,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.k8s import translate_k8s_errors
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube_watch import (
    SYSTEM_CLOCK,
    TRANSPORT_ERRORS,
    Waker,
    backoff_delay,
    list_all,
    list_then_watch,
    read_body,
    read_json,
    retry_after_seconds,
    retry_api_call,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import find_instance_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.returning_pods import (
    ReturnTracker,
    controller_ref,
    workload_of,
    workload_ref,
)

try:
    from kubernetes.client import (
        AppsV1Api,
        CoreV1Event,
        PolicyV1Api,
        V1DeleteOptions,
        V1EventSource,
        V1Eviction,
        V1ObjectMeta,
        V1ObjectReference,
        V1Preconditions,
    )
    from kubernetes.client.exceptions import ApiException
except ImportError:  # pragma: no cover - modules report the missing library through EksopsModule
    ApiException = AppsV1Api = CoreV1Event = PolicyV1Api = V1DeleteOptions = V1EventSource = None
    V1Eviction = V1ObjectMeta = V1ObjectReference = V1Preconditions = None

from ansible_collections.eksops.nodegroup.plugins.module_utils.journal import CORDONED_BY_ANNOTATION, TAG_PREFIX

EXCLUDE_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
AUTOSCALER_TAINT = "ToBeDeletedByClusterAutoscaler"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
# Z3 with force: the workloads whose pods a drain left on the node because they come back to it, as JSON
# {"run_id": ..., "workloads": ["Deployment ns/name", ...]}; the check before a termination (U5) lets their
# pods go with the node, and an uncordon by that run (or an explicit one) removes it.
LEFT_PODS_ANNOTATION = TAG_PREFIX + "left-pods"
EVENT_COMPONENT = "eksops-nodegroup"
EVENT_NAMESPACE = "default"
REASON_CORDON = "EksopsCordon"
REASON_UNCORDON = "EksopsUncordon"
REASON_DRAIN = "EksopsDrain"
REASON_DRAIN_FAILED = "EksopsDrainFailed"

# kubectl retries a PDB refusal every 5 s (D13).
PDB_RETRY_SECONDS = 5.0
# After a forced delete, how long beyond the pods' grace period we wait for them to go.
FORCE_WAIT_SLACK_SECONDS = 30
# Pods without terminationGracePeriodSeconds get the Kubernetes default.
DEFAULT_POD_GRACE_SECONDS = 30
UTC = datetime.timezone.utc
# How long a drain waits for the first LIST of a namespace's PDBs before evicting without pacing.
FIRST_LIST_WAIT_SECONDS = 30
PDB_WATCH_SECONDS = 300
MULTIPLE_PDB_MESSAGE = "more than one poddisruptionbudget"
# Any other 500 is usually passing (etcd, a webhook timing out): retried this many times with backoff before it
# fails the pod, as D13's "other errors" do; one such answer failed a whole upgrade in the fault soak.
SERVER_ERROR_RETRIES = 4
_PDB_NAME_IN_CAUSE = re.compile(r"disruption budget (\S+?)[\s.,]")

MAX_EVICTION_CONCURRENCY = 100
# Nodes cordoned (GET, PATCH, Event) at once: a batch of 100 nodes one at a time took about a minute.
NODE_CONCURRENCY = 10

DEFAULT_OPTIONS = dict(
    drain_timeout=900,
    grace_period=-1,
    force=False,
    ignore_daemonsets=True,
    delete_emptydir_data=True,
    disable_eviction=False,
    skip_wait_for_delete_timeout=0,
    pod_selectors=None,
    exclude_from_load_balancers=True,
    post_drain_wait=60,
    eviction_concurrency=10,
    run_id=None,
    check_mode=False,
)


class DrainOptions:
    """Validated drain options with the SPEC names (defaults are the upgrade defaults)."""

    def __init__(self, **options):
        unknown = sorted(set(options) - set(DEFAULT_OPTIONS))
        if unknown:
            raise invalid_parameter(unknown[0], "unknown drain option(s): %s" % ", ".join(unknown))
        values = dict(DEFAULT_OPTIONS)
        values.update(dict((key, value) for key, value in options.items() if value is not None))
        for name in ("drain_timeout", "grace_period", "skip_wait_for_delete_timeout", "post_drain_wait",
                     "eviction_concurrency"):
            values[name] = int(values[name])
        if values["drain_timeout"] <= 0:
            raise invalid_parameter("drain_timeout", "drain_timeout must be > 0 seconds, got %d"
                                    % values["drain_timeout"])
        for name in ("skip_wait_for_delete_timeout", "post_drain_wait"):
            if values[name] < 0:
                raise invalid_parameter(name, "%s must be >= 0, got %d" % (name, values[name]))
        if not 1 <= values["eviction_concurrency"] <= MAX_EVICTION_CONCURRENCY:
            raise invalid_parameter("eviction_concurrency", "eviction_concurrency must be between 1 and %d, got %d"
                                    % (MAX_EVICTION_CONCURRENCY, values["eviction_concurrency"]))
        selectors = values["pod_selectors"]
        if isinstance(selectors, (list, tuple)):
            selectors = ",".join(s.strip() for s in selectors if s and s.strip())
        try:
            # What the pod LISTs will send as labelSelector, refused here as the API server would refuse it, so
            # that no node is cordoned for a drain that cannot list its pods (issue 10 item 24).
            parse_label_selector(selectors)
        except ValueError as exc:
            raise invalid_parameter("pod_selectors", "pod_selectors %r is not a Kubernetes label selector: %s (the "
                                    "syntax: %s)" % (selectors, exc, SELECTOR_SYNTAX), value=selectors)
        values["pod_selectors"] = selectors or None
        if not values["run_id"]:
            values["run_id"] = datetime.datetime.now(UTC).strftime("drain-%Y%m%dT%H%M%SZ")
        self.__dict__.update(values)

    @classmethod
    def coerce(cls, options):
        if isinstance(options, cls):
            return options
        return cls(**dict(options or {}))

    def as_dict(self):
        return dict((key, getattr(self, key)) for key in DEFAULT_OPTIONS)


# --------------------------------------------------------------------------------------------------------
# Pure helpers over raw objects
# --------------------------------------------------------------------------------------------------------

def pod_ref(pod):
    """"namespace/name" of a pod dict."""
    metadata = pod.get("metadata") or {}
    return "%s/%s" % (metadata.get("namespace"), metadata.get("name"))


def pod_key(pod):
    metadata = pod.get("metadata") or {}
    return (metadata.get("namespace") or "", metadata.get("name"))


def pod_uid(pod):
    return (pod.get("metadata") or {}).get("uid")


def pod_instance_key(pod):
    """(namespace, name, uid): a pod recreated under the same name (StatefulSet) is another pod."""
    return pod_key(pod) + (pod_uid(pod),)


controller_of = controller_ref  # the ownerReference with controller: true, or None


def is_finished(pod):
    return ((pod.get("status") or {}).get("phase")) in ("Succeeded", "Failed")


def parse_time(value):
    """An RFC 3339 timestamp as an aware datetime (None stays None)."""
    if not value:
        return None
    text = value.replace("Z", "+00:00")
    if "." in text:
        # Python 3.8's fromisoformat wants exactly 3 or 6 fractional digits.
        head, dummy, rest = text.partition(".")
        digits = "".join(itertools.takewhile(str.isdigit, rest))
        text = head + "." + (digits + "000000")[:6] + rest[len(digits):]
    return datetime.datetime.fromisoformat(text)


def has_local_storage(pod):
    """emptyDir volumes count as local storage (D7); hostPath does not."""
    return any("emptyDir" in volume for volume in (pod.get("spec") or {}).get("volumes") or [])


def node_taint_keys(node):
    return [taint.get("key") for taint in (node.get("spec") or {}).get("taints") or []]


def node_state(node):
    """The parts of a node this engine changes, for diffs."""
    metadata = node.get("metadata") or {}
    return dict(
        unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
        labels=dict(metadata.get("labels") or {}),
        annotations=dict((key, value) for key, value in (metadata.get("annotations") or {}).items()
                         if key in (CORDONED_BY_ANNOTATION, LEFT_PODS_ANNOTATION)),
    )


def check_not_autoscaler_target(node, parameter="names"):
    """C1: never cordon or drain a node the cluster autoscaler is deleting."""
    if AUTOSCALER_TAINT in node_taint_keys(node):
        name = (node.get("metadata") or {}).get("name")
        raise UpgradeError(
            AUTOSCALER_ACTIVE,
            "node %s carries the %s taint: the cluster autoscaler is removing it; refusing to cordon or drain it"
            % (name, AUTOSCALER_TAINT), node=name, parameter=parameter)


# What a run changed on a node, in CORDONED_BY_ANNOTATION: "<run_id>" when it set both spec.unschedulable and
# the exclusion label (also what the first format of the annotation meant), "<run_id>; set=<what>" when it set
# only one of them, so an uncordon by that run undoes only its own change (an operator's cordon or label stays).
SET_UNSCHEDULABLE = "unschedulable"
SET_LABEL = "label"
_CORDON_MARK_FIELDS = frozenset((SET_UNSCHEDULABLE, SET_LABEL))
_CORDON_MARK_SEPARATOR = "; set="


def cordon_mark(run_id, fields):
    """The CORDONED_BY_ANNOTATION value saying that ``run_id`` set ``fields`` (SET_UNSCHEDULABLE, SET_LABEL)."""
    fields = frozenset(fields)
    if fields == _CORDON_MARK_FIELDS:
        return run_id
    return "%s%s%s" % (run_id, _CORDON_MARK_SEPARATOR, ",".join(sorted(fields)))


def parse_cordon_mark(value):
    """(run_id, frozenset of what it set) from a CORDONED_BY_ANNOTATION value; a bare run id means both."""
    head, separator, tail = value.rpartition(_CORDON_MARK_SEPARATOR)
    fields = frozenset(tail.split(","))
    if separator and fields <= _CORDON_MARK_FIELDS:
        return head, fields
    return value, _CORDON_MARK_FIELDS


def cordon_patch(node, run_id, exclude_from_load_balancers):
    """The merge patch that cordons (D1) and marks (U4) ``node``, or None when nothing would change."""
    state = node_state(node)
    patch = {}
    changing = set()
    if not state["unschedulable"]:
        patch["spec"] = {"unschedulable": True}
        changing.add(SET_UNSCHEDULABLE)
    if exclude_from_load_balancers and state["labels"].get(EXCLUDE_LB_LABEL) != "true":
        patch.setdefault("metadata", {})["labels"] = {EXCLUDE_LB_LABEL: "true"}
        changing.add(SET_LABEL)
    if changing:
        # The journal on the node: which run changed what, so a restore undoes only its own work. Another
        # run's mark stays; our own grows when this run sets more (an operator uncordoned in between).
        mark = state["annotations"].get(CORDONED_BY_ANNOTATION)
        owner, fields = parse_cordon_mark(mark) if mark is not None else (run_id, frozenset())
        if owner == run_id and not changing <= fields:
            patch.setdefault("metadata", {})["annotations"] = {
                CORDONED_BY_ANNOTATION: cordon_mark(run_id, fields | changing)}
    return patch or None


def uncordon_patch(node, run_id=None):
    """The merge patch that undoes a cordon, or None (nothing to do, or cordoned by another run).

    With ``run_id``, only what that run recorded setting is undone. Without it (an explicit uncordon, as
    kubectl's) the node is made schedulable; the exclusion label is removed only when our annotation says we
    set it, so a label an operator set stays.
    """
    state = node_state(node)
    mark = state["annotations"].get(CORDONED_BY_ANNOTATION)
    owner, fields = parse_cordon_mark(mark) if mark is not None else (None, frozenset())
    patch = {}
    if run_id is None or owner == run_id:
        if state["unschedulable"] and (run_id is None or SET_UNSCHEDULABLE in fields):
            patch["spec"] = {"unschedulable": None}
        if mark is not None:
            metadata = patch.setdefault("metadata", {})
            metadata["annotations"] = {CORDONED_BY_ANNOTATION: None}
            if SET_LABEL in fields and EXCLUDE_LB_LABEL in state["labels"]:
                metadata["labels"] = {EXCLUDE_LB_LABEL: None}
    left = left_pods_mark(node)
    if left is not None and (run_id is None or left[0] == run_id):
        patch.setdefault("metadata", {}).setdefault("annotations", {})[LEFT_PODS_ANNOTATION] = None
    return patch or None


def left_pods_mark(node):
    """(run_id, frozenset of "Kind ns/name") from the node's LEFT_PODS_ANNOTATION, or None (absent or unreadable)."""
    value = ((node.get("metadata") or {}).get("annotations") or {}).get(LEFT_PODS_ANNOTATION)
    try:
        parsed = json.loads(value) if value else None
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    return parsed.get("run_id"), frozenset(w for w in parsed.get("workloads") or [] if isinstance(w, str))


def apply_merge_patch(obj, patch):
    """RFC 7386 merge patch applied to a copy of ``obj`` (for check-mode diffs)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(obj) if isinstance(obj, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


# --------------------------------------------------------------------------------------------------------
# Filters (D3-D10): each returns None (pass), or a Verdict
# --------------------------------------------------------------------------------------------------------

WARN = "warn"      # pass, with a warning
SKIP = "skip"      # leave the pod on the node
REFUSE = "refuse"  # the pod blocks the drain of its node (D10)


class Verdict:
    def __init__(self, kind, reason):
        self.kind = kind
        self.reason = reason

    def __eq__(self, other):
        return isinstance(other, Verdict) and (self.kind, self.reason) == (other.kind, other.reason)

    def __repr__(self):
        return "Verdict(%r, %r)" % (self.kind, self.reason)


def deleting_filter(pod, options, daemonset_exists, now):
    """D4: skip pods terminating for longer than skip_wait_for_delete_timeout (when > 0)."""
    deleted_at = parse_time((pod.get("metadata") or {}).get("deletionTimestamp"))
    timeout = options.skip_wait_for_delete_timeout
    if deleted_at is not None and timeout > 0 and (now - deleted_at).total_seconds() > timeout:
        return Verdict(SKIP, "terminating for more than %d s (skip_wait_for_delete_timeout)" % timeout)
    return None


def daemonset_filter(pod, options, daemonset_exists, now):
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


def mirror_filter(pod, options, daemonset_exists, now):
    """D6: static (mirror) pods cannot be evicted; skipped silently."""
    if MIRROR_POD_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {}):
        return Verdict(SKIP, "mirror pod")
    return None


def local_storage_filter(pod, options, daemonset_exists, now):
    """D7: emptyDir data is lost; allowed (with a warning) only with delete_emptydir_data."""
    if not has_local_storage(pod) or is_finished(pod):
        return None
    if options.delete_emptydir_data:
        return Verdict(WARN, "pod with emptyDir data; the data is deleted")
    return Verdict(REFUSE, "pod with emptyDir data (set delete_emptydir_data)")


def unreplicated_filter(pod, options, daemonset_exists, now):
    """D8: a pod without a controller is not recreated; allowed (with a warning) only with force."""
    if is_finished(pod) or controller_of(pod) is not None:
        return None
    if options.force:
        return Verdict(WARN, "pod not managed by a controller; it is not recreated (force)")
    return Verdict(REFUSE, "pod not managed by a controller (use force)")


POD_FILTERS = (deleting_filter, daemonset_filter, mirror_filter, local_storage_filter, unreplicated_filter)


NOT_EVICTED_AGAIN = "not evicted again"


def returning_filter(tracker):
    """Z3, for pods that land on the node after it was listed (after the filters above, as kubectl's drain
    adds its own filters to the list): a pod of a workload whose pods come back to the cordoned node is not
    evicted again. Without force it refuses (the node fails, naming the workload and why); with force it is
    left on the node, to go with the node's termination."""

    def filter_returning(pod, options, daemonset_exists, now):
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
    def __init__(self, pod, action, reason=None, warnings=()):
        self.pod = pod
        self.action = action
        self.reason = reason
        self.warnings = list(warnings)

    def __repr__(self):
        return "PodDecision(%s, %r, %r, %r)" % (pod_ref(self.pod), self.action, self.reason, self.warnings)


def decide_pod(pod, options, daemonset_exists, now, filters=POD_FILTERS):
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

    def __init__(self, decisions):
        self.decisions = decisions
        self.remove = [d.pod for d in decisions if d.action == REMOVE]
        self.wait = [d.pod for d in decisions if d.action == WAIT]
        self.skipped = [dict(pod=pod_ref(d.pod), reason=d.reason) for d in decisions if d.action == SKIP]
        self.refused = [dict(pod=pod_ref(d.pod), reason=d.reason, pdb=None) for d in decisions if d.action == REFUSE]
        self.warnings = ["%s: %s" % (pod_ref(d.pod), warning) for d in decisions for warning in d.warnings]

    @property
    def blocked(self):
        """D10: one refused pod means nothing on the node is evicted."""
        return bool(self.refused)


def plan_node(pods, options, daemonset_exists, now, extra_filters=()):
    filters = POD_FILTERS + tuple(extra_filters)
    return NodePlan([decide_pod(pod, options, daemonset_exists, now, filters) for pod in pods])


def refusal_message(node_name, refused):
    """D10: every refused pod, grouped by reason."""
    by_reason = {}
    for entry in refused:
        by_reason.setdefault(entry["reason"], []).append(entry["pod"])
    parts = ["%s: %s" % (reason, ", ".join(sorted(pods))) for reason, pods in sorted(by_reason.items())]
    return "cannot drain node %s, nothing was evicted: %s" % (node_name, "; ".join(parts))


# --------------------------------------------------------------------------------------------------------
# Eviction outcomes (D13) and deadlines (D14)
# --------------------------------------------------------------------------------------------------------

ACCEPTED = "accepted"            # 2xx: the pod is being deleted; wait for it
GONE = "gone"                    # 404, or 409 on the UID precondition: the original pod is gone
PDB_BLOCKED = "pdb_blocked"      # 429 from a PodDisruptionBudget: retry every 5 s
THROTTLED = "throttled"          # 429 with Retry-After (API priority and fairness): retry after it
MULTIPLE_PDBS = "multiple_pdbs"  # 500: the pod has several PDBs; eviction can never succeed
# 502/503/504 or a connection error: retry (the UID precondition makes a repeat after an eviction the server
# did accept a 404/409).
TRANSIENT = "transient"
TERMINATING_NAMESPACE = "terminating_namespace"  # 403: namespace is being deleted; the pod goes with it
FAILED = "failed"                # anything else: this pod fails, the others go on

RETRY_OUTCOMES = (PDB_BLOCKED, THROTTLED, TRANSIENT)


class EvictionOutcome:
    def __init__(self, kind, message="", retry_in=None, pdb=None):
        self.kind = kind
        self.message = message
        self.retry_in = retry_in
        self.pdb = pdb

    def __repr__(self):
        return "EvictionOutcome(%r, %r, retry_in=%r, pdb=%r)" % (self.kind, self.message, self.retry_in, self.pdb)


def _status_body(body):
    if isinstance(body, dict):
        return body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        parsed = json.loads(body) if body else {}
    except ValueError:
        return {"message": body}
    return parsed if isinstance(parsed, dict) else {}


def classify_eviction(status, headers=None, body=None, attempt=0, rng=random, server_errors=0):
    """D13: what an eviction (or delete) response means, and when to retry.

    ``status`` is the HTTP status (None for a transport error), ``body`` the Status object (dict or JSON),
    ``server_errors`` how many plain 500s this pod's removal got before.
    """
    if status is not None and 200 <= status < 300:
        return EvictionOutcome(ACCEPTED)
    status_body = _status_body(body)
    message = status_body.get("message") or ""
    causes = (status_body.get("details") or {}).get("causes") or []
    if status is None:
        return EvictionOutcome(TRANSIENT, message or "connection error", retry_in=backoff_delay(attempt, rng=rng))
    if status in (404, 409):
        return EvictionOutcome(GONE, message)
    if status == 429:
        retry_after = retry_after_seconds(headers)
        budget_causes = [c for c in causes if c.get("type") == "DisruptionBudget"]
        pdb = None
        for cause in budget_causes:
            match = _PDB_NAME_IN_CAUSE.search((cause.get("message") or "") + " ")
            if match:
                pdb = match.group(1)
                break
        detail = "; ".join(c.get("message") for c in budget_causes if c.get("message"))
        text = "%s (%s)" % (message, detail) if detail else message
        if retry_after:
            kind = PDB_BLOCKED if budget_causes else THROTTLED
            return EvictionOutcome(kind, text, retry_in=retry_after * (1.0 + rng.uniform(0.0, 0.2)), pdb=pdb)
        # A PDB refusal carries no Retry-After: retry every 5 s with jitter, as kubectl does.
        return EvictionOutcome(PDB_BLOCKED, text, retry_in=PDB_RETRY_SECONDS * rng.uniform(0.8, 1.2), pdb=pdb)
    if status == 500 and MULTIPLE_PDB_MESSAGE in message.lower():
        return EvictionOutcome(MULTIPLE_PDBS, message)
    if status == 500 and server_errors < SERVER_ERROR_RETRIES:
        return EvictionOutcome(TRANSIENT, message or "HTTP 500", retry_in=backoff_delay(server_errors, rng=rng))
    if status == 403 and any(c.get("type") == "NamespaceTerminating" for c in causes):
        return EvictionOutcome(TERMINATING_NAMESPACE, message)
    if status in (502, 503, 504):
        retry_after = retry_after_seconds(headers)
        delay = retry_after if retry_after else backoff_delay(attempt, rng=rng)
        return EvictionOutcome(TRANSIENT, message or "HTTP %d" % status, retry_in=delay)
    return EvictionOutcome(FAILED, "HTTP %s: %s" % (status, message or "error"))


class Deadline:
    """D14: one deadline per node, shared by eviction retries and the wait for deletion."""

    def __init__(self, start, timeout):
        self.expires_at = start + timeout

    def remaining(self, now):
        return max(0.0, self.expires_at - now)

    def expired(self, now):
        return now >= self.expires_at

    def next_attempt(self, now, delay):
        """When to retry after ``delay``: never later than the deadline (the attempt then times out)."""
        return min(now + max(0.0, delay), self.expires_at)


class PdbWaitTracker:
    """Time during which at least one pod was held back by a PodDisruptionBudget (the union of the pods'
    blocked intervals: two pods blocked at once count once), measured on ``clock``.

    A pod is blocked from a PDB refusal (or the budget gate holding it) until ``release``: its removal was
    accepted, or it failed. Blocking an already blocked pod does not restart its interval.
    """

    def __init__(self, clock=SYSTEM_CLOCK):
        self._clock = clock
        self._lock = threading.Lock()
        self._blocked = set()
        self._since = None
        self._closed_seconds = 0.0

    def block(self, key):
        with self._lock:
            if not self._blocked:
                self._since = self._clock.now()
            self._blocked.add(key)

    def release(self, key):
        with self._lock:
            if key not in self._blocked:
                return
            self._blocked.discard(key)
            if not self._blocked:
                self._closed_seconds += max(0.0, self._clock.now() - self._since)
                self._since = None

    def seconds(self):
        """The blocked time so far, including a still open interval."""
        with self._lock:
            if self._blocked:
                return self._closed_seconds + max(0.0, self._clock.now() - self._since)
            return self._closed_seconds


def force_wait_seconds(pods, grace_period):
    """How long to wait for force-deleted pods: their longest grace period plus slack."""
    if grace_period >= 0:
        longest = grace_period
    else:
        longest = max([_pod_grace(pod) for pod in pods] or [0])
    return longest + FORCE_WAIT_SLACK_SECONDS


def _pod_grace(pod):
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return DEFAULT_POD_GRACE_SECONDS if value is None else int(value)


def is_gone(pod, objects):
    """D15: gone when deleted, or when a pod of that name now has another UID."""
    current = objects.get(pod_key(pod))
    return current is None or pod_uid(current) != pod_uid(pod)


# --------------------------------------------------------------------------------------------------------
# PDB matching (for failure messages)
# --------------------------------------------------------------------------------------------------------

def _integer(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def selector_matches(selector, labels):
    """A metav1.LabelSelector (dict) against a label dict; a null selector matches nothing, {} everything.

    Also takes what parse_label_selector makes of a selector string: its Gt and Lt requirements hold, as in
    the API server's labels.Selector, for a label whose value is an integer greater (or less) than the one given.
    """
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
        if operator in ("Gt", "Lt"):
            have, limit = _integer(labels.get(key)), _integer(values[0] if values else None)
            if have is None or limit is None or not (have > limit if operator == "Gt" else have < limit):
                return False
    return True


# --------------------------------------------------------------------------------------------------------
# Label selector strings (pod_selectors), parsed as the API server parses the labelSelector parameter
# (k8s.io/apimachinery/pkg/labels/selector.go: its lexer, Parser and NewRequirement's checks), so that a selector
# the server would refuse is refused before the first cordon (issue 10 item 24).
# --------------------------------------------------------------------------------------------------------

SELECTOR_SYNTAX = ("key, !key, key=value, key==value, key!=value, key in (v1,v2), key notin (v1,v2), key>n or "
                   "key<n, joined by commas")
_SELECTOR_SYMBOLS = frozenset("=!(),<>")
_SELECTOR_TOKENS = frozenset(["(", ")", ",", "!", "=", "==", "!=", ">", "<"])
_SELECTOR_SPACE = frozenset(" \t\r\n")
_SELECTOR_OPERATORS = {"in": "In", "notin": "NotIn", "=": "In", "==": "In", "!=": "NotIn", ">": "Gt", "<": "Lt"}
# k8s.io/apimachinery/pkg/util/validation: IsQualifiedName (label keys) and IsValidLabelValue.
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SIGNED_INTEGER = re.compile(r"^[+-]?[0-9]+$")


def _selector_tokens(text):
    """[(kind, literal)]: kind "id", "in", "notin", a symbol, or "end" (the lexer of labels.Parse)."""
    tokens, index = [], 0
    while index < len(text):
        char = text[index]
        if char in _SELECTOR_SPACE:
            index += 1
        elif char in _SELECTOR_SYMBOLS:
            # The longest run of symbols that is still a token ("!=", "=="); the next symbol starts a new one.
            end = index + 1
            while end < len(text) and text[end] in _SELECTOR_SYMBOLS and text[index:end + 1] in _SELECTOR_TOKENS:
                end += 1
            tokens.append((text[index:end], text[index:end]))
            index = end
        else:
            end = index
            while end < len(text) and text[end] not in _SELECTOR_SPACE and text[end] not in _SELECTOR_SYMBOLS:
                end += 1
            word = text[index:end]
            tokens.append((word if word in ("in", "notin") else "id", word))
            index = end
    tokens.append(("end", ""))
    return tokens


def _check_label_key(key):
    parts = key.split("/")
    if len(parts) > 2:
        raise ValueError("invalid label key %r: a key is a name with an optional DNS prefix and one '/'" % key)
    name = parts[-1]
    if len(parts) == 2 and not (parts[0] and len(parts[0]) <= 253 and _DNS1123_SUBDOMAIN.match(parts[0])):
        raise ValueError("invalid label key %r: its prefix must be a lowercase DNS subdomain (e.g. example.com)"
                         % key)
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        raise ValueError("invalid label key %r: the name must be 1 to 63 letters, digits, '-', '_' or '.', starting "
                         "and ending with a letter or digit" % key)


def _check_label_value(key, value, operator):
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise ValueError("invalid label value %r for key %r: at most 63 letters, digits, '-', '_' or '.', starting "
                         "and ending with a letter or digit" % (value, key))
    if operator in ("Gt", "Lt") and not _SIGNED_INTEGER.match(value):
        raise ValueError("for key %r, the value of '>' and '<' must be an integer, got %r" % (key, value))


class _SelectorParser:
    def __init__(self, text):
        self.tokens = _selector_tokens(text)
        self.position = 0

    def peek(self, values=True):
        kind, literal = self.tokens[self.position]
        # In a place where values are read, "in" and "notin" are plain words (a key or a value may be "in").
        return ("id" if values and kind in ("in", "notin") else kind), literal

    def take(self, values=True):
        token = self.peek(values)
        self.position += 1
        return token

    def parse(self):
        expressions = []
        while True:
            kind, literal = self.peek()
            if kind == "end":
                return expressions
            if kind not in ("id", "!"):
                raise ValueError("found '%s', expected: !, identifier, or 'end of string'" % literal)
            expressions.append(self.requirement())
            kind, literal = self.take()
            if kind == "end":
                return expressions
            if kind != ",":
                raise ValueError("found '%s', expected: ',' or 'end of string'" % literal)
            kind, literal = self.peek()
            if kind not in ("id", "!"):
                raise ValueError("found '%s', expected: identifier after ','" % literal)

    def requirement(self):
        negated = self.peek()[0] == "!"
        if negated:
            self.take()
        kind, key = self.take()
        if kind != "id":
            raise ValueError("found '%s', expected: identifier" % key)
        _check_label_key(key)
        if self.peek()[0] in ("end", ","):
            return dict(key=key, operator="DoesNotExist" if negated else "Exists")
        if negated:
            raise ValueError("found '%s', expected: ',' or 'end of string' after !%s" % (self.peek()[1], key))
        kind, literal = self.take(values=False)
        operator = _SELECTOR_OPERATORS.get(kind)
        if operator is None:
            raise ValueError("found '%s', expected: in, notin, =, ==, !=, >, <" % literal)
        values = self.value_set() if kind in ("in", "notin") else self.exact_value()
        for value in values:
            _check_label_value(key, value, operator)
        return dict(key=key, operator=operator, values=values)

    def exact_value(self):
        kind, literal = self.peek()
        if kind in ("end", ","):
            return [""]
        self.take()
        if kind != "id":
            raise ValueError("found '%s', expected: identifier" % literal)
        return [literal]

    def value_set(self):
        kind, literal = self.take()
        if kind != "(":
            raise ValueError("found '%s', expected: '('" % literal)
        kind, literal = self.peek()
        if kind == ")":
            self.take()
            return [""]
        if kind not in ("id", ","):
            raise ValueError("found '%s', expected: ',', ')' or identifier" % literal)
        values = []
        while True:
            kind, literal = self.take()
            if kind == "id":
                values.append(literal)
                kind, literal = self.peek()
                if kind == ")":
                    self.take()
                    return sorted(set(values))
                if kind != ",":
                    raise ValueError("found '%s', expected: ',' or ')'" % literal)
            elif kind == ",":
                # "(,a)", "(a,)" and "(a,,b)" hold the empty value, as for the API server.
                if not values or self.peek()[0] in (",", ")"):
                    values.append("")
                if self.peek()[0] == ")":
                    self.take()
                    return sorted(set(values))
            else:
                raise ValueError("found '%s', expected: ',', or identifier" % literal)


def parse_label_selector(text):
    """A label selector string (``app=web,tier in (a,b),!canary``) as a metav1.LabelSelector dict for
    selector_matches: every requirement in ``matchExpressions`` (``=``/``==`` as In and ``!=`` as NotIn with one
    value, ``>``/``<`` as Gt/Lt). Raises ValueError, saying what is wrong where the API server would refuse it;
    an empty string is the empty selector (every pod)."""
    return dict(matchExpressions=_SelectorParser(text or "").parse())


def matching_pdbs(pod, pdbs):
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return sorted((pdb.get("metadata") or {}).get("name") for pdb in pdbs
                  if selector_matches((pdb.get("spec") or {}).get("selector"), labels))


# --------------------------------------------------------------------------------------------------------
# Results (D16)
# --------------------------------------------------------------------------------------------------------

class NodeResult:
    def __init__(self, name):
        self.name = name
        self.cordoned = False
        self.changed = False
        self.evicted = []
        self.deleted = []
        self.skipped = []
        self.failed = []
        self.warnings = []
        self.error = None
        self.pdb_wait_seconds = 0.0
        # Z3: workloads whose pods came back to the cordoned node (Returning.to_dict()); not evicted again.
        self.returning_workloads = []
        self.before = None
        self.after = None

    @property
    def ok(self):
        return self.error is None

    def to_dict(self):
        return dict(cordoned=self.cordoned, changed=self.changed, evicted=sorted(self.evicted),
                    deleted=sorted(self.deleted), skipped=sorted(self.skipped, key=lambda e: e["pod"]),
                    failed=sorted(self.failed, key=lambda e: e["pod"]), warnings=list(self.warnings),
                    pdb_wait_seconds=round(self.pdb_wait_seconds, 1),
                    returning_workloads=sorted(self.returning_workloads, key=lambda e: e["workload"]), error=self.error)


class DrainResult:
    def __init__(self, node_names):
        self.nodes = dict((name, NodeResult(name)) for name in node_names)
        self.requests_made = 0

    @property
    def changed(self):
        return any(node.changed for node in self.nodes.values())

    @property
    def failed_nodes(self):
        return sorted(name for name, node in self.nodes.items() if not node.ok)

    def to_dict(self):
        return dict((name, node.to_dict()) for name, node in self.nodes.items())

    def diff(self):
        return dict(before=dict((n, r.before) for n, r in self.nodes.items() if r.before is not None),
                    after=dict((n, r.after) for n, r in self.nodes.items() if r.after is not None))

    def error(self):
        """The PodEvictionFailure for the failed nodes (they stay cordoned), or None."""
        failed = self.failed_nodes
        if not failed:
            return None
        return UpgradeError(POD_EVICTION_FAILURE, " | ".join(self.nodes[name].error for name in failed),
                            failed_nodes=failed, nodes=self.to_dict())

    def raise_for_failure(self):
        err = self.error()
        if err is not None:
            raise err


# --------------------------------------------------------------------------------------------------------
# I/O
# --------------------------------------------------------------------------------------------------------

class KubeApi:
    """The engine's API calls, counted (requests_made), with retries (P3) and per-run caches.

    Token refresh (P5) is the ApiClient's refresh_api_key_hook: every request asks the Configuration for
    its auth header, so nothing here caches credentials.
    """

    def __init__(self, core_v1, clock=SYSTEM_CLOCK):
        self.core = core_v1
        self.policy = PolicyV1Api(core_v1.api_client)
        self.apps = AppsV1Api(core_v1.api_client)
        self.clock = clock
        self._lock = threading.Lock()
        self._requests = 0
        self._daemonsets = {}
        self._pdbs = {}

    @property
    def requests_made(self):
        return self._requests

    def counted(self, fn):
        def call(*args, **kwargs):
            with self._lock:
                self._requests += 1
            return fn(*args, **kwargs)
        return call

    def _call(self, fn, *args, **kwargs):
        return retry_api_call(self.counted(fn), *args, clock=self.clock, **kwargs)

    def get_node(self, name):
        try:
            return read_json(self._call(self.core.read_node, name, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                raise not_found("names", "node %s was not found" % name, node=name)
            raise

    def patch_node(self, name, patch):
        return read_json(self._call(self.core.patch_node, name, patch, _content_type="application/merge-patch+json",
                                    _preload_content=False))

    @property
    def list_pods(self):
        return self.counted(self.core.list_pod_for_all_namespaces)

    def node_pod_selectors(self, node_name, pod_selectors):
        kwargs = dict(field_selector="spec.nodeName=%s" % node_name)
        if pod_selectors:
            kwargs["label_selector"] = pod_selectors
        return kwargs

    def remove_pod(self, pod, method, grace_period):
        """One eviction (policy/v1, D11) or DELETE, with the pod's UID as precondition and the grace period (D12)."""
        metadata = pod["metadata"]
        delete_options = V1DeleteOptions(preconditions=V1Preconditions(uid=metadata["uid"]))
        if grace_period >= 0:
            delete_options.grace_period_seconds = grace_period
        call = self.counted(self.core.create_namespaced_pod_eviction if method == "evict"
                            else self.core.delete_namespaced_pod)
        if method == "evict":
            body = V1Eviction(api_version="policy/v1", kind="Eviction",
                              metadata=V1ObjectMeta(name=metadata["name"], namespace=metadata["namespace"]),
                              delete_options=delete_options)
        else:
            body = delete_options
        read_body(call(metadata["name"], metadata["namespace"], body=body, _preload_content=False))

    def daemonset_exists(self, namespace, name):
        key = (namespace, name)
        with self._lock:
            if key in self._daemonsets:
                return self._daemonsets[key]
        try:
            read_body(self._call(self.apps.read_namespaced_daemon_set, name, namespace, _preload_content=False))
            exists = True
        except ApiException as exc:
            if exc.status != 404:
                raise
            exists = False
        with self._lock:
            self._daemonsets[key] = exists
        return exists

    def pdbs_in(self, namespace):
        with self._lock:
            if namespace in self._pdbs:
                return self._pdbs[namespace]
        items, _version = list_all(self.counted(self.policy.list_namespaced_pod_disruption_budget), clock=self.clock,
                                   namespace=namespace)
        with self._lock:
            self._pdbs[namespace] = items
        return items

    def record_event(self, node, reason, message, event_type="Normal", log=None):
        """A core/v1 Event on the Node; best effort (an event must never fail a drain)."""
        metadata = node.get("metadata") or {}
        now = datetime.datetime.now(UTC)
        event = CoreV1Event(
            metadata=V1ObjectMeta(name="%s.%x" % (metadata.get("name"), time.time_ns()), namespace=EVENT_NAMESPACE),
            involved_object=V1ObjectReference(api_version="v1", kind="Node", name=metadata.get("name"),
                                              uid=metadata.get("uid")),
            reason=reason, message=message[:1024], type=event_type, count=1, first_timestamp=now,
            last_timestamp=now, source=V1EventSource(component=EVENT_COMPONENT),
            reporting_component=EVENT_COMPONENT, reporting_instance=EVENT_COMPONENT)
        try:
            # Retried like an idempotent call (a pooled connection the server closed after a watch fails the
            # first attempt): a repeat of a create the server did serve is a 409 on the event's unique name.
            read_body(self._call(self.core.create_namespaced_event, EVENT_NAMESPACE, event, _preload_content=False))
        except Exception as exc:  # pylint: disable=broad-except
            if log is not None:
                log("could not record event %s on node %s: %s" % (reason, metadata.get("name"), exc))


def _noop_log(_message):
    pass


def _validate_names(node_names):
    names = [name for name in (node_names or []) if name]
    if not names:
        raise invalid_parameter("names", "no node names given")
    if len(set(names)) != len(names):
        raise invalid_parameter("names", "node names are repeated: %s" % ", ".join(names))
    return names


def _in_parallel(fn, items):
    """``[fn(item) for item in items]``, at most NODE_CONCURRENCY calls at once (P4); the first error is raised."""
    if len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(NODE_CONCURRENCY, len(items)), thread_name_prefix="eksops-node") as pool:
        return list(pool.map(fn, items))


def _cordon(api, names, run_id, exclude_from_load_balancers, check_mode, log):
    """Cordon and mark every node (C1 checked for all first). Returns {name: (node_after, NodeResult)}."""
    nodes = dict(zip(names, _in_parallel(api.get_node, names)))
    for node in nodes.values():
        check_not_autoscaler_target(node)

    def cordon(name):
        node = nodes[name]
        result = NodeResult(name)
        result.before = node_state(node)
        patch = cordon_patch(node, run_id, exclude_from_load_balancers)
        if patch is not None and not check_mode:
            node = api.patch_node(name, patch)
            message = "cordoned by eksops.nodegroup run %s" % run_id
            if exclude_from_load_balancers:
                message += "; excluded from external load balancers"
            api.record_event(node, REASON_CORDON, message, log=log)
            log("node %s: %s" % (name, message))
        elif patch is not None:
            node = apply_merge_patch(node, patch)
        result.after = node_state(node)
        result.changed = patch is not None
        result.cordoned = result.after["unschedulable"]
        return node, result

    return dict(zip(names, _in_parallel(cordon, names)))


def read_nodes(core_v1, node_names):
    """({name: raw node}, requests made) for ``node_names``; ResourceNotFound naming the first unknown node."""
    names = _validate_names(node_names)
    api = KubeApi(core_v1)
    with translate_k8s_errors("read nodes"):
        nodes = dict(zip(names, _in_parallel(api.get_node, names)))
    return nodes, api.requests_made


def cordon_nodes(core_v1, node_names, *, run_id, exclude_from_load_balancers=True, check_mode=False, log=None):
    """D1/U4/C1: cordon (and label) every node; no-op for nodes already set. Returns a DrainResult."""
    names = _validate_names(node_names)
    api = KubeApi(core_v1)
    result = DrainResult(names)
    with translate_k8s_errors("cordon nodes"):
        for name, (_node, node_result) in _cordon(api, names, run_id, exclude_from_load_balancers, check_mode,
                                                  log or _noop_log).items():
            result.nodes[name] = node_result
    result.requests_made = api.requests_made
    return result


def uncordon_nodes(core_v1, node_names, *, run_id=None, check_mode=False, log=None):
    """Undo a cordon. With ``run_id``, only nodes cordoned by that run are touched. Returns a DrainResult."""
    names = _validate_names(node_names)
    log = log or _noop_log
    api = KubeApi(core_v1)
    result = DrainResult(names)
    with translate_k8s_errors("uncordon nodes"):
        for name in names:
            node = api.get_node(name)
            node_result = result.nodes[name]
            node_result.before = node_state(node)
            patch = uncordon_patch(node, run_id)
            if patch is not None and not check_mode:
                node = api.patch_node(name, patch)
                api.record_event(node, REASON_UNCORDON, "uncordoned by eksops.nodegroup", log=log)
                log("node %s: uncordoned" % name)
            elif patch is not None:
                node = apply_merge_patch(node, patch)
            node_result.after = node_state(node)
            node_result.changed = patch is not None
            node_result.cordoned = node_result.after["unschedulable"]
    result.requests_made = api.requests_made
    return result


def nodes_of_instances(api, instance_ids, node_selector=None):
    """nodegroup.find_instance_nodes through this engine's counted API."""
    return find_instance_nodes(api.counted(api.core.list_node), instance_ids, node_selector, clock=api.clock)


def resolve_instance_nodes(core_v1, instance_ids, node_selector=None):
    """{instance_id: node name or None} and the number of requests made (see nodes_of_instances)."""
    if not instance_ids:
        return {}, 0
    api = KubeApi(core_v1)
    with translate_k8s_errors("find the nodes of instances %s" % ", ".join(instance_ids)):
        nodes = nodes_of_instances(api, instance_ids, node_selector)
    names = dict((instance_id, nodes[instance_id]["metadata"]["name"] if instance_id in nodes else None)
                 for instance_id in instance_ids)
    return names, api.requests_made


def pod_outlives_node(pod):
    """Whether a pod still on a node is lost when the node's instance goes (U5: terminate only empty nodes).

    DaemonSet and mirror pods belong to the node, finished pods hold nothing; every other pod counts, also one
    already terminating (it may still be serving or stopping).
    """
    if is_finished(pod) or MIRROR_POD_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {}):
        return False
    controller = controller_of(pod)
    return controller is None or controller.get("kind") != "DaemonSet"


def termination_problem(instance_id, node, pods):
    """Why the instance of ``node`` must not be terminated yet (a dict naming the node and pods), or None.

    Pods of the workloads a forced drain left on the node because they come back to it (Z3,
    LEFT_PODS_ANNOTATION) go with it.
    """
    cordoned = bool((node.get("spec") or {}).get("unschedulable"))
    left = (left_pods_mark(node) or (None, frozenset()))[1]
    blocking = sorted(pod_ref(pod) for pod in pods if pod_outlives_node(pod)
                      and not (workload_of(pod) and workload_ref(workload_of(pod)) in left))
    if cordoned and not blocking:
        return None
    return dict(instance_id=instance_id, node=node["metadata"]["name"], cordoned=cordoned, pods=blocking)


def termination_problems_message(problems):
    parts = []
    for problem in problems:
        why = []
        if not problem["cordoned"]:
            why.append("is not cordoned")
        if problem["pods"]:
            why.append("still runs %d pod(s) that are not DaemonSet, mirror or finished pods: %s"
                       % (len(problem["pods"]), ", ".join(problem["pods"])))
        parts.append("instance %s: node %s %s" % (problem["instance_id"], problem["node"], " and ".join(why)))
    return "refusing to terminate undrained instances (drain them first with node_drain): %s" % "; ".join(parts)


def undrained_instances(core_v1, instance_ids, node_selector=None):
    """The termination problems of ``instance_ids`` (see termination_problem), and the requests made."""
    check = termination_check(core_v1, instance_ids, node_selector)
    return check["problems"], check["requests"]


def termination_check(core_v1, instance_ids, node_selector=None):
    """{problems, nodeless, requests}: the termination problems of ``instance_ids`` (see termination_problem),
    the instances that have no node, and the requests made.

    One node LIST (see nodes_of_instances), then one pod LIST per node found (``spec.nodeName`` field
    selector, P2); an instance without a node has no problem.
    """
    if not instance_ids:
        return dict(problems=[], nodeless=[], requests=0)
    api = KubeApi(core_v1)
    problems = []
    with translate_k8s_errors("check that the nodes of instances %s are drained" % ", ".join(instance_ids)):
        nodes = nodes_of_instances(api, instance_ids, node_selector)
        for instance_id in instance_ids:
            node = nodes.get(instance_id)
            if node is None:
                continue
            pods, _version = list_all(api.list_pods, clock=api.clock,
                                      **api.node_pod_selectors(node["metadata"]["name"], None))
            problem = termination_problem(instance_id, node, pods)
            if problem is not None:
                problems.append(problem)
    return dict(problems=problems, nodeless=[i for i in instance_ids if i not in nodes], requests=api.requests_made)


class BudgetGate:
    """Paces evictions by the PodDisruptionBudgets' own ``status.disruptionsAllowed`` (P1, P4, S5).

    kubectl sends every eviction at once and retries each refused pod every 5 s, so a budget that allows one
    disruption at a time costs a 429 per blocked pod per 5 s. Here one LIST+WATCH of the PDBs per namespace
    keeps the budgets' state current; an eviction of a pod covered by exactly one PDB is sent only while that
    budget has a disruption left (counted down locally as evictions are accepted, corrected by every watch
    event). Pods waiting for a budget hold no worker and cost no request: they are parked and released when
    the watch shows the budget has room again. In case our view is behind the server's, one eviction per
    budget is still sent every PDB_RETRY_SECONDS (kubectl's retry interval, but per budget instead of per
    pod). Pods covered by no PDB or by several go straight to the server, which decides.
    """

    def __init__(self, api, scheduler, log):
        self.api = api
        self.scheduler = scheduler
        self.log = log
        self._lock = threading.Lock()
        self._namespaces = {}   # namespace -> {"ready": Event, "pdbs": list or None, "waker": Waker}
        self._allowed = {}      # (namespace, pdb name) -> disruptions we may still spend
        self._parked = {}       # (namespace, pdb name) -> [jobs]
        self._last_probe = {}   # (namespace, pdb name) -> clock time of the last eviction sent without room
        self._stopped = False

    def budget_of(self, pod):
        """The (namespace, name) of the pod's only PDB, or None (no PDB, several, or PDBs not watchable)."""
        namespace = pod["metadata"].get("namespace")
        state = self._namespace(namespace)
        state["ready"].wait(FIRST_LIST_WAIT_SECONDS)
        pdbs = state["pdbs"]
        if not pdbs:
            return None
        names = matching_pdbs(pod, pdbs)
        return (namespace, names[0]) if len(names) == 1 else None

    def admit(self, job, now):
        """Whether ``job`` may send its eviction now; otherwise it is parked until the budget has room."""
        if job.budget is None:
            return True
        with self._lock:
            if self._allowed.get(job.budget, 0) > 0:
                self._allowed[job.budget] -= 1
                return True
            last_probe = self._last_probe.get(job.budget)
            if last_probe is None or now - last_probe >= PDB_RETRY_SECONDS:
                self._last_probe[job.budget] = now
                return True
            self._park(job)
            return False

    def refused(self, job):
        """The server refused although our view had room: our view was stale."""
        if job.budget is None:
            return
        with self._lock:
            self._allowed[job.budget] = 0
            self._park(job)

    def _park(self, job):
        parked = self._parked.setdefault(job.budget, [])
        if job not in parked:
            parked.append(job)

    def stop(self):
        with self._lock:
            self._stopped = True
            states = list(self._namespaces.values())
        for state in states:
            state["waker"].wake()

    def _namespace(self, namespace):
        with self._lock:
            state = self._namespaces.get(namespace)
            if state is None:
                state = dict(ready=threading.Event(), pdbs=None, waker=Waker())
                self._namespaces[namespace] = state
                thread = threading.Thread(target=self._watch, args=(namespace, state),
                                          name="eksops-pdb-%s" % namespace)
                thread.daemon = True
                thread.start()
        return state

    def _watch(self, namespace, state):
        list_func = self.api.counted(self.api.policy.list_namespaced_pod_disruption_budget)

        def update(objects):
            self._update(namespace, state, objects)
            return self._stopped

        try:
            while not self._stopped:
                list_then_watch(list_func, timeout=PDB_WATCH_SECONDS, condition=update, waker=state["waker"],
                                clock=self.api.clock, namespace=namespace)
        except Exception as exc:  # pylint: disable=broad-except
            # Without the PDBs' state every eviction goes to the server, as kubectl does.
            self.log("cannot watch PodDisruptionBudgets in namespace %s (%s); evicting without pacing"
                     % (namespace, exc))
            with self._lock:
                state["pdbs"] = []
                released = [job for key, jobs in self._parked.items() if key[0] == namespace for job in jobs]
                for key in [key for key in self._parked if key[0] == namespace]:
                    del self._parked[key]
            for job in released:
                job.budget = None
                self.scheduler.submit(job)
        finally:
            state["ready"].set()

    def _update(self, namespace, state, objects):
        released = []
        with self._lock:
            state["pdbs"] = list(objects.values())
            for pdb in state["pdbs"]:
                key = (namespace, pdb["metadata"]["name"])
                allowed = int((pdb.get("status") or {}).get("disruptionsAllowed") or 0)
                self._allowed[key] = allowed
                parked = self._parked.get(key) or []
                while parked and len(released) < allowed:
                    released.append(parked.pop(0))
        state["ready"].set()
        for job in released:
            self.scheduler.submit(job)


class _Job:
    """Removing one pod: one attempt per run(); rescheduled while the outcome says retry."""

    def __init__(self, drain, pod, method, deadline):
        self.drain = drain
        self.pod = pod
        self.method = method
        self.deadline = deadline
        self.attempt = 0
        self.server_errors = 0
        self.budget = None
        self.budget_known = False
        self.done = False
        self._running = threading.Lock()

    def run(self):
        """One attempt; returns when to try again (a clock time), or None when done.

        A job parked by the budget gate is queued twice (its fallback retry and the gate's release): the
        second run finds it running or done and does nothing.
        """
        if not self._running.acquire(False):
            return None
        try:
            if self.done:
                return None
            return self.drain.attempt_removal(self)
        finally:
            self._running.release()


class EvictionScheduler:
    """P4: at most ``concurrency`` removal requests in flight across all nodes of a batch.

    Jobs waiting to retry (PDB refusals, Retry-After) hold no worker: they sit in a heap ordered by due time.
    """

    def __init__(self, concurrency, clock=SYSTEM_CLOCK):
        self._clock = clock
        self._cond = threading.Condition()
        self._heap = []
        self._sequence = itertools.count()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name="eksops-evict-%d" % i)
                         for i in range(concurrency)]
        for thread in self._threads:
            thread.daemon = True
            thread.start()

    def submit(self, job, due=None):
        with self._cond:
            heapq.heappush(self._heap, (self._clock.now() if due is None else due, next(self._sequence), job))
            self._cond.notify()

    def cancel(self, predicate):
        """Remove the queued jobs matching ``predicate``; returns them."""
        with self._cond:
            removed = [entry[2] for entry in self._heap if predicate(entry[2])]
            self._heap = [entry for entry in self._heap if not predicate(entry[2])]
            heapq.heapify(self._heap)
        return removed

    def close(self):
        with self._cond:
            self._closed = True
            self._heap = []
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()

    def _next_job(self):
        with self._cond:
            while True:
                if self._closed:
                    return None
                if self._heap:
                    wait = self._heap[0][0] - self._clock.now()
                    if wait <= 0:
                        return heapq.heappop(self._heap)[2]
                    self._cond.wait(wait)
                else:
                    self._cond.wait()

    def _work(self):
        while True:
            job = self._next_job()
            if job is None:
                return
            due = job.run()
            if due is not None:
                self.submit(job, due)


# Pod removal states
PENDING = "pending"
REQUESTED = "requested"   # eviction/delete accepted; waiting for the pod to go
SETTLED_GONE = "gone"
SETTLED_FAILED = "failed"
SETTLED_LEFT = "left"     # Z3 with force: a pod of a workload that comes back, left on the node


class _PodState:
    def __init__(self, pod, state=PENDING):
        self.pod = pod
        self.state = state
        self.reason = None
        self.pdb = None
        self.pdb_related = False
        self.job = None


class _NodeDrain:
    """Draining one node: LIST, plan, remove through the shared scheduler, watch until gone (D2-D16)."""

    def __init__(self, engine, node, result):
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

    def log(self, message):
        self.engine.log("node %s: %s" % (self.name, message))

    def run(self):
        try:
            self._run()
        finally:
            for returning in self.returns.returning():
                self.result.returning_workloads.append(returning.to_dict())

    def _run(self):
        options = self.options
        clock = self.api.clock
        deadline = Deadline(clock.now(), options.drain_timeout)
        list_kwargs = self.api.node_pod_selectors(self.name, options.pod_selectors)
        items, resource_version = list_all(self.api.list_pods, deadline=deadline.expires_at, clock=clock,
                                           **list_kwargs)
        self.seen.update(pod_instance_key(pod) for pod in items)
        plan = plan_node(items, options, self.api.daemonset_exists, datetime.datetime.now(UTC))
        result = self.result
        result.skipped.extend(plan.skipped)
        result.warnings.extend(plan.warnings)
        if plan.blocked:
            result.failed.extend(plan.refused)
            result.error = refusal_message(self.name, plan.refused)
            self._finish_failed()
            return
        method = "delete" if options.disable_eviction else "evict"
        if plan.remove:
            result.changed = True
        if options.check_mode:
            (result.deleted if method == "delete" else result.evicted).extend(pod_ref(p) for p in plan.remove)
            return
        to_remove, to_wait, listed = plan.remove, plan.wait, (items, resource_version)
        forced = False
        # Pods land on a cordoned node (Z3: a Deployment tolerating every taint, pods bound by spec.nodeName):
        # each round removes what the node holds, then post_drain_wait watches for newcomers. A pod of a
        # workload this drain removed pods of comes back at most once or twice before the returning filter
        # stops evicting that workload (refused without force, left with it). Every round but the first needs
        # a newcomer, and newcomers after the deadline (after the one forced round, with force) fail the node,
        # so this ends.
        while True:
            remaining = []
            if not self.late_refused:
                remaining, objects = self._remove_and_wait(to_remove, to_wait, method, deadline, listed)
            if remaining and options.force and not forced and not self.late_refused:
                forced = True
                self.log("force: deleting %d pod(s) that eviction did not remove" % len(remaining))
                force_deadline = Deadline(clock.now(),
                                          force_wait_seconds([s.pod for s in remaining], options.grace_period))
                remaining, objects = self._remove_and_wait([s.pod for s in remaining], [], "delete", force_deadline,
                                                           None)
            if remaining or self.late_refused:
                self._record_failures(remaining, deadline)
                self._finish_failed()
                return
            # U5: wait even when nothing was evicted (a node cordoned and labelled earlier, holding only
            # DaemonSet pods): the load balancers still need the time to drop it before it is terminated.
            if not options.post_drain_wait:
                break
            self.log("empty; waiting post_drain_wait=%d s" % options.post_drain_wait)
            # Watched from the last LIST's resourceVersion over what the node held since: the replay also shows
            # pods that came between the end of the last watch and now, and costs no LIST.
            arrived = self._watch_for_arrivals(options.post_drain_wait, (list(objects.values()), resource_version))
            if arrived is None:
                break
            items, resource_version = list_all(self.api.list_pods, deadline=deadline.expires_at, clock=clock,
                                               **list_kwargs)
            to_remove, to_wait, listed = arrived.remove, arrived.wait, (items, resource_version)
        summary = "drained: %d pod(s) evicted, %d deleted" % (len(result.evicted), len(result.deleted))
        returning = self.returns.returning()
        if returning:
            self._record_left(returning)
            summary += "; left %s (force)" % "; ".join(
                "%d pod(s) of %s" % (len(r.pods), r.describe()) for r in returning)
        if result.changed:
            self.api.record_event(self.node, REASON_DRAIN, summary, log=self.engine.log)
        self.log(summary)

    def _adopt(self, objects):
        """Plan the pods that appeared on the node since it was listed; returns their NodePlan, or None.

        Skips and warnings are recorded; a refused newcomer fails the node (``late_refused``).
        """
        new = [pod for pod in objects.values() if pod_instance_key(pod) not in self.seen]
        if not new:
            return None
        self.seen.update(pod_instance_key(pod) for pod in new)
        plan = plan_node(new, self.options, self.api.daemonset_exists, datetime.datetime.now(UTC),
                         (self.returning_filter,))
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

    def _watch_for_arrivals(self, seconds, listed):
        """Watch the node's pods for ``seconds`` from ``listed`` ((pods, resourceVersion) as list_then_watch
        takes it); the NodePlan of the pods that arrived (to remove, to wait for, or refused), or None."""
        arrived = []

        def newcomer(objects):
            plan = self._adopt(objects)
            if plan is not None and (plan.remove or plan.wait or plan.refused):
                arrived.append(plan)
            return bool(arrived)

        list_kwargs = self.api.node_pod_selectors(self.name, self.options.pod_selectors)
        list_then_watch(self.api.list_pods, timeout=seconds, condition=newcomer, listed=listed, clock=self.api.clock,
                        **list_kwargs)
        return arrived[0] if arrived else None

    def _leave_returning(self):
        """Z3 with force: the queued removals of pods of workloads that come back are dropped; their pods are
        left on the node (the jobs in flight see the flag in attempt_removal)."""
        for job in self.engine.scheduler.cancel(lambda job: job.drain is self and self.returns.flagged(job.pod)):
            self._leave(job.pod)

    def _leave(self, pod):
        returning = self.returns.flagged(pod)
        if not self._settle(pod, SETTLED_LEFT, reason="%s; left on the node" % returning.ref):
            return
        ref = pod_ref(pod)
        returning.pods.append(ref)
        self.result.skipped.append(dict(pod=ref, reason="%s: %s; left on the node to go with it (force)"
                                        % (returning.ref, returning.why)))
        self.log("%s: not evicted: %s" % (ref, returning.describe()))

    def _record_left(self, returning):
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

    def _finish_failed(self):
        self.log(self.result.error)
        if not self.options.check_mode:
            self.api.record_event(self.node, REASON_DRAIN_FAILED, self.result.error, "Warning", log=self.engine.log)

    def _remove_and_wait(self, to_remove, to_wait, method, deadline, listed):
        """Remove pods and wait until every one is gone or failed, or the deadline. Returns the _PodStates left
        and the node's pods as last seen.

        Pods that land on the node meanwhile are removed the same way (with ``method``, within ``deadline``);
        a newcomer that a filter refuses ends the wait at once.
        """
        tracked = []
        clock = self.api.clock

        def track(removals, waits):
            for pod in waits:
                state = self.pods[pod_instance_key(pod)] = _PodState(pod, REQUESTED)
                tracked.append(state)
            for pod in removals:
                state = self.pods[pod_instance_key(pod)] = _PodState(pod)
                tracked.append(state)
                job = _Job(self, pod, method, deadline)
                with self.lock:
                    self.in_flight += 1
                    state.job = job
                # Z3: a pod of a workload that lost one to this drain and came back waits a jittered backoff.
                delay = self.returns.take_delay(pod)
                self.engine.scheduler.submit(job, deadline.next_attempt(clock.now(), delay) if delay else None)

        track(to_remove, to_wait)

        def settled(objects):
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

    def _stop_jobs(self):
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

    def _unremoved_reason(self, job):
        returning = self.returns.flagged(job.pod)
        if returning is not None:
            return "%s came back to the cordoned node; %s" % (returning.ref, NOT_EVICTED_AGAIN)
        if job.deadline.expired(self.api.clock.now()):
            return "not removed within the deadline"
        return "not evicted: the drain of the node stopped"

    def _settle(self, pod, state, reason=None, pdb=None, pdb_related=False):
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

    def _held_by_pdb(self, job):
        """Count PDB wait for ``job``'s pod (caller holds self.lock); a settled job may still be finishing an
        attempt: it stays released."""
        if not job.done:
            self.pdb_wait.block(pod_instance_key(job.pod))

    def attempt_removal(self, job):
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
                        pod_state.reason = "PodDisruptionBudget %s allows no disruption" % job.budget[1]
                    pod_state.pdb = job.budget[1]
                    pod_state.pdb_related = True
                    self._held_by_pdb(job)
                return job.deadline.next_attempt(now, PDB_RETRY_SECONDS * random.uniform(0.8, 1.2))
        outcome = self._send(job)
        job.attempt += 1
        ref = pod_ref(job.pod)
        if outcome.kind == ACCEPTED:
            (self.result.evicted if job.method == "evict" else self.result.deleted).append(ref)
            self._settle(job.pod, REQUESTED)
            return None
        if outcome.kind in (GONE, TERMINATING_NAMESPACE):
            self._settle(job.pod, REQUESTED)
            return None
        pdb_related = outcome.kind in (PDB_BLOCKED, MULTIPLE_PDBS)
        if outcome.kind == PDB_BLOCKED and gate is not None and job.method == "evict":
            gate.refused(job)
        if outcome.kind in RETRY_OUTCOMES:
            with self.lock:
                pod_state.reason = outcome.message
                pod_state.pdb = outcome.pdb or pod_state.pdb
                pod_state.pdb_related = pod_state.pdb_related or pdb_related
                if outcome.kind == PDB_BLOCKED:
                    self._held_by_pdb(job)
            if outcome.kind != PDB_BLOCKED:
                self.log("%s: %s %s; retrying in %.1f s" % (ref, job.method, outcome.message, outcome.retry_in))
            return job.deadline.next_attempt(now, outcome.retry_in)
        self.log("%s: %s failed: %s" % (ref, job.method, outcome.message))
        self._settle(job.pod, SETTLED_FAILED, reason=outcome.message, pdb=outcome.pdb, pdb_related=pdb_related)
        return None

    def _send(self, job):
        """One removal request; its EvictionOutcome. The ReturnTracker sees it sent and whether it was accepted
        (a replacement may land before the answer)."""
        self.returns.sending(job.pod)
        outcome = None
        try:
            self.api.remove_pod(job.pod, job.method, self.options.grace_period)
            outcome = classify_eviction(200)
        except ApiException as exc:
            outcome = classify_eviction(exc.status, exc.headers, exc.body, job.attempt,
                                        server_errors=job.server_errors)
            job.server_errors += exc.status == 500
        except TRANSPORT_ERRORS as exc:
            outcome = classify_eviction(None, None, str(exc), job.attempt)
        finally:
            self.returns.sent(job.pod, outcome is not None and outcome.kind == ACCEPTED)
        return outcome

    def _record_failures(self, remaining, deadline):
        entries = list(self.late_refused)
        for state in remaining:
            reason = state.reason or ("still terminating" if state.state == REQUESTED else "not removed")
            if deadline.expired(self.api.clock.now()):
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
        self.result.failed.extend(entries)
        details = ", ".join("%s (%s%s)" % (e["pod"], e["reason"],
                                           "; PodDisruptionBudget %s" % e["pdb"] if e["pdb"] else "")
                            for e in sorted(entries, key=lambda e: e["pod"]))
        lead = ""
        for returning in self.returns.returning():
            if self.options.force:
                advice = "its pods were left on the node (force)"
            else:
                advice = ("stopped evicting it, it would never leave (%s, or drain with force to leave its pods to go "
                          "with the node)" % returning.remedy)
            lead += "%s; %s; " % (returning.describe(), advice)
        self.result.error = ("node %s stays cordoned: %s%d pod(s) could not be evicted: %s"
                             % (self.name, lead, len(entries), details))


class _Engine:
    def __init__(self, api, options, log):
        self.api = api
        self.options = options
        self.log = log
        self.scheduler = None
        self.gate = None


def drain_nodes(core_v1, node_names, options, *, log=None):
    """Cordon all ``node_names`` (D1), then drain them concurrently (D2-D16). Returns a DrainResult.

    Raises UpgradeError before touching anything for bad options, unknown nodes and nodes the cluster
    autoscaler is deleting (C1). Pod-level failures do not raise: the DrainResult records them per node
    (the node stays cordoned) and ``result.raise_for_failure()`` turns them into a PodEvictionFailure.
    In check mode nothing is changed and the result lists what would be evicted, deleted, skipped or refused.
    """
    options = DrainOptions.coerce(options)
    names = _validate_names(node_names)
    log = log or _noop_log
    api = KubeApi(core_v1)
    engine = _Engine(api, options, log)
    result = DrainResult(names)
    with translate_k8s_errors("drain nodes"):
        cordoned = _cordon(api, names, options.run_id, options.exclude_from_load_balancers, options.check_mode, log)
        drains = []
        for name in names:
            node, node_result = cordoned[name]
            result.nodes[name] = node_result
            drains.append(_NodeDrain(engine, node, node_result))
        if not options.check_mode:
            engine.scheduler = EvictionScheduler(options.eviction_concurrency, clock=api.clock)
            if not options.disable_eviction:
                engine.gate = BudgetGate(api, engine.scheduler, log)
        try:
            with ThreadPoolExecutor(max_workers=len(drains), thread_name_prefix="eksops-drain") as pool:
                futures = [pool.submit(drain.run) for drain in drains]
                errors = [future.exception() for future in futures]
        finally:
            if engine.gate is not None:
                engine.gate.stop()
            if engine.scheduler is not None:
                engine.scheduler.close()
        for error in errors:
            if error is not None:
                raise error
    result.requests_made = api.requests_made
    return result


__all__ = [
    "DrainOptions", "DrainResult", "NodeResult", "drain_nodes", "cordon_nodes", "uncordon_nodes", "read_nodes",
    "parse_label_selector", "resolve_instance_nodes", "undrained_instances", "termination_problems_message",
    "EXCLUDE_LB_LABEL", "CORDONED_BY_ANNOTATION", "AUTOSCALER_TAINT",
]
