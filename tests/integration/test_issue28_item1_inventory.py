# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 1: ``ansible-inventory --list`` with the eks_nodegroups plugin against the sandbox, whose node groups
of every kind (SPEC K1) are made as their own tools make them; the plugin finds the sandbox through botocore's own
AWS_ENDPOINT_URL, as it would find a VPC endpoint."""

from __future__ import annotations

import json
import subprocess

import pytest

from sandbox_helpers import BIN_DIR, ansible_env, running_sandbox

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
