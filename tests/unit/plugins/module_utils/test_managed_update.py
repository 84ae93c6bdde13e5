# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure decisions of an EKS managed node group update (SPEC K5, U7, U8): updateConfig, updates in progress,
progress and EKS's errors. Inputs are shaped as botocore returns EKS/Auto Scaling answers."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from ansible_collections.eksops.nodegroup.plugins.module_utils.managed import update as mu
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import API_ERROR

from .eks_answers import CLUSTER, LT_ID, nodegroup, refused, update, with_custom_lt


# --- updateConfig ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("current, wanted, request_", [
    ({"maxUnavailable": 1, "updateStrategy": "DEFAULT"}, {"updateStrategy": "DEFAULT"}, None),
    ({"maxUnavailable": 1, "updateStrategy": "DEFAULT"}, {"maxUnavailable": 1, "updateStrategy": "DEFAULT"}, None),
    # No updateConfig, or no strategy: EKS's defaults (1 node, DEFAULT).
    (None, {"maxUnavailable": 1, "updateStrategy": "DEFAULT"}, None),
    ({"maxUnavailable": 2}, {"updateStrategy": "DEFAULT"}, None),
    ({"maxUnavailable": 1, "updateStrategy": "DEFAULT"}, {"maxUnavailable": 3, "updateStrategy": "DEFAULT"},
     {"maxUnavailable": 3, "updateStrategy": "DEFAULT"}),
    # The strategy alone changes: the group's own parallelism goes with it (EKS requires one).
    ({"maxUnavailablePercentage": 20, "updateStrategy": "DEFAULT"}, {"updateStrategy": "MINIMAL"},
     {"maxUnavailablePercentage": 20, "updateStrategy": "MINIMAL"}),
    # One parallelism setting replaces the other.
    ({"maxUnavailablePercentage": 20, "updateStrategy": "DEFAULT"},
     {"maxUnavailable": 2, "updateStrategy": "DEFAULT"}, {"maxUnavailable": 2, "updateStrategy": "DEFAULT"}),
])
def test_update_config_request(current, wanted, request_):
    assert mu.update_config_request(current, wanted) == request_


def test_unset_options_keep_the_groups_own_update_config():
    """A MINIMAL group (GPUs, reserved capacity) is not switched to DEFAULT because the playbook said nothing."""
    assert mu.wanted_update_config(None, None, None) == {}
    assert mu.update_config_request({"maxUnavailable": 2, "updateStrategy": "MINIMAL"}, {}) is None
    wanted = mu.wanted_update_config(3, None, None)
    assert mu.update_config_request({"maxUnavailable": 2, "updateStrategy": "MINIMAL"}, wanted) == \
        {"maxUnavailable": 3, "updateStrategy": "MINIMAL"}


def test_wanted_update_config_maps_the_options():
    assert mu.wanted_update_config(None, None, "minimal") == {"updateStrategy": "MINIMAL"}
    assert mu.wanted_update_config(4, None, "default") == {"maxUnavailable": 4, "updateStrategy": "DEFAULT"}
    assert mu.wanted_update_config(None, 30, "default") == {"maxUnavailablePercentage": 30,
                                                            "updateStrategy": "DEFAULT"}


PARALLELISM = st.one_of(st.builds(lambda n: {"maxUnavailable": n}, st.integers(1, 100)),
                        st.builds(lambda p: {"maxUnavailablePercentage": p}, st.integers(1, 100)),
                        st.just({}))
STRATEGY = st.sampled_from([{}, {"updateStrategy": "DEFAULT"}, {"updateStrategy": "MINIMAL"}])


@given(current_parallelism=PARALLELISM, current_strategy=STRATEGY, max_unavailable=st.none() | st.integers(1, 100),
       percentage=st.none() | st.integers(1, 100), strategy=st.sampled_from(["default", "minimal"]))
