# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 2: playbooks/upgrade_fleet.yml refuses every bad input before any AWS or Kubernetes request - its
own variables, a target of one node group, a host that is no node group, a node group in no ring, and the node
groups' upgrade variables, checked for every host as its run checks them (issue 10 items 2, 18, 24) - naming the
parameter. No sandbox: the inventory is a static file of the eks_nodegroups inventory's host variables, and the AWS
endpoint is a closed port, so a request would fail with AwsUnreachable instead of the refusal."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sandbox_helpers import BIN_DIR, COLLECTIONS_PATH, REPO_ROOT

AMI = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240601"
INVENTORY = {"all": {"hosts": {
    "c1/system": {"cluster_name": "c1", "nodegroup_name": "system", "aws_region": "us-west-2", "kind": "managed",
                  "nodegroup_ami_type": "AL2023_x86_64_STANDARD", "nodegroup_tags": {"upgrade-ring": "canary"}},
    "c1/apps": {"cluster_name": "c1", "nodegroup_name": "apps", "aws_region": "us-west-2", "kind": "self_managed",
                "nodegroup_image_name": AMI, "nodegroup_tags": {"upgrade-ring": "ring1"}},
}}}
CASES = [
    ({"kubernetes_version": None}, "kubernetes_version", "is required"),
    # YAML's 1.30 is the number 1.3: module fleet_targets refuses it as the single-group path does, before SSM.
    ({"kubernetes_version": 1.3}, "kubernetes_version", "1.3"),
    ({"per_cluster_concurrency": 0}, "per_cluster_concurrency", "whole number >= 1"),
    ({"per_cluster_concurrency": "two"}, "per_cluster_concurrency", "got two"),
    ({"fleet_max_fail_percentage": 101}, "fleet_max_fail_percentage", "from 0 to 100"),
    ({"fleet_bake_seconds": -1}, "fleet_bake_seconds", ">= 0"),
    ({"fleet_rings": "canary"}, "fleet_rings", "list of ring names"),
    ({"fleet_rings": ["canary"]}, "fleet_rings", "c1/apps (ring1)"),
    ({"first_nodegroups": "system*"}, "first_nodegroups", "list of shell patterns"),
    ({"image_id": "ami-0123456789abcdef0"}, "image_id", "not a variable of the fleet"),
    ({"upgrade_report_path": "/tmp/r.json"}, "upgrade_report_path", "not a variable of the fleet"),
    ({"nodegroup_name": "workers"}, "nodegroup_name", "c1/apps and c1/system (workers)"),
    ({"drain_timeout": 0}, "drain_timeout", "at least 1"),
    ({"update_strategy": "fast"}, "update_strategy", "must be default, minimal, surge or unset"),
    # Issue 28 item 4: the request budgets.
    ({"aws_requests_per_second": -1}, "aws_requests_per_second", "number of requests per second >= 0"),
    ({"k8s_requests_per_second": "fast"}, "k8s_requests_per_second", "got 'fast'"),
    # Issue 28 item 2, targets that survive a rerun: the previous run's targets are checked for every host first.
    ({"fleet_targets": "ami-0123456789abcdef0"}, "fleet_targets", "targets a previous run of the fleet published"),
    ({"fleet_targets": {"eu-west-1": {}}}, "fleet_targets", "none for region us-west-2"),
    ({"fleet_targets": {"us-west-2": {"/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/"
                                      "release_version": "1.30.0-20240701"}}}, "fleet_targets", "image_id for c1/apps"),
]


@pytest.fixture(scope="module")
def inventory(tmp_path_factory):
    path = tmp_path_factory.mktemp("fleet-inventory") / "fleet.yml"
    path.write_text(json.dumps(INVENTORY))
    return path


@pytest.mark.parametrize("extra, parameter, says", CASES, ids=[case[1] + "-" + str(index) for index, case in enumerate(CASES)])
def test_issue28_item2_a_bad_fleet_input_is_refused_before_any_request(inventory, tmp_path, extra, parameter, says):
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "K8S_AUTH_")) and key != "KUBECONFIG"}
    env.update(PATH=f"{BIN_DIR}{os.pathsep}{env.get('PATH', '')}", ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS_PATH),
               ANSIBLE_NOCOLOR="1", ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCAL_TEMP=str(tmp_path), AWS_ENDPOINT_URL="http://127.0.0.1:9",
               AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_MAX_ATTEMPTS="1")
    variables = dict({"kubernetes_version": "1.30"}, **extra)
    result = subprocess.run([str(BIN_DIR / "ansible-playbook"), "-i", str(inventory),
                             str(REPO_ROOT / "playbooks" / "upgrade_fleet.yml"), "-e", json.dumps(variables)],
                            capture_output=True, text=True, env=env, timeout=120, check=False, cwd=REPO_ROOT)
    assert result.returncode != 0, result.stdout[-3000:]
    starts = [index for index in (result.stdout.find("fatal: ["), result.stdout.find("failed: [")) if index >= 0]
    failed = result.stdout[min(starts):] if starts else ""
    assert '"parameter": "%s"' % parameter in failed and says in failed, result.stdout[-3000:]
    assert "AwsUnreachable" not in result.stdout
