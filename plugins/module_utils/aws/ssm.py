# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWS Systems Manager API calls (the client is ``aws_client(params, "ssm")``): the public parameters that name
the EKS-optimized AMIs.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import aws_call


@aws_call("read SSM parameter {name}")
def get_parameter(ssm: Any, name: str) -> str:
    """The parameter's value, stripped."""
    return ssm.get_parameter(Name=name)["Parameter"]["Value"].strip()
