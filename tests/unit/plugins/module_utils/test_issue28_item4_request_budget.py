# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 4, politeness: the AWS and Kubernetes request rates stay bounded per region and endpoint and per API
server however many forks run (module_utils/host/request_budget.py)."""

from __future__ import annotations

import multiprocessing
import struct
import time

import boto3
import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import aws_client
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host import request_budget
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.request_budget import (
    RequestBudget,
    pace_k8s_client,
    requests_per_second,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import k8s_api_client

RATE = 40.0
BURST_SECONDS = 0.25  # a bucket of 10
PROCESSES = 4
REQUESTS_EACH = 20


def _requests_of_one_fork(directory, start_at, times):
    """One Ansible fork: REQUESTS_EACH requests as fast as its budget lets it, each one's time recorded."""
    budget = RequestBudget("k8s https://api.example:443", RATE, directory, burst_seconds=BURST_SECONDS)
    time.sleep(max(0.0, start_at - time.time()))
    for _index in range(REQUESTS_EACH):
        budget.take()
        times.put(time.time())


def largest_excess(times, rate, burst):
    """How far the requests at ``times`` went over a token bucket of ``rate`` and ``burst`` in their worst window: in
    any window from one request to a later one, at most burst + rate x its length requests may go."""
    times = sorted(times)
    return max(j - i + 1 - (burst + rate * (times[j] - times[i]))
               for i in range(len(times)) for j in range(i, len(times)))


def test_issue28_item4_politeness_requests_of_several_processes_stay_under_one_bound(tmp_path):
    """N processes (Ansible's forks) share one budget: together they stay under its rate, where a limiter of each
    process's own would let N times as many through."""
    context = multiprocessing.get_context("fork")
    times = context.Queue()
    start_at = time.time() + 0.3
    forks = [context.Process(target=_requests_of_one_fork, args=(str(tmp_path), start_at, times))
             for _index in range(PROCESSES)]
    for fork in forks:
        fork.start()
    for fork in forks:
        fork.join(timeout=30)
    observed = [times.get(timeout=5) for _index in range(PROCESSES * REQUESTS_EACH)]
    burst = RATE * BURST_SECONDS
    # 1 request of slack for the moment between a slot and the time the process reads.
    assert largest_excess(observed, RATE, burst) <= 1.0
    took = max(observed) - min(observed)
    assert took >= (PROCESSES * REQUESTS_EACH - burst - 1) / RATE
    assert all(fork.exitcode == 0 for fork in forks)


def test_issue28_item4_a_budget_reserves_slots_one_interval_apart_after_its_burst(tmp_path):
    now = [1000.0]
    budget = RequestBudget("aws us-west-2 ec2.us-west-2.amazonaws.com", 10.0, str(tmp_path), clock=lambda: now[0])
    waits = [budget.reserve() for _index in range(23)]
    assert waits[:20] == pytest.approx([0.0] * 20)  # the bucket: 2 s of 10 per second
    assert waits[20:] == pytest.approx([0.1, 0.2, 0.3])
    now[0] += 10.0  # a quiet spell refills the bucket, and no more than that
    assert [budget.reserve() for _index in range(21)][-2:] == pytest.approx([0.0, 0.1])


def test_issue28_item4_a_clock_that_went_back_does_not_stall_the_budget(tmp_path):
    now = [5000.0]
    budget = RequestBudget("k8s https://a", 1.0, str(tmp_path), clock=lambda: now[0])
    for _index in range(3):
        budget.reserve()
    now[0] -= 3600.0
    assert budget.reserve() == 0.0


def test_issue28_item4_each_region_endpoint_and_api_server_has_its_own_budget(tmp_path):
    keys = ["aws us-west-2 ec2.us-west-2.amazonaws.com", "aws eu-west-1 ec2.eu-west-1.amazonaws.com",
            "k8s https://a.example", "k8s https://b.example"]
    assert len({RequestBudget(key, 1.0, str(tmp_path)).path() for key in keys}) == 4
    assert all(RequestBudget(key, 1.0, str(tmp_path)).reserve() == 0.0 for key in keys)


