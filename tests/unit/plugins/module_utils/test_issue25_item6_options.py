# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 25 item 6: the connection options as kubernetes.core and amazon.aws spell them, and what each does.

The expected names, aliases, types and environment variables are kubernetes.core's (plugins/module_utils/
args_common.py AUTH_ARG_SPEC and AUTH_PROXY_HEADERS_SPEC; plugins/module_utils/k8s/client.py _create_auth_spec reads
K8S_AUTH_<option> then K8S_AUTH_<kubernetes client name>, _create_headers the impersonation ones) and amazon.aws's
(plugins/module_utils/modules.py _aws_common_argument_spec)."""

from __future__ import annotations

import http.server
import json
import logging
import threading

import boto3
import kubernetes.config
import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import session as aws
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube import client as k8s
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clients import Clients
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.cluster_proof import prove_cluster
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule, merged_argument_spec

from ..module_args import patch_module_args
from .test_k8s import AWS_PARAMS, NO_K8S, write_kubeconfig

# option: (type, aliases, environment variables in the order kubernetes.core reads them)
KUBERNETES_CORE_OPTIONS = {
    "kubeconfig": ("path", [], ["K8S_AUTH_KUBECONFIG"]),
    "context": ("str", ["kube_context"], ["K8S_AUTH_CONTEXT"]),
    "host": ("str", [], ["K8S_AUTH_HOST"]),
    "api_key": ("str", [], ["K8S_AUTH_API_KEY"]),
    "validate_certs": ("bool", ["verify_ssl"], ["K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"]),
    "ca_cert": ("path", ["ssl_ca_cert"], ["K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"]),
    "client_cert": ("path", ["cert_file"], ["K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"]),
    "client_key": ("path", ["key_file"], ["K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"]),
    "proxy": ("str", [], ["K8S_AUTH_PROXY"]),
    "no_proxy": ("str", [], ["K8S_AUTH_NO_PROXY"]),
    "proxy_headers": ("dict", [], []),
    "persist_config": ("bool", [], ["K8S_AUTH_PERSIST_CONFIG"]),
    "impersonate_user": ("str", [], ["K8S_AUTH_IMPERSONATE_USER"]),
    "impersonate_groups": ("list", [], ["K8S_AUTH_IMPERSONATE_GROUPS"]),
}
PROXY_HEADERS = {"proxy_basic_auth": "K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH",
                 "basic_auth": "K8S_AUTH_PROXY_HEADERS_BASIC_AUTH",
                 "user_agent": "K8S_AUTH_PROXY_HEADERS_USER_AGENT"}


def test_issue25_item6_kubernetes_options_have_kubernetes_core_names_aliases_types_and_variables():
    # k8s_requests_per_second aside: the collection's own (issue 28 item 4), kubernetes.core has none.
    spec = dict((name, value) for name, value in k8s.K8S_ARGUMENT_SPEC.items() if name != "k8s_requests_per_second")
    assert set(spec) == set(KUBERNETES_CORE_OPTIONS)  # username/password (HTTP basic auth) aside: EKS has none
    for name, (option_type, aliases, variables) in KUBERNETES_CORE_OPTIONS.items():
        assert spec[name].get("type", "str") == option_type, name
        assert spec[name].get("aliases", []) == aliases, name
        assert list(spec[name].get("fallback", (None, []))[1]) == variables, name
    assert spec["impersonate_groups"]["elements"] == "str"
    assert {name: sub["fallback"][1] for name, sub in spec["proxy_headers"]["options"].items()} == {
        name: [variable] for name, variable in PROXY_HEADERS.items()}
    assert spec["api_key"]["no_log"] and spec["proxy_headers"]["options"]["proxy_basic_auth"]["no_log"]


def _validated(spec, params):
    result = ArgumentSpecValidator(spec).validate(params)
    assert not result.error_messages, result.error_messages
    return result.validated_parameters


def test_issue25_item6_k8s_auth_variables_fill_the_options(monkeypatch):
    """As AWX's Kubernetes credentials inject them: K8S_AUTH_* only, no option in the task."""
    for variable, value in {"K8S_AUTH_CERT_FILE": "/creds/client.crt", "K8S_AUTH_KEY_FILE": "/creds/client.key",
                            "K8S_AUTH_PROXY": "http://proxy:3128", "K8S_AUTH_NO_PROXY": "10.0.0.0/8",
                            "K8S_AUTH_PROXY_HEADERS_USER_AGENT": "awx/24", "K8S_AUTH_PERSIST_CONFIG": "true",
                            "K8S_AUTH_IMPERSONATE_USER": "upgrader", "K8S_AUTH_IMPERSONATE_GROUPS": "ops,audit",
                            "K8S_AUTH_VERIFY_SSL": "no"}.items():
        monkeypatch.setenv(variable, value)
    params = _validated(merged_argument_spec({}, uses_aws=True, uses_k8s=True), {})
    assert (params["client_cert"], params["client_key"], params["proxy"], params["no_proxy"]) == (
        "/creds/client.crt", "/creds/client.key", "http://proxy:3128", "10.0.0.0/8")
    assert params["proxy_headers"] == dict(proxy_basic_auth=None, basic_auth=None, user_agent="awx/24")
    assert (params["persist_config"], params["impersonate_user"], params["impersonate_groups"]) == (
        True, "upgrader", ["ops", "audit"])
    # A Kubernetes variable turns off the Kubernetes API server's verification, never the AWS endpoints'.
    assert (params["validate_certs"], params["aws_validate_certs"]) == (False, True)


