# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Scenario loading: defaults, strict validation with key paths, cross-checks, and every shipped scenario."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from eks_sandbox.conventions import node_group_labels
from eks_sandbox.kube.seed import workload_object
from eks_sandbox.scenario.fields import ScenarioError
from eks_sandbox.scenario.loader import cluster_scenarios, load_scenario
from eks_sandbox.scenario.schema import DEFAULT_TIMINGS, generated_ami_id

SCENARIOS_DIR = Path(__file__).resolve().parents[1] / "scenarios"
AMI_129 = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
AMI_130 = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"


def minimal() -> dict:
    return {
        "name": "t",
        "amis": [{"name": AMI_129, "kubernetes_version": "1.29"},
                 {"name": AMI_130, "kubernetes_version": "1.30"}],
        "nodegroups": [{"name": "workers", "ami": AMI_129}],
        "workloads": [{"kind": "Deployment", "name": "web", "replicas": 4, "pdb": {"min_available": 3}}],
    }


def test_defaults_are_filled_exactly_as_documented():
    scenario = load_scenario(minimal())
    assert scenario["region"] == "us-west-2"
    assert scenario["seed"] == 0
    assert scenario["cluster"] == {"name": "t", "kubernetes_version": "1.30", "tls": True}
    assert scenario["availability_zones"] == ["us-west-2a", "us-west-2b", "us-west-2c"]
    assert scenario["timings"] == DEFAULT_TIMINGS
    assert scenario["faults"] == []
    ami = scenario["amis"][0]
    assert ami == {"name": AMI_129, "id": generated_ami_id(AMI_129), "kubernetes_version": "1.29",
                   "family": "amazon-linux-2023/x86_64/standard", "release_version": "1.29.0-20240101",
                   "never_ready": False, "recommended": True}
    assert scenario["nodegroups"][0] == {
        "name": "workers", "ami": AMI_129, "instance_type": "m5.large",
        "availability_zones": ["us-west-2a", "us-west-2b", "us-west-2c"], "min_size": 3, "max_size": 12,
        "desired_capacity": 6, "max_pods": 110, "labels": {}, "taints": [], "tags": {}, "kind": "self_managed",
        "convention": "terraform", "launch_template": None, "update_config": None, "mixed_instances": None}
    assert scenario["workloads"][0] == {
        "kind": "Deployment", "name": "web", "namespace": "default", "replicas": 4, "labels": {"app": "web"},
        "pdb": {"min_available": 3, "max_unavailable": None,
                "unhealthy_pod_eviction_policy": "IfHealthyBudget", "extra": 0},
        "empty_dir": False, "termination_grace_period_seconds": 30, "ignore_sigterm": False,
        "tolerate_all": False, "node_selector": {}, "nodegroup": None, "pods_per_node": None}


def test_generated_ami_ids_are_deterministic_and_well_formed():
    first, second = load_scenario(minimal()), load_scenario(minimal())
    assert first["amis"][0]["id"] == second["amis"][0]["id"]
    assert first["amis"][0]["id"] != first["amis"][1]["id"]
    assert re.fullmatch(r"ami-[0-9a-f]{17}", first["amis"][0]["id"])


def test_given_ami_id_is_kept_and_nodegroup_may_name_the_ami_by_id():
    raw = minimal()
    raw["amis"][0]["id"] = "ami-0a1b2c3d4e5f60001"
    raw["nodegroups"][0]["ami"] = "ami-0a1b2c3d4e5f60001"
    scenario = load_scenario(raw)
    assert scenario["amis"][0]["id"] == "ami-0a1b2c3d4e5f60001"
    assert scenario["nodegroups"][0]["ami"] == AMI_129   # normalised to the AMI name


def test_region_drives_default_zones_and_the_input_is_not_mutated():
    raw = minimal()
    raw["region"] = "eu-west-1"
    before = copy.deepcopy(raw)
    assert load_scenario(raw)["availability_zones"] == ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
    assert raw == before


def test_recommended_defaults_to_true_only_for_the_single_ami_of_its_version():
    raw = minimal()
    raw["amis"].append({"name": AMI_130 + "-b", "kubernetes_version": "1.30"})
    amis = {a["name"]: a["recommended"] for a in load_scenario(raw)["amis"]}
    assert amis == {AMI_129: True, AMI_130: False, AMI_130 + "-b": False}


