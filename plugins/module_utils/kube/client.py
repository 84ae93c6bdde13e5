# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way the collection reaches Kubernetes: option spec, ApiClient factory (incl. EKS tokens), errors."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
import atexit
import base64
import contextlib
import os
import shutil
import socket
import tempfile
import threading
import time

from ansible.module_utils.basic import env_fallback

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import (
    USER_AGENT_EXTRA,
    aws_client,
    eks_token_sts_client,
    translate_aws_errors,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import eks as eks_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    ACCESS_DENIED,
    API_ERROR,
    CLUSTER_UNREACHABLE,
    NOT_FOUND,
    UpgradeError,
    invalid_parameter,
    not_found,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import api_exception, status_body
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.request_budget import (
    K8S_RATE_ENV, K8S_REQUESTS_PER_SECOND, pace_k8s_client, requests_per_second)

if TYPE_CHECKING:  # for the annotations only: the client is imported at first use (kubernetes_import_error)
    from kubernetes.client import ApiClient, AppsV1Api, Configuration, CoreV1Api, PolicyV1Api, VersionApi
    from kubernetes.client.exceptions import ApiException


def kubernetes_import_error() -> ImportError | None:
    """Why the kubernetes client cannot be imported, or None; imports it.

    The client is imported here, at first use, not with this file: it costs about 0.6 s of CPU (most of a module
    run's imports), which the modules that never reach Kubernetes (uses_k8s false: launch_template_version,
    nodegroup_lease, eks_nodegroup_update) do not pay."""
    try:
        import kubernetes.client  # pylint: disable=import-outside-toplevel,unused-import
        import kubernetes.config  # pylint: disable=import-outside-toplevel,unused-import
    except ImportError as exc:
        return exc
    return None


def _client() -> Any:
    """The kubernetes.client package (see kubernetes_import_error)."""
    import kubernetes.client  # pylint: disable=import-outside-toplevel
    return kubernetes.client


try:
    import urllib3.exceptions as urllib3_exceptions

    _URLLIB3_UNREACHABLE = (
        urllib3_exceptions.MaxRetryError,
        urllib3_exceptions.NewConnectionError,
        urllib3_exceptions.ProtocolError,
        urllib3_exceptions.TimeoutError,
        urllib3_exceptions.SSLError,
    )
except ImportError:  # pragma: no cover - urllib3 ships with the kubernetes client
    _URLLIB3_UNREACHABLE = ()

_UNREACHABLE_ERRORS = _URLLIB3_UNREACHABLE + (ConnectionError, socket.timeout)

# kubernetes.core's connection options, with its names, aliases and types (plugins/module_utils/args_common.py,
# AUTH_ARG_SPEC) and the environment variables it reads for them (plugins/module_utils/k8s/client.py,
# _create_auth_spec: K8S_AUTH_<option>, then K8S_AUTH_<kubernetes client name>; _create_headers for the
# impersonation headers, a comma-separated list). Its username/password (HTTP basic auth, which EKS does not
# offer) are left out.
K8S_PROXY_HEADERS_SPEC = dict(
    proxy_basic_auth=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH"])),
    basic_auth=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_PROXY_HEADERS_BASIC_AUTH"])),
    user_agent=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_PROXY_HEADERS_USER_AGENT"])),
)

K8S_ARGUMENT_SPEC = dict(
    kubeconfig=dict(type="path", fallback=(env_fallback, ["K8S_AUTH_KUBECONFIG"])),
    context=dict(type="str", aliases=["kube_context"], fallback=(env_fallback, ["K8S_AUTH_CONTEXT"])),
    host=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_HOST"])),
    api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_API_KEY"])),
    validate_certs=dict(type="bool", aliases=["verify_ssl"],
                        fallback=(env_fallback, ["K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"])),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"], fallback=(env_fallback, ["K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"])),
    client_cert=dict(type="path", aliases=["cert_file"], fallback=(env_fallback, ["K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"])),
    client_key=dict(type="path", aliases=["key_file"], no_log=False,
                    fallback=(env_fallback, ["K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"])),
    proxy=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_PROXY"])),
    no_proxy=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_NO_PROXY"])),
    # apply_defaults: the suboptions' K8S_AUTH_PROXY_HEADERS_* fallbacks apply when the option is not given.
    proxy_headers=dict(type="dict", options=K8S_PROXY_HEADERS_SPEC, apply_defaults=True),
    persist_config=dict(type="bool", fallback=(env_fallback, ["K8S_AUTH_PERSIST_CONFIG"])),
    impersonate_user=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_IMPERSONATE_USER"])),
    impersonate_groups=dict(type="list", elements="str", fallback=(env_fallback, ["K8S_AUTH_IMPERSONATE_GROUPS"])),
    # Issue 28 item 4: the requests per second of every process of the host to one API server (0: no bound).
    k8s_requests_per_second=dict(type="float", default=K8S_REQUESTS_PER_SECOND, fallback=(env_fallback, [K8S_RATE_ENV])),
)

EKS_TOKEN_PREFIX = "k8s-aws-v1."
EKS_CLUSTER_HEADER = "x-k8s-aws-id"
# The presigned URL is valid for 60 s at the authenticator, which then accepts the token for 15 minutes.
EKS_TOKEN_URL_EXPIRY_SECONDS = 60
EKS_TOKEN_REFRESH_AFTER_SECONDS = 14 * 60
DEFAULT_KUBECONFIG = os.path.join("~", ".kube", "config")
# The api_key entries the kubernetes client reads the "Bearer <token>" header from: "BearerToken" since 36.0.0,
# "authorization" before (kubernetes-client/python#2595). Both are set, so every client from 28.1.0 sends it.
BEARER_KEYS = ("BearerToken", "authorization")

_TEMP_DIRS = []


def _remove_temp_dirs() -> None:
    for path in _TEMP_DIRS:
        shutil.rmtree(path, ignore_errors=True)


atexit.register(_remove_temp_dirs)


def _require_kubernetes() -> None:
    error = kubernetes_import_error()
    if error is not None:
        raise UpgradeError(API_ERROR, "the kubernetes Python client is required on the host that runs this module",
                           import_error=str(error))


def mint_eks_token(sts_client: Any, cluster_name: str) -> str:
    """An EKS bearer token: a presigned STS GetCallerIdentity URL bound to ``cluster_name``.

    The authenticator on the cluster replays the URL; the signed ``x-k8s-aws-id`` header ties the token to
    one cluster.
    """

    def add_cluster_header(request: Any, **_kwargs: Any) -> None:
        request.headers[EKS_CLUSTER_HEADER] = cluster_name

    event_name = "before-sign.sts.GetCallerIdentity"
    sts_client.meta.events.register(event_name, add_cluster_header)
    try:
        with translate_aws_errors("mint an EKS token for cluster %s" % cluster_name):
            url = sts_client.generate_presigned_url(
                "get_caller_identity", Params={}, ExpiresIn=EKS_TOKEN_URL_EXPIRY_SECONDS, HttpMethod="GET")
    finally:
        sts_client.meta.events.unregister(event_name, add_cluster_header)
    encoded = base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("=")
    return EKS_TOKEN_PREFIX + encoded


class EksTokenRefresher:
    """``Configuration.refresh_api_key_hook`` that re-mints the EKS token before it expires (SPEC P5)."""

    def __init__(self, mint: Callable[[], str], refresh_after: float = EKS_TOKEN_REFRESH_AFTER_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self._mint = mint
        self._refresh_after = refresh_after
        self._clock = clock
        self._minted_at = None
        # The drain engine shares one ApiClient between threads.
        self._lock = threading.Lock()
        self.token = None

    def current_token(self) -> str:
        with self._lock:
            now = self._clock()
            if self.token is None or now - self._minted_at >= self._refresh_after:
                self.token = self._mint()
                self._minted_at = now
            return self.token

    def __call__(self, configuration: Configuration) -> None:
        configuration.api_key.update(bearer_api_key(self.current_token()))


def read_eks_cluster(eks_client: Any, cluster_name: str) -> dict[str, Any]:
    """DescribeCluster's answer for an EKS cluster; errors name ``cluster_name``."""
    try:
        return eks_api.describe_cluster(eks_client, cluster_name)
    except UpgradeError as err:
        if err.code == NOT_FOUND:
            # Issue 29 item 4: a cluster in another region than the one asked is the usual cause; say which.
            region = getattr(getattr(eks_client, "meta", None), "region_name", None)
            raise not_found("cluster_name", "EKS cluster %r (cluster_name) was not found in region %s (region / "
                            "aws_region, AWS_REGION): %s" % (cluster_name, region, err.msg), region=region,
                            **err.details)
        raise


def describe_eks_cluster(eks_client: Any, cluster_name: str) -> tuple[str, bytes | None]:
    """(endpoint, ca_pem_bytes or None) of an EKS cluster; errors name ``cluster_name``."""
    cluster = read_eks_cluster(eks_client, cluster_name)
    endpoint = cluster.get("endpoint")
    if not endpoint:
        raise UpgradeError(CLUSTER_UNREACHABLE, "EKS cluster %r has no API endpoint yet (status %s)"
                           % (cluster_name, cluster.get("status")), parameter="cluster_name")
    ca_data = (cluster.get("certificateAuthority") or {}).get("data")
    ca_pem = base64.b64decode(ca_data) if ca_data else None
    return endpoint, ca_pem


def _write_private_file(name: str, content: bytes) -> str:
    directory = tempfile.mkdtemp(prefix="eksops-nodegroup-")
    _TEMP_DIRS.append(directory)
    path = os.path.join(directory, name)
    with open(path, "wb") as handle:
        handle.write(content)
    return path


def kubeconfig_in_use(params: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> bool:
    """Whether the kubeconfig way applies: explicit kubeconfig/context, KUBECONFIG, or ~/.kube/config."""
    environ = os.environ if environ is None else environ
    if params.get("kubeconfig") or params.get("context") or environ.get("KUBECONFIG"):
        return True
    return os.path.exists(os.path.expanduser(DEFAULT_KUBECONFIG))


def auth_method(params: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> str:
    """Which credentials k8s_api_client uses: "host", "kubeconfig" or "cluster_name" (precedence order)."""
    if params.get("host"):
        return "host"
    if kubeconfig_in_use(params, environ):
        return "kubeconfig"
    if params.get("cluster_name"):
        return "cluster_name"
    raise invalid_parameter(
        "cluster_name",
        "No Kubernetes credentials: give cluster_name (EKS token from AWS credentials), kubeconfig/context, "
        "or host/api_key")


def _eks_token_refresher(aws_params: Mapping[str, Any], cluster_name: str) -> EksTokenRefresher:
    # Always the regional STS endpoint (or one set for STS alone), never endpoint_url: see eks_token_sts_client.
    sts = eks_token_sts_client(aws_params)
    return EksTokenRefresher(lambda: mint_eks_token(sts, cluster_name))


def bearer_api_key(token: str) -> dict[str, str]:
    """A Configuration's api_key that sends ``Authorization: Bearer <token>``."""
    return dict.fromkeys(BEARER_KEYS, "Bearer " + token)


def _bearer(configuration: Configuration, token: str) -> None:
    """Authenticate with this bearer token only (replacing, e.g., a kubeconfig user's token and its refresh)."""
    if token.lower().startswith("bearer "):
        token = token[len("bearer "):]
    configuration.refresh_api_key_hook = None
    configuration.api_key = bearer_api_key(token)
    configuration.api_key_prefix = {}


# kubernetes.core's options set on the Configuration, with the kubernetes client's attribute names (AUTH_ARG_MAP).
_CONFIGURATION_ATTRIBUTES = (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file"),
                             ("proxy", "proxy"), ("no_proxy", "no_proxy"))


def _apply_connection_options(configuration: Configuration, params: Mapping[str, Any]) -> None:
    """kubernetes.core's TLS, client certificate and proxy options over whichever credentials were chosen (as its
    client.py _create_configuration sets them over a loaded kubeconfig)."""
    for option, attribute in _CONFIGURATION_ATTRIBUTES:
        if params.get(option):
            setattr(configuration, attribute, params[option])
    if params.get("validate_certs") is not None:
        configuration.verify_ssl = params["validate_certs"]
    proxy_headers = dict((name, value) for name, value in (params.get("proxy_headers") or {}).items()
                         if value is not None)
    if proxy_headers:
        import urllib3.util  # pylint: disable=import-outside-toplevel
        configuration.proxy_headers = urllib3.util.make_headers(**proxy_headers)


class _RepeatedHeaderName(str):
    """A header name that is a key of its own in the ApiClient's default_headers, so that one header is sent once
    per value (``Impersonate-Group: a``, ``Impersonate-Group: b``): the API server reads each line as one group
    (kubernetes.core's client.py does the same with its unique_string)."""

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def lower(self) -> str:
        return self


def _set_impersonation(client: ApiClient, params: Mapping[str, Any]) -> None:
    """The Impersonate-User and Impersonate-Group headers of kubernetes.core's impersonate_user and
    impersonate_groups (Kubernetes docs, "User impersonation"), on every request of the client."""
    if params.get("impersonate_user"):
        client.set_default_header("Impersonate-User", params["impersonate_user"])
    for group in params.get("impersonate_groups") or []:
        client.set_default_header(_RepeatedHeaderName("Impersonate-Group"), group)


def _use_eks_token(configuration: Configuration, aws_params: Mapping[str, Any], cluster_name: str) -> None:
    refresher = _eks_token_refresher(aws_params, cluster_name)
    _bearer(configuration, refresher.current_token())
    configuration.refresh_api_key_hook = refresher


def _configuration_from_host(params: Mapping[str, Any], aws_params: Mapping[str, Any]) -> Configuration:
    configuration = _client().Configuration(host=params["host"])
    if params.get("api_key"):
        _bearer(configuration, params["api_key"])
    elif params.get("cluster_name") and not params.get("client_cert"):
        # A client certificate authenticates on its own (kubernetes.core: host with client_cert and client_key).
        _use_eks_token(configuration, aws_params, params["cluster_name"])
    return configuration


def _configuration_from_kubeconfig(params: Mapping[str, Any]) -> Configuration:
    from kubernetes.config import load_kube_config  # pylint: disable=import-outside-toplevel
    from kubernetes.config.config_exception import ConfigException  # pylint: disable=import-outside-toplevel

    configuration = _client().Configuration()
    try:
        load_kube_config(config_file=params.get("kubeconfig"), context=params.get("context"),
                         client_configuration=configuration,
                         persist_config=bool(params.get("persist_config")))
    except (ConfigException, OSError) as exc:
        parameter = "context" if params.get("context") and "context" in str(exc).lower() else "kubeconfig"
        raise invalid_parameter(parameter, "Cannot load kubeconfig %s: %s"
                                % (params.get("kubeconfig") or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG,
                                   exc))
    if params.get("api_key"):
        _bearer(configuration, params["api_key"])
    return configuration


def _configuration_from_cluster_name(params: Mapping[str, Any], aws_params: Mapping[str, Any]) -> Configuration:
    cluster_name = params["cluster_name"]
    endpoint, ca_pem = describe_eks_cluster(aws_client(aws_params, "eks"), cluster_name)
    configuration = _client().Configuration(host=endpoint)
    if ca_pem:
        configuration.ssl_ca_cert = _write_private_file("ca.crt", ca_pem)
    _use_eks_token(configuration, aws_params, cluster_name)
    return configuration


def k8s_configuration(params: Mapping[str, Any], aws_params: Mapping[str, Any] | None = None) -> Configuration:
    """The kubernetes Configuration for the module's options (see k8s_api_client for the precedence)."""
    _require_kubernetes()
    aws_params = params if aws_params is None else aws_params
    method = auth_method(params)
    if method == "host":
        configuration = _configuration_from_host(params, aws_params)
    elif method == "kubeconfig":
        configuration = _configuration_from_kubeconfig(params)
    else:
        configuration = _configuration_from_cluster_name(params, aws_params)
    _apply_connection_options(configuration, params)
    return configuration


def k8s_api_client(params: Mapping[str, Any], aws_params: Mapping[str, Any] | None = None, user_agent: str | None = None) -> ApiClient:
    """A kubernetes ApiClient.

    Precedence: ``host`` (+ ``api_key``, a client certificate, or an EKS token for ``cluster_name``) > kubeconfig (``kubeconfig``/
    ``context`` options, else ``KUBECONFIG``, else ``~/.kube/config``) > ``cluster_name`` (DescribeCluster for
    endpoint and CA, and an EKS token refreshed before it expires).
    """
    rate = requests_per_second("k8s_requests_per_second", params.get("k8s_requests_per_second"))
    client = _client().ApiClient(configuration=k8s_configuration(params, aws_params))
    client.user_agent = user_agent or USER_AGENT_EXTRA
    _set_impersonation(client, params)
    return pace_k8s_client(client, rate)


# The typed API objects over one ApiClient: built here only (a test scans the code for others).
def core_v1(api_client: ApiClient) -> CoreV1Api:
    return _client().CoreV1Api(api_client)


def apps_v1(api_client: ApiClient) -> AppsV1Api:
    return _client().AppsV1Api(api_client)


def policy_v1(api_client: ApiClient) -> PolicyV1Api:
    return _client().PolicyV1Api(api_client)


def version_api(api_client: ApiClient) -> VersionApi:
    return _client().VersionApi(api_client)


def _api_exception_message(exc: ApiException) -> str:
    return status_body(getattr(exc, "body", None), text_as_message=False).get("message") or exc.reason or str(exc)


def _api_exception_to_upgrade_error(exc: ApiException, operation_hint: str) -> UpgradeError:
    message = _api_exception_message(exc)
    details = dict(status=exc.status, reason=exc.reason, operation=operation_hint)
    retry_after = (exc.headers or {}).get("Retry-After") if getattr(exc, "headers", None) else None
    if retry_after:
        details["retry_after"] = retry_after
    if exc.status in (401, 403):
        code = ACCESS_DENIED
    elif exc.status == 404:
        code = NOT_FOUND
    elif exc.status == 0 or exc.status is None:
        code = CLUSTER_UNREACHABLE
    else:
        code = API_ERROR
    return UpgradeError(code, "%s failed: %s %s: %s" % (operation_hint, exc.status, exc.reason, message), **details)


@contextlib.contextmanager
def translate_k8s_errors(operation_hint: str = "Kubernetes API call") -> Iterator[None]:
    """Turn kubernetes/urllib3 errors raised inside the block into UpgradeError.

    401/403 -> AccessDenied, connection errors and timeouts -> ClusterUnreachable; the HTTP status and reason
    stay in ``details``.
    """
    try:
        yield
    except UpgradeError:
        raise
    except Exception as exc:  # pylint: disable=broad-except
        if isinstance(exc, api_exception()):
            raise _api_exception_to_upgrade_error(exc, operation_hint)
        if isinstance(exc, _UNREACHABLE_ERRORS):
            raise UpgradeError(CLUSTER_UNREACHABLE, "%s failed: cannot reach the Kubernetes API: %s"
                               % (operation_hint, exc), operation=operation_hint, error=type(exc).__name__)
        raise
