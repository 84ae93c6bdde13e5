# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which endpoint, TLS and retry settings each AWS client gets, and where the EKS token is presigned (issue 10
item 13): endpoint_url for every API client, per-service endpoints through botocore's own AWS_ENDPOINT_URL_<SERVICE>
and config file, aws_validate_certs / aws_ca_bundle / aws_config, and the regional STS endpoint for the token."""

from __future__ import annotations

import base64
import os
import urllib.parse

import boto3
import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import session as aws
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube import client as k8s
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError

PARAMS = dict(region="us-west-2", access_key="AKIDTEST", secret_key="secret", session_token=None, profile=None,
              endpoint_url=None)
# The five services the collection's modules use, as botocore names their AWS_ENDPOINT_URL_<SERVICE> variables.
SERVICE_VARIABLES = {"autoscaling": "AWS_ENDPOINT_URL_AUTO_SCALING", "ec2": "AWS_ENDPOINT_URL_EC2",
                     "eks": "AWS_ENDPOINT_URL_EKS", "ssm": "AWS_ENDPOINT_URL_SSM", "sts": "AWS_ENDPOINT_URL_STS"}
GLOBAL = "http://127.0.0.1:4566"


@pytest.fixture(autouse=True)
def clean_aws_environment(monkeypatch, tmp_path):
    """No endpoint, retry, TLS or profile setting of the developer's leaks in; an empty AWS config file."""
    for name in list(os.environ):
        if name.startswith(("AWS_ENDPOINT_URL", "AWS_IGNORE_CONFIGURED")) or name in (
                "AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS", "AWS_CA_BUNDLE", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
                "AWS_STS_REGIONAL_ENDPOINTS", "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT"):
            monkeypatch.delenv(name)
    config = tmp_path / "aws-config"
    config.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    return config


def token_url(params):
    """The presigned URL inside an EKS token minted with the token's STS client."""
    token = k8s.mint_eks_token(aws.eks_token_sts_client(params), "demo")
    encoded = token[len(k8s.EKS_TOKEN_PREFIX):]
    return urllib.parse.urlparse(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode())


# Endpoints of the API clients.

def test_without_settings_each_service_uses_its_regional_endpoint():
    for service in SERVICE_VARIABLES:
        assert aws.aws_client(PARAMS, service).meta.endpoint_url == "https://%s.us-west-2.amazonaws.com" % service


def test_service_specific_variables_win_over_aws_endpoint_url(monkeypatch):
    """VPC endpoints are per service: botocore reads AWS_ENDPOINT_URL_<SERVICE> before AWS_ENDPOINT_URL."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", GLOBAL)
    monkeypatch.setenv("AWS_ENDPOINT_URL_EC2", "https://vpce-1.ec2.us-west-2.vpce.amazonaws.com")
    monkeypatch.setenv("AWS_ENDPOINT_URL_AUTO_SCALING", "https://vpce-2.autoscaling.us-west-2.vpce.amazonaws.com")
    endpoints = dict((service, aws.aws_client(PARAMS, service).meta.endpoint_url) for service in SERVICE_VARIABLES)
    assert endpoints == {"ec2": "https://vpce-1.ec2.us-west-2.vpce.amazonaws.com",
                         "autoscaling": "https://vpce-2.autoscaling.us-west-2.vpce.amazonaws.com",
                         "eks": GLOBAL, "ssm": GLOBAL, "sts": GLOBAL}


def test_every_service_variable_is_honoured(monkeypatch):
    for number, (service, variable) in enumerate(sorted(SERVICE_VARIABLES.items())):
        monkeypatch.setenv(variable, "https://%s.example:%d" % (service, 8000 + number))
    for number, (service, variable) in enumerate(sorted(SERVICE_VARIABLES.items())):
        assert aws.aws_client(PARAMS, service).meta.endpoint_url == "https://%s.example:%d" % (service, 8000 + number)


def test_config_file_services_section_is_honoured(clean_aws_environment):
    clean_aws_environment.write_text(
        "[default]\nendpoint_url = %s\nservices = private\n\n"
        "[services private]\neks =\n  endpoint_url = https://eks.private.example\n" % GLOBAL)
    assert aws.aws_client(PARAMS, "eks").meta.endpoint_url == "https://eks.private.example"
    assert aws.aws_client(PARAMS, "ec2").meta.endpoint_url == GLOBAL


def test_ignore_configured_endpoint_urls_is_honoured(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", GLOBAL)
    monkeypatch.setenv("AWS_ENDPOINT_URL_EKS", "https://eks.private.example")
    monkeypatch.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
    assert aws.aws_client(PARAMS, "eks").meta.endpoint_url == "https://eks.us-west-2.amazonaws.com"


def test_endpoint_url_option_goes_to_every_api_client(monkeypatch):
    """The single-endpoint test stack: one URL for all services, over anything configured (botocore's rule for
    an explicit endpoint_url)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_EC2", "https://ec2.private.example")
    params = dict(PARAMS, endpoint_url="http://127.0.0.1:5999")
    for service in SERVICE_VARIABLES:
        assert aws.aws_client(params, service).meta.endpoint_url == "http://127.0.0.1:5999"


