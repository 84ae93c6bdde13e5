# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain step: node_drain's work (state cordon, drain or uncordon) for a module or the node_replace action.

What is asked is a DrainStep (typed, built once from the validated options); what was done a DrainOutcome, from
which the module's result (RETURN) is built at the module's boundary. ``module`` is anything with the EksopsModule
surface these functions use: ``check_mode``, ``_diff``, ``aws(service)``, ``core_v1()``, ``warn``, ``log``,
``with_diff`` and, for the module's run, ``params`` and ``fail_upgrade(err, **result)`` (which does not return);
the lease's claim reads ``params["lease_id"]`` too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import (
    DEFAULT_OPTIONS, DrainOptions, DrainResult, cordon_nodes, drain_nodes, read_nodes, uncordon_nodes)
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import instance_id_of
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import LEASE_OPTION, claim
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.load_balancers import (
    ClusterLoadBalancers,
    find_cluster_load_balancers,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.node_scope import check_nodes_in_nodegroup
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef, find_nodegroup
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import resolve_instance_nodes

# The defaults are the drain engine's (DEFAULT_OPTIONS), under kubernetes.core's k8s_drain names.
DELETE_OPTIONS_SPEC = dict(
    terminate_grace_period=dict(type="int", default=DEFAULT_OPTIONS["grace_period"], aliases=["grace_period"]),
    force=dict(type="bool", default=DEFAULT_OPTIONS["force"]),
    ignore_daemonsets=dict(type="bool", default=DEFAULT_OPTIONS["ignore_daemonsets"]),
    delete_emptydir_data=dict(type="bool", default=DEFAULT_OPTIONS["delete_emptydir_data"]),
    disable_eviction=dict(type="bool", default=DEFAULT_OPTIONS["disable_eviction"]),
    wait_timeout=dict(type="int", default=DEFAULT_OPTIONS["drain_timeout"], aliases=["drain_timeout"]),
    skip_wait_for_delete_timeout=dict(type="int", default=DEFAULT_OPTIONS["skip_wait_for_delete_timeout"]),
)

ARGUMENT_SPEC = dict(
    name=dict(type="str"),
    names=dict(type="list", elements="str"),
    instance_ids=dict(type="list", elements="str"),
    nodegroup_name=dict(type="str"),
    asg_name=dict(type="str"),
    state=dict(type="str", choices=["cordon", "drain", "uncordon"], default="drain"),
    delete_options=dict(type="dict", default={}, options=DELETE_OPTIONS_SPEC),
    pod_selectors=dict(type="list", elements="str", aliases=["label_selectors"]),
    exclude_from_load_balancers=dict(type="bool", default=DEFAULT_OPTIONS["exclude_from_load_balancers"]),
    post_drain_wait=dict(type="int", default=DEFAULT_OPTIONS["post_drain_wait"]),
    post_drain_min_wait=dict(type="int"),
    ignore_load_balancer_timeout=dict(type="bool", default=DEFAULT_OPTIONS["ignore_load_balancer_timeout"]),
    eviction_concurrency=dict(type="int", default=DEFAULT_OPTIONS["eviction_concurrency"]),
    run_id=dict(type="str"),
    cluster_name=dict(type="str"),
    **LEASE_OPTION
)


def engine_options(params: Mapping[str, Any], check_mode: bool) -> DrainOptions:
    """The engine's options (SPEC names) from the module's (kubernetes.core names)."""
    delete = params["delete_options"] or {}
    return DrainOptions(
        drain_timeout=delete.get("wait_timeout"),
        grace_period=delete.get("terminate_grace_period"),
        force=delete.get("force"),
        ignore_daemonsets=delete.get("ignore_daemonsets"),
        delete_emptydir_data=delete.get("delete_emptydir_data"),
        disable_eviction=delete.get("disable_eviction"),
        skip_wait_for_delete_timeout=delete.get("skip_wait_for_delete_timeout"),
        pod_selectors=params.get("pod_selectors"),
        exclude_from_load_balancers=params["exclude_from_load_balancers"],
        post_drain_wait=params["post_drain_wait"],
        post_drain_min_wait=params["post_drain_min_wait"],
        ignore_load_balancer_timeout=params["ignore_load_balancer_timeout"],
        eviction_concurrency=params["eviction_concurrency"],
        run_id=params["run_id"],
        check_mode=check_mode,
    )


@dataclass(frozen=True)
class DrainStep:
    """node_drain's options, typed, built once from validated params (from_params) and read by every drain they
    ask for, as kubectl's drain command builds its drain.Helper once from its flags (kubernetes/kubectl
    pkg/cmd/drain/drain.go, DrainCmdOptions.Complete) and drains each node with it (pkg/drain/drain.go, Helper).
    ``engine``: the drain engine's options (DrainOptions, checked when built); ``names`` or ``instance_ids``: the
    nodes (``named_by``: the option that named them, for a refusal); the node group and the lease."""

    state: str
    engine: DrainOptions
    named_by: str
    names: tuple[str, ...] = ()
    instance_ids: tuple[str, ...] | None = None
    cluster_name: str | None = None
    nodegroup_name: str | None = None
    asg_name: str | None = None
    lease_id: str | None = None
    run_id: str | None = None  # as given: an uncordon without one uncordons whatever cordoned the nodes

    @classmethod
    def from_params(cls, params: Mapping[str, Any], check_mode: bool) -> DrainStep:
        """From node_drain's validated params (or node_replace's, which share their names): every option, pod_selectors
        too, checked before the first request (issue 10 item 24)."""
        instance_ids = params.get("instance_ids")
        named_by = "instance_ids" if instance_ids is not None else "name" if params.get("name") else "names"
        return cls(state=params.get("state") or "drain", engine=engine_options(params, check_mode), named_by=named_by,
                   names=tuple([params["name"]] if params.get("name") else params.get("names") or ()),
                   instance_ids=None if instance_ids is None else tuple(instance_ids),
                   cluster_name=params.get("cluster_name"), nodegroup_name=params.get("nodegroup_name"),
                   asg_name=params.get("asg_name"), lease_id=params.get("lease_id"), run_id=params.get("run_id"))

    def of_instances(self, instance_ids: Sequence[str], state: str = "drain") -> DrainStep:
        """The same options for the nodes of ``instance_ids`` (a batch of node_replace)."""
        return replace(self, state=state, named_by="instance_ids", names=(), instance_ids=tuple(instance_ids))


@dataclass(frozen=True)
class DrainOutcome:
    """What a drain step did: the engine's ``result`` (None when the instances had no node), the nodes of the
    instances when named by instance (``instances``), the requests made to find them. The module's result
    (RETURN ``drain``) is built from it at the module's boundary (to_result)."""

    result: DrainResult | None
    instances: dict[str, str | None] | None
    requests_before: int

    @property
    def changed(self) -> bool:
        return bool(self.result is not None and self.result.changed)

    @property
    def nodes(self) -> dict[str, Any]:
        """The drained nodes by name, as RETURN ``drain.nodes`` gives them."""
        return self.result.to_dict() if self.result is not None else {}

    @property
    def error(self) -> UpgradeError | None:
        return self.result.error() if self.result is not None else None

    @property
    def failed_codes(self) -> dict[str, str | None]:
        """The failed nodes by name, each with its code (None: its pods were refused before any eviction)."""
        nodes = self.result.nodes.values() if self.result is not None else ()
        return dict((node.name, node.code) for node in nodes if not node.ok)

    @property
    def timed_out(self) -> set[str]:
        """The failed nodes whose drain ran out of drain_timeout with pods still held (NodeResult.timed_out)."""
        nodes = self.result.nodes.values() if self.result is not None else ()
        return set(node.name for node in nodes if not node.ok and node.timed_out)

    def warnings(self) -> list[str]:
        """The nodes' warnings, each naming its node."""
        nodes = self.result.nodes.values() if self.result is not None else ()
        return ["node %s: %s" % (node.name, warning) for node in nodes for warning in node.warnings]

    def to_result(self, module: Any) -> dict[str, Any]:
        """node_drain's result (RETURN), with its diff in diff mode."""
        requests = self.requests_before + (self.result.requests_made if self.result is not None else 0)
        drained = dict(nodes=self.nodes, requests_made=requests)
        if self.instances is not None:
            drained["instances"] = self.instances
        if self.result is None:
            return dict(changed=False, drain=drained)
        return module.with_diff(dict(changed=self.changed, drain=drained), **self.result.diff())


ACTIONS = dict(drain="cordon or drain", cordon="cordon", uncordon="uncordon")


class PreparedDrain:
    """What a drain of node_replace's loop is given instead of reading it (issue 11 item 4): ``group``, the node
    group as the previous batch's termination read it; ``instances``, the batch's node names by instance id (the
    planner's join, SPEC K2); ``balancers``, the cluster's load balancers as find_load_balancers found them during
    the previous batch's post-drain wait."""

    def __init__(self, group: NodegroupRef, instances: Mapping[str, str], balancers: ClusterLoadBalancers | None) -> None:
        self.group = group
        self.instances = dict(instances)
        self.balancers = balancers


def find_load_balancers(module: Any, step: DrainStep, asg: dict[str, Any] | None) -> ClusterLoadBalancers | None:
    """The cluster's load balancers (B3), looked for when the nodes get the label that makes their controllers let
    them go, and a cluster name to find them by; those attached to ``asg``, the node group's Auto Scaling group, are
    left to Auto Scaling. None: the post-drain wait is fixed."""
    if step.cluster_name and step.engine.exclude_from_load_balancers and not module.check_mode:
        return find_cluster_load_balancers(module.aws, step.cluster_name, module.warn, asg)
    return None


def target_nodes(module: Any, step: DrainStep, core_v1: Any, group: NodegroupRef | None,
                 prepared: PreparedDrain | None) -> tuple[list[str], dict[str, str | None] | None, int]:
    """(the names of the nodes ``step`` names, their instances' {instance id: node name or None} when named by
    instance, the requests made): with a node group, refused unless they are its nodes."""
    action = ACTIONS[step.state]
    if step.instance_ids is None:
        names = list(step.names)
        requests = 0
        if group is not None:
            nodes, requests = read_nodes(core_v1, names)
            check_nodes_in_nodegroup(group, dict((name, instance_id_of(node)) for name, node in nodes.items()),
                                     module.aws, step.named_by, action,
                                     node_labels=dict((name, (node.get("metadata") or {}).get("labels"))
                                                      for name, node in nodes.items()))
        return names, None, requests
    if prepared is not None:
        instances, requests = dict((i, prepared.instances[i]) for i in step.instance_ids), 0
    else:
        instances, requests = resolve_instance_nodes(core_v1, list(step.instance_ids),
                                                     group.node_selector if group else None)
    for instance_id, node_name in sorted(instances.items()):
        if node_name is None:
            module.log("instance %s has no node: nothing to %s" % (instance_id, step.state))
    if group is not None:
        # nodegroup_name is a scope: only the group's nodes are touched (issue 10 item 24).
        check_nodes_in_nodegroup(group, dict((name, instance_id) for instance_id, name in instances.items() if name),
                                 module.aws, "instance_ids", action)
    return sorted(set(name for name in instances.values() if name)), instances, requests


def drain(module: Any, step: DrainStep, prepared: PreparedDrain | None = None,
          on_emptied: Callable[[], None] | None = None) -> DrainOutcome:
    """node_drain's work as ``step`` asks it; ``prepared`` and ``on_emptied`` are node_replace's (see PreparedDrain,
    drain_nodes). A failed node is in the outcome's ``error``, for the caller to raise with the outcome."""
    core_v1 = module.core_v1()
    group = None
    if prepared is not None:
        group = prepared.group
    elif step.nodegroup_name:
        group = find_nodegroup(module.aws("autoscaling"), module.aws("eks"), step.cluster_name, step.nodegroup_name,
                               step.asg_name)
    names, instances, requests_before = target_nodes(module, step, core_v1, group, prepared)
    if instances is not None and not names:
        return DrainOutcome(None, instances, requests_before)
    if step.lease_id and step.state != "uncordon":
        # Issue 10 item 21: the run's lease on the node group, before the first cordon.
        # lease_id requires nodegroup_name, so the group was found above.
        claim(module, module.aws("autoscaling"), group.asg)
    options = step.engine
    if step.state == "drain":
        balancers = prepared.balancers if prepared is not None else find_load_balancers(
            module, step, group.asg if group is not None else None)
        result = drain_nodes(core_v1, names, options, log=module.log, load_balancers=balancers, on_emptied=on_emptied)
    elif step.state == "cordon":
        result = cordon_nodes(core_v1, names, run_id=options.run_id,
                              exclude_from_load_balancers=options.exclude_from_load_balancers,
                              check_mode=module.check_mode, log=module.log)
    else:
        result = uncordon_nodes(core_v1, names, run_id=step.run_id, check_mode=module.check_mode, log=module.log)
    return DrainOutcome(result, instances, requests_before)


def run(module: Any) -> dict[str, Any]:
    """node_drain's work for the module: its options typed once (DrainStep), its result (RETURN), each node's
    warnings warned."""
    outcome = drain(module, DrainStep.from_params(module.params, module.check_mode))
    output = outcome.to_result(module)
    for warning in outcome.warnings():
        module.warn(warning)
    if outcome.error is not None:
        module.fail_upgrade(outcome.error, **output)
    return output