def _with(path: str, value):
    """minimal() with the value at a dotted/indexed path (e.g. "workloads[0].pdb.extra") set."""
    raw = minimal()
    keys = [int(k) if k.isdigit() else k for k in re.split(r"\.|\[|\]\.?", path) if k != ""]
    target = raw
    for key in keys[:-1]:
        if isinstance(key, str) and key not in target:
            target[key] = {}
        target = target[key]
    target[keys[-1]] = value
    return raw


@pytest.mark.parametrize("path, value, message", [
    ("colour", "blue", r"^colour: unknown key"),
    ("region", "xx-nowhere-1", r"^region: 'xx-nowhere-1' is not an AWS region"),
    ("cluster.versoin", "1.30", r"^cluster\.versoin: unknown key"),
    ("timings.node_boot", 1, r"^timings\.node_boot: unknown key"),
    ("workloads[0].pdb.min_availabel", 3, r"^workloads\[0\]\.pdb\.min_availabel: unknown key"),
    ("nodegroups[0].min_size", "3", r"^nodegroups\[0\]\.min_size: expected an integer"),
    ("nodegroups[0].min_size", True, r"^nodegroups\[0\]\.min_size: expected an integer"),
    ("nodegroups[0].labels", {"team": 1}, r"^nodegroups\[0\]\.labels\.team: keys and values must be strings"),
    ("amis[0].kubernetes_version", 1.3, r"^amis\[0\]\.kubernetes_version: expected a non-empty string.*quote"),
    ("amis[0].id", "ami-xyz", r"^amis\[0\]\.id: expected \"ami-\""),
    ("cluster.tls", "yes", r"^cluster\.tls: expected true or false"),
    ("timings.controller_interval_seconds", 0, r"^timings\.controller_interval_seconds: must be > 0"),
    ("timings.pod_start_seconds", -1, r"^timings\.pod_start_seconds: must be >= 0"),
    ("workloads[0].kind", "StatefulSet", r"^workloads\[0\]\.kind: must be one of Deployment, DaemonSet, Pod"),
    ("workloads[0].pdb.min_available", "150%", r"^workloads\[0\]\.pdb\.min_available: expected an integer or a percentage"),
    ("workloads[0].pdb.max_unavailable", 1, r"^workloads\[0\]\.pdb: give exactly one of min_available and max_unavailable"),
    ("workloads[0].pdb.unhealthy_pod_eviction_policy", "Never", r"must be one of IfHealthyBudget, AlwaysAllow"),
    ("workloads[0].name", "Web_1", r"^workloads\[0\]\.name: not a valid DNS label"),
    ("workloads[0].nodegroup", "gpu", r"^workloads\[0\]\.nodegroup: no node group named 'gpu'"),
    ("workloads[0].labels", {"app": "other"}, r"^workloads\[0\]\.labels\.app: the app label is always the workload name"),
    ("workloads", "web", r"^workloads: expected a list"),
    ("nodegroups[0].ami", "ami-missing", r"^nodegroups\[0\]\.ami: no AMI named 'ami-missing'"),
    ("nodegroups[0].availability_zones", ["us-west-2d"], r"^nodegroups\[0\]\.availability_zones\[0\]: 'us-west-2d' is not one of"),
    ("nodegroups[0].taints", [{"key": "gpu", "effect": "Sometimes"}], r"^nodegroups\[0\]\.taints\[0\]\.effect: must be one of"),
    ("availability_zones", ["eu-west-1a"], r"^availability_zones\[0\]: expected an availability zone of us-west-2"),
    ("faults", [{"type": "earthquake"}], r"^faults\[0\]\.type: must be one of k8s_error, watch_drop"),
    ("faults", [{"type": "k8s_error", "count": 2, "probability": 0.5}], r"^faults\[0\]\.count: give probability or count, not both"),
    ("faults", [{"type": "aws_error", "probability": 1.5}], r"^faults\[0\]\.probability: must be <= 1.0"),
    ("faults", [{"type": "k8s_error", "verb": "explode"}], r"^faults\[0\]\.verb: must be one of"),
    ("faults", [{"type": "watch_drop", "every_seconds": 0}], r"^faults\[0\]\.every_seconds: must be > 0"),
    ("faults", [{"type": "launch_failure", "availability_zone": "us-east-1a"}], r"^faults\[0\]\.availability_zone: 'us-east-1a' is not one of"),
    ("faults", [{"type": "launch_failure"}], r"^faults\[0\]\.availability_zone: required"),
    ("faults", [{"type": "autoscaler", "nodegroup": "gpu"}], r"^faults\[0\]\.nodegroup: no node group named 'gpu'"),
    ("faults", [{"type": "autoscaler", "nodegroup": "workers", "count": 1}], r"^faults\[0\]\.count: unknown key"),
    ("faults", [{"type": "watch_gone", "verb": "get"}], r"^faults\[0\]\.verb: unknown key"),
    ("faults", [{"type": "never_join", "availability_zone": "us-east-1a"}], r"^faults\[0\]\.availability_zone: 'us-east-1a' is not one of"),
    ("faults", [{"type": "never_join", "code": "Boom"}], r"^faults\[0\]\.code: unknown key"),
    ("faults", [{"type": "never_join", "count": 0}], r"^faults\[0\]\.count: must be >= 1"),
    ("nodegroups[0].kind", "fargate", r"^nodegroups\[0\]\.kind: must be one of managed, self_managed_eksctl, self_managed"),
    ("nodegroups[0].managed", True, r"^nodegroups\[0\]\.managed: unknown key"),
    ("amis[0].family", "ubuntu", r"^amis\[0\]\.family: expected amazon-linux-2\[-gpu\|-arm64\], "
                                 r"amazon-linux-2023/<arch>/<variant>, bottlerocket/<arch> or "
                                 r"windows/<core\|full>-<year>, got 'ubuntu'"),
    ("amis[0].family", "windows/core-2016", r"^amis\[0\]\.family: expected"),
    ("amis[0].family", "amazon-linux-2023", r"^amis\[0\]\.family: expected"),
    ("amis[0].family", "bottlerocket", r"^amis\[0\]\.family: expected"),
    ("amis[0].family", "amazon-linux-2/x86_64", r"^amis\[0\]\.family: expected"),
    ("amis[0].release_version", 1.29, r"^amis\[0\]\.release_version: expected a non-empty string"),
    ("nodegroups[0].mixed_instances", {"overrides": []}, r"^nodegroups\[0\]\.mixed_instances\.overrides: give at least"),
    ("nodegroups[0].mixed_instances", {"overrides": [{"instance_type": "m5.large", "ami": "nope"}]},
     r"^nodegroups\[0\]\.mixed_instances\.overrides\[0\]\.ami: no AMI named 'nope'"),
    ("nodegroups[0].mixed_instances", {"overrides": [{"instance_type": "m5.large", "weighted_capacity": 0}]},
     r"^nodegroups\[0\]\.mixed_instances\.overrides\[0\]\.weighted_capacity: must be >= 1"),
    ("nodegroups[0].mixed_instances", {"overrides": [{"instance_type": "m5.large"}],
                                       "on_demand_percentage_above_base_capacity": 101},
     r"^nodegroups\[0\]\.mixed_instances\.on_demand_percentage_above_base_capacity: must be <= 100"),
])
def test_invalid_scenarios_name_the_key_path(path, value, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario(_with(path, value))


@pytest.mark.parametrize("sizes, ok", [
    ((3, 6, 12), True), ((3, 3, 3), True), ((0, 0, 0), True),
    ((4, 3, 12), False), ((3, 13, 12), False), ((5, 6, 4), False),
])
def test_min_desired_max_must_be_ordered(sizes, ok):
    raw = minimal()
    raw["nodegroups"][0].update(min_size=sizes[0], desired_capacity=sizes[1], max_size=sizes[2])
    if ok:
        assert load_scenario(raw)["nodegroups"][0]["desired_capacity"] == sizes[1]
    else:
        with pytest.raises(ScenarioError, match=r"^nodegroups\[0\]: min_size <= desired_capacity <= max_size"):
            load_scenario(raw)


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r.pop("name"), r"^name: required"),
    (lambda r: r["amis"][0].pop("kubernetes_version"), r"^amis\[0\]\.kubernetes_version: required"),
    (lambda r: r["nodegroups"][0].pop("ami"), r"^nodegroups\[0\]\.ami: required"),
    (lambda r: r["workloads"][0].pop("kind"), r"^workloads\[0\]\.kind: required"),
    (lambda r: r["amis"].append(dict(r["amis"][0])), r"^amis\[2\]\.name: duplicate AMI name"),
    (lambda r: r["nodegroups"].append(dict(r["nodegroups"][0])), r"^nodegroups\[1\]\.name: duplicate node group"),
    (lambda r: r["workloads"].append({"kind": "Pod", "name": "web"}), r"^workloads\[1\]\.name: duplicate workload default/web"),
    (lambda r: r["workloads"].append({"kind": "Pod", "name": "p", "replicas": 2}), r"^workloads\[1\]\.replicas: only a Deployment"),
    (lambda r: r["amis"][1].update(kubernetes_version="1.29", recommended=True) or r["amis"][0].update(recommended=True),
     r"^amis\[1\]\.recommended: only one AMI per kubernetes_version and family"),
])
def test_required_keys_duplicates_and_conflicts(mutate, message):
    raw = minimal()
    mutate(raw)
    with pytest.raises(ScenarioError, match=message):
        load_scenario(raw)