def test_one_config_update_brings_the_group_to_what_is_asked(current_parallelism, current_strategy,
                                                             max_unavailable, percentage, strategy):
    """Invariants: the request names exactly one parallelism setting and the strategy; after EKS applies it
    nothing is left to request; no request means the group already matches."""
    if max_unavailable is not None:
        percentage = None
    current = dict(current_parallelism, **current_strategy)
    wanted = mu.wanted_update_config(max_unavailable, percentage, strategy)
    request_ = mu.update_config_request(current, wanted)
    after = mu.apply_update_config(current, request_)
    assert mu.update_config_request(after, wanted) is None
    assert after["updateStrategy"] == wanted["updateStrategy"]
    assert len([key for key in ("maxUnavailable", "maxUnavailablePercentage") if key in after]) == 1
    if request_ is None:
        assert after == mu.effective_update_config(current)
    else:
        assert len([key for key in ("maxUnavailable", "maxUnavailablePercentage") if key in request_]) == 1
        assert request_["updateStrategy"] == wanted["updateStrategy"]
    if max_unavailable is None and percentage is None:
        # Parallelism the playbook leaves open is the group's own.
        assert {k: v for k, v in after.items() if k != "updateStrategy"} == \
            {k: v for k, v in mu.effective_update_config(current).items() if k != "updateStrategy"}


# --- Updates in progress and the plan ---------------------------------------------------------------------

KUBERNETES_131 = dict(option="kubernetes_version", value="1.31", request={"version": "1.31"}, ssm_parameter="x")
RELEASE = dict(option="release_version", value="1.30.8-20241205",
               request={"releaseVersion": "1.30.8-20241205", "version": "1.30"}, ssm_parameter=None)
LT_7 = dict(option="launch_template_version", value="7", request={"launchTemplate": {"id": LT_ID, "version": "7"}},
            ssm_parameter=None)
DEFAULT_CONFIG = {"updateStrategy": "DEFAULT"}


def test_target_updates_are_recognised_by_their_params():
    assert mu.is_target_update(update(Version="1.31", ReleaseVersion="1.31.3-20250103"), KUBERNETES_131)
    assert not mu.is_target_update(update(Version="1.30", ReleaseVersion="1.30.8-20241205"), KUBERNETES_131)
    assert mu.is_target_update(update(Version="1.30", ReleaseVersion="1.30.8-20241205"), RELEASE)
    assert mu.is_target_update(update(LaunchTemplateName="workers-lt", LaunchTemplateVersion="7"), LT_7)
    assert not mu.is_target_update(update(type_="ConfigUpdate", Version="1.31"), KUBERNETES_131)


@pytest.mark.parametrize("params, wanted, ours", [
    (dict(MaxUnavailable="3", UpdateStrategy="DEFAULT"), {"maxUnavailable": 3, "updateStrategy": "DEFAULT"}, True),
    (dict(MaxUnavailable="2", UpdateStrategy="DEFAULT"), {"maxUnavailable": 3, "updateStrategy": "DEFAULT"}, False),
    (dict(MaxUnavailablePercentage="10", UpdateStrategy="MINIMAL"), {"updateStrategy": "MINIMAL"}, True),
    (dict(MaxUnavailablePercentage="10"), {"maxUnavailable": 3, "updateStrategy": "DEFAULT"}, False),
    (dict(UpdateStrategy="MINIMAL"), {"updateStrategy": "DEFAULT"}, False),
    (dict(DesiredSize="4"), {"updateStrategy": "DEFAULT"}, False),
    (dict(MaxUnavailable="1", LabelsToAdd="{}"), {"updateStrategy": "DEFAULT"}, False),
])
def test_config_updates_to_what_is_asked_are_ours(params, wanted, ours):
    assert mu.is_wanted_config_update(update(type_="ConfigUpdate", **params), wanted) is ours


@pytest.mark.parametrize("group, target, expected_release", [
    (nodegroup(version="1.31", releaseVersion="1.31.3-20250103"), KUBERNETES_131, "1.31.3-20250103"),
    # Bottlerocket: on the release SSM publishes as image_version (issue 29 item 3).
    (nodegroup(version="1.31", amiType="BOTTLEROCKET_x86_64", releaseVersion="1.20.1-7c3e9198"), KUBERNETES_131,
     "1.20.1-7c3e9198"),
    # No release known (a Windows AMI whose name does not say it): the version decides.
    (nodegroup(version="1.31", amiType="WINDOWS_CORE_2022_x86_64", releaseVersion="1.31-2024.11.12"),
     KUBERNETES_131, None),
    (nodegroup(releaseVersion="1.30.8-20241205"), RELEASE, None),
    (with_custom_lt(lt_version="7"), LT_7, None),
])
def test_k5_a_group_on_the_target_has_nothing_to_do(group, target, expected_release):
    plan = mu.plan_managed_update(group, target, {"maxUnavailable": 5, "updateStrategy": "MINIMAL"}, [],
                                  expected_release=expected_release)
    assert plan["action"] == "none"
    assert "already on the target" in plan["message"]
    # The updateConfig only matters to an update: none is changed when there is nothing to update.
    assert (plan["config_update"], plan["version_update"]) == (None, None)


