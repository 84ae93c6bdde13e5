# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The target of an EKS managed node group update (SPEC K3, K5, K6): the options checked and the
UpdateNodegroupVersion request. Inputs are shaped as botocore returns EKS's answers."""

from __future__ import annotations

import botocore.session
import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.managed import target as mt
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import INVALID_PARAMETER

from .eks_answers import LT_ID, nodegroup, options, refused, with_custom_lt


@pytest.mark.parametrize("given, parameter", [
    (dict(), "kubernetes_version/release_version/launch_template_version/image_id"),
    (dict(kubernetes_version="1.31", image_id="ami-1"), "kubernetes_version/image_id"),
    (dict(kubernetes_version="1.31.2"), "kubernetes_version"),
    (dict(release_version=""), "release_version"),
    (dict(launch_template_version=0), "launch_template_version"),
    (dict(kubernetes_version="1.31", max_unavailable=1, max_unavailable_percentage=10), "max_unavailable"),
    (dict(kubernetes_version="1.31", max_unavailable=101), "max_unavailable"),
    (dict(kubernetes_version="1.31", max_unavailable_percentage=0), "max_unavailable_percentage"),
    (dict(kubernetes_version="1.31", wait_timeout=-1), "wait_timeout"),
    (dict(kubernetes_version="1.31", poll_interval=0), "poll_interval"),
])
def test_inconsistent_options_are_refused_naming_them(given, parameter):
    err = refused(mt.validate_options, options(**given))
    assert (err.code, err.details["parameter"]) == (INVALID_PARAMETER, parameter)


def test_one_target_and_sane_settings_pass():
    mt.validate_options(options(release_version="1.30.8-20241205", max_unavailable_percentage=25))


# --- SSM family of an amiType ---------------------------------------------------------------------------

@pytest.mark.parametrize("ami_type, family", [
    ("AL2_x86_64", "amazon-linux-2"),
    ("AL2_x86_64_GPU", "amazon-linux-2-gpu"),
    ("AL2_ARM_64", "amazon-linux-2-arm64"),
    ("AL2023_x86_64_STANDARD", "amazon-linux-2023/x86_64/standard"),
    ("AL2023_ARM_64_STANDARD", "amazon-linux-2023/arm64/standard"),
    ("AL2023_x86_64_NVIDIA", "amazon-linux-2023/x86_64/nvidia"),
    ("AL2023_ARM_64_NVIDIA", "amazon-linux-2023/arm64/nvidia"),
    ("AL2023_x86_64_NEURON", "amazon-linux-2023/x86_64/neuron"),
    ("BOTTLEROCKET_x86_64", None),
    ("WINDOWS_CORE_2022_x86_64", None),
    ("CUSTOM", None),
    (None, None),
])
def test_ssm_family_of_ami_type(ami_type, family):
    assert mt.ssm_family(ami_type) == family


def test_every_amazon_linux_ami_type_of_the_eks_model_has_a_family():
    """A new AL amiType in botocore's EKS model must not silently lose the K5 release check."""
    ami_types = botocore.session.get_session().get_service_model("eks").shape_for("AMITypes").enum
    amazon_linux = [ami_type for ami_type in ami_types if ami_type.startswith("AL2")]
    assert amazon_linux and all(mt.ssm_family(ami_type) for ami_type in amazon_linux)


def test_release_version_parameter():
    assert mt.release_version_ssm_parameter("AL2023_ARM_64_STANDARD", "1.31") == \
        "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/arm64/standard/recommended/release_version"
    assert mt.release_version_ssm_parameter("WINDOWS_FULL_2019_x86_64", "1.31") == \
        "/aws/service/ami-windows-latest/Windows_Server-2019-English-Full-EKS_Optimized-1.31/image_id"
    assert mt.release_version_ssm_parameter("CUSTOM", "1.31") is None
    assert mt.release_in_image_name("WINDOWS_CORE_2025_x86_64") and not mt.release_in_image_name("BOTTLEROCKET_x86_64")


