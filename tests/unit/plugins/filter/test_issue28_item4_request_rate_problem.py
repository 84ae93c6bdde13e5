# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 4: the fleet playbook checks the two request rates by the modules' own rule (filter
request_rate_problem over request_budget.requests_per_second): it took 100 and refused 1e2, which every module takes."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.filter.request_rate_problem import FilterModule

request_rate_problem = FilterModule().filters()["request_rate_problem"]


@pytest.mark.parametrize("rate", [0, 10, 2.5, "0.5", "1e2", ".5", True])
def test_issue28_item4_a_rate_every_module_takes_the_fleet_takes(rate):
    assert request_rate_problem(rate, "aws_requests_per_second") is None


@pytest.mark.parametrize("rate", [-1, "fast", "inf", "nan", [], ""])
def test_issue28_item4_a_rate_every_module_refuses_the_fleet_refuses_naming_it(rate):
    problem = request_rate_problem(rate, "k8s_requests_per_second")
    assert problem is not None and problem.startswith("k8s_requests_per_second must be a number"), problem