def test_a_bottlerocket_group_on_its_version_starts_when_ssm_has_a_newer_release():
    group = nodegroup(version="1.31", amiType="BOTTLEROCKET_x86_64", releaseVersion="1.20.1-7c3e9198")
    plan = mu.plan_managed_update(group, KUBERNETES_131, DEFAULT_CONFIG, [], expected_release="1.26.2-360b7a38")
    assert plan["action"] == "start" and plan["version_update"]["version"] == "1.31"


def test_the_version_alone_is_not_the_target_when_eks_has_a_newer_release():
    group = nodegroup(version="1.31", releaseVersion="1.31.2-20241201")
    plan = mu.plan_managed_update(group, KUBERNETES_131, DEFAULT_CONFIG, [], expected_release="1.31.3-20250103")
    assert plan["action"] == "start"
    assert plan["version_update"] == dict(clusterName=CLUSTER, nodegroupName="workers", force=False, version="1.31")


def test_start_sets_the_config_first_and_sends_force():
    plan = mu.plan_managed_update(nodegroup(), KUBERNETES_131, {"maxUnavailable": 3, "updateStrategy": "MINIMAL"},
                                  [], force=True)
    assert plan["action"] == "start"
    assert plan["config_update"] == dict(clusterName=CLUSTER, nodegroupName="workers",
                                         updateConfig={"maxUnavailable": 3, "updateStrategy": "MINIMAL"})
    assert plan["version_update"]["force"] is True
    assert "updateConfig" in plan["message"]


def test_our_update_in_progress_is_followed_not_started_again():
    running = update("u-9", Version="1.31", ReleaseVersion="1.31.3-20250103")
    plan = mu.plan_managed_update(nodegroup(), KUBERNETES_131, {"maxUnavailable": 3, "updateStrategy": "DEFAULT"},
                                  [running])
    assert (plan["action"], plan["follow_update_id"]) == ("follow", "u-9")
    assert (plan["config_update"], plan["version_update"]) == (None, None)


def test_our_config_update_in_progress_is_waited_for_not_sent_again():
    config = update("u-c", type_="ConfigUpdate", MaxUnavailable="3", UpdateStrategy="DEFAULT")
    plan = mu.plan_managed_update(nodegroup(), KUBERNETES_131, {"maxUnavailable": 3, "updateStrategy": "DEFAULT"},
                                  [config])
    assert (plan["action"], plan["pending_config_update_id"], plan["config_update"]) == ("start", "u-c", None)
    assert plan["version_update"]["version"] == "1.31"


@pytest.mark.parametrize("foreign", [
    update("u-x", Version="1.30", ReleaseVersion="1.30.8-20241205"),
    update("u-x", type_="ConfigUpdate", DesiredSize="6"),
])
def test_another_update_in_progress_is_refused_naming_it(foreign):
    group = nodegroup(version="1.31", releaseVersion="1.31.3-20250103")
    for target, release in ((KUBERNETES_131, None), (KUBERNETES_131, "1.31.3-20250103")):
        err = refused(mu.plan_managed_update, group, target, DEFAULT_CONFIG, [foreign], expected_release=release)
        assert err.code == mu.UPDATE_IN_PROGRESS
        assert "u-x" in err.msg and foreign["type"] in err.msg and err.details["update_ids"] == ["u-x"]


@given(on_version=st.booleans(), on_release=st.booleans(), running=st.sampled_from(["none", "ours", "config"]),
       max_unavailable=st.none() | st.integers(1, 100), strategy=st.sampled_from(["default", "minimal"]),
       force=st.booleans())
