# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWS endpoints and client options against the sandbox (issue 10 item 13): per-service endpoints through
botocore's AWS_ENDPOINT_URL_<SERVICE> over a global AWS_ENDPOINT_URL, the EKS token (presigned for regional STS)
accepted by the cluster, and aws_config reaching the clients; and the request budgets that module processes share
(issue 28 item 4)."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.request_budget import BURST_SECONDS
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


def test_issue28_item4_module_processes_share_the_hosts_request_budgets(sandbox, tmp_path):
    """Issue 28 item 4: three module processes at once (Ansible's forks) under budgets given as AWX injects them, in
    the environment (AWS 3 requests per second, a burst of 6; Kubernetes 1, a burst of 2): their AWS calls
    together, as the sandbox timed them per tenth of a second, stay under the one bound, and so do their
    Kubernetes requests."""
    env = {"EKSOPS_AWS_REQUESTS_PER_SECOND": "3", "EKSOPS_K8S_REQUESTS_PER_SECOND": "1",
           "EKSOPS_REQUEST_BUDGET_DIR": str(tmp_path)}
    before = sandbox.report()
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _index: run_module(sandbox, "nodegroup_info", BASE, env=env), range(3)))
    after = sandbox.report()
    assert [result["failed"] for result in results] == [False] * 3, results
    region = sandbox.env["AWS_REGION"]
    for times, rate, earlier, later in (
            ("aws", 3.0, before["aws_call_times"].get(region, {}), after["aws_call_times"][region]),
            ("k8s", 1.0, before["k8s_request_times"], after["k8s_request_times"])):
        burst = rate * BURST_SECONDS
        counts = {int(key): count - earlier.get(key, 0) for key, count in later.items()}
        tenths = sorted(tenth for tenth, count in counts.items() for _request in range(count))
        assert len(tenths) > burst, times
        # From one request to a later one, at most burst + rate x the time between them (the sandbox counts per
        # tenth of a second), and one request of slack: a request is timed when the sandbox serves it, a little
        # after its slot.
        assert max(j - i + 1 - burst - rate * (tenths[j] - tenths[i] + 1) / 10.0
                   for i in range(len(tenths)) for j in range(i, len(tenths))) <= 1.0, (times, tenths)
