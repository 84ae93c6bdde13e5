# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWS option spec, client factory and error translation (SPEC U8)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, NoRegionError

from ansible.module_utils.basic import AnsibleModule
from ..module_args import patch_module_args

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import session as aws
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import shapes
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError

PARAMS = dict(region="us-west-2", access_key="AKIDTEST", secret_key="secret", session_token=None, profile=None,
              endpoint_url=None)


def client_error(code, message="boom", operation="DescribeThings"):
    return ClientError({"Error": {"Code": code, "Message": message},
                        "ResponseMetadata": {"RequestId": "req-1"}}, operation)


@pytest.mark.parametrize("aws_code, code", [
    ("AccessDenied", "AccessDenied"),
    ("AccessDeniedException", "AccessDenied"),
    ("UnauthorizedOperation", "AccessDenied"),
    ("InvalidClientTokenId", "AccessDenied"),
    ("AuthFailure", "AccessDenied"),
    ("ExpiredToken", "AccessDenied"),
    ("InstanceLimitExceeded", "InstanceLimitExceeded"),
    ("InsufficientFreeAddressesInSubnet", "InsufficientFreeAddresses"),
    ("InvalidAMIID.NotFound", "ResourceNotFound"),
    ("InvalidLaunchTemplateId.VersionNotFound", "ResourceNotFound"),
    ("ResourceNotFoundException", "ResourceNotFound"),
    ("ParameterNotFound", "ResourceNotFound"),
    # issue 10 item 24: AWS's validation of a request in the group's state (a race) is not the user's input
    ("ValidationError", "ApiError"),
    ("ValidationException", "ApiError"),
    ("ScalingActivityInProgress", "ApiError"),
    ("ResourceContention", "ApiError"),
    ("InvalidParameterValue", "InvalidParameter"),
    ("Throttling", "ApiError"),
    ("InternalFailure", "ApiError"),
])
def test_aws_error_codes_map_to_u8_codes(aws_code, code):
    assert aws.aws_error_code(aws_code) == code


def test_client_error_keeps_the_aws_code_and_request():
    with pytest.raises(UpgradeError) as raised:
        with aws.translate_aws_errors("describe ASG workers"):
            raise client_error("AccessDenied", "not allowed", "DescribeAutoScalingGroups")
    err = raised.value
    assert err.code == "AccessDenied"
    assert err.msg == "describe ASG workers failed: AccessDenied: not allowed"
    assert err.details["aws_error_code"] == "AccessDenied"
    assert err.details["aws_request_id"] == "req-1"
    assert err.details["aws_operation"] == "DescribeAutoScalingGroups"


@pytest.mark.parametrize("exc, code, parameter", [
    (EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), "AwsUnreachable", None),
    (NoCredentialsError(), "AccessDenied", None),
    (NoRegionError(), "InvalidParameter", "region"),
])
def test_botocore_errors_are_translated(exc, code, parameter):
    with pytest.raises(UpgradeError) as raised:
        with aws.translate_aws_errors("call AWS"):
            raise exc
    assert raised.value.code == code
    assert raised.value.details.get("parameter") == parameter


def test_other_exceptions_and_upgrade_errors_pass_through():
    with pytest.raises(KeyError):
        with aws.translate_aws_errors("x"):
            raise KeyError("k")
    original = UpgradeError("InvalidParameter", "mine")
    with pytest.raises(UpgradeError) as raised:
        with aws.translate_aws_errors("x"):
            raise original
    assert raised.value is original


def test_client_uses_standard_retries_and_user_agent():
    client = aws.aws_client(PARAMS, "autoscaling")
    config = client.meta.config
    assert config.retries == {"mode": "standard", "total_max_attempts": 10}
    assert "eksops.nodegroup/%s" % aws.COLLECTION_VERSION in config.user_agent_extra
    assert client.meta.region_name == "us-west-2"


def test_sessions_share_the_process_service_models(monkeypatch):
    """Issue 11 item 4: one data loader per process (and data path), so a service model botocore parsed for one
    session (EC2's about 0.15 s) serves the next, and the workers ansible-playbook forks after the action plugins
    warmed it in its main process."""
    monkeypatch.setattr(aws, "_DATA_LOADERS", {})
    aws.warm_service_models(["ec2"])
    loader = aws.shared_data_loader(aws._botocore_session(aws.aws_session(PARAMS)))
    first, second = aws.aws_session(PARAMS), aws.aws_session(PARAMS)
    assert first._session.get_component("data_loader") is loader is second._session.get_component("data_loader")
    parsed = loader.load_service_model("ec2", "service-2")
    assert aws.aws_client(PARAMS, "ec2", session=first).meta.service_model._service_description is parsed
    # Another data path (AWS_DATA_PATH) has a loader of its own: its models may differ.
    monkeypatch.setenv("AWS_DATA_PATH", "/nonexistent/models")
    assert aws.aws_session(PARAMS)._session.get_component("data_loader") is not loader