def test_plan_invariants(on_version, on_release, running, max_unavailable, strategy, force):
    group = nodegroup(version="1.31" if on_version else "1.30",
                      releaseVersion="1.31.3-20250103" if on_release else "1.30.4-20240917")
    wanted = mu.wanted_update_config(max_unavailable, None, strategy)
    in_progress = {"none": [], "ours": [update("u-1", Version="1.31")],
                   "config": [update("u-2", type_="ConfigUpdate", UpdateStrategy=wanted["updateStrategy"])]}[running]
    plan = mu.plan_managed_update(group, KUBERNETES_131, wanted, in_progress, force=force,
                                  expected_release="1.31.3-20250103")
    if running == "ours":
        assert plan["action"] == "follow"
    elif on_version and on_release:
        assert plan["action"] == "none"
    else:
        assert plan["action"] == "start" and plan["version_update"]["force"] is force
    if plan["action"] != "start":
        assert plan["config_update"] is None and plan["version_update"] is None
    # Never both send a config update and wait for one already running.
    assert not (plan["config_update"] and plan["pending_config_update_id"])


# --- Progress -------------------------------------------------------------------------------------------

def asg(version="5", instances=(), mixed=False):
    spec = {"LaunchTemplateId": "lt-eks", "LaunchTemplateName": "eks-0c1", "Version": version}
    group = {"AutoScalingGroupName": "eks-workers-0c1", "Instances": [
        {"InstanceId": "i-%02d" % index, "LifecycleState": state,
         "LaunchTemplate": {"LaunchTemplateId": "lt-eks", "LaunchTemplateName": "eks-0c1", "Version": launched}}
        for index, (state, launched) in enumerate(instances)]}
    if mixed:
        group["MixedInstancesPolicy"] = {"LaunchTemplate": {"LaunchTemplateSpecification": spec}}
    else:
        group["LaunchTemplate"] = spec
    return group


def test_progress_counts_in_service_instances_of_the_version_the_group_points_at():
    group = asg("5", [("InService", "5"), ("InService", "4"), ("Pending", "5"), ("Terminating", "4"),
                      ("InService", "5")])
    assert mu.update_progress([group]) == dict(nodes_total=3, nodes_updated=2)
    mixed = asg("5", [("InService", "5")], mixed=True)
    assert mu.update_progress([mixed, group]) == dict(nodes_total=4, nodes_updated=3)
    assert mu.update_progress([]) == dict(nodes_total=0, nodes_updated=0)


def test_an_instance_of_another_template_is_not_updated():
    group = asg("5", [("InService", "5")])
    group["Instances"][0]["LaunchTemplate"]["LaunchTemplateId"] = "lt-other"
    assert mu.update_progress([group])["nodes_updated"] == 0


@given(st.lists(st.tuples(st.sampled_from(["InService", "Pending", "Terminating", "Standby"]),
                          st.sampled_from(["3", "4", "5"])), max_size=40))
def test_progress_bounds(instances):
    progress = mu.update_progress([asg("5", instances)])
    assert 0 <= progress["nodes_updated"] <= progress["nodes_total"]
    assert progress["nodes_total"] == len([1 for state, dummy in instances if state == "InService"])


# --- EKS's errors ---------------------------------------------------------------------------------------

def test_a_failed_update_becomes_eks_error_code_and_message():
    failed = update("u-f", status="Failed", Version="1.31", errors=[
        {"errorCode": "PodEvictionFailure",
         "errorMessage": "Reached max retries while trying to evict pods from nodes in node group workers",
         "resourceIds": ["ip-10-0-1-12.us-west-2.compute.internal"]},
        {"errorCode": "NodeCreationFailure", "errorMessage": "Instances failed to join the kubernetes cluster",
         "resourceIds": ["i-0abc", "i-0def"]}])
    err = mu.failed_update_error(failed, "workers")
    assert err.code == "PodEvictionFailure"
    assert "u-f" in err.msg and "workers" in err.msg and "Failed" in err.msg
    assert "Reached max retries while trying to evict pods" in err.msg
    assert "ip-10-0-1-12.us-west-2.compute.internal" in err.msg
    assert "NodeCreationFailure: Instances failed to join the kubernetes cluster (resources: i-0abc, i-0def)" \
        in err.msg
    assert err.details["eks_errors"][1] == dict(error_code="NodeCreationFailure",
                                                error_message="Instances failed to join the kubernetes cluster",
                                                resource_ids=["i-0abc", "i-0def"])
    assert (err.details["update_id"], err.details["update_status"]) == ("u-f", "Failed")