def test_windows_release_from_the_ami_name():
    assert mt.windows_release("Windows_Server-2022-English-Core-EKS_Optimized-1.31-2024.11.12") == "1.31-2024.11.12"
    assert mt.windows_release("Windows_Server-2022-English-Core-EKS_Optimized-1.31") is None
    assert mt.windows_release(None) is None


def test_every_ami_type_of_the_eks_model_but_custom_has_a_release_parameter():
    """A new amiType in botocore's EKS model must not silently lose the K5 release check (issue 29 item 3)."""
    ami_types = botocore.session.get_session().get_service_model("eks").shape_for("AMITypes").enum
    assert [ami_type for ami_type in ami_types if not mt.release_version_ssm_parameter(ami_type, "1.31")] == ["CUSTOM"]


@pytest.mark.parametrize("ami_type, parameter", [
    ("BOTTLEROCKET_ARM_64", "/aws/service/bottlerocket/aws-k8s-1.31/arm64/latest/image_version"),
    ("BOTTLEROCKET_x86_64_NVIDIA", "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/latest/image_version"),
    ("BOTTLEROCKET_x86_64_FIPS", "/aws/service/bottlerocket/aws-k8s-1.31-fips/x86_64/latest/image_version"),
    ("BOTTLEROCKET_ARM_64_NVIDIA_FIPS", "/aws/service/bottlerocket/aws-k8s-1.31-fips/arm64/latest/image_version"),
])
def test_issue29_item3_bottlerocket_kubernetes_version_of_the_group_reads_the_newest_release(ami_type, parameter):
    """A Bottlerocket group on 1.31 asked for 1.31 is on target only on the release SSM publishes as image_version
    (eksctl's MakeManagedSSMParameterName), not whenever the version matches."""
    assert mt.release_version_ssm_parameter(ami_type, "1.31") == parameter
    group = nodegroup(amiType=ami_type, version="1.31", releaseVersion="1.20.3-5d9ac849")
    target = mt.managed_update_target(options(kubernetes_version="1.31"), group, "1.31")
    assert target["ssm_parameter"] == parameter


# --- The target -----------------------------------------------------------------------------------------

def test_kubernetes_version_target():
    target = mt.managed_update_target(options(kubernetes_version="1.31"), nodegroup(), "1.31")
    assert target == dict(option="kubernetes_version", value="1.31", request={"version": "1.31"},
                          ssm_parameter="/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/"
                          "recommended/release_version")
    windows = mt.managed_update_target(options(kubernetes_version="1.31"),
                                       nodegroup(amiType="WINDOWS_CORE_2022_x86_64"), "1.31")
    assert windows["ssm_parameter"] == \
        "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.31/image_id"


def test_k6_a_version_newer_than_the_control_plane_is_refused():
    err = refused(mt.managed_update_target, options(kubernetes_version="1.32"), nodegroup(), "1.31")
    assert err.details["parameter"] == "kubernetes_version"
    assert "newer than the control plane" in err.msg and "1.31" in err.msg
    err = refused(mt.managed_update_target, options(release_version="1.32.0-20250101"), nodegroup(), "1.31")
    assert err.details["parameter"] == "release_version"


@pytest.mark.parametrize("release", ["1.31", "v1.31.3-20250103", "1.31.3", "latest"])
def test_k5_a_malformed_amazon_linux_release_is_refused_before_any_change(release):
    """Refused here, not by EKS after the updateConfig was changed."""
    err = refused(mt.managed_update_target, options(release_version=release), nodegroup(), "1.31")
    assert err.details["parameter"] == "release_version" and "1.30.4-20240917" in err.msg


def test_minor_versions_compare_as_numbers():
    """1.9 < 1.10, whereas as strings "1.10" < "1.9"."""
    assert mt.managed_update_target(options(kubernetes_version="1.10"), nodegroup(version="1.9"), "1.10")["value"] == "1.10"
    err = refused(mt.managed_update_target, options(kubernetes_version="1.10"), nodegroup(version="1.9"), "1.9")
    assert "newer than the control plane" in err.msg


