# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Server-side printing: the `Table` (meta.k8s.io/v1) an API server answers a GET, LIST or WATCH with when the
client asks for one (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), as `kubectl get` does.

Modelled on the real API server (kubernetes/kubernetes, release 1.32), never on what a client expects:

- `pkg/printers/internalversion/printers.go`: AddHandlers (the column definitions of each type) and the
  print functions (printPod, printNode, printEvent, printPodDisruptionBudget, printDeployment,
  printReplicaSet, printDaemonSet, printNamespace) that compute the cells.
- `pkg/printers/storage/storage.go` (TableConvertor.ConvertToTable): the server always generates the table
  with `GenerateOptions{Wide: true}`, so every column, priority 1 ones included, is in the answer; kubectl
  hides priority > 0 columns unless `-o wide`.
- `pkg/printers/tablegenerator.go` (GenerateTable): no columnDefinitions when NoHeaders; the table's metadata
  is the list's resourceVersion, continue and remainingItemCount, or the object's resourceVersion.
- `staging/src/k8s.io/apiserver/pkg/registry/rest/table.go` (defaultTableConvertor): what a type without
  printers gets, Name and "Created At" (type date, RFC 3339).
- `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response.go` (asTable, optionsForTransform,
  watchEmbeddedEncoder): `includeObject` (Metadata by default: a PartialObjectMetadata; Object; None),
  Status objects pass through, and a watch sends column definitions with its first event only.
- `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/negotiation/negotiate.go`: the Accept header's clauses
  are tried in order of preference; a Table is served in meta.k8s.io v1 and v1beta1, as JSON.
- `staging/src/k8s.io/apimachinery/pkg/util/duration/duration.go` (HumanDuration): ages.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

from . import errors
from .resources import ResourceType

# The meta.k8s.io versions a Table exists in (response.go asTable).
TABLE_GROUP = "meta.k8s.io"
TABLE_VERSIONS = ("v1", "v1beta1")
_INCLUDE_OBJECT = ("", "Metadata", "Object", "None")  # metav1.IncludeObjectPolicy, "" meaning Metadata
# negotiation.NewNotAcceptableError(MediaTypesForSerializer(...)) for the built-in types.
_NOT_ACCEPTABLE = ("only the following media types are accepted: application/json, application/yaml, "
                   "application/vnd.kubernetes.protobuf")

# -- column definitions (printers.go AddHandlers; descriptions are the types' swagger docs) --

_DOC_NAME = ("Name must be unique within a namespace. Is required when creating resources, although some "
             "resources may allow a client to request the generation of an appropriate name automatically. "
             "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
             "updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")
_DOC_CREATED = ("CreationTimestamp is a timestamp representing the server time when this object was created. "
                "It is not guaranteed to be set in happens-before order across separate operations. Clients may "
                "not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the "
                "system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/"
                "sig-architecture/api-conventions.md#metadata")
_DOC_CONTAINERS = "Names of each container in the template."
_DOC_IMAGES = "Images referenced by each container in the template."
_DOC_SELECTOR_INFO = (" More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"
                      "#label-selectors")


