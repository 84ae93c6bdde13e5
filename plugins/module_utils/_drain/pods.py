# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading pods: references, phase, timestamps, storage, grace period (pure, over raw pod dicts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
import datetime
import itertools

from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import object_key
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.returning_pods import controller_ref


MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
# Issue 27 item 6: what asks other tools not to disrupt a pod or a node, and the value that asks it. Karpenter
# (karpenter.sh docs, "Disruption": a pod or node annotated karpenter.sh/do-not-disrupt: "true" blocks Karpenter's
# voluntary disruption of its node) and the cluster autoscaler (FAQ, "What types of pods can prevent CA from
# removing a node?": cluster-autoscaler.kubernetes.io/safe-to-evict: "false").
DO_NOT_DISRUPT = ("karpenter.sh/do-not-disrupt", "true")
NOT_SAFE_TO_EVICT = ("cluster-autoscaler.kubernetes.io/safe-to-evict", "false")
# Pods without terminationGracePeriodSeconds get the Kubernetes default.
DEFAULT_POD_GRACE_SECONDS = 30


def pod_ref(pod: Mapping[str, Any]) -> str:
    """"namespace/name" of a pod dict."""
    metadata = pod.get("metadata") or {}
    return "%s/%s" % (metadata.get("namespace"), metadata.get("name"))


def pod_uid(pod: Mapping[str, Any]) -> str | None:
    return (pod.get("metadata") or {}).get("uid")


def pod_instance_key(pod: Mapping[str, Any]) -> tuple[str, str | None, str | None]:
    """(namespace, name, uid): a pod recreated under the same name (StatefulSet) is another pod."""
    return object_key(pod) + (pod_uid(pod),)


controller_of = controller_ref  # the ownerReference with controller: true, or None


def is_finished(pod: Mapping[str, Any]) -> bool:
    return ((pod.get("status") or {}).get("phase")) in ("Succeeded", "Failed")


def parse_time(value: str | None) -> datetime.datetime | None:
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


def has_local_storage(pod: Mapping[str, Any]) -> bool:
    """emptyDir volumes count as local storage (D7); hostPath does not."""
    return any("emptyDir" in volume for volume in (pod.get("spec") or {}).get("volumes") or [])


def pod_grace(pod: Mapping[str, Any]) -> int:
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return DEFAULT_POD_GRACE_SECONDS if value is None else int(value)


def is_gone(pod: Mapping[str, Any], objects: Mapping[tuple[str, str | None], Mapping[str, Any]]) -> bool:
    """D15: gone when deleted, or when a pod of that name now has another UID."""
    current = objects.get(object_key(pod))
    return current is None or pod_uid(current) != pod_uid(pod)


def is_mirror(pod: Mapping[str, Any]) -> bool:
    """D6: a static pod's mirror; the API server refuses to evict it."""
    return MIRROR_POD_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def pod_outlives_node(pod: Mapping[str, Any]) -> bool:
    """Whether a pod still on a node is lost when the node's instance goes (U5: terminate only empty nodes), which
    is what a drain takes off the node (EKS's drain, like kubectl's, leaves the others).

    DaemonSet and mirror pods belong to the node, finished pods hold nothing; every other pod counts, also one
    already terminating (it may still be serving or stopping).
    """
    if is_finished(pod) or is_mirror(pod):
        return False
    controller = controller_of(pod)
    return controller is None or controller.get("kind") != "DaemonSet"


def disruption_annotation(obj: Mapping[str, Any], asks: tuple[tuple[str, str], ...] = (DO_NOT_DISRUPT, NOT_SAFE_TO_EVICT)
                          ) -> str | None:
    """The first annotation of a pod or node (``obj``) among ``asks`` that asks not to be disrupted, as
    ``key=value``, or None (issue 27 item 6)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    for key, value in asks:
        if str(annotations.get(key, "")).lower() == value:
            return "%s=%s" % (key, value)
    return None