def test_rollbacks_are_refused():
    err = refused(mt.managed_update_target, options(kubernetes_version="1.29"), nodegroup(), "1.31")
    assert err.details["parameter"] == "kubernetes_version" and "roll" in err.msg
    err = refused(mt.managed_update_target, options(release_version="1.30.4-20240801"), nodegroup(), "1.31")
    assert err.details["parameter"] == "release_version"


def test_release_version_target_sends_its_kubernetes_version_for_amazon_linux():
    target = mt.managed_update_target(options(release_version="1.31.3-20250103"), nodegroup(), "1.31")
    assert target["request"] == {"releaseVersion": "1.31.3-20250103", "version": "1.31"}
    assert (target["option"], target["value"], target["ssm_parameter"]) == ("release_version", "1.31.3-20250103", None)
    bottlerocket = mt.managed_update_target(options(release_version="1.20.1-7c3e9198"),
                                            nodegroup(amiType="BOTTLEROCKET_x86_64", releaseVersion="1.19.2-29cc92cc"), "1.31")
    assert bottlerocket["request"] == {"releaseVersion": "1.20.1-7c3e9198"}


@pytest.mark.parametrize("given", [dict(kubernetes_version="1.31"), dict(release_version="1.31.3-20250103")])
def test_a_custom_ami_group_takes_only_launch_template_versions(given):
    group = with_custom_lt(ami_type="CUSTOM", releaseVersion="ami-0a1b2c3d4e5f60001")
    err = refused(mt.managed_update_target, options(**given), group, "1.31")
    assert err.details["parameter"] == list(given)[0]
    assert "launch_template_version" in err.msg and "workers-lt" in err.msg


def test_launch_template_version_target():
    target = mt.managed_update_target(options(launch_template_version=7), with_custom_lt(), "1.31")
    assert target == dict(option="launch_template_version", value="7",
                          request={"launchTemplate": {"id": LT_ID, "version": "7"}}, ssm_parameter=None)
    by_name = nodegroup(launchTemplate={"name": "workers-lt", "version": "3"})
    assert mt.managed_update_target(options(launch_template_version=4), by_name, "1.31")["request"] == {
        "launchTemplate": {"name": "workers-lt", "version": "4"}}


def test_launch_template_version_needs_a_group_with_its_own_launch_template():
    err = refused(mt.managed_update_target, options(launch_template_version=7), nodegroup(), "1.31")
    assert err.details["parameter"] == "launch_template_version" and "without a launch template" in err.msg


@pytest.mark.parametrize("group, says, does_not_say", [
    (nodegroup(), ["kubernetes_version", "release_version"], ["launch_template_version"]),
    (with_custom_lt(), ["kubernetes_version", "release_version", "launch_template_version", "workers-lt"], []),
    (with_custom_lt(ami_type="CUSTOM"), ["launch_template_version", "workers-lt"], ["kubernetes_version"]),
])
def test_image_id_is_refused_saying_what_to_use(group, says, does_not_say):
    err = refused(mt.managed_update_target, options(image_id="ami-0abc"), group, "1.31")
    assert (err.code, err.details["parameter"]) == (INVALID_PARAMETER, "image_id")
    assert "image_id" in err.msg and "ami-0abc" in err.msg
    assert all(word in err.msg for word in says), err.msg
    assert not any(word in err.msg for word in does_not_say), err.msg


@pytest.mark.parametrize("status", ["CREATING", "DELETING", "CREATE_FAILED", "DELETE_FAILED"])
def test_a_group_eks_does_not_update_is_refused(status):
    err = refused(mt.managed_update_target, options(kubernetes_version="1.31"), nodegroup(status=status), "1.31")
    assert err.details["parameter"] == "nodegroup_name" and status in err.msg