@pytest.mark.parametrize("value", [-1, "fast", float("nan"), float("inf")])
def test_issue28_item4_a_rate_that_is_not_a_number_of_requests_is_refused_naming_it(value):
    with pytest.raises(UpgradeError) as raised:
        requests_per_second("k8s_requests_per_second", value)
    assert raised.value.code == "InvalidParameter"
    assert raised.value.details["parameter"] == "k8s_requests_per_second"


def test_issue28_item4_the_rate_comes_from_the_option_then_the_environment_then_the_default(monkeypatch):
    monkeypatch.delenv(request_budget.AWS_RATE_ENV, raising=False)
    assert requests_per_second("aws_requests_per_second", None) == request_budget.AWS_REQUESTS_PER_SECOND
    monkeypatch.setenv(request_budget.AWS_RATE_ENV, "3.5")
    assert requests_per_second("aws_requests_per_second", None) == 3.5
    assert requests_per_second("aws_requests_per_second", 0) == 0.0


def _timed(calls):
    started = time.monotonic()
    calls()
    return time.monotonic() - started


def test_issue28_item4_every_aws_request_of_a_client_waits_for_its_budget(tmp_path, monkeypatch):
    """The hook is botocore's before-send, on every client aws_client builds: 25 calls at 10 per second, 20 of them
    in the bucket, take at least 0.5 s and reserve 25 slots of 0.1 s; with 0, none."""
    monkeypatch.setenv(request_budget.ENV_DIRECTORY, str(tmp_path))
    with mock_aws():
        boto3.client("autoscaling", region_name="us-west-2")  # moto's backend, warmed
        params = dict(region="us-west-2", access_key="a", secret_key="b")
        paced = aws_client(dict(params, aws_requests_per_second=10), "autoscaling")
        free = aws_client(dict(params, aws_requests_per_second=0), "autoscaling")
        started = time.time()
        for _index in range(25):
            free.describe_auto_scaling_groups()
        assert list(tmp_path.iterdir()) == []
        bounded = _timed(lambda: [paced.describe_auto_scaling_groups() for _index in range(25)])
    assert bounded >= 0.45
    (budget_file,) = tmp_path.iterdir()
    full_at = struct.unpack("<d", budget_file.read_bytes())[0]
    assert full_at >= started + 25 * 0.1


def test_issue28_item4_every_kubernetes_request_of_a_client_waits_for_its_budget(tmp_path, monkeypatch):
    """k8s_api_client paces its REST layer: every verb, and a watch once at its start, goes through ``request``."""
    monkeypatch.setenv(request_budget.ENV_DIRECTORY, str(tmp_path))
    paced_client = k8s_api_client(dict(host="https://api.example", api_key="token", k8s_requests_per_second=10))
    free_client = k8s_api_client(dict(host="https://api.example", api_key="token", k8s_requests_per_second=0))
    assert paced_client.rest_client.request.__name__ == "paced"
    assert free_client.rest_client.request.__name__ == "request"
    # The same pacing over a REST layer that records what it would send (no server here).
    sent = []
    paced = pace_k8s_client(_FakeApiClient(sent), 10.0, str(tmp_path))
    took = _timed(lambda: [paced.rest_client.GET("https://api.example/api/v1/nodes") for _index in range(25)])
    assert took >= 0.45
    assert len(sent) == 25


class _FakeRest:
    def __init__(self, sent):
        self.sent = sent

    def request(self, method, url, **_kwargs):
        self.sent.append((method, url))

    # The kubernetes client's name for the verb.
    def GET(self, url, **kwargs):  # pylint: disable=invalid-name
        return self.request("GET", url, **kwargs)


class _FakeApiClient:
    def __init__(self, sent):
        self.rest_client = _FakeRest(sent)
        self.configuration = type("Configuration", (), {"host": "https://api.example"})()
