# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Request budgets shared by every process of the host (issue 28 item 4): the AWS and Kubernetes request rates stay
bounded per AWS region and endpoint and per Kubernetes API server however many forks run.

Ansible's forks are separate processes (a worker per task and host, a module process under it), so a limiter in
one process bounds nothing. A budget is a token bucket (the algorithm EC2 throttles with: "Request throttling for
the Amazon EC2 API", and client-go's flowcontrol token bucket), kept as one number in a small file per key under a
directory of the host that every process takes with ``fcntl.flock``: the generic cell rate algorithm's theoretical
arrival time (ITU-T I.371), the moment the bucket is full again. A request takes the file for a few microseconds,
reserves its slot and sleeps outside the lock until the slot comes, so requests go in the order they asked and a
waiting process holds nothing.

Defaults, each a fraction of what the other side allows (the budget is a client's, beside every other client of
the account or cluster):

- AWS: 10 requests per second per region and endpoint, 2 s of burst. EC2 throttles each account per region with a
  token bucket per API action; its non-mutating actions (Describe*) refill 20 tokens per second, into a bucket of
  100 ("Request throttling for the Amazon EC2 API", Request token limits). Auto Scaling, EKS and SSM throttle per
  account and region too, without published figures.
- Kubernetes: 50 requests per second per API server, 2 s of burst: what kube-scheduler takes for its own client
  (``--kube-api-qps`` 50, ``--kube-api-burst`` 100, "kube-scheduler" command line reference; kube-controller-manager
  takes 20 and 30), for a run that acts like one more controller of the cluster whose drains evict pods in parallel
  (an upgrade of 100 nodes, 10 at a time, made about 4400 requests in 166 s, 26 per second on average:
  docs/performance.md); the API server's API Priority and Fairness then shares its seats between the flows ("API
  Priority and Fairness"). A watch is one request, at its start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
import hashlib
import os
import struct
import tempfile
import time
from urllib.parse import urlsplit

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows, where Ansible's controller does not run
    fcntl = None

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import invalid_parameter

AWS_REQUESTS_PER_SECOND = 10.0
K8S_REQUESTS_PER_SECOND = 50.0
# The bucket holds this many seconds of the rate: the burst a budget allows after a quiet spell (client-go's
# default client: 5 requests per second, a burst of 10).
BURST_SECONDS = 2.0
# A reservation further ahead than this is from a clock that went back (or a reboot under an old file): dropped.
MAX_RESERVATION_SECONDS = 300.0
ENV_DIRECTORY = "EKSOPS_REQUEST_BUDGET_DIR"
AWS_RATE_ENV = "EKSOPS_AWS_REQUESTS_PER_SECOND"
K8S_RATE_ENV = "EKSOPS_K8S_REQUESTS_PER_SECOND"
# The options of the rates (the shared AWS and Kubernetes argument specs), their environment variables and defaults.
RATE_OPTIONS = {"aws_requests_per_second": (AWS_RATE_ENV, AWS_REQUESTS_PER_SECOND),
                "k8s_requests_per_second": (K8S_RATE_ENV, K8S_REQUESTS_PER_SECOND)}
_STATE = struct.Struct("<d")


def budget_directory() -> str:
    """Where the host's budgets live: ``EKSOPS_REQUEST_BUDGET_DIR``, else a directory of the user under the
    system's temporary directory (every process of one user on the host finds the same one)."""
    return os.environ.get(ENV_DIRECTORY) or os.path.join(tempfile.gettempdir(), "eksops-nodegroup-requests-%d"
                                                         % os.getuid())


def requests_per_second(parameter: str, value: object) -> float:
    """The rate of the option ``parameter`` (aws_requests_per_second, k8s_requests_per_second; 0: no budget): its
    value, else its environment variable, else its default; refused, naming it, when it is not a number >= 0."""
    environment, default = RATE_OPTIONS[parameter]
    if value is None:
        value = os.environ.get(environment, default)
    try:
        rate = float(value)
    except (TypeError, ValueError):
        rate = -1.0
    if not 0 <= rate < float("inf"):
        raise invalid_parameter(parameter, "%s must be a number of requests per second >= 0 (0: no bound), got %r"
                                % (parameter, value))
    return rate


class RequestBudget:
    """The token bucket of ``key`` (an AWS region and endpoint, a Kubernetes API server) at ``rate`` requests per
    second, shared through a file of ``directory`` by every process that names the same key."""

    def __init__(self, key: str, rate: float, directory: str | None = None, burst_seconds: float = BURST_SECONDS,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep) -> None:
        self.key = key
        self.rate = rate
        self.burst = max(1.0, rate * burst_seconds)
        self._directory = directory
        self._clock = clock
        self._sleep = sleep

    def path(self) -> str:
        directory = self._directory or budget_directory()
        return os.path.join(directory, hashlib.sha256(self.key.encode("utf-8")).hexdigest()[:32])

    def reserve(self) -> float:
        """Take the next slot of the bucket; the seconds to wait for it (0: now)."""
        if self.rate <= 0 or fcntl is None:
            return 0.0
        interval = 1.0 / self.rate
        path = self.path()
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            raw = os.pread(descriptor, _STATE.size, 0)
            now = self._clock()
            full_at = _STATE.unpack(raw)[0] if len(raw) == _STATE.size else now
            if full_at > now + MAX_RESERVATION_SECONDS:
                full_at = now
            # GCRA: the slot is free once the bucket holds a token, i.e. burst - 1 intervals before it is full.
            full_at = max(full_at, now)
            wait = max(0.0, full_at - (self.burst - 1.0) * interval - now)
            os.pwrite(descriptor, _STATE.pack(full_at + interval), 0)
        finally:
            os.close(descriptor)  # releases the lock
        return wait

    def take(self) -> None:
        """Wait for the next slot of the bucket (outside the lock)."""
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)


def pace_aws_client(client: Any, rate: float, directory: str | None = None) -> Any:
    """``client`` (a botocore client) with every HTTP request it sends, each retry too, waiting for the budget of its
    region and endpoint (botocore's ``before-send`` event, once per attempt)."""
    if rate > 0:
        region = client.meta.region_name

        def before_send(request: Any, **_kwargs: Any) -> None:
            RequestBudget("aws %s %s" % (region, urlsplit(request.url).netloc), rate, directory).take()

        client.meta.events.register("before-send", before_send)
    return client


def pace_k8s_client(api_client: Any, rate: float, directory: str | None = None) -> Any:
    """``api_client`` (a kubernetes ApiClient) with every request it sends waiting for the budget of its API server:
    each verb of the client's REST layer goes through its ``request``, a watch once, when it opens."""
    if rate > 0:
        rest = api_client.rest_client
        send = rest.request
        budget = RequestBudget("k8s %s" % api_client.configuration.host, rate, directory)

        def paced(*args: Any, **kwargs: Any) -> Any:
            budget.take()
            return send(*args, **kwargs)

        rest.request = paced
    return api_client
