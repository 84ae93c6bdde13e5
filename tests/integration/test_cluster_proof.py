# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SPEC K4: the Kubernetes API in use must be cluster_name's before anything changes.

Two sandboxes side by side: AWS names cluster `demo` (this module's sandbox), the kubeconfig points at another
cluster's API server (a second sandbox, scenario `rolling`). The upgrade must be refused before any AWS or
Kubernetes change, naming both endpoints; before the proof existed, `update_strategy=minimal` drained "no
node" (none of demo's instances has a node in the other cluster) and terminated demo's instances with their
pods (issue 9).
"""

from __future__ import annotations

import copy

import pytest
import yaml

from nodegroup_state import call_counts, changes_by_the_collection
from sandbox_helpers import REPO_ROOT, run_module, run_playbook, running_sandbox

SCENARIO = "demo"
PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"


@pytest.fixture(scope="module")
def other_cluster(tmp_path_factory):
    with running_sandbox("rolling", tmp_path_factory.mktemp("sandbox-other")) as handle:
        yield handle


def kubeconfig_server(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)["clusters"][0]["cluster"]["server"]


def test_a_kubeconfig_of_another_cluster_is_refused_before_any_change(sandbox, other_cluster):
    demo_before, other_before = call_counts(sandbox), call_counts(other_cluster)
    result = run_playbook(sandbox, PLAYBOOK, {
        "cluster_name": "demo", "nodegroup_name": "workers", "kubernetes_version": "1.30",
        "update_strategy": "minimal", "drain_timeout": 20, "post_drain_wait": 1},
        env={"KUBECONFIG": other_cluster.env["KUBECONFIG"]})
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "ClusterUnreachable" in output
    # Both endpoints are named: the one in use and the one DescribeCluster gives for demo.
    assert kubeconfig_server(other_cluster.env["KUBECONFIG"]) in output
    assert kubeconfig_server(sandbox.env["KUBECONFIG"]) in output
    assert changes_by_the_collection(demo_before, call_counts(sandbox)) == {}
    assert changes_by_the_collection(other_before, call_counts(other_cluster)) == {}
    assert sandbox.report()["pods_lost"] == [] and other_cluster.report()["pods_lost"] == []


def test_an_ambient_kube_config_of_another_cluster_is_refused(sandbox, other_cluster, tmp_path):
    """No KUBECONFIG, but ~/.kube/config (the kubernetes client's default) points at the other cluster."""
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text(open(other_cluster.env["KUBECONFIG"], encoding="utf-8").read())
    before = call_counts(sandbox)
    result = run_module(sandbox, "nodegroup_preflight", {"cluster_name": "demo", "nodegroup_name": "workers"},
                        env={"HOME": str(home), "KUBECONFIG": None})
    assert result.get("failed"), result
    assert result["code"] == "ClusterUnreachable"
    assert result["eks_endpoint"] == kubeconfig_server(sandbox.env["KUBECONFIG"])
    assert result["api_endpoint"] == kubeconfig_server(other_cluster.env["KUBECONFIG"])
    assert changes_by_the_collection(before, call_counts(sandbox)) == {}


def test_another_spelling_of_the_endpoint_is_proven_by_the_nodes(sandbox, tmp_path):
    """A kubeconfig that reaches demo's API by another name (a proxy, a private DNS name): the endpoints
    differ, but every instance of the node group has its node there, matched by spec.providerID."""
    with open(sandbox.env["KUBECONFIG"], encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    proxied = copy.deepcopy(config)
    server = config["clusters"][0]["cluster"]["server"]
    proxied["clusters"][0]["cluster"]["server"] = server.replace("127.0.0.1", "localhost")
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(proxied))
    result = run_module(sandbox, "nodegroup_info", {"cluster_name": "demo", "nodegroup_name": "workers"},
                        env={"KUBECONFIG": str(path)})
    assert not result.get("failed"), result
    assert len([i for i in result["nodegroup"]["instances"] if i["node_name"]]) == 6