def test_issue25_item6_configuration_has_the_connection_options():
    configuration = k8s.k8s_configuration(dict(
        NO_K8S, host="https://10.1.1.1", client_cert="/creds/client.crt", client_key="/creds/client.key",
        ca_cert="/creds/ca.crt", proxy="http://proxy:3128", no_proxy="localhost,10.0.0.0/8",
        proxy_headers=dict(proxy_basic_auth="user:secret", basic_auth=None, user_agent="awx/24")))
    assert (configuration.cert_file, configuration.key_file, configuration.ssl_ca_cert) == (
        "/creds/client.crt", "/creds/client.key", "/creds/ca.crt")
    assert (configuration.proxy, configuration.no_proxy) == ("http://proxy:3128", "localhost,10.0.0.0/8")
    assert configuration.proxy_headers == {"proxy-authorization": "Basic dXNlcjpzZWNyZXQ=", "user-agent": "awx/24"}


def test_issue25_item6_host_with_a_client_certificate_mints_no_eks_token():
    """kubernetes.core: host with client_cert and client_key is enough to authenticate."""
    params = dict(NO_K8S, host="https://10.1.1.1", client_cert="/c.crt", client_key="/c.key", cluster_name="demo",
                  **AWS_PARAMS)
    configuration = k8s.k8s_configuration(params)
    assert "BearerToken" not in configuration.auth_settings() and configuration.refresh_api_key_hook is None


def test_issue25_item6_persist_config_reaches_the_kubeconfig_loader(tmp_path, monkeypatch):
    seen = []
    loader = kubernetes.config.load_kube_config
    monkeypatch.setattr(kubernetes.config, "load_kube_config",
                        lambda **kwargs: seen.append(kwargs["persist_config"]) or loader(**kwargs))
    path = write_kubeconfig(tmp_path)
    k8s.k8s_configuration(dict(NO_K8S, kubeconfig=path, persist_config=True))
    k8s.k8s_configuration(dict(NO_K8S, kubeconfig=path))
    assert seen == [True, False]


