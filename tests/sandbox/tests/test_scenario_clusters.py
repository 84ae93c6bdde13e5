# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Scenario loading of several clusters (issue 28 item 5, README "Several clusters"): `clusters:` entries read by
the single-cluster readers, strict validation with key paths, and single-cluster scenarios unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from eks_sandbox.scenario.fields import ScenarioError
from eks_sandbox.scenario.loader import cluster_scenarios, load_scenario

SCENARIOS_DIR = Path(__file__).resolve().parents[1] / "scenarios"
AMI = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"


def two_clusters() -> dict:
    return {
        "name": "pair", "seed": 3, "timings": {"node_boot_seconds": 0.2},
        "amis": [{"name": AMI, "kubernetes_version": "1.29"}],
        "clusters": [
            {"name": "one", "nodegroups": [{"name": "workers", "ami": AMI, "tags": {"upgrade-ring": "canary"}}],
             "workloads": [{"kind": "Deployment", "name": "web", "replicas": 2}]},
            {"name": "two", "region": "eu-west-1", "kubernetes_version": "1.29", "tls": False,
             "availability_zones": ["eu-west-1a"],
             "nodegroups": [{"name": "workers", "ami": AMI, "kind": "managed", "desired_capacity": 3}]}],
        "faults": [{"type": "never_join", "availability_zone": "eu-west-1a"}],
    }


def test_each_cluster_loads_as_a_single_cluster_scenario_with_the_shared_keys():
    loaded = load_scenario(two_clusters())
    one, two = cluster_scenarios(loaded)
    assert one["cluster"] == {"name": "one", "kubernetes_version": "1.30", "tls": True}
    assert (one["region"], one["availability_zones"]) == ("us-west-2", ["us-west-2a", "us-west-2b", "us-west-2c"])
    assert two["cluster"] == {"name": "two", "kubernetes_version": "1.29", "tls": False}
    assert (two["region"], two["availability_zones"]) == ("eu-west-1", ["eu-west-1a"])
    assert one["nodegroups"][0]["tags"] == {"upgrade-ring": "canary"} and two["nodegroups"][0]["tags"] == {}
    assert two["nodegroups"][0]["kind"] == "managed" and two["workloads"] == [] and two["load_balancers"] == []
    for part in (one, two):
        assert (part["name"], part["seed"], part["timings"], part["amis"]) == (
            "pair", 3, loaded["timings"], loaded["amis"])
        assert part["faults"] == loaded["faults"]
    assert load_scenario(loaded) == loaded, "the loaded form loads to itself"


@pytest.mark.parametrize("mutate, message", [
    (lambda s: s.update(nodegroups=[]), "nodegroups: not allowed with clusters (give it per cluster)"),
    (lambda s: s.update(region="eu-west-1"), "region: not allowed with clusters (give it per cluster)"),
    (lambda s: s.update(cluster={"name": "x"}), "cluster: not allowed with clusters (give it per cluster)"),
    (lambda s: s.update(clusters=[]), "clusters: at least one cluster is required"),
    (lambda s: s["clusters"][1].update(name="one"), "clusters[1].name: duplicate cluster name one"),
    (lambda s: s["clusters"][1].pop("name"), "clusters[1].name: required"),
    (lambda s: s["clusters"][1].update(nodegroup=[]), "clusters[1].nodegroup: unknown key"),
    (lambda s: s["clusters"][1].update(region="mars-1"), "clusters[1].region: 'mars-1' is not an AWS region"),
    (lambda s: s["clusters"][1].update(availability_zones=["us-west-2a"]),
     "clusters[1].availability_zones[0]: expected an availability zone of eu-west-1"),
    (lambda s: s["clusters"][0]["nodegroups"][0].update(ami="nope"), "clusters[0].nodegroups[0].ami: no AMI"),
    (lambda s: s["clusters"][0]["nodegroups"][0].update(tags={"ring": 1}), "clusters[0].nodegroups[0].tags"),
    (lambda s: s["clusters"][0]["workloads"][0].update(nodegroup="other"),
     "clusters[0].workloads[0].nodegroup: no node group named 'other'"),
    (lambda s: s["faults"].append({"type": "launch_failure", "availability_zone": "us-east-1a"}),
     "faults[1].availability_zone"),
])
def test_invalid_clusters_name_the_key_path(mutate, message):
    raw = two_clusters()
    mutate(raw)
    with pytest.raises(ScenarioError) as error:
        load_scenario(raw)
    assert str(error.value).startswith(message), str(error.value)


@pytest.mark.parametrize("path", sorted(p for p in SCENARIOS_DIR.glob("*.yaml") if p.stem != "fleet"),
                         ids=lambda p: p.stem)
def test_a_single_cluster_scenario_loads_as_before_and_is_its_only_cluster(path):
    loaded = load_scenario(path)
    assert "clusters" not in loaded and cluster_scenarios(loaded) == [loaded]
    assert list(loaded) == ["name", "region", "seed", "cluster", "availability_zones", "timings", "amis",
                            "nodegroups", "workloads", "faults", "load_balancers"]


def test_the_fleet_scenario_is_three_clusters_in_two_regions_with_every_kind_of_node_group():
    fleet = cluster_scenarios(load_scenario(SCENARIOS_DIR / "fleet.yaml"))
    assert len(fleet) >= 3 and len({cluster["region"] for cluster in fleet}) == 2
    nodegroups = [ng for cluster in fleet for ng in cluster["nodegroups"]]
    kinds = {(ng["kind"], ng["convention"] if ng["kind"] == "self_managed" else ng["launch_template"])
             for ng in nodegroups}
    assert len(nodegroups) >= 7 and {("managed", "eks"), ("managed", "custom"), ("self_managed_eksctl", None),
                                     ("self_managed", "terraform"), ("self_managed", "cloudformation")} <= kinds
    assert {ng["tags"]["upgrade-ring"] for ng in nodegroups} == {"canary", "ring1", "ring2"}
    amis = {ami["name"]: ami for ami in fleet[0]["amis"]}
    bad = [ng for ng in nodegroups if any(a["never_ready"] and a["recommended"] and a["family"] ==
                                          amis[ng["ami"]]["family"] for a in amis.values())]
    assert [(ng["name"], ng["tags"]["upgrade-ring"]) for ng in bad] == [("apps-arm", "canary")]
    assert not any(amis[ng["ami"]]["never_ready"] for ng in nodegroups), "only the new nodes never become Ready"
