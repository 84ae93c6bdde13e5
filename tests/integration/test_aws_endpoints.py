# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWS endpoints and client options against the sandbox (issue 10 item 13): per-service endpoints through
botocore's AWS_ENDPOINT_URL_<SERVICE> over a global AWS_ENDPOINT_URL, the EKS token (presigned for regional STS)
accepted by the cluster, and aws_config reaching the clients."""

from __future__ import annotations

import socket

from nodegroup_state import call_counts, calls_between
from sandbox_helpers import run_module

SCENARIO = "demo"
BASE = {"cluster_name": "demo", "nodegroup_name": "workers"}
SERVICES = ("AUTO_SCALING", "EC2", "EKS", "SSM")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_service_endpoints_win_over_aws_endpoint_url_and_the_token_is_accepted(sandbox, tmp_path):
    """AWS_ENDPOINT_URL points nowhere; each service's own variable points at the sandbox. No kubeconfig: the
    module authenticates with an EKS token minted for cluster_name (its URL names regional STS)."""
    dead = "http://127.0.0.1:%d" % closed_port()
    env = {"AWS_ENDPOINT_URL": dead, "KUBECONFIG": None, "HOME": str(tmp_path)}
    env.update(("AWS_ENDPOINT_URL_%s" % service, sandbox.env["AWS_ENDPOINT_URL"]) for service in SERVICES)
    before = call_counts(sandbox)
    result = run_module(sandbox, "nodegroup_info", BASE, env=env)
    assert result["failed"] is False, result
    assert len(result["nodegroup"]["instances"]) == 6
    calls = calls_between(before, call_counts(sandbox))
    assert calls["DescribeCluster OK"] == 1
    assert calls["eksops.nodegroup/0.1.0/nodegroup_info list nodes 200"] == 1


def test_aws_config_reaches_the_clients(sandbox):
    """The sandbox counts AWS calls by the last token of the User-Agent, where botocore puts user_agent_extra."""
    before = sandbox.report()["aws_calls_by_agent"]
    args = {**BASE, "aws_config": {"user_agent_extra": "probe/item13", "retries": {"mode": "adaptive"}}}
    result = run_module(sandbox, "nodegroup_info", args)
    assert result["failed"] is False, result
    calls = calls_between(before, sandbox.report()["aws_calls_by_agent"])
    assert calls and all(key.startswith("probe/item13 ") for key in calls), calls


def test_bad_aws_config_is_refused_before_any_aws_call(sandbox):
    before = sandbox.report()["aws_calls"]
    result = run_module(sandbox, "nodegroup_info", {**BASE, "aws_config": {"retries": {"mode": "eager"}}})
    assert result["failed"] is True
    assert (result["code"], result["parameter"]) == ("InvalidParameter", "aws_config"), result
    assert calls_between(before, sandbox.report()["aws_calls"]) == {}