def test_collection_version_is_galaxy_ymls():
    """Issue 12: COLLECTION_VERSION (in the user agent) is a copy of galaxy.yml's version, which a module cannot
    read on the managed host; this keeps the two from drifting apart."""
    import pathlib

    import yaml

    galaxy = pathlib.Path(aws.__file__).resolve().parents[3] / "galaxy.yml"
    assert aws.COLLECTION_VERSION == str(yaml.safe_load(galaxy.read_text())["version"])


def test_endpoint_url_is_used_for_every_service():
    params = dict(PARAMS, endpoint_url="http://127.0.0.1:5999")
    for service in ("ec2", "autoscaling", "eks", "ssm", "sts"):
        assert aws.aws_client(params, service).meta.endpoint_url == "http://127.0.0.1:5999"


@pytest.mark.parametrize("params, parameter", [
    (dict(PARAMS, profile="prod"), "profile"),
    (dict(PARAMS, secret_key=None), "secret_key"),
    (dict(PARAMS, access_key=None), "access_key"),
])
def test_session_rejects_conflicting_credentials(params, parameter):
    with pytest.raises(UpgradeError) as raised:
        aws.aws_session(params)
    assert raised.value.details["parameter"] == parameter


def test_session_without_region_names_region(monkeypatch):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    with pytest.raises(UpgradeError) as raised:
        aws.aws_session(dict(PARAMS, region=None))
    assert raised.value.details["parameter"] == "region"


def test_unknown_profile_names_profile(monkeypatch):
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    with pytest.raises(UpgradeError) as raised:
        aws.aws_session(dict(PARAMS, access_key=None, secret_key=None, profile="nope"))
    assert raised.value.details["parameter"] == "profile"


def _parse(args, monkeypatch, env):
    for name in list(env):
        monkeypatch.setenv(name, env[name])
    with patch_module_args(args):
        return AnsibleModule(argument_spec=dict(aws.AWS_ARGUMENT_SPEC)).params


def test_aliases_and_environment_fallbacks(monkeypatch):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "EC2_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_URL", "EC2_URL", "AWS_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    params = _parse({"aws_region": "eu-west-1", "aws_access_key_id": "AK", "aws_secret_access_key": "SK"},
                    monkeypatch, {})
    assert (params["region"], params["access_key"], params["secret_key"]) == ("eu-west-1", "AK", "SK")
    assert (params["validate_certs"], params["aws_ca_bundle"], params["aws_config"]) == (True, None, None)
    params = _parse({}, monkeypatch, {"AWS_DEFAULT_REGION": "ap-south-1", "AWS_URL": "http://127.0.0.1:1",
                                      "AWS_SESSION_TOKEN": "tok", "AWS_CA_BUNDLE": "/etc/ca.pem"})
    assert (params["region"], params["endpoint_url"], params["session_token"], params["aws_ca_bundle"]) == (
        "ap-south-1", "http://127.0.0.1:1", "tok", "/etc/ca.pem")


def test_aws_endpoint_url_is_left_to_botocore(monkeypatch):
    """Issue 10 item 13: AWS_ENDPOINT_URL is not read into endpoint_url, which would hide AWS_ENDPOINT_URL_<SERVICE>
    (an explicit endpoint_url wins over every configured endpoint in botocore)."""
    for name in ("AWS_URL", "EC2_URL"):
        monkeypatch.delenv(name, raising=False)
    params = _parse({"region": "us-west-2"}, monkeypatch, {"AWS_ENDPOINT_URL": "http://127.0.0.1:1"})
    assert params["endpoint_url"] is None


def test_secrets_are_no_log():
    assert aws.AWS_ARGUMENT_SPEC["secret_key"]["no_log"] is True
    assert aws.AWS_ARGUMENT_SPEC["session_token"]["no_log"] is True


def test_aws_tags_to_dict_accepts_lists_and_dicts():
    assert shapes.aws_tags_to_dict([{"Key": "a", "Value": "1"}, {"Key": "b"}]) == {"a": "1", "b": ""}
    assert shapes.aws_tags_to_dict({"a": "1"}) == {"a": "1"}
    assert shapes.aws_tags_to_dict(None) == {}


def test_aws_call_keeps_the_function_and_passes_other_errors_through():
    """Issue 12: the decorator translates botocore errors only; the function keeps its name and docstring."""

    @aws.aws_call("describe {what} of {names}")
    def describe(client, what, names=("a", "b")):
        """Doc."""
        if client == "refused":
            raise client_error("Throttling", "Rate exceeded")
        if client == "bug":
            raise KeyError("Instances")
        return what

    assert (describe.__name__, describe.__doc__) == ("describe", "Doc.")
    assert describe("ok", "x") == "x"
    with pytest.raises(UpgradeError) as raised:
        describe("refused", "hooks")
    assert raised.value.msg == "describe hooks of a, b failed: Throttling: Rate exceeded"
    with pytest.raises(KeyError):
        describe("bug", "hooks")
