# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the modules reach AWS and Kubernetes, against the sandbox: every way to authenticate, and the errors
users see when they cannot (SPEC U8 AccessDenied / ClusterUnreachable, P5 EKS tokens)."""

from __future__ import annotations

import base64
import socket

import pytest
import yaml

from nodegroup_state import aws_state, call_counts, calls_between, mutating_calls, sandbox_env
from sandbox_helpers import run_module, running_sandbox

SCENARIO = "demo"
BASE = {"cluster_name": "demo", "nodegroup_name": "workers"}
AGENT = "eksops.nodegroup/0.1.0/nodegroup_info"


def kubeconfig_of(sandbox) -> dict:
    with open(sandbox.state_dir / "kubeconfig", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def api_server(sandbox) -> str:
    return kubeconfig_of(sandbox)["clusters"][0]["cluster"]["server"]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def no_kubeconfig(sandbox, tmp_path):
    """Neither KUBECONFIG nor ~/.kube/config: only cluster_name (or host) can reach the cluster."""
    with sandbox_env(sandbox, KUBECONFIG="", HOME=str(tmp_path)):
        yield


def test_cluster_name_alone_describes_the_cluster_and_mints_an_eks_token(sandbox, no_kubeconfig):
    before = call_counts(sandbox)
    result = run_module(sandbox, "nodegroup_info", BASE)
    assert result["failed"] is False, result
    assert len(result["nodegroup"]["instances"]) == 6
    calls = calls_between(before, call_counts(sandbox))
    assert calls["DescribeCluster OK"] == 1
    assert calls["%s list nodes 200" % AGENT] == 1


def test_host_with_cluster_name_uses_an_eks_token(sandbox, no_kubeconfig, tmp_path):
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(base64.b64decode(kubeconfig_of(sandbox)["clusters"][0]["cluster"]["certificate-authority-data"]))
    result = run_module(sandbox, "nodegroup_info", {**BASE, "host": api_server(sandbox), "ca_cert": str(ca_file)})
    assert result["failed"] is False, result
    assert len(result["nodegroup"]["instances"]) == 6


def test_explicit_kubeconfig(sandbox, no_kubeconfig):
    kubeconfig = kubeconfig_of(sandbox)
    result = run_module(sandbox, "nodegroup_info", {**BASE, "kubeconfig": str(sandbox.state_dir / "kubeconfig"),
                                                    "context": kubeconfig["current-context"]})
    assert result["failed"] is False, result


def test_unknown_cluster_name_is_named(sandbox, no_kubeconfig):
    result = run_module(sandbox, "nodegroup_info", {**BASE, "cluster_name": "nope"})
    assert result["failed"] is True
    assert (result["code"], result["parameter"]) == ("ResourceNotFound", "cluster_name")
    assert "nope" in result["msg"]


@pytest.mark.parametrize("how", ["host", "kubeconfig"])
def test_unreachable_api_server_is_cluster_unreachable(sandbox, tmp_path, how):
    dead = "https://127.0.0.1:%d" % closed_port()
    if how == "host":
        args = {"host": dead, "api_key": "x", "validate_certs": False}
    else:
        kubeconfig = kubeconfig_of(sandbox)
        kubeconfig["clusters"][0]["cluster"]["server"] = dead
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig))
        args = {"kubeconfig": str(path)}
    result = run_module(sandbox, "nodegroup_info", {**BASE, **args})
    assert result["failed"] is True
    assert result["code"] == "ClusterUnreachable", result
    assert "127.0.0.1" in result["msg"]


def test_rejected_token_is_access_denied(sandbox):
    result = run_module(sandbox, "nodegroup_info", {**BASE, "api_key": "not-the-token"})
    assert result["failed"] is True
    assert (result["code"], result["status"]) == ("AccessDenied", 401), result


def test_missing_kubeconfig_file_is_named(sandbox):
    result = run_module(sandbox, "nodegroup_info", {**BASE, "kubeconfig": "/nonexistent/kubeconfig"})
    assert result["failed"] is True
    assert (result["code"], result["parameter"]) == ("InvalidParameter", "kubeconfig")


def test_unreachable_aws_endpoint(sandbox):
    result = run_module(sandbox, "nodegroup_info",
                        {**BASE, "endpoint_url": "http://127.0.0.1:%d" % closed_port()}, timeout=300)
    assert result["failed"] is True
    assert result["code"] == "AwsUnreachable", result


DENIED_SCENARIO = {
    "name": "access_denied",
    "cluster": {"name": "demo"},
    "availability_zones": ["us-west-2a", "us-west-2b"],
    "amis": [{"name": "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", "kubernetes_version": "1.29"},
             {"name": "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615", "kubernetes_version": "1.30"}],
    "nodegroups": [{"name": "workers", "ami": "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101",
                    "min_size": 1, "max_size": 4, "desired_capacity": 2}],
    # An IAM policy without these actions: AWS answers every such call with UnauthorizedOperation.
    "faults": [{"type": "aws_error", "action": "DescribeInstances", "code": "UnauthorizedOperation",
                "count": 1000},
               {"type": "aws_error", "action": "CreateLaunchTemplateVersion", "code": "UnauthorizedOperation",
                "count": 1000}],
}


@pytest.fixture(scope="module")
def denied_sandbox(tmp_path_factory):
    with running_sandbox(DENIED_SCENARIO, tmp_path_factory.mktemp("sandbox-access-denied")) as handle:
        yield handle


def test_aws_permission_missing_is_access_denied(denied_sandbox):
    result = run_module(denied_sandbox, "nodegroup_info", BASE)
    assert result["failed"] is True
    assert (result["code"], result["aws_error_code"]) == ("AccessDenied", "UnauthorizedOperation"), result
    assert "EC2 instances" in result["msg"]


def test_aws_permission_missing_changes_nothing(denied_sandbox):
    before, calls_before = aws_state(denied_sandbox), call_counts(denied_sandbox)
    result = run_module(denied_sandbox, "launch_template_version", {**BASE, "kubernetes_version": "1.30"})
    assert result["failed"] is True
    assert (result["code"], result["aws_error_code"]) == ("AccessDenied", "UnauthorizedOperation"), result
    assert aws_state(denied_sandbox) == before
    assert mutating_calls(calls_between(calls_before, call_counts(denied_sandbox))) == {
        "CreateLaunchTemplateVersion UnauthorizedOperation": 1}
