# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 2, the fleet's time between rings (docs/performance.md, "The fleet"): module fleet_ring_health
judges a ring after its bake in one process - each node group by nodegroup_info's own reading and each cluster by
workload_health's gate, at once - each with its own region, profile and context, never the task's (module_defaults
give the task those of the host that runs it), and one that fails is a result of its own."""

from __future__ import annotations

import threading

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import ACCESS_DENIED, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases import fleet_ring_health

import pytest

# The task's own options, as the fleet's module_defaults set them for the host that runs it (fleet-canary/system).
TASK = dict(region="us-west-2", profile="canary-account", context="arn:aws:eks:us-west-2:1:cluster/fleet-canary",
            kubeconfig="/runner/canary.kubeconfig", k8s_requests_per_second=50.0, debug_botocore_endpoint_logs=True)
NODEGROUPS = [
    dict(name="fleet-eu/system", cluster_name="fleet-eu", nodegroup_name="system", region="eu-west-1",
         profile="eu-account", kubeconfig="/runner/eu.kubeconfig", context="eu"),
    dict(name="fleet-west/apps", cluster_name="fleet-west", nodegroup_name="apps", asg_name="west-apps",
         region="us-west-2"),
]
CLUSTERS = [dict(cluster_name="fleet-eu", region="eu-west-1", profile="eu-account", context="eu"),
            dict(cluster_name="fleet-west", region="us-west-2")]
TARGETS = {"fleet-eu/system": dict(option="release_version", value="1.30.4-20240601"),
           "fleet-west/apps": dict(option="image_id", value="ami-new")}


class Clients:
    """Records the options each node group's and cluster's clients were built with."""

    built = []

    def __init__(self, params, user_agent, proof):
        self.params, self.user_agent, self.lease_heartbeats = params, user_agent, {}
        Clients.built.append(params)

    def stop_lease_heartbeats(self):
        pass


class Task:
    """The StepContext surface fleet_ring_health.run uses: the task's options through its argument spec."""

    check_mode = False

    def __init__(self, **params):
        spec = merged_argument_spec(fleet_ring_health.ARGUMENT_SPEC, uses_aws=True, uses_k8s=True)
        validation = ArgumentSpecValidator(spec).validate(dict(TASK, **params))
        assert not validation.error_messages, validation.error_messages
        self.params = validation.validated_parameters
        self.clients = Clients(self.params, "eksops.nodegroup/fleet_ring_health", None)

    def log(self, line):
        pass


@pytest.fixture
def judged(monkeypatch):
    """The steps' own work replaced by recorders: the threads that ran them, and what each was given."""
    seen = dict(threads=set(), reads=[], healths=[])

    def describe(context):
        seen["threads"].add(threading.get_ident())
        seen["reads"].append(dict(context.params))
        if context.params["nodegroup_name"] == "system":
            raise UpgradeError(ACCESS_DENIED, "not authorized to perform autoscaling:DescribeAutoScalingGroups")
        return dict(nodegroup_name=context.params["nodegroup_name"], old_instances=[], instances=[])

    def gate(context):
        seen["threads"].add(threading.get_ident())
        seen["healths"].append(dict(context.params))
        return dict(changed=False, health=dict(workloads=["Deployment default/web"], healthy_at="now"))

    monkeypatch.setattr(fleet_ring_health, "Clients", Clients)
    monkeypatch.setattr(fleet_ring_health.nodegroup_info, "describe_nodegroup", describe)
    monkeypatch.setattr(fleet_ring_health.fleet_bake, "run", gate)
    Clients.built = []
    return seen


