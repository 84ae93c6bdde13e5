# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""issue 10 (Done when: fault_aws_throttle, fault_sigterm): the `fault_aws_throttle` scenario run through
playbooks/upgrade_nodegroup.yml.

The scenario makes AWS throttle the collection: DescribeAutoScalingGroups answers Throttling and DescribeInstances
RequestLimitExceeded 30 % of the time, and the first three calls of any kind answer Throttling. The AWS client
factory (module_utils/aws/session.py: botocore's standard retry mode, jittered backoff, 10 attempts) must absorb them:
the upgrade succeeds with every node replaced, no pod lost, no PDB violated, and the sandbox's report shows
that the errors were injected into the collection's calls and that the same calls then succeeded.

The test makes no AWS call of its own (it reads the sandbox's report over HTTP): every error the faults inject
is one the collection received.
"""

from __future__ import annotations

import pytest

from fault_upgrade import RUN_TIMEOUT, assert_upgraded, upgrade

SCENARIO = "fault_aws_throttle"
COLLECTION_AGENT = "eksops.nodegroup/"
THROTTLING_CODES = ("Throttling", "RequestLimitExceeded")


def throttled_calls(report):
    """{(action, code): count} of the throttling errors AWS answered."""
    counts = {}
    for key, count in report["aws_calls"].items():
        action, code = key.rsplit(" ", 1)
        if code in THROTTLING_CODES:
            counts[(action, code)] = counts.get((action, code), 0) + count
    return counts


def report_agent(report):
    """The collection's agent in the sandbox's report: the last token of its User-Agent, eksops.nodegroup/<v>."""
    agents = {key.split(" ", 1)[0] for key in report["aws_calls_by_agent"] if key.startswith(COLLECTION_AGENT)}
    assert len(agents) == 1, agents
    return agents.pop()


@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_issue10_fault_aws_throttle_the_upgrade_retries_throttled_calls_and_succeeds(sandbox, tmp_path):
    """issue 10 (Done when: fault_aws_throttle, fault_sigterm): throttled AWS calls are retried, the upgrade
    succeeds with every node replaced, no pod lost, no PDB violated, and the faults really fired."""
    before = sandbox.report()
    assert before["aws_calls"] == {}, "something called AWS before the playbook: the faults are for the playbook"
    result, report = upgrade(sandbox, tmp_path / "upgrade-report.json")
    after = sandbox.report()
    assert_upgraded(sandbox, before, after, report, result.stdout)

    faults = after["faults"]
    [first_calls] = [f for f in faults if f["action"] == "*"]
    [asg_reads] = [f for f in faults if f["action"] == "DescribeAutoScalingGroups"]
    [ec2_reads] = [f for f in faults if f["action"] == "DescribeInstances"]
    # The first three calls always fail, and DescribeAutoScalingGroups, called some 30 times, fails at 30 %.
    # DescribeInstances is called some 15 times: one run in a hundred or so draws no error for it, so its fault
    # is not required to fire.
    assert first_calls["fired"] == first_calls["count"] == 3
    assert asg_reads["fired"] > 0
    fired = first_calls["fired"] + asg_reads["fired"] + ec2_reads["fired"]

    # only the collection called AWS, so every error injected was answered to it
    assert {key.split(" ", 1)[0] for key in after["aws_calls_by_agent"]} == {report_agent(after)}
    throttled = throttled_calls(after)
    print("faults fired: %s; throttled calls: %s; phases: %s" % (
        [(f["action"], f["code"], f["fired"]) for f in faults], throttled, report["phase_seconds"]))
    assert sum(throttled.values()) == fired
    assert throttled.get(("DescribeAutoScalingGroups", "Throttling"), 0) >= asg_reads["fired"]
    assert throttled.get(("DescribeInstances", "RequestLimitExceeded"), 0) == ec2_reads["fired"]
    # and each action it was throttled on was retried until the service answered it (OK, or an answer such as
    # DescribeNodegroup's ResourceNotFoundException for a self-managed group)
    answered = {key.rsplit(" ", 1)[0] for key in after["aws_calls"] if key.rsplit(" ", 1)[1] not in THROTTLING_CODES}
    assert {action for action, code in throttled} <= answered
