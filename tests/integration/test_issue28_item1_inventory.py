# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 1: ``ansible-inventory --list`` with the eks_nodegroups plugin against the sandbox, whose node groups
of every kind (SPEC K1) are made as their own tools make them; the plugin finds the sandbox through botocore's own
AWS_ENDPOINT_URL, as it would find a VPC endpoint. Issue 28 item 2 reuses the sandbox: a failed bake halts the fleet."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from kubernetes import client as k8s

from sandbox_helpers import BIN_DIR, OWNER_REVERT_ACCEPTED, REPO_ROOT, ansible_env, running_sandbox

AMI = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
GROUP = {"ami": AMI, "min_size": 0, "max_size": 2, "desired_capacity": 1}
SCENARIO = {
    "name": "fleet-inventory",
    "cluster": {"name": "fleet", "kubernetes_version": "1.30"},
    "availability_zones": ["us-west-2a"],
    "amis": [{"name": AMI, "kubernetes_version": "1.29"}],
    "nodegroups": [dict(GROUP, name="system", kind="managed"),
                   dict(GROUP, name="batch", kind="self_managed_eksctl"),
                   dict(GROUP, name="workers", kind="self_managed", convention="terraform"),
                   dict(GROUP, name="web", kind="self_managed", convention="cloudformation")],
    "workloads": [],
}


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    with running_sandbox(SCENARIO, tmp_path_factory.mktemp("sandbox-fleet-inventory")) as handle:
        yield handle


def plain(value):
    """ansible-inventory's JSON without the ``__ansible_unsafe`` wrapping it gives a plugin's strings."""
    return value["__ansible_unsafe"] if set(value) == {"__ansible_unsafe"} else value


def test_issue28_item1_ansible_inventory_lists_the_sandbox_node_groups_of_every_kind(sandbox, tmp_path):
    source = tmp_path / "fleet.eks_nodegroups.yml"
    source.write_text("plugin: eksops.nodegroup.eks_nodegroups\nkeyed_groups:\n  - key: kind\n    prefix: kind\n")
    listed = subprocess.run([str(BIN_DIR / "ansible-inventory"), "-i", str(source), "--list", "-vv"],
                            capture_output=True, text=True, env=ansible_env(sandbox), timeout=120, check=False)
    assert listed.returncode == 0, listed.stderr[-3000:]
    inventory = json.loads(listed.stdout[listed.stdout.index("{"):], object_hook=plain)
    hostvars = inventory["_meta"]["hostvars"]
    assert {name: (host["kind"], host["owner"]) for name, host in hostvars.items()} == {
        "fleet/system": ("managed", "EKS"), "fleet/batch": ("self_managed_eksctl", "eksctl"),
        "fleet/workers": ("self_managed", "terraform-aws-eks"), "fleet/web": ("self_managed", "CloudFormation")}
    assert sorted(inventory["kind_self_managed"]["hosts"]) == ["fleet/web", "fleet/workers"]
    for name in ("fleet/batch", "fleet/workers", "fleet/web"):
        assert (hostvars[name]["nodegroup_image_name"], hostvars[name]["nodegroup_kubernetes_version"]) == (AMI, "1.29")
    assert hostvars["fleet/system"]["nodegroup_release_version"] and hostvars["fleet/system"]["aws_region"] == "us-west-2"
    # The discovery cost, as the plugin measured it (-vv, on stderr): one launch template per self-managed group here.
    assert "us-west-2: 9 AWS requests (DescribeAutoScalingGroups 1, DescribeCluster 1, DescribeImages 1, " \
        "DescribeLaunchTemplateVersions 3, DescribeNodegroup 1, ListClusters 1, ListNodegroups 1)" in listed.stdout


def test_issue28_item2_the_bakes_gaps_a_failed_bake_halts_the_fleet(sandbox, tmp_path):
    """Issue 28 item 2, the bake's gaps (c): the canary ring (system) ends on target - already there: 1.29's
    recommended AMI is its AMI - but a Deployment of its cluster never gets available, so the bake before ring1 fails
    with HealthGateFailed naming it, and ring1's node group (workers) is not started: nothing of it changes. The
    kubeconfig's context is not named by the cluster's ARN: the hosts' kube_context reaches it, for the bake too."""
    context = yaml.safe_load(Path(sandbox.env["KUBECONFIG"]).read_text())["current-context"]
    source = tmp_path / "fleet.eks_nodegroups.yml"
    source.write_text("plugin: eksops.nodegroup.eks_nodegroups\ncompose:\n"
                      "  upgrade_ring: \"'canary' if nodegroup_name == 'system' else 'ring1'\"\n"
                      "  kube_context: \"'%s'\"\n" % context)
    labels = {"app": "stuck"}
    apps = sandbox.apps_v1()
    apps.create_namespaced_deployment("default", k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="stuck"), spec=k8s.V1DeploymentSpec(
            replicas=1, selector=k8s.V1LabelSelector(match_labels=labels),
            template=k8s.V1PodTemplateSpec(metadata=k8s.V1ObjectMeta(labels=labels), spec=k8s.V1PodSpec(
                node_selector={"no-node": "has-this"}, containers=[k8s.V1Container(name="c", image="nginx")])))))
    workers = [i["InstanceId"] for i in sandbox.client("autoscaling").describe_auto_scaling_instances()[
        "AutoScalingInstances"] if "workers" in i["AutoScalingGroupName"]]
    try:
        variables = dict(OWNER_REVERT_ACCEPTED, kubernetes_version="1.29", health_gate_timeout=1,
                         fleet_report_path=str(tmp_path / "fleet.json"))
        run = subprocess.run([str(BIN_DIR / "ansible-playbook"), "-i", str(source), "--limit", "fleet/system,fleet/workers",
                              str(REPO_ROOT / "playbooks" / "upgrade_fleet.yml"), "-e", json.dumps(variables)],
                             capture_output=True, text=True, env=ansible_env(sandbox), timeout=300, check=False)
    finally:
        apps.delete_namespaced_deployment("stuck", "default")
    assert run.returncode != 0, run.stdout[-3000:]
    halt = run.stdout[run.stdout.rindex("TASK [Stop the fleet when the previous ring is no longer healthy]"):]
    assert "HealthGateFailed" in halt and "Deployment default/stuck" in halt and "Ring ring1" in halt, halt[:3000]
    assert "TASK [Run the node group's upgrade]" not in halt
    report = json.loads((tmp_path / "fleet.json").read_text())
    # The hosts outside --limit are rows left_out (the review's finding 6); the halt says why (finding 3).
    rows = [(row["host"], row["status"]) for row in report["rows"]]
    assert rows[:2] == [("fleet/system", "succeeded"), ("fleet/workers", "not_started")], report
    assert {status for _host, status in rows[2:]} == {"left_out"}, report
    assert (report["halt"]["code"], report["halt"]["ring"]) == ("HealthGateFailed", "ring1"), report
    assert [i["InstanceId"] for i in sandbox.client("autoscaling").describe_auto_scaling_instances()[
        "AutoScalingInstances"] if "workers" in i["AutoScalingGroupName"]] == workers