def test_a_failure_without_details_and_a_cancellation():
    assert mu.failed_update_error(update(status="Failed"), "workers").code == API_ERROR
    cancelled = dict(update(status="Cancelled"), cancellation={"status": "Successful", "reason": "user request"})
    err = mu.failed_update_error(cancelled, "workers")
    assert "Cancelled" in err.msg and "user request" in err.msg


# --- Result shapes --------------------------------------------------------------------------------------

def test_summaries_are_snake_case():
    assert mu.update_summary(update("u-1", Version="1.31")) == dict(
        id="u-1", status="InProgress", type="VersionUpdate", params=[dict(type="Version", value="1.31")], errors=[],
        created_at="2025-01-02T03:04:05+00:00")
    assert mu.update_summary(None) is None
    group = with_custom_lt(health={"issues": [{"code": "Ec2LaunchTemplateVersionMismatch", "message": "m",
                                               "resourceIds": ["eks-workers-0c1"]}]})
    assert mu.nodegroup_summary(group) == dict(
        name="workers", status="ACTIVE", version="1.30", release_version="1.30.4-20240917",
        ami_type="AL2023_x86_64_STANDARD", launch_template=dict(id=LT_ID, name="workers-lt", version="3"),
        update_config=dict(max_unavailable=1, max_unavailable_percentage=None, update_strategy="DEFAULT"),
        health_issues=[dict(code="Ec2LaunchTemplateVersionMismatch", message="m", resource_ids=["eks-workers-0c1"])],
        auto_scaling_groups=["eks-workers-0c1"])


def test_predicted_diff():
    group = nodegroup()
    plan = mu.plan_managed_update(group, KUBERNETES_131, {"maxUnavailablePercentage": 20, "updateStrategy": "DEFAULT"},
                                  [], expected_release="1.31.3-20250103")
    assert mu.diff_state(group) == dict(
        version="1.30", release_version="1.30.4-20240917", launch_template_version=None,
        update_config=dict(max_unavailable=1, max_unavailable_percentage=None, update_strategy="DEFAULT"))
    assert mu.predicted_diff_state(group, plan) == dict(
        version="1.31", release_version="1.31.3-20250103", launch_template_version=None,
        update_config=dict(max_unavailable=None, max_unavailable_percentage=20, update_strategy="DEFAULT"))
    lt_group = with_custom_lt()
    lt_plan = mu.plan_managed_update(lt_group, LT_7, DEFAULT_CONFIG, [])
    after = mu.predicted_diff_state(lt_group, lt_plan)
    assert (after["launch_template_version"], after["release_version"]) == ("7", mu.CHOSEN_BY_EKS)
    on_target = nodegroup(releaseVersion="1.30.8-20241205")
    none_plan = mu.plan_managed_update(on_target, RELEASE, DEFAULT_CONFIG, [])
    assert mu.predicted_diff_state(on_target, none_plan) == mu.diff_state(on_target)


# ------------------------------------------------------------------------------ issue 29 item 3 (SPEC W4)

@pytest.mark.parametrize("first, now, elapsed, left", [
    (dict(nodes_total=6, nodes_updated=0), dict(nodes_total=6, nodes_updated=2), 600.0, 1200.0),
    (dict(nodes_total=6, nodes_updated=6), dict(nodes_total=6, nodes_updated=0), 60.0, None),  # EKS's setup
    (dict(nodes_total=6, nodes_updated=1), dict(nodes_total=6, nodes_updated=1), 300.0, None),  # no pace yet
    (dict(nodes_total=8, nodes_updated=2), dict(nodes_total=8, nodes_updated=8), 90.0, 0.0),
])
def test_w4_the_time_left_is_the_nodes_left_at_the_pace_seen(first, now, elapsed, left):
    assert mu.seconds_left(first, now, elapsed) == left
