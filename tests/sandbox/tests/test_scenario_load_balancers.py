# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scenario schema's `load_balancers` (issue 11 item 3): defaults, the loaded form, and errors naming the key."""

from __future__ import annotations

import pathlib

import pytest

from eks_sandbox.scenario.fields import ScenarioError
from eks_sandbox.scenario.loader import load_scenario

SCENARIOS = pathlib.Path(__file__).resolve().parents[1] / "scenarios"


def minimal(**extra):
    return {"name": "lb", "amis": [{"name": "eks-node-1.29-v1", "kubernetes_version": "1.29"}],
            "nodegroups": [{"name": "workers", "ami": "eks-node-1.29-v1"},
                           {"name": "batch", "ami": "eks-node-1.29-v1"}], **extra}


def test_no_load_balancers_by_default_and_every_shipped_scenario_still_loads():
    assert load_scenario(minimal())["load_balancers"] == []
    for path in sorted(SCENARIOS.glob("*.yaml")):
        load_scenario(path)


def test_defaults_of_a_target_group_and_a_classic_elb():
    loaded = load_scenario(minimal(load_balancers=[{"name": "web"}, {"name": "legacy", "type": "classic"}]))
    web, legacy = loaded["load_balancers"]
    assert web == {"name": "web", "type": "target_group", "target_type": "instance", "deregistration_delay": 300,
                   "service": "default/web", "node_port": 30080, "nodegroups": ["workers", "batch"],
                   "node_selector": {}}
    # cloud-provider-aws makes Classic ELBs with connection draining disabled: null.
    assert (legacy["target_type"], legacy["deregistration_delay"]) == (None, None)
    assert load_scenario(loaded) == loaded  # the loaded form loads again to the same


@pytest.mark.parametrize("balancer, message", [
    ({"name": "-web"}, "load_balancers[0].name: up to 32"),
    ({"name": "x" * 33}, "load_balancers[0].name: up to 32"),
    ({"name": "web", "deregistration_delay": 3601}, "load_balancers[0].deregistration_delay: must be <= 3600"),
    ({"name": "web", "type": "classic", "deregistration_delay": 0},
     "load_balancers[0].deregistration_delay: must be >= 1"),
    ({"name": "web", "type": "classic", "target_type": "ip"}, "load_balancers[0].target_type: only a target_group"),
    ({"name": "web", "nodegroups": ["nope"]}, "load_balancers[0].nodegroups[0]: no node group named 'nope'"),
    ({"name": "web", "service": "web"}, "load_balancers[0].service: expected <namespace>/<name>"),
    ({"name": "web", "delay": 5}, "load_balancers[0].delay: unknown key"),
])
def test_errors_name_the_key(balancer, message):
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_scenario(minimal(load_balancers=[balancer]))


def test_names_are_unique_per_kind_of_load_balancer():
    load_scenario(minimal(load_balancers=[{"name": "web"}, {"name": "web", "type": "classic"}]))
    with pytest.raises(ScenarioError, match=r"load_balancers\[1\].name: duplicate target_group name web"):
        load_scenario(minimal(load_balancers=[{"name": "web"}, {"name": "web"}]))
