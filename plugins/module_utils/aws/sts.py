# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWS STS API calls (the client is ``aws_client(params, "sts")``).

Each function is one call, its errors translated by aws_call; what to make of an answer is the caller's.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import aws_call


@aws_call("assume role {role_arn}")
def assume_role(sts: Any, role_arn: str, session_name: str) -> dict[str, str]:
    """The role's temporary credentials as the collection's AWS options name them: access_key, secret_key,
    session_token."""
    credentials = sts.assume_role(RoleArn=role_arn, RoleSessionName=session_name)["Credentials"]
    return dict(access_key=credentials["AccessKeyId"], secret_key=credentials["SecretAccessKey"],
                session_token=credentials["SessionToken"])


@aws_call("get the caller's identity")
def caller_account(sts: Any) -> dict[str, str]:
    """The account and ARN of the credentials ``sts`` signs with (GetCallerIdentity, which no policy can deny)."""
    identity = sts.get_caller_identity()
    return dict(account=identity["Account"], arn=identity["Arn"])
