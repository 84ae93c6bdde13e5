# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes client factory: credential precedence, EKS tokens and their refresh (SPEC P5), errors (U8)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.parse

import pytest
import urllib3
import yaml
from moto import mock_aws
from kubernetes.client.exceptions import ApiException

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import session as aws
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube import client as k8s
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube import watch as kube_watch
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError

from ..fakes import FakeClock

AWS_PARAMS = dict(region="us-west-2", access_key="AKIDTEST", secret_key="secret", session_token=None, profile=None,
                  endpoint_url=None)
NO_K8S = dict(kubeconfig=None, context=None, host=None, api_key=None, validate_certs=None, ca_cert=None)


def decode_token(token):
    assert token.startswith("k8s-aws-v1.")
    encoded = token[len("k8s-aws-v1."):]
    assert "=" not in encoded
    return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()


def test_eks_token_is_a_presigned_get_caller_identity_bound_to_the_cluster():
    """P5: the token aws eks get-token would give, minted in-process."""
    url = decode_token(k8s.mint_eks_token(aws.aws_client(AWS_PARAMS, "sts"), "demo"))
    parsed = urllib.parse.urlparse(url)
    query = urllib.parse.parse_qs(parsed.query)
    assert parsed.netloc == "sts.us-west-2.amazonaws.com"
    assert query["Action"] == ["GetCallerIdentity"]
    assert query["X-Amz-Expires"] == ["60"]
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0].split(";")
    assert query["X-Amz-Credential"][0].startswith("AKIDTEST/")


def test_eks_token_header_does_not_leak_into_other_sts_calls():
    sts = aws.aws_client(AWS_PARAMS, "sts")
    k8s.mint_eks_token(sts, "demo")
    url = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60)
    assert "x-k8s-aws-id" not in urllib.parse.parse_qs(urllib.parse.urlparse(url).query)["X-Amz-SignedHeaders"][0]