class _HeadersSeen(http.server.BaseHTTPRequestHandler):
    seen = []

    def do_GET(self):  # noqa: N802 - http.server's name
        self.seen.append(self.headers)
        body = json.dumps(dict(major="1", minor="30", gitVersion="v1.30.0", gitCommit="0", gitTreeState="clean",
                               buildDate="2024-04-17T00:00:00Z", goVersion="go1.22", compiler="gc",
                               platform="linux/amd64")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        del args


def test_issue25_item6_impersonation_headers_are_sent_one_line_per_group():
    """The API server reads each Impersonate-Group line as one group (Kubernetes docs, "User impersonation")."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _HeadersSeen)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = k8s.k8s_api_client(dict(NO_K8S, host="http://127.0.0.1:%d" % server.server_port, api_key="t",
                                         impersonate_user="upgrader", impersonate_groups=["ops", "audit"]))
        k8s.version_api(client).get_code()
    finally:
        server.shutdown()
        server.server_close()
    headers = _HeadersSeen.seen[-1]
    assert headers.get_all("Impersonate-User") == ["upgrader"]
    assert headers.get_all("Impersonate-Group") == ["ops", "audit"]
    assert headers["Authorization"] == "Bearer t"


def test_issue25_item6_validate_certs_is_amazon_aws_in_a_module_that_talks_to_aws_only(monkeypatch):
    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)
    spec = merged_argument_spec({}, uses_aws=True)
    assert spec["validate_certs"] == dict(type="bool", default=True, aliases=["aws_validate_certs"])
    assert "aws_validate_certs" not in spec
    assert aws._verify(_validated(spec, dict(validate_certs=False))) is False
    assert aws._verify(_validated(spec, dict(aws_validate_certs=False))) is False
    assert aws._verify(_validated(spec, {})) is None  # botocore's own: verified


def test_issue25_item6_validate_certs_beside_the_kubernetes_options_is_the_api_servers_only(monkeypatch):
    """The collision: validate_certs stays kubernetes.core's where a module talks to Kubernetes, and
    aws_validate_certs is amazon.aws's there; neither changes the other side."""
    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)
    spec = merged_argument_spec({}, uses_aws=True, uses_k8s=True)
    assert spec["validate_certs"]["aliases"] == ["verify_ssl"] and "default" not in spec["validate_certs"]
    assert spec["aws_validate_certs"] == dict(type="bool", default=True)
    params = _validated(spec, dict(validate_certs=False, host="https://10.1.1.1", api_key="t"))
    assert aws._verify(params) is None
    assert k8s.k8s_configuration(params).verify_ssl is False
    params = _validated(spec, dict(aws_validate_certs=False, host="https://10.1.1.1", api_key="t"))
    assert aws._verify(params) is False
    assert k8s.k8s_configuration(params).verify_ssl is True


def test_issue25_item6_debug_botocore_endpoint_logs_returns_the_calls_made(monkeypatch):
    monkeypatch.setenv("ANSIBLE_DEBUG_BOTOCORE_LOGS", "true")
    params = _validated(merged_argument_spec({}, uses_aws=True),
                        dict(region="us-west-2", access_key="AK", secret_key="SK"))
    assert params["debug_botocore_endpoint_logs"] is True
    endpoint_logger = logging.getLogger("botocore.endpoint")
    level = endpoint_logger.level
    with mock_aws():
        clients = Clients(params, "eksops-test", proof=prove_cluster)
        try:
            clients.aws("autoscaling").describe_auto_scaling_groups()
            clients.aws("autoscaling").describe_auto_scaling_groups()
            clients.aws("ec2").describe_instances()
            # A client built elsewhere in the run (the EKS token's DescribeCluster) counts too.
            with pytest.raises(Exception):
                boto3.client("eks", region_name="us-west-2").describe_cluster(name="missing")
        finally:  # a module's process ends with its run; this one goes on with other tests
            endpoint_logger.removeHandler(clients.resource_actions)
            endpoint_logger.setLevel(level)
    result = clients.with_resource_actions(dict(changed=False))
    assert result["resource_actions"] == ["autoscaling:DescribeAutoScalingGroups", "ec2:DescribeInstances",
                                          "eks:DescribeCluster"]
    quiet = Clients(dict(params, debug_botocore_endpoint_logs=False), "eksops-test", proof=prove_cluster)
    assert quiet.with_resource_actions(dict(changed=False)) == dict(changed=False)


def _module_result(args, work, capsys):
    endpoint_logger = logging.getLogger("botocore.endpoint")
    level = endpoint_logger.level
    with patch_module_args(args), mock_aws():
        module = EksopsModule(dict(cluster_name=dict(type="str")), uses_aws=True)
        try:
            with pytest.raises(SystemExit):
                module.run(lambda: work(module))
        finally:  # as in the test above
            endpoint_logger.removeHandler(module.clients.resource_actions)
            endpoint_logger.setLevel(level)
    return json.loads(capsys.readouterr().out)


def test_issue25_item6_a_module_returns_resource_actions_on_success_and_failure(capsys):
    args = dict(region="us-west-2", access_key="AK", secret_key="SK", debug_botocore_endpoint_logs=True)

    def described(module):
        module.aws("autoscaling").describe_auto_scaling_groups()
        return dict(changed=False)

    def failed(module):
        module.aws("eks").list_clusters()
        raise UpgradeError("ApiError", "failed on purpose")

    assert _module_result(args, described, capsys)["resource_actions"] == ["autoscaling:DescribeAutoScalingGroups"]
    result = _module_result(args, failed, capsys)
    assert result["failed"] and result["resource_actions"] == ["eks:ListClusters"]
    assert "resource_actions" not in _module_result(dict(args, debug_botocore_endpoint_logs=False), described, capsys)