def _column(name: str, type_: str, description: str, priority: int = 0, fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


_NAME = _column("Name", "string", _DOC_NAME, fmt="name")
_AGE = _column("Age", "string", _DOC_CREATED)

POD_COLUMNS = [
    _NAME,
    _column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    _column("Status", "string", "The aggregate status of the containers in this pod."),
    _column("Restarts", "string", "The number of times the containers in this pod have been restarted and when "
                                  "the last container in this pod has restarted."),
    _AGE,
    _column("IP", "string", "podIP address allocated to the pod. Routable at least within the cluster. Empty if "
                            "not yet allocated.", 1),
    _column("Node", "string", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a "
                              "candidate for scheduling by the scheduler defined in schedulerName. Once this "
                              "field is set, the kubelet for this node becomes responsible for the lifecycle of "
                              "this pod. This field should not be used to express a desire for the pod to be "
                              "scheduled on a specific node. https://kubernetes.io/docs/concepts/"
                              "scheduling-eviction/assign-pod-node/#nodename", 1),
    _column("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts other pods on the "
                                        "node, but it cannot be scheduled right away as preemption victims "
                                        "receive their graceful termination periods. This field does not "
                                        "guarantee that the pod will be scheduled on this node.", 1),
    _column("Readiness Gates", "string", "If specified, all readiness gates will be evaluated for pod readiness. "
                                         "A pod is ready when all its containers are ready AND all conditions "
                                         "specified in the readiness gates have status equal to \"True\" More "
                                         "info: https://git.k8s.io/enhancements/keps/sig-network/"
                                         "580-pod-readiness-gates", 1),
]
NODE_COLUMNS = [
    _NAME,
    _column("Status", "string", "The status of the node"),
    _column("Roles", "string", "The roles of the node"),
    _AGE,
    _column("Version", "string", "Kubelet Version reported by the node."),
    _column("Internal-IP", "string", "List of addresses reachable to the node. Queried from cloud provider, if "
                                     "available.", 1),
    _column("External-IP", "string", "List of addresses reachable to the node. Queried from cloud provider, if "
                                     "available.", 1),
    _column("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 "
                                  "(wheezy)).", 1),
    _column("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r' (e.g. "
                                        "3.16.0-0.bpo.4-amd64).", 1),
    _column("Container-Runtime", "string", "ContainerRuntime Version reported by the node through runtime remote "
                                           "API (e.g. containerd://1.4.2).", 1),
]
EVENT_COLUMNS = [
    _column("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
    _column("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    _column("Reason", "string", "This should be a short, machine understandable string that gives the reason "
                                "for the transition into the object's current status."),
    _column("Object", "string", "The object that this event is about."),
    _column("Subobject", "string", "If referring to a piece of an object instead of an entire object, this "
                                   "string should contain a valid JSON/Go field access statement, such as "
                                   "desiredState.manifest.containers[2].", 1),
    _column("Source", "string", "The component reporting this event. Should be a short machine understandable "
                                "string.", 1),
    _column("Message", "string", "A human-readable description of the status of this operation."),
    _column("First Seen", "string", "The time at which the event was first recorded. (Time of server receipt is "
                                    "in TypeMeta.)", 1),
    _column("Count", "string", "The number of times this event has occurred.", 1),
    _column("Name", "string", _DOC_NAME, 1, fmt="name"),
]
PDB_COLUMNS = [
    _NAME,
    _column("Min Available", "string", "The minimum number of pods that must be available."),
    _column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    _column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
    _AGE,
]
DEPLOYMENT_COLUMNS = [
    _NAME,
    _column("Ready", "string", "Number of the pod with ready state"),
    _column("Up-to-date", "string", "Total number of non-terminated pods targeted by this deployment that have "
                                    "the desired template spec."),
    _column("Available", "string", "Total number of available pods (ready for at least minReadySeconds) "
                                   "targeted by this deployment."),
    _AGE,
    _column("Containers", "string", _DOC_CONTAINERS, 1),
    _column("Images", "string", _DOC_IMAGES, 1),
    _column("Selector", "string", "Label selector for pods. Existing ReplicaSets whose pods are selected by this "
                                  "will be the ones affected by this deployment.", 1),
]
REPLICASET_COLUMNS = [
    _NAME,
    _column("Desired", "integer", "Replicas is the number of desired replicas. This is a pointer to distinguish "
                                  "between explicit zero and unspecified. Defaults to 1."),
    _column("Current", "integer", "Replicas is the most recently oberved number of replicas."),
    _column("Ready", "integer", "The number of ready replicas for this replica set."),
    _AGE,
    _column("Containers", "string", _DOC_CONTAINERS, 1),
    _column("Images", "string", _DOC_IMAGES, 1),
    _column("Selector", "string", "Selector is a label query over pods that should match the replica count. If "
                                  "the selector is empty, it is defaulted to the labels present on the pod "
                                  "template. Label keys and values that must match in order to be controlled by "
                                  "this replica set." + _DOC_SELECTOR_INFO, 1),
]
DAEMONSET_COLUMNS = [
    _NAME,
    _column("Desired", "integer", "The total number of nodes that should be running the daemon pod (including "
                                  "nodes correctly running the daemon pod)."),
    _column("Current", "integer", "The number of nodes that are running at least 1 daemon pod and are supposed "
                                  "to run the daemon pod."),
    _column("Ready", "integer", "The number of nodes that should be running the daemon pod and have one or more "
                                "of the daemon pod running and ready."),
    _column("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
    _column("Available", "integer", "The number of nodes that should be running the daemon pod and have one or "
                                    "more of the daemon pod running and available (ready for at least "
                                    "spec.minReadySeconds)"),
    _column("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a "
                                       "node. Selector which must match a node's labels for the pod to be "
                                       "scheduled on that node."),
    _AGE,
    _column("Containers", "string", _DOC_CONTAINERS, 1),
    _column("Images", "string", _DOC_IMAGES, 1),
    _column("Selector", "string", "A label query over pods that are managed by the daemon set. Must match in "
                                  "order to be controlled. If empty, defaulted to labels on Pod template."
                                  + _DOC_SELECTOR_INFO, 1),
]
NAMESPACE_COLUMNS = [_NAME, _column("Status", "string", "The status of the namespace"), _AGE]
# rest/table.go defaultTableConvertor.
DEFAULT_COLUMNS = [_NAME, _column("Created At", "date", _DOC_CREATED)]


# -- time (printers.go translateTimestampSince / translateMicroTimestampSince; duration.HumanDuration) --

def parse_time(text: Any) -> float | None:
    """A metav1.Time or MicroTime (RFC 3339, any fraction) as epoch seconds; None when unset."""
    if not text or not isinstance(text, str):
        return None
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp()


def human_duration(seconds: float) -> str:
    """duration.HumanDuration: ~2-3 significant figures, "<invalid>" for more than a second in the future."""
    whole = int(seconds)  # Go: int(d.Seconds()), truncated toward zero
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 60 * 2:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if rest == 0 else f"{hours // 24 // 365}y{rest}d"
    return f"{hours // 24 // 365}y"


def since(timestamp: Any, now: float | None = None) -> str:
    """translateTimestampSince: "<unknown>" for an unset time."""
    at = parse_time(timestamp)
    if at is None:
        return "<unknown>"
    return human_duration((time.time() if now is None else now) - at)


# -- shared cell formatting --

def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _age(obj: dict[str, Any]) -> str:
    return since(_meta(obj).get("creationTimestamp"))


def _containers(pod_spec: dict[str, Any] | None) -> tuple[str, str]:
    """layoutContainerCells: the container names and images, comma separated."""
    containers = (pod_spec or {}).get("containers") or []
    return (",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers))


def _int_or_string(value: Any) -> str:
    """intstr.IntOrString.String()."""
    return str(value) if isinstance(value, (int, str)) else ""


def format_labels(labels: dict[str, str] | None) -> str:
    """labels.FormatLabels: sorted key=value pairs, "<none>" when there are none."""
    return ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items())) or "<none>"


def selector_string(selector: dict[str, Any] | None) -> str | None:
    """metav1.LabelSelectorAsSelector(...).String(): requirements sorted by key, set values sorted; None for an
    invalid selector. A nil selector (labels.Nothing) and an empty one (labels.Everything) both print ""."""
    if not selector:
        return ""
    requirements: list[tuple[str, str]] = [(key, f"{key}={value}")
                                           for key, value in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or ():
        key, operator, values = expr.get("key", ""), expr.get("operator"), sorted(expr.get("values") or ())
        if operator in ("In", "NotIn") and values:
            requirements.append((key, f"{key} {operator.lower()} ({','.join(values)})"))
        elif operator == "Exists" and not values:
            requirements.append((key, key))
        elif operator == "DoesNotExist" and not values:
            requirements.append((key, f"!{key}"))
        else:
            return None  # labels.NewRequirement refuses it
    return ",".join(text for dummy, text in sorted(requirements, key=lambda r: r[0]))


def format_label_selector(selector: dict[str, Any] | None) -> str:
    """metav1.FormatLabelSelector: "<none>" for an empty selector, "<error>" for an invalid one."""
    text = selector_string(selector)
    return "<error>" if text is None else (text or "<none>")


# -- rows (printers.go print functions, with GenerateOptions{Wide: true}) --

Row = dict[str, Any]
_POD_SUCCEEDED = [{"type": "Completed", "status": "True", "reason": "Succeeded",
                   "message": "The pod has completed successfully."}]
_POD_FAILED = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]


def _condition_true(conditions: list[dict[str, Any]] | None, type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in conditions or ())


def _finished_at(status: dict[str, Any]) -> float | None:
    terminated = (status.get("lastState") or {}).get("terminated")
    return parse_time(terminated.get("finishedAt")) if terminated else None


def _later(current: float | None, candidate: float | None) -> float | None:
    if candidate is None:
        return current
    return candidate if current is None or candidate > current else current


def _terminated_reason(terminated: dict[str, Any], prefix: str = "") -> str:
    if terminated.get("reason"):
        return prefix + terminated["reason"]
    if terminated.get("signal"):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{terminated.get('exitCode', 0)}"


def pod_row(pod: dict[str, Any]) -> Row:
    """printPod."""
    meta, spec, status = _meta(pod), pod.get("spec") or {}, pod.get("status") or {}
    total = len(spec.get("containers") or ())
    ready = restarts = restartable_init_restarts = 0
    last_restart: float | None = None
    last_restartable_init_restart: float | None = None
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    row: Row = {}
    if phase == "Succeeded":
        row["conditions"] = _POD_SUCCEEDED
    elif phase == "Failed":
        row["conditions"] = _POD_FAILED

    init_containers = spec.get("initContainers") or []
    restartable = {c.get("name") for c in init_containers if c.get("restartPolicy") == "Always"}
    total += len(restartable)
    initializing = False
    for index, container in enumerate(status.get("initContainerStatuses") or ()):
        restarts += container.get("restartCount", 0)
        last_restart = _later(last_restart, _finished_at(container))
        is_restartable = container.get("name") in restartable
        if is_restartable:
            restartable_init_restarts += container.get("restartCount", 0)
            last_restartable_init_restart = _later(last_restartable_init_restart, _finished_at(container))
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and terminated.get("exitCode", 0) == 0:
            continue
        if is_restartable and container.get("started"):
            if container.get("ready"):
                ready += 1
            continue
        if terminated is not None:
            reason = _terminated_reason(terminated, "Init:")
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{index}/{len(init_containers)}"
        initializing = True
        break

    if not initializing or _condition_true(status.get("conditions"), "Initialized"):
        restarts, last_restart = restartable_init_restarts, last_restartable_init_restart
        has_running = False
        for container in reversed(status.get("containerStatuses") or ()):
            restarts += container.get("restartCount", 0)
            last_restart = _later(last_restart, _finished_at(container))
            state = container.get("state") or {}
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated is not None:
                reason = _terminated_reason(terminated)
            elif container.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        # back to "Running" if at least one container still reports as running
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(status.get("conditions"), "Ready") else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts and last_restart is not None:
        restarts_cell = f"{restarts} ({human_duration(time.time() - last_restart)} ago)"
    pod_ips = status.get("podIPs") or []
    gates = spec.get("readinessGates") or []
    readiness_gates = "<none>"
    if gates:
        by_type = {}
        for cond in status.get("conditions") or ():
            by_type.setdefault(cond.get("type"), cond)
        true = sum(1 for gate in gates if (by_type.get(gate.get("conditionType")) or {}).get("status") == "True")
        readiness_gates = f"{true}/{len(gates)}"
    row["cells"] = [meta.get("name", ""), f"{ready}/{total}", reason, restarts_cell, _age(pod),
                    (pod_ips[0].get("ip") if pod_ips else "") or "<none>", spec.get("nodeName") or "<none>",
                    status.get("nominatedNodeName") or "<none>", readiness_gates]
    return row


def _node_roles(labels: dict[str, str]) -> list[str]:
    """findNodeRoles: node-role.kubernetes.io/<role> labels and the kubernetes.io/role label's value."""
    roles = set()
    for key, value in labels.items():
        if key.startswith("node-role.kubernetes.io/") and key[len("node-role.kubernetes.io/"):]:
            roles.add(key[len("node-role.kubernetes.io/"):])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return sorted(roles)


def _node_address(status: dict[str, Any], type_: str) -> str:
    return next((a.get("address", "") for a in status.get("addresses") or () if a.get("type") == type_), "<none>")


def node_row(node: dict[str, Any]) -> Row:
    """printNode: the status is the Ready condition's (NodeAllConditions is just Ready)."""
    status, info = node.get("status") or {}, (node.get("status") or {}).get("nodeInfo") or {}
    states = ["Ready" if c.get("status") == "True" else "NotReady"
              for c in status.get("conditions") or () if c.get("type") == "Ready"][-1:] or ["Unknown"]
    if (node.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    return {"cells": [_meta(node).get("name", ""), ",".join(states),
                      ",".join(_node_roles(_meta(node).get("labels") or {})) or "<none>", _age(node),
                      info.get("kubeletVersion", ""), _node_address(status, "InternalIP"),
                      _node_address(status, "ExternalIP"), info.get("osImage") or "<unknown>",
                      info.get("kernelVersion") or "<unknown>", info.get("containerRuntimeVersion") or "<unknown>"]}


def event_row(event: dict[str, Any]) -> Row:
    """printEvent (wide cells: LAST SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE FIRST SEEN COUNT NAME)."""
    first = since(event.get("firstTimestamp")) if event.get("firstTimestamp") else since(event.get("eventTime"))
    last = since(event.get("lastTimestamp")) if event.get("lastTimestamp") else first
    count = event.get("count") or 0
    series = event.get("series")
    if series is not None:
        last, count = since(series.get("lastObservedTime")), series.get("count", 0)
    elif count == 0:
        count = 1  # singleton events have no count in the new API
    involved = event.get("involvedObject") or {}
    kind = (involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return {"cells": [last, event.get("type", ""), event.get("reason", ""), target, involved.get("fieldPath", ""),
                      f"{component}, {instance}" if instance else component, (event.get("message") or "").strip(),
                      first, count, _meta(event).get("name", "")]}


def pdb_row(pdb: dict[str, Any]) -> Row:
    """printPodDisruptionBudget."""
    spec = pdb.get("spec") or {}
    min_available = _int_or_string(spec["minAvailable"]) if spec.get("minAvailable") is not None else "N/A"
    max_unavailable = _int_or_string(spec["maxUnavailable"]) if spec.get("maxUnavailable") is not None else "N/A"
    return {"cells": [_meta(pdb).get("name", ""), min_available, max_unavailable,
                      (pdb.get("status") or {}).get("disruptionsAllowed", 0), _age(pdb)]}


def deployment_row(deployment: dict[str, Any]) -> Row:
    """printDeployment."""
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    names, images = _containers(((spec.get("template") or {}).get("spec")))
    selector = selector_string(spec.get("selector"))
    return {"cells": [_meta(deployment).get("name", ""),
                      f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
                      status.get("updatedReplicas", 0), status.get("availableReplicas", 0), _age(deployment),
                      names, images, "<invalid>" if selector is None else selector]}


def replicaset_row(rs: dict[str, Any]) -> Row:
    """printReplicaSet."""
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    names, images = _containers(((spec.get("template") or {}).get("spec")))
    return {"cells": [_meta(rs).get("name", ""), spec.get("replicas", 0), status.get("replicas", 0),
                      status.get("readyReplicas", 0), _age(rs), names, images,
                      format_label_selector(spec.get("selector"))]}


def daemonset_row(ds: dict[str, Any]) -> Row:
    """printDaemonSet."""
    spec, status = ds.get("spec") or {}, ds.get("status") or {}
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    names, images = _containers(pod_spec)
    return {"cells": [_meta(ds).get("name", ""), status.get("desiredNumberScheduled", 0),
                      status.get("currentNumberScheduled", 0), status.get("numberReady", 0),
                      status.get("updatedNumberScheduled", 0), status.get("numberAvailable", 0),
                      format_labels(pod_spec.get("nodeSelector")), _age(ds), names, images,
                      format_label_selector(spec.get("selector"))]}


def namespace_row(namespace: dict[str, Any]) -> Row:
    """printNamespace."""
    return {"cells": [_meta(namespace).get("name", ""), (namespace.get("status") or {}).get("phase", ""),
                      _age(namespace)]}


def default_row(obj: dict[str, Any]) -> Row:
    """defaultTableConvertor: the name and the creation time in UTC, RFC 3339 (Go's zero time when unset)."""
    created = parse_time(_meta(obj).get("creationTimestamp"))
    when = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created)) if created is not None
            else "0001-01-01T00:00:00Z")
    return {"cells": [_meta(obj).get("name", ""), when]}


# plural -> (column definitions, row function)
PRINTERS: dict[str, tuple[list[dict[str, Any]], Callable[[dict[str, Any]], Row]]] = {
    "pods": (POD_COLUMNS, pod_row),
    "nodes": (NODE_COLUMNS, node_row),
    "events": (EVENT_COLUMNS, event_row),
    "poddisruptionbudgets": (PDB_COLUMNS, pdb_row),
    "deployments": (DEPLOYMENT_COLUMNS, deployment_row),
    "replicasets": (REPLICASET_COLUMNS, replicaset_row),
    "daemonsets": (DAEMONSET_COLUMNS, daemonset_row),
    "namespaces": (NAMESPACE_COLUMNS, namespace_row),
}


# -- negotiation and conversion --

def _parse_accept(header: str) -> list[tuple[str, str, dict[str, str]]]:
    """The Accept header's clauses (type, subtype, parameters), most preferred first, as goautoneg orders
    them: by q, then the more specific before wildcards, else in the order given. q=0 clauses are refused."""
    clauses = []
    for position, part in enumerate(header.split(",")):
        fields = [f.strip() for f in part.split(";")]
        media, dummy, subtype = fields[0].partition("/")
        params = {}
        for field in fields[1:]:
            key, dummy, value = field.partition("=")
            params[key.strip()] = value.strip()
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 0.0
        if media and q > 0:
            clauses.append(((-q, media == "*", subtype == "*", position), media, subtype, params))
    return [(media, subtype, params) for dummy, media, subtype, params in sorted(clauses, key=lambda c: c[0])]


@dataclass(frozen=True)
class TableRequest:
    """A negotiated Table answer: the meta.k8s.io version asked for and the includeObject policy."""

    version: str = "v1"
    include_object: str = "Metadata"

    @property
    def api_version(self) -> str:
        return f"{TABLE_GROUP}/{self.version}"

    def _row_object(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any] | None:
        if self.include_object == "None":
            return None
        if self.include_object == "Object":
            return {**obj, "apiVersion": rt.api_version, "kind": rt.kind}
        return {"kind": "PartialObjectMetadata", "apiVersion": self.api_version, "metadata": _meta(obj)}

    def convert(self, rt: ResourceType, payload: Any, *, no_headers: bool = False) -> Any:
        """The Table for an object or a list of `rt` (anything else, a Status, is returned as it is)."""
        if not isinstance(payload, dict) or payload.get("kind") not in (rt.kind, rt.list_kind):
            return payload
        is_list = payload.get("kind") == rt.list_kind
        items = (payload.get("items") or []) if is_list else [payload]
        printer = PRINTERS.get(rt.plural)
        columns, row_of = printer if printer else (DEFAULT_COLUMNS, default_row)
        rows: list[Row] | None = []
        for obj in items:
            row = row_of(obj)
            rows.append({"cells": row["cells"], **({"conditions": row["conditions"]} if "conditions" in row else {}),
                         "object": self._row_object(rt, obj)})
        if not rows and printer is None:
            rows = None  # the default convertor appends to a nil slice
        source_meta = payload.get("metadata") or {}
        metadata = {key: source_meta[key] for key in ("resourceVersion", "continue", "remainingItemCount")
                    if source_meta.get(key) and (is_list or key == "resourceVersion")}
        return {"kind": "Table", "apiVersion": self.api_version, "metadata": metadata,
                "columnDefinitions": None if no_headers else [dict(c) for c in columns], "rows": rows}


class WatchTables:
    """Converts a watch's events (watchEmbeddedEncoder): the column definitions go with the first event only;
    ERROR events (a Status) pass through."""

    def __init__(self, request: TableRequest, rt: ResourceType):
        self.request, self.rt = request, rt
        self._sent_headers = False

    def event(self, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "ERROR":
            return event
        table = self.request.convert(self.rt, event["object"], no_headers=self._sent_headers)
        self._sent_headers = True
        return {**event, "object": table}


def negotiate(accept: str | None, query: dict[str, list[str]]) -> TableRequest | None:
    """What a GET, LIST or WATCH answers with: a TableRequest when the first Accept clause the sandbox can serve
    asks for a Table, None for the plain object (also when nothing in the header can be served: the sandbox
    answers JSON as it always did). An Accept header that asks only for Tables in versions that do not exist is
    406 NotAcceptable, and an unknown includeObject 400, as on the API server."""
    refused_table = False
    for media, subtype, params in _parse_accept(accept or ""):
        if (media, subtype) not in (("application", "json"), ("application", "*"), ("*", "*")):
            continue  # the sandbox serves JSON only (no YAML, no protobuf)
        target = params.get("as")
        if not target:
            return None
        if target == "Table" and params.get("g") == TABLE_GROUP and params.get("v") in TABLE_VERSIONS:
            include = (query.get("includeObject") or [""])[0]
            if include not in _INCLUDE_OBJECT:
                raise errors.bad_request(f'Unable to convert to Table as requested: includeObject: Invalid value: '
                                         f'"{include}": must be \'Metadata\', \'Object\', \'None\', or empty')
            return TableRequest(params["v"], include or "Metadata")
        refused_table = refused_table or target == "Table"
    if refused_table:
        raise errors.ApiError(406, _NOT_ACCEPTABLE)
    return None