def test_issue28_item2_each_node_group_and_cluster_is_judged_where_it_is_not_where_the_task_runs(judged, monkeypatch):
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", "/runner/environment.kubeconfig")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("K8S_AUTH_CONTEXT", raising=False)
    fleet_ring_health.run(Task(nodegroups=NODEGROUPS, clusters=CLUSTERS, targets=TARGETS))
    reads = dict((read["nodegroup_name"], read) for read in judged["reads"])
    assert [reads["system"][name] for name in ("region", "profile", "kubeconfig", "context")] == [
        "eu-west-1", "eu-account", "/runner/eu.kubeconfig", "eu"]
    # None given: what the node group's own tasks would fall back to (the environment's kubeconfig, no profile: the
    # controller's credentials, no context: the kubeconfig's current one), never the task's canary account and
    # context.
    assert [reads["apps"][name] for name in ("region", "profile", "kubeconfig", "context")] == [
        "us-west-2", None, "/runner/environment.kubeconfig", None]
    assert reads["apps"]["asg_name"] == "west-apps" and reads["apps"]["cluster_name"] == "fleet-west"
    # The task's other connection options reach every one of them; its AWS calls are the task's resource_actions.
    assert {params["k8s_requests_per_second"] for params in Clients.built[1:]} == {50.0}
    assert not any(params.get("debug_botocore_endpoint_logs") for params in Clients.built[1:])
    healths = dict((health["cluster_name"], health) for health in judged["healths"])
    assert (healths["fleet-west"]["profile"], healths["fleet-west"]["context"]) == (None, None)
    assert healths["fleet-eu"]["where"] == "the health gate" and healths["fleet-eu"]["health_gate_timeout"] == 600


def test_issue28_item2_a_self_managed_group_is_read_against_the_fleets_image_a_managed_one_against_its_template(judged):
    fleet_ring_health.run(Task(nodegroups=NODEGROUPS, targets=TARGETS))
    targets = dict((read["nodegroup_name"], read["target"]) for read in judged["reads"])
    assert targets == {"system": None, "apps": "ami-new"}


def test_issue28_item2_one_that_cannot_be_read_is_its_own_result_and_the_others_are_judged_in_their_order(judged):
    result = fleet_ring_health.run(Task(nodegroups=NODEGROUPS, clusters=CLUSTERS, where="After the bake of ring canary"))
    ring = result["ring"]
    assert result["changed"] is False
    assert [read["name"] for read in ring["nodegroups"]] == ["fleet-eu/system", "fleet-west/apps"]
    failed, read = ring["nodegroups"]
    assert (failed["failed"], failed["code"]) == (True, ACCESS_DENIED) and "DescribeAutoScalingGroups" in failed["msg"]
    assert "nodegroup" not in failed and read["nodegroup"]["nodegroup_name"] == "apps"
    assert [health["cluster_name"] for health in ring["clusters"]] == ["fleet-eu", "fleet-west"]
    assert all(health["health"]["workloads"] == ["Deployment default/web"] for health in ring["clusters"])
    assert {health["where"] for health in judged["healths"]} == {"After the bake of ring canary"}


def test_issue28_item2_an_unexpected_error_is_its_items_failure_not_the_rings(judged, monkeypatch):
    """Review finding: an exception other than UpgradeError (an untranslated client error, a KeyError) in one thread
    failed the whole task, which Ansible then reports before failed_when, so the fleet's report was not written."""
    def broken(context):
        if context.params["nodegroup_name"] == "apps":
            raise KeyError("Instances")
        return dict(nodegroup_name=context.params["nodegroup_name"], old_instances=[], instances=[])

    monkeypatch.setattr(fleet_ring_health.nodegroup_info, "describe_nodegroup", broken)
    ring = fleet_ring_health.run(Task(nodegroups=NODEGROUPS, clusters=CLUSTERS))["ring"]
    judged_one, failed = ring["nodegroups"]
    assert judged_one["nodegroup"]["nodegroup_name"] == "system"
    assert (failed["name"], failed["failed"], failed["code"], failed["msg"]) == (
        "fleet-west/apps", True, "ApiError", "KeyError: 'Instances'")
    assert [health["cluster_name"] for health in ring["clusters"] if "health" in health] == ["fleet-eu", "fleet-west"]


def test_issue28_item2_the_ring_is_judged_in_threads_of_one_process(judged):
    fleet_ring_health.run(Task(nodegroups=NODEGROUPS, clusters=CLUSTERS))
    assert threading.get_ident() not in judged["threads"] and len(judged["reads"]) + len(judged["healths"]) == 4


def test_issue28_item2_nothing_to_judge_is_an_empty_ring(judged):
    assert fleet_ring_health.run(Task())["ring"] == dict(nodegroups=[], clusters=[])