# The EKS token.

def test_token_is_presigned_for_regional_sts_whatever_the_other_endpoints(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", GLOBAL)
    monkeypatch.setenv("AWS_ENDPOINT_URL_EKS", "https://eks.private.example")
    url = token_url(dict(PARAMS, endpoint_url="http://127.0.0.1:5999"))
    assert (url.scheme, url.hostname) == ("https", "sts.us-west-2.amazonaws.com")
    assert urllib.parse.parse_qs(url.query)["Action"] == ["GetCallerIdentity"]


def test_token_ignores_the_profile_endpoint_url(clean_aws_environment):
    clean_aws_environment.write_text("[default]\nendpoint_url = %s\n" % GLOBAL)
    assert token_url(PARAMS).hostname == "sts.us-west-2.amazonaws.com"


@pytest.mark.parametrize("region, host", [
    ("us-east-1", "sts.us-east-1.amazonaws.com"),
    ("eu-central-1", "sts.eu-central-1.amazonaws.com"),
    ("cn-north-1", "sts.cn-north-1.amazonaws.com.cn"),
    ("us-gov-west-1", "sts.us-gov-west-1.amazonaws.com"),
])
def test_token_host_is_regional_even_with_legacy_sts_endpoints(monkeypatch, region, host):
    """AWS_STS_REGIONAL_ENDPOINTS=legacy sends us-east-1 (and other old regions) to sts.amazonaws.com for API
    calls; the token stays regional, in the region's partition."""
    monkeypatch.setenv("AWS_STS_REGIONAL_ENDPOINTS", "legacy")
    url = token_url(dict(PARAMS, region=region))
    assert url.hostname == host
    credential = urllib.parse.parse_qs(url.query)["X-Amz-Credential"][0]
    assert credential.split("/")[2] == region


def test_token_follows_botocore_fips_setting(monkeypatch):
    monkeypatch.setenv("AWS_USE_FIPS_ENDPOINT", "true")
    assert token_url(dict(PARAMS, region="us-east-1")).hostname == "sts-fips.us-east-1.amazonaws.com"


def test_token_keeps_an_endpoint_set_for_sts_itself(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", GLOBAL)
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", "https://sts.test.example:8443")
    assert token_url(dict(PARAMS, endpoint_url="http://127.0.0.1:5999")).netloc == "sts.test.example:8443"


def test_token_keeps_the_profiles_sts_service_endpoint(clean_aws_environment):
    clean_aws_environment.write_text(
        "[default]\nendpoint_url = %s\nservices = private\n\n"
        "[services private]\nsts =\n  endpoint_url = https://sts.private.example\n" % GLOBAL)
    assert token_url(PARAMS).hostname == "sts.private.example"


def test_token_drops_the_sts_endpoint_when_configured_endpoints_are_ignored(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", "https://sts.test.example:8443")
    monkeypatch.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
    assert token_url(PARAMS).hostname == "sts.us-west-2.amazonaws.com"


def test_token_client_uses_the_module_credentials_and_config():
    client = aws.eks_token_sts_client(dict(PARAMS, aws_config={"retries": {"mode": "adaptive"}}))
    assert client.meta.config.retries["mode"] == "adaptive"
    assert client.meta.region_name == "us-west-2"
    assert token_url(PARAMS).query.count("AKIDTEST") == 1


# TLS.

@pytest.fixture
def client_kwargs(monkeypatch):
    """The keyword arguments every boto3 client of the test is created with."""
    seen = []
    real_client = boto3.session.Session.client

    def spy(self, *args, **kwargs):
        seen.append(kwargs)
        return real_client(self, *args, **kwargs)

    # Kept (issue 12): wraps boto3's public Session.client (no name of ours) to see each client's verify=.
    monkeypatch.setattr(boto3.session.Session, "client", spy)
    return seen


@pytest.mark.parametrize("options, verify", [
    ({}, None),
    ({"aws_validate_certs": True}, None),
    ({"aws_validate_certs": False}, False),
    ({"aws_ca_bundle": "/etc/pki/private-ca.pem"}, "/etc/pki/private-ca.pem"),
    ({"aws_validate_certs": False, "aws_ca_bundle": "/etc/pki/private-ca.pem"}, False),
])
def test_tls_options_reach_every_client(client_kwargs, options, verify):
    """None leaves botocore's own chain (AWS_CA_BUNDLE, the profile's ca_bundle) in charge."""
    params = dict(PARAMS, **options)
    aws.aws_client(params, "ec2")
    aws.eks_token_sts_client(params)
    assert [kwargs["verify"] for kwargs in client_kwargs] == [verify, verify]


def test_unverified_client_really_skips_verification():
    client = aws.aws_client(dict(PARAMS, aws_validate_certs=False), "eks")
    assert client._endpoint.http_session._verify is False  # pylint: disable=protected-access


# Retries and aws_config.

def test_default_retries_and_user_agent():
    config = aws.aws_client(PARAMS, "autoscaling").meta.config
    assert config.retries == {"mode": "standard", "total_max_attempts": 10}
    assert config.user_agent_extra == aws.USER_AGENT_EXTRA


@pytest.mark.parametrize("aws_config, retries", [
    ({"retries": {"mode": "adaptive"}}, {"mode": "adaptive", "total_max_attempts": 10}),
    ({"retries": {"total_max_attempts": 3}}, {"mode": "standard", "total_max_attempts": 3}),
    # botocore's max_attempts counts retries only.
    ({"retries": {"max_attempts": 4}}, {"mode": "standard", "total_max_attempts": 5}),
    ({"retries": {"mode": "legacy", "total_max_attempts": 2}}, {"mode": "legacy", "total_max_attempts": 2}),
])
def test_aws_config_retries_merge_over_the_defaults(aws_config, retries):
    assert aws.aws_client(dict(PARAMS, aws_config=aws_config), "ec2").meta.config.retries == retries


def test_aws_config_passes_other_botocore_settings():
    config = aws.aws_client(dict(PARAMS, aws_config={"connect_timeout": 7, "read_timeout": 30,
                                                     "user_agent_extra": "awx/24"}), "eks").meta.config
    assert (config.connect_timeout, config.read_timeout) == (7, 30)
    assert config.user_agent_extra == aws.USER_AGENT_EXTRA + " awx/24"


def test_botocore_retry_settings_win_over_the_defaults(monkeypatch):
    monkeypatch.setenv("AWS_RETRY_MODE", "adaptive")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "4")
    assert aws.aws_client(PARAMS, "ec2").meta.config.retries == {"mode": "adaptive", "total_max_attempts": 4}
    config = aws.aws_client(dict(PARAMS, aws_config={"retries": {"mode": "standard"}}), "ec2").meta.config
    assert config.retries == {"mode": "standard", "total_max_attempts": 4}


def test_profile_retry_settings_win_over_the_defaults(clean_aws_environment):
    clean_aws_environment.write_text("[default]\nretry_mode = legacy\nmax_attempts = 2\n")
    assert aws.aws_client(PARAMS, "ec2").meta.config.retries == {"mode": "legacy", "total_max_attempts": 2}


@pytest.mark.parametrize("aws_config", [
    {"no_such_setting": 1},
    {"retries": {"mode": "eager"}},
    {"retries": {"attempts": 3}},
    {"retries": 3},
])
def test_bad_aws_config_names_the_option(aws_config):
    with pytest.raises(UpgradeError) as raised:
        aws.aws_client(dict(PARAMS, aws_config=aws_config), "ec2")
    assert (raised.value.code, raised.value.details["parameter"]) == ("InvalidParameter", "aws_config")
    assert "aws_config" in raised.value.msg
