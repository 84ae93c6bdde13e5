# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_accounts' body (issue 28 item 2 review, finding 1): before the fleet's first change, the account the
credentials of some node groups reach (one GetCallerIdentity per set of credentials) must be the account the
inventory found each of them in (host variable aws_account_id). Else their runs would act on another account's
cluster of the same name, and report it done. Read-only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import sts as sts_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import invalid_parameter

ARGUMENT_SPEC = dict(
    nodegroups=dict(type="list", elements="dict", required=True, options=dict(
        host=dict(type="str", required=True),
        aws_account_id=dict(type="str", required=True),
    )),
)
CONSTRAINTS: dict[str, Any] = {}


def check_accounts(nodegroups: Sequence[Mapping[str, Any]], caller: Mapping[str, str], profile: str | None) -> None:
    """Refuse, naming them and the parameter aws_profile, the node groups of another account than ``caller``'s."""
    elsewhere = ["%s (account %s)" % (group["host"], group["aws_account_id"]) for group in nodegroups
                 if str(group["aws_account_id"]) != caller["account"]]
    if elsewhere:
        raise invalid_parameter(
            "aws_profile", "node group(s) %s are not in account %s, which %s reach (%s): their runs would act on "
            "that account. Give each host the profile of its account (host variable aws_profile, e.g. from the "
            "inventory's compose; docs/fleet.md), or leave them out with --limit. Nothing was changed"
            % (", ".join(elsewhere), caller["account"],
               "profile %s's credentials" % profile if profile else "the controller's credentials (no aws_profile)",
               caller["arn"]), account=caller["account"])


def run(module: Any) -> dict[str, Any]:
    """The task result: nothing changed; ``fleet_accounts``: the caller's ``account`` and ``arn``."""
    caller = sts_api.caller_account(module.aws("sts"))
    check_accounts(module.params["nodegroups"], caller, module.params.get("profile"))
    return dict(changed=False, fleet_accounts=caller)
