# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The wait between an empty node and its termination (U5; SPEC B3, issue 11 item 3): _drain/post_drain.py."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.options import DrainOptions
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.post_drain import (
    FIRST_POLL_SECONDS,
    MAX_POLL_SECONDS,
    PostDrainWait,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.result import NodeResult
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError

from ...fakes import FakeClock


class HeldUntil:
    """The cluster's load balancers, as ClusterLoadBalancers answers: target group ``web`` holds i-1 until
    ``until`` on ``clock`` (None: forever); ``found`` False plays a cluster without any."""

    def __init__(self, clock, until, found=True):
        self.clock = clock
        self.until = until
        self.found = found
        self.asked_at = []
        self.unreadable = {}

    def describe(self):
        return "1 target group(s) (1 of instance targets) and 0 Classic Load Balancer(s)"

    def holding(self, instance_ids):
        self.asked_at.append(self.clock.now())
        if self.until is not None and self.clock.now() >= self.until:
            return {}
        return dict((i, [dict(kind="target group", name="web", state="draining", delay_seconds=300)])
                    for i in instance_ids if i == "i-1")


def run_wait(clock, balancers, instance_id="i-1", **options):
    """The whole wait on the fake clock (no pod arrives); returns (the wait, seconds it took)."""
    wait = PostDrainWait(DrainOptions(run_id="r", **options), balancers, instance_id, clock)
    started = clock.now()
    assert wait.run(clock.advance, lambda message: None) is None
    return wait, clock.now() - started


def test_without_load_balancers_the_wait_is_post_drain_wait():
    clock = FakeClock()
    assert run_wait(clock, None, post_drain_wait=60)[1] == 60
    assert run_wait(clock, HeldUntil(clock, None, found=False), post_drain_wait=45)[1] == 45
    assert run_wait(clock, None, post_drain_wait=60, post_drain_min_wait=10)[1] == 10
    # a node without an instance id (no providerID) cannot be looked up: the fixed wait
    assert run_wait(clock, HeldUntil(clock, None), instance_id=None, post_drain_wait=30)[1] == 30


def test_the_wait_ends_when_the_instance_left_every_load_balancer():
    clock = FakeClock()
    balancers = HeldUntil(clock, clock.now() + 7.2)
    wait, took = run_wait(clock, balancers, post_drain_wait=300)
    assert 7.2 <= took <= 7.2 + MAX_POLL_SECONDS
    asked = balancers.asked_at
    gaps = [b - a for a, b in zip(asked, asked[1:])]
    assert gaps[0] == FIRST_POLL_SECONDS and all(gap >= FIRST_POLL_SECONDS for gap in gaps)
    assert all(b >= a for a, b in zip(gaps, gaps[1:])) and max(gaps) <= MAX_POLL_SECONDS
    result = NodeResult("node-a")
    assert wait.settle(result, ignore_timeout=False) and result.load_balancers == ["web"] and result.error is None
    assert result.post_drain_waited == took


def test_an_instance_no_load_balancer_holds_goes_at_once_or_after_post_drain_min_wait():
    clock = FakeClock()
    assert run_wait(clock, HeldUntil(clock, clock.now()), post_drain_wait=300)[1] == 0
    assert run_wait(clock, HeldUntil(clock, clock.now()), post_drain_wait=300, post_drain_min_wait=20)[1] == 20


def test_still_held_after_post_drain_wait_fails_the_node_naming_the_target_group():
    clock = FakeClock()
    wait, took = run_wait(clock, HeldUntil(clock, None), post_drain_wait=60)
    assert took == 60
    result = NodeResult("node-a")
    assert not wait.settle(result, ignore_timeout=False)
    assert result.code == "LoadBalancerDeregistrationTimeout"
    assert result.error == ("node node-a stays cordoned: instance i-1 is still registered with or draining from "
                            "target group web (draining, deregistration delay 300 s) after post_drain_wait=60 s; "
                            "raise post_drain_wait above the deregistration delay, or set ignore_load_balancer_timeout "
                            "to terminate it anyway")


def test_a_load_balancer_the_credentials_may_not_read_makes_the_wait_the_whole_post_drain_wait():
    """Partial IAM (DescribeTargetHealth denied on one target group): who it holds is unknown, so nothing better than
    the fixed wait is known; the node then goes after post_drain_wait with a warning naming the target group."""
    clock = FakeClock()
    balancers = HeldUntil(clock, clock.now())
    balancers.unreadable = {"api": "AccessDenied: not authorized to perform elasticloadbalancing:DescribeTargetHealth"}
    wait, took = run_wait(clock, balancers, post_drain_wait=60)
    assert took == 60
    result = NodeResult("node-a")
    assert wait.settle(result, ignore_timeout=False) and result.error is None
    assert result.warnings == ["who api hold could not be read (AccessDenied: not authorized to perform "
                               "elasticloadbalancing:DescribeTargetHealth): instance i-1 waited the whole "
                               "post_drain_wait=60 s for them instead (docs/iam-policy.json lists the permissions)"]


def test_ignore_load_balancer_timeout_lets_the_node_go_with_a_warning():
    clock = FakeClock()
    wait = run_wait(clock, HeldUntil(clock, None), post_drain_wait=5)[0]
    result = NodeResult("node-a")
    assert wait.settle(result, ignore_timeout=True) and result.error is None
    assert result.warnings == ["instance i-1 is still registered with or draining from target group web (draining, "
                               "deregistration delay 300 s) after post_drain_wait=5 s; terminated anyway "
                               "(ignore_load_balancer_timeout)"]


def test_post_drain_wait_0_still_asks_once_and_fails_a_held_instance():
    clock = FakeClock()
    balancers = HeldUntil(clock, None)
    wait, took = run_wait(clock, balancers, post_drain_wait=0)
    assert took == 0 and len(balancers.asked_at) == 1 and not wait.settle(NodeResult("n"), ignore_timeout=False)


def test_a_pod_arriving_ends_the_wait_with_what_arrived():
    clock = FakeClock()
    wait = PostDrainWait(DrainOptions(run_id="r", post_drain_wait=60), None, "i-1", clock)
    assert wait.run(lambda seconds: "web-late", lambda message: None) == "web-late"


@pytest.mark.parametrize("options, parameter", [
    (dict(post_drain_min_wait=-1), "post_drain_min_wait"),
    (dict(post_drain_wait=30, post_drain_min_wait=31), "post_drain_min_wait"),
    (dict(post_drain_wait=-1), "post_drain_wait"),
])
def test_bad_waits_are_refused_naming_the_parameter(options, parameter):
    with pytest.raises(UpgradeError) as raised:
        DrainOptions(**options)
    assert raised.value.code == "InvalidParameter" and raised.value.details["parameter"] == parameter


def test_the_log_says_what_is_waited_for_and_why_a_wait_is_fixed():
    clock = FakeClock()
    said = []
    options = DrainOptions(run_id="r", post_drain_wait=60, post_drain_min_wait=5)
    for balancers, instance_id in ((None, "i-1"), (HeldUntil(clock, None, found=False), "i-1"),
                                   (HeldUntil(clock, None), None), (HeldUntil(clock, clock.now() + 2), "i-1")):
        PostDrainWait(options, balancers, instance_id, clock).run(clock.advance, said.append)
    assert said == ["empty; waiting 5 s, a fixed wait: the cluster's load balancers were not looked up",
                    "empty; waiting 5 s, a fixed wait: no load balancer of the cluster was found",
                    "empty; waiting 5 s, a fixed wait: the node names no EC2 instance",
                    "empty; waiting for instance i-1 to leave the cluster's load balancers (1 target group(s) (1 of "
                    "instance targets) and 0 Classic Load Balancer(s)), 5-60 s"]


def test_at_the_bound_the_load_balancers_are_asked_once_more_before_the_node_fails():
    """Backed off to 5 s, the last answer before the bound may be 5 s old: an instance let go at 59 s of 60 goes."""
    clock = FakeClock()
    balancers = HeldUntil(clock, clock.now() + 59)
    wait, took = run_wait(clock, balancers, post_drain_wait=60)
    assert took == 60 and balancers.asked_at[-1] == clock.now() and wait.settle(NodeResult("n"), ignore_timeout=False)