def test_eks_token_is_presigned_for_regional_sts_not_the_endpoint_url(monkeypatch):
    """Issue 10 item 13: endpoint_url and AWS_ENDPOINT_URL address the other services, never the token."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5998")
    monkeypatch.delenv("AWS_ENDPOINT_URL_STS", raising=False)
    params = dict(NO_K8S, host="https://10.1.1.1", cluster_name="demo",
                  **dict(AWS_PARAMS, endpoint_url="http://127.0.0.1:5999"))
    bearer = k8s.k8s_api_client(params).configuration.auth_settings()["BearerToken"]["value"]
    url = urllib.parse.urlparse(decode_token(bearer[len("Bearer "):]))
    assert (url.scheme, url.netloc) == ("https", "sts.us-west-2.amazonaws.com")


def test_token_is_refreshed_before_14_minutes():
    clock = FakeClock()
    minted = []
    refresher = k8s.EksTokenRefresher(lambda: minted.append(len(minted)) or "token-%d" % len(minted), clock=clock)

    class Config:
        api_key = {}

    config = Config()
    refresher(config)
    assert config.api_key["BearerToken"] == "Bearer token-1"
    clock.advance(14 * 60 - 1)
    refresher(config)
    assert config.api_key["BearerToken"] == "Bearer token-1"
    clock.advance(1)
    refresher(config)
    assert config.api_key["BearerToken"] == "Bearer token-2"
    assert len(minted) == 2


@pytest.mark.parametrize("params, environ, kubeconfig_exists, method", [
    (dict(host="https://k", kubeconfig="/x", cluster_name="demo"), {}, True, "host"),
    (dict(kubeconfig="/x", cluster_name="demo"), {}, False, "kubeconfig"),
    (dict(context="admin", cluster_name="demo"), {}, False, "kubeconfig"),
    (dict(cluster_name="demo"), {"KUBECONFIG": "/y"}, False, "kubeconfig"),
    (dict(cluster_name="demo"), {}, True, "kubeconfig"),
    (dict(cluster_name="demo"), {}, False, "cluster_name"),
])
def test_credential_precedence(monkeypatch, tmp_path, params, environ, kubeconfig_exists, method):
    monkeypatch.setenv("HOME", str(tmp_path))  # k8s.DEFAULT_KUBECONFIG is ~/.kube/config
    if kubeconfig_exists:
        (tmp_path / ".kube").mkdir()
        (tmp_path / ".kube" / "config").write_text("{}")
    assert k8s.auth_method(dict(NO_K8S, **params), environ) == method


def test_no_credentials_at_all_names_cluster_name(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    with pytest.raises(UpgradeError) as raised:
        k8s.auth_method(dict(NO_K8S, cluster_name=None), {})
    assert raised.value.details["parameter"] == "cluster_name"


def write_kubeconfig(tmp_path, server="https://127.0.0.1:6443", token="admin-token"):
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "sandbox",
        "clusters": [{"name": "sandbox", "cluster": {"server": server, "insecure-skip-tls-verify": True}},
                     {"name": "other", "cluster": {"server": "https://10.0.0.1"}}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "sandbox", "context": {"cluster": "sandbox", "user": "admin"}},
                     {"name": "other", "context": {"cluster": "other", "user": "admin"}}],
    }))
    return str(path)


def test_kubeconfig_and_context(tmp_path):
    path = write_kubeconfig(tmp_path)
    client = k8s.k8s_api_client(dict(NO_K8S, kubeconfig=path, cluster_name="demo"), user_agent="eksops-test")
    assert client.configuration.host == "https://127.0.0.1:6443"
    assert client.configuration.get_api_key_with_prefix("BearerToken") == "Bearer admin-token"
    assert client.user_agent == "eksops-test"
    other = k8s.k8s_api_client(dict(NO_K8S, kubeconfig=path, context="other"))
    assert other.configuration.host == "https://10.0.0.1"


def test_api_key_replaces_the_kubeconfig_token(tmp_path):
    client = k8s.k8s_api_client(dict(NO_K8S, kubeconfig=write_kubeconfig(tmp_path), api_key="override"))
    assert client.configuration.auth_settings()["BearerToken"]["value"] == "Bearer override"


def test_tls_options_override_the_kubeconfig(tmp_path):
    path = write_kubeconfig(tmp_path)
    client = k8s.k8s_api_client(dict(NO_K8S, kubeconfig=path, validate_certs=True, ca_cert="/etc/ca.pem"))
    assert client.configuration.verify_ssl is True
    assert client.configuration.ssl_ca_cert == "/etc/ca.pem"


@pytest.mark.parametrize("params, parameter", [
    (dict(kubeconfig="/nonexistent/kubeconfig"), "kubeconfig"),
    (dict(context="missing"), "context"),
])
def test_bad_kubeconfig_names_the_parameter(tmp_path, params, parameter):
    if "context" in params:
        params = dict(params, kubeconfig=write_kubeconfig(tmp_path))
    with pytest.raises(UpgradeError) as raised:
        k8s.k8s_api_client(dict(NO_K8S, **params))
    assert raised.value.code == "InvalidParameter"
    assert raised.value.details["parameter"] == parameter


def test_host_with_api_key():
    client = k8s.k8s_api_client(dict(NO_K8S, host="https://10.1.1.1", api_key="Bearer abc", validate_certs=False))
    assert client.configuration.host == "https://10.1.1.1"
    assert client.configuration.auth_settings()["BearerToken"]["value"] == "Bearer abc"
    assert client.configuration.verify_ssl is False
    # kubernetes clients before 36.0.0 build the header from api_key["authorization"] alone
    # (auth_settings: get_api_key_with_prefix("authorization")): requirements.txt allows them
    assert client.configuration.get_api_key_with_prefix("authorization") == "Bearer abc"


class FakeEks:
    def __init__(self, cluster=None):
        self.cluster = cluster

    def describe_cluster(self, name):
        from botocore.exceptions import ClientError

        if self.cluster is None:
            raise ClientError({"Error": {"Code": "ResourceNotFoundException", "Message": "No cluster found"}},
                              "DescribeCluster")
        return {"cluster": dict(self.cluster, name=name)}


def test_cluster_name_auth_uses_endpoint_ca_and_a_refreshing_token(monkeypatch, tmp_path):
    """DescribeCluster (moto's) gives the endpoint and the CA; no kubeconfig anywhere (HOME is empty)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with mock_aws():
        cluster = aws.aws_client(AWS_PARAMS, "eks").create_cluster(
            name="demo", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": []})["cluster"]
        client = k8s.k8s_api_client(dict(NO_K8S, cluster_name="demo", **AWS_PARAMS))
    config = client.configuration
    assert config.host == cluster["endpoint"]
    with open(config.ssl_ca_cert, "rb") as handle:
        assert handle.read() == base64.b64decode(cluster["certificateAuthority"]["data"])
    bearer = config.auth_settings()["BearerToken"]["value"]
    assert bearer.startswith("Bearer k8s-aws-v1.")
    assert isinstance(config.refresh_api_key_hook, k8s.EksTokenRefresher)


def test_unknown_cluster_names_cluster_name():
    with pytest.raises(UpgradeError) as raised:
        k8s.describe_eks_cluster(FakeEks(None), "nope")
    assert raised.value.code == "ResourceNotFound"
    assert raised.value.details["parameter"] == "cluster_name"
    assert "nope" in raised.value.msg


def test_issue29_item4_an_unknown_cluster_names_the_region_it_was_looked_for_in():
    """A cluster in another region was reported as "not found" without the region that was asked."""
    with mock_aws():
        eks = aws.aws_client(dict(AWS_PARAMS, region="eu-west-1"), "eks")
        with pytest.raises(UpgradeError) as raised:
            k8s.read_eks_cluster(eks, "prod")
    assert "region eu-west-1" in raised.value.msg and raised.value.details["region"] == "eu-west-1"


def test_cluster_without_endpoint_is_unreachable():
    with pytest.raises(UpgradeError) as raised:
        k8s.describe_eks_cluster(FakeEks({"status": "CREATING"}), "demo")
    assert raised.value.code == "ClusterUnreachable"


def api_exception(status, reason, message=None, headers=None):
    exc = ApiException(status=status, reason=reason)
    exc.body = json.dumps({"kind": "Status", "message": message or reason})
    exc.headers = headers or {}
    return exc


@pytest.mark.parametrize("status, code", [
    (401, "AccessDenied"), (403, "AccessDenied"), (404, "ResourceNotFound"), (500, "ApiError"), (429, "ApiError"),
])
def test_api_exceptions_are_translated(status, code):
    with pytest.raises(UpgradeError) as raised:
        with k8s.translate_k8s_errors("list nodes"):
            raise api_exception(status, "Reason", "nodes is forbidden", {"Retry-After": "3"})
    err = raised.value
    assert err.code == code
    assert err.details["status"] == status
    assert err.details["reason"] == "Reason"
    assert err.details["retry_after"] == "3"
    assert "nodes is forbidden" in err.msg and "list nodes" in err.msg


@pytest.mark.parametrize("exc", [
    urllib3.exceptions.MaxRetryError(None, "/api", reason="refused"),
    urllib3.exceptions.ReadTimeoutError(None, "/api", "timed out"),
    ConnectionRefusedError(111, "refused"),
])
def test_connection_errors_are_cluster_unreachable(exc):
    with pytest.raises(UpgradeError) as raised:
        with k8s.translate_k8s_errors():
            raise exc
    assert raised.value.code == "ClusterUnreachable"


def test_unrelated_errors_pass_through():
    with pytest.raises(ValueError):
        with k8s.translate_k8s_errors():
            raise ValueError("x")


@pytest.mark.parametrize("module, imports_kubernetes", [
    ("launch_template_version", False), ("nodegroup_lease", False), ("eks_nodegroup_update", True),
    ("node_drain", True)])
def test_only_the_modules_that_reach_kubernetes_import_its_client(module, imports_kubernetes):
    """Importing the client costs about 0.6 s of CPU per module run: the modules that never reach Kubernetes
    (uses_k8s false) leave it alone (k8s.kubernetes_import_error); node_drain shows the check sees an import."""
    code = ("import sys; import ansible_collections.eksops.nodegroup.plugins.modules.%s; "
            "print('kubernetes' in sys.modules)" % module)
    # A fresh interpreter, with this one's path (pytest adds build/collections to it).
    answer = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert answer.stdout.strip() == str(imports_kubernetes)


def test_api_exception_matches_nothing_until_the_client_is_loaded(monkeypatch):
    """kube_watch.api_exception: no ApiException can have been raised without the client loaded."""
    assert kube_watch.api_exception() is ApiException
    monkeypatch.delitem(sys.modules, "kubernetes.client.exceptions")
    assert kube_watch.api_exception() == ()
    with pytest.raises(ValueError):
        try:
            raise ValueError("not the client's")
        except kube_watch.api_exception():
            pytest.fail("() caught an exception")
