# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 2 review, finding 1 (multi-account): the fleet's plan play asks STS who each set of credentials is,
once per set (filter fleet_plan's ``accounts``, by host variable aws_profile), and module fleet_accounts refuses the
node groups the inventory found in another account, naming them and aws_profile, before any change - else two
clusters of one name in accounts 111 and 222 would both be upgraded in the caller's account."""

from __future__ import annotations

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.filter.fleet_plan import fleet_plan
from ansible_collections.eksops.nodegroup.plugins.modules import fleet_accounts
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import fleet_accounts as fleet_accounts_step

from ..moto_nodegroup import run_step_in_process

# moto's account (moto.core DEFAULT_ACCOUNT_ID), which its GetCallerIdentity answers.
MOTO_ACCOUNT = "123456789012"


@pytest.fixture
def run():
    def run_it(nodegroups, calls=None):
        return run_step_in_process(fleet_accounts_step, fleet_accounts, dict(nodegroups=nodegroups), aws_calls=calls, uses_k8s=False)
    with mock_aws():
        yield run_it


def test_issue28_item2_review_a_node_group_of_another_account_is_refused_naming_it_and_aws_profile(run):
    calls = []
    result = run([dict(host="111/prod/system", aws_account_id=MOTO_ACCOUNT),
                  dict(host="222/prod/system", aws_account_id="210987654321")], calls)
    assert result["failed"] and result["code"] == "InvalidParameter" and result["parameter"] == "aws_profile", result
    assert "222/prod/system (account 210987654321)" in result["msg"] and "111/prod/system" not in result["msg"]
    assert calls == ["GetCallerIdentity"]


def test_issue28_item2_review_node_groups_of_the_callers_account_pass(run):
    result = run([dict(host="prod/system", aws_account_id=MOTO_ACCOUNT)])
    assert not result.get("failed") and result["changed"] is False, result
    assert result["fleet_accounts"]["account"] == MOTO_ACCOUNT


def _host(account, profile=None):
    return dict(cluster_name="prod", nodegroup_name="system", aws_region="us-west-2", aws_account_id=account,
                nodegroup_tags={"upgrade-ring": "canary"}, **({"aws_profile": profile} if profile else {}))


def test_issue28_item2_review_one_identity_call_per_set_of_credentials_not_per_host():
    hosts = {"111/prod/system": _host("111", "acct-111"),
             "111/prod/apps": dict(_host("111", "acct-111"), nodegroup_name="apps"),
             "222/prod/system": dict(_host("222", "acct-222"), cluster_arn="arn:aws:eks:us-west-2:222:cluster/prod"),
             "static/x": dict(_host(None), cluster_name="x")}
    plan = fleet_plan(list(hosts), hosts, ["canary"], [], 1)
    assert plan["error"] is None, plan
    assert [(account["profile"], [group["host"] for group in account["nodegroups"]]) for account in plan["accounts"]] == [
        ("acct-111", ["111/prod/system", "111/prod/apps"]), ("acct-222", ["222/prod/system"])]