def test_yaml_file_errors_are_scenario_errors(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(bad)
    listing = tmp_path / "list.yaml"
    listing.write_text("- name: x\n")
    with pytest.raises(ScenarioError, match="must hold a mapping"):
        load_scenario(listing)


def test_fault_defaults():
    raw = minimal()
    raw["faults"] = [{"type": "k8s_error"}, {"type": "autoscaler", "nodegroup": "workers"},
                     {"type": "launch_failure", "availability_zone": "us-west-2b"}]
    k8s, autoscaler, launch = load_scenario(raw)["faults"]
    assert k8s == {"type": "k8s_error", "verb": "*", "resource": "*", "status": 429, "retry_after": None,
                   "after_seconds": 0, "probability": None, "count": None}
    assert autoscaler == {"type": "autoscaler", "nodegroup": "workers", "increase_by": 1,
                          "when": "after_seconds", "after_seconds": 0}
    assert launch["code"] == "InsufficientInstanceCapacity"


def test_never_join_fault_schema():
    raw = minimal()
    raw["faults"] = [{"type": "never_join"}, {"type": "never_join", "availability_zone": "us-west-2b", "count": 2,
                                              "after_seconds": 1.5}]
    anywhere, in_b = load_scenario(raw)["faults"]
    assert anywhere == {"type": "never_join", "availability_zone": None, "after_seconds": 0, "probability": None,
                        "count": None}
    assert in_b == {"type": "never_join", "availability_zone": "us-west-2b", "after_seconds": 1.5,
                    "probability": None, "count": 2}


# ------------------------------------------------------------------------------------------------ AMIs

def test_release_version_defaults_to_the_build_date_of_the_ami_name():
    raw = minimal()
    raw["amis"].append({"name": "my-golden-image", "kubernetes_version": "1.30", "family": "amazon-linux-2"})
    raw["amis"][1]["release_version"] = "1.30.2-20240620"
    amis = {a["name"]: a["release_version"] for a in load_scenario(raw)["amis"]}
    assert amis[AMI_129] == "1.29.0-20240101"          # EKS: <version>.<patch>-<build date>
    assert amis[AMI_130] == "1.30.2-20240620"          # given: kept
    assert re.fullmatch(r"1\.30\.0-[0-9a-f]{8}", amis["my-golden-image"]), "no -vYYYYMMDD: a stable stand-in"
    assert load_scenario(raw)["amis"][2]["release_version"] == amis["my-golden-image"]


@pytest.mark.parametrize("family", [
    "amazon-linux-2", "amazon-linux-2-gpu", "amazon-linux-2-arm64", "amazon-linux-2023/x86_64/standard",
    "amazon-linux-2023/arm64/standard", "amazon-linux-2023/x86_64/nvidia", "bottlerocket/x86_64",
    "bottlerocket/arm64"])
def test_every_ami_family_the_ssm_parameters_name_is_accepted(family):
    raw = minimal()
    raw["amis"][0]["family"] = family
    assert load_scenario(raw)["amis"][0]["family"] == family


# ------------------------------------------------------------------------------------------------ node group kinds

def _kind(**nodegroup):
    raw = minimal()
    raw["nodegroups"][0].update(nodegroup)
    return raw


@pytest.mark.parametrize("nodegroup, expected", [
    ({}, {"kind": "self_managed", "convention": "terraform", "launch_template": None, "update_config": None}),
    ({"kind": "self_managed", "convention": "cloudformation"},
     {"kind": "self_managed", "convention": "cloudformation", "launch_template": None, "update_config": None}),
    ({"kind": "self_managed_eksctl"},
     {"kind": "self_managed_eksctl", "convention": None, "launch_template": None, "update_config": None}),
    ({"kind": "managed"},
     {"kind": "managed", "convention": None, "launch_template": "eks",
      "update_config": {"max_unavailable": 1, "max_unavailable_percentage": None, "update_strategy": "DEFAULT"}}),
    ({"kind": "managed", "launch_template": "custom", "update_config": None},
     {"kind": "managed", "convention": None, "launch_template": "custom",
      "update_config": {"max_unavailable": 1, "max_unavailable_percentage": None, "update_strategy": "DEFAULT"}}),
    ({"kind": "managed", "update_config": {"max_unavailable": 4, "update_strategy": "MINIMAL"}},
     {"kind": "managed", "convention": None, "launch_template": "eks",
      "update_config": {"max_unavailable": 4, "max_unavailable_percentage": None, "update_strategy": "MINIMAL"}}),
    ({"kind": "managed", "update_config": {"max_unavailable_percentage": 33}},
     {"kind": "managed", "convention": None, "launch_template": "eks",
      "update_config": {"max_unavailable": None, "max_unavailable_percentage": 33, "update_strategy": "DEFAULT"}}),
])
def test_kind_settings_and_their_defaults(nodegroup, expected):
    loaded = load_scenario(_kind(**nodegroup))["nodegroups"][0]
    assert {key: loaded[key] for key in expected} == expected


@pytest.mark.parametrize("nodegroup, message", [
    ({"kind": "self_managed", "launch_template": "eks"},
     r"^nodegroups\[0\]\.launch_template: only a node group of kind managed takes launch_template"),
    ({"kind": "self_managed_eksctl", "launch_template": "custom"},
     r"^nodegroups\[0\]\.launch_template: only a node group of kind managed takes launch_template"),
    ({"update_config": {"max_unavailable": 2}},
     r"^nodegroups\[0\]\.update_config: only a node group of kind managed takes update_config"),
    ({"kind": "self_managed_eksctl", "convention": "terraform"},
     r"^nodegroups\[0\]\.convention: only a node group of kind self_managed takes convention"),
    ({"kind": "managed", "convention": "cloudformation"},
     r"^nodegroups\[0\]\.convention: only a node group of kind self_managed takes convention"),
    ({"convention": "pulumi"}, r"^nodegroups\[0\]\.convention: must be one of terraform, cloudformation"),
    ({"kind": "managed", "launch_template": "mine"}, r"^nodegroups\[0\]\.launch_template: must be one of eks, custom"),
    ({"kind": "managed", "update_config": {"max_unavailable": 1, "max_unavailable_percentage": 50}},
     r"^nodegroups\[0\]\.update_config: give max_unavailable or max_unavailable_percentage, not both"),
    ({"kind": "managed", "update_config": {"max_unavailable": 0}},
     r"^nodegroups\[0\]\.update_config\.max_unavailable: must be >= 1"),
    ({"kind": "managed", "update_config": {"max_unavailable": 101}},
     r"^nodegroups\[0\]\.update_config\.max_unavailable: must be <= 100"),
    ({"kind": "managed", "update_config": {"max_unavailable_percentage": 0}},
     r"^nodegroups\[0\]\.update_config\.max_unavailable_percentage: must be >= 1"),
    ({"kind": "managed", "update_config": {"max_unavailable_percentage": 101}},
     r"^nodegroups\[0\]\.update_config\.max_unavailable_percentage: must be <= 100"),
    ({"kind": "managed", "update_config": {"max_unavailable": "1"}},
     r"^nodegroups\[0\]\.update_config\.max_unavailable: expected an integer"),
    ({"kind": "managed", "update_config": {"update_strategy": "FAST"}},
     r"^nodegroups\[0\]\.update_config\.update_strategy: must be one of DEFAULT, MINIMAL"),
    ({"kind": "managed", "update_config": {"maxUnavailable": 1}},
     r"^nodegroups\[0\]\.update_config\.maxUnavailable: unknown key"),
    ({"kind": "managed", "update_config": "fast"}, r"^nodegroups\[0\]\.update_config: expected a mapping"),
])
def test_kind_settings_are_checked_against_the_kind(nodegroup, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario(_kind(**nodegroup))


@pytest.mark.parametrize("nodegroup, pinned_by", [
    ({"kind": "managed"}, {"eks.amazonaws.com/nodegroup": "workers"}),
    ({"kind": "self_managed_eksctl"}, {"alpha.eksctl.io/nodegroup-name": "workers"}),
    ({"kind": "self_managed", "labels": {"pool": "web", "tier": "front"}}, {"pool": "web", "tier": "front"}),
    ({"kind": "self_managed", "convention": "cloudformation", "labels": {"pool": "web"}}, {"pool": "web"}),
])
def test_a_pinned_workload_selects_a_label_its_node_groups_user_data_sets(nodegroup, pinned_by):
    raw = _kind(**nodegroup)
    raw["workloads"][0].update(nodegroup="workers", node_selector={"disk": "ssd"})
    loaded = load_scenario(raw)
    dummy, deployment = workload_object(loaded["workloads"][0], loaded)
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {"disk": "ssd", **pinned_by}
    # ... and the nodes of the group carry that label: their user data sets it (and only there it comes from).
    given = node_group_labels(loaded["cluster"]["name"], loaded["nodegroups"][0])
    assert pinned_by.items() <= given.items()


@pytest.mark.parametrize("convention", ["terraform", "cloudformation"])
def test_pinning_to_a_plain_self_managed_group_without_labels_is_refused(convention):
    raw = _kind(kind="self_managed", convention=convention)
    raw["workloads"][0]["nodegroup"] = "workers"
    with pytest.raises(ScenarioError, match=r"^workloads\[0\]\.nodegroup: node group workers \(kind self_managed\) "
                                            r"sets no node label to pin to; give it labels"):
        load_scenario(raw)


def test_loading_the_loaded_form_again_gives_the_same():
    raw = minimal()
    raw["nodegroups"] = [
        {"name": "workers", "ami": AMI_129, "labels": {"pool": "web"}},
        {"name": "cfn", "ami": AMI_129, "kind": "self_managed", "convention": "cloudformation"},
        {"name": "eksctl", "ami": AMI_129, "kind": "self_managed_eksctl"},
        {"name": "eks", "ami": AMI_129, "kind": "managed", "update_config": {"max_unavailable_percentage": 20}},
        {"name": "custom", "ami": AMI_129, "kind": "managed", "launch_template": "custom"}]
    raw["workloads"] += [{"kind": "DaemonSet", "name": "agent", "nodegroup": "eksctl"},
                         {"kind": "Pod", "name": "solo", "nodegroup": "eks", "pdb": {"max_unavailable": "50%"}}]
    raw["faults"] = [{"type": "never_join", "availability_zone": "us-west-2a"}, {"type": "k8s_error", "count": 1}]
    loaded = load_scenario(raw)
    assert load_scenario(loaded) == loaded


SHIPPED = sorted(SCENARIOS_DIR.glob("*.yaml"))


def test_every_required_scenario_is_shipped():
    names = {p.stem for p in SHIPPED}
    assert {"demo", "large", "surge5", "fault_k8s_errors", "fault_watch", "fault_aws_throttle",
            "fault_launch_failure", "fault_never_ready", "fault_autoscaler", "fault_pdb_blocked",
            "fault_sigterm", "fault_two_pdbs"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_scenarios_load_and_can_be_upgraded(path):
    scenario = load_scenario(path)
    assert scenario["name"] == path.stem
    assert load_scenario(scenario) == scenario, "the loaded form loads to itself"
    # Each one starts on a 1.29 AMI and has a recommended 1.30 AMI to upgrade to.
    recommended = {a["kubernetes_version"] for a in scenario["amis"] if a["recommended"]}
    assert "1.30" in recommended
    for nodegroup in (ng for cluster in cluster_scenarios(scenario) for ng in cluster["nodegroups"]):
        assert next(a for a in scenario["amis"] if a["name"] == nodegroup["ami"])["kubernetes_version"] == "1.29"


def test_large_scenario_is_100_nodes_of_about_30_pods():
    scenario = load_scenario(SCENARIOS_DIR / "large.yaml")
    nodes = sum(ng["desired_capacity"] for ng in scenario["nodegroups"])
    replicas = sum(w["replicas"] for w in scenario["workloads"] if w["kind"] == "Deployment")
    assert nodes == 100
    assert 2800 <= replicas <= 3000
    assert any(w["kind"] == "DaemonSet" for w in scenario["workloads"])
