# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way the collection reaches AWS: option spec, session/client factory, error translation."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
import contextlib
import functools
import inspect
import itertools
import os

from ansible.module_utils.basic import env_fallback

from ansible_collections.eksops.nodegroup.plugins.module_utils.host import job_guard
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.request_budget import (
    AWS_REQUESTS_PER_SECOND, AWS_RATE_ENV, pace_aws_client, requests_per_second)
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    ACCESS_DENIED,
    API_ERROR,
    AWS_UNREACHABLE,
    INSTANCE_LIMIT_EXCEEDED,
    INSUFFICIENT_FREE_ADDRESSES,
    INVALID_PARAMETER,
    NOT_FOUND,
    UpgradeError,
    invalid_parameter,
)

try:
    import boto3
    import botocore.loaders
    import botocore.session
    from botocore.config import Config as BotoConfig
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectionError as BotoConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
        ProfileNotFound,
        SSLError as BotoSSLError,
    )

    HAS_BOTO3 = True
    BOTO3_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - exercised only without boto3
    HAS_BOTO3 = False
    BOTO3_IMPORT_ERROR = exc

# galaxy.yml's version, copied: a module runs on the managed host from an AnsiballZ payload that carries its
# module_utils but no galaxy.yml or MANIFEST.json to read it from. test_aws checks that the two are equal.
COLLECTION_VERSION = "0.1.0"
USER_AGENT_EXTRA = "eksops.nodegroup/%s" % COLLECTION_VERSION
# botocore "standard" retry mode: jittered exponential backoff on throttling and transient errors; 10 attempts
# in total (the first call and 9 retries). aws_config, AWS_RETRY_MODE / AWS_MAX_ATTEMPTS or the profile override them.
RETRY_MODE = "standard"
RETRY_MAX_ATTEMPTS = 10
# botocore's service-specific endpoint variable for STS (AWS_ENDPOINT_URL_<SERVICE ID>).
STS_ENDPOINT_ENV = "AWS_ENDPOINT_URL_STS"

# The AWS endpoints' TLS verification: validate_certs as amazon.aws names it, aws_validate_certs beside the Kubernetes
# options (see AWS_ARGUMENT_SPEC).
AWS_VALIDATE_CERTS = "aws_validate_certs"
AWS_VALIDATE_CERTS_SPEC = dict(type="bool", default=True)

AWS_ARGUMENT_SPEC = dict(
    region=dict(
        type="str",
        aliases=["aws_region", "ec2_region"],
        fallback=(env_fallback, ["AWS_REGION", "AWS_DEFAULT_REGION", "EC2_REGION"]),
    ),
    profile=dict(
        type="str",
        aliases=["aws_profile"],
        fallback=(env_fallback, ["AWS_PROFILE", "AWS_DEFAULT_PROFILE"]),
    ),
    access_key=dict(
        type="str",
        aliases=["aws_access_key_id", "aws_access_key", "ec2_access_key"],
        fallback=(env_fallback, ["AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY", "EC2_ACCESS_KEY"]),
        no_log=False,
    ),
    secret_key=dict(
        type="str",
        aliases=["aws_secret_access_key", "aws_secret_key", "ec2_secret_key"],
        fallback=(env_fallback, ["AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY", "EC2_SECRET_KEY"]),
        no_log=True,
    ),
    session_token=dict(
        type="str",
        aliases=["aws_session_token", "security_token", "aws_security_token"],
        fallback=(env_fallback, ["AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "EC2_SECURITY_TOKEN"]),
        no_log=True,
    ),
    # One URL for every AWS API call of the module (a single-endpoint test stack). Not AWS_ENDPOINT_URL: botocore
    # reads that one itself, below the service-specific AWS_ENDPOINT_URL_<SERVICE> (see aws_client).
    endpoint_url=dict(
        type="str",
        aliases=["aws_endpoint_url", "ec2_url"],
        fallback=(env_fallback, ["AWS_URL", "EC2_URL"]),
    ),
    # amazon.aws's name (module_utils/modules.py). In a module that also talks to Kubernetes, validate_certs is the
    # Kubernetes API server's (kubernetes.core) and this one is aws_validate_certs (module.merged_argument_spec).
    validate_certs=dict(AWS_VALIDATE_CERTS_SPEC, aliases=[AWS_VALIDATE_CERTS]),
    aws_ca_bundle=dict(type="path", fallback=(env_fallback, ["AWS_CA_BUNDLE"])),
    aws_config=dict(type="dict"),
    # amazon.aws: the AWS API calls the module made, returned as resource_actions ("service:Operation").
    debug_botocore_endpoint_logs=dict(type="bool", default=False, fallback=(env_fallback, ["ANSIBLE_DEBUG_BOTOCORE_LOGS"])),
    # Issue 28 item 4: the requests per second of every process of the host to one region and endpoint (0: no bound).
    aws_requests_per_second=dict(type="float", default=AWS_REQUESTS_PER_SECOND, fallback=(env_fallback, [AWS_RATE_ENV])),
)

AWS_OPTION_NAMES = tuple(AWS_ARGUMENT_SPEC)

# AWS error codes (any service) that mean "these credentials may not do this".
_ACCESS_DENIED_CODES = frozenset([
    "AccessDenied",
    "AccessDeniedException",
    "UnauthorizedOperation",
    "UnauthorizedException",
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "AuthFailure",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidAccessKeyId",
    "IncompleteSignature",
    "MissingAuthenticationToken",
])
# Not ValidationError / ValidationException (issue 10 item 24): Auto Scaling answers ValidationError to a request
# the group's state refuses, as much as to a malformed one (an instance already leaving the group, a desired
# capacity outside sizes someone just changed), and the collection names the parameter itself wherever an input of
# the user reaches AWS. Such an error is ApiError, never "InvalidParameter ... correct the parameter".
_INVALID_PARAMETER_CODES = frozenset([
    "InvalidParameter",
    "InvalidParameterValue",
    "InvalidParameterValueException",
    "InvalidParameterCombination",
    "InvalidParameterException",
    "MissingParameter",
])


def aws_error_code(code: str) -> str:
    """Map an AWS error code to the collection's U8 code."""
    if code in _ACCESS_DENIED_CODES or code.startswith("AccessDenied"):
        return ACCESS_DENIED
    if code == "InstanceLimitExceeded" or code == "VcpuLimitExceeded":
        return INSTANCE_LIMIT_EXCEEDED
    if code.startswith("InsufficientFreeAddresses"):
        return INSUFFICIENT_FREE_ADDRESSES
    if code.endswith("NotFound") or code.endswith("NotFoundException") or code in ("ParameterNotFound", "NoSuchEntity"):
        return NOT_FOUND
    if code in _INVALID_PARAMETER_CODES or code.startswith("InvalidParameter"):
        return INVALID_PARAMETER
    return API_ERROR


def _require_boto3() -> None:
    if not HAS_BOTO3:
        raise UpgradeError(API_ERROR, "boto3 and botocore are required on the host that runs this module",
                           import_error=str(BOTO3_IMPORT_ERROR))


# The process's botocore data loaders (service models, endpoints) by data path (shared_data_loader).
_DATA_LOADERS: dict[Any, Any] = {}


def shared_data_loader(botocore_session: botocore.session.Session) -> Any:
    """The process's data loader for ``botocore_session``'s data path: the models it parsed serve every session of the
    process and of the processes forked from it. botocore parses a model again for each session (EC2's alone about
    0.15 s), which every task of a playbook paid (issue 11 item 4)."""
    path = botocore_session.get_config_variable("data_path")
    if path not in _DATA_LOADERS:
        _DATA_LOADERS[path] = botocore.loaders.create_loader(path)
    return _DATA_LOADERS[path]


def warm_service_models(services: Iterable[str] = ("autoscaling", "ec2", "eks", "elbv2", "elb", "sts", "ssm")) -> None:
    """Parse the models of ``services`` in this process: ansible-playbook's main process imports the action plugins,
    then forks a worker per task, which inherits them instead of parsing them again."""
    loader = shared_data_loader(botocore.session.Session()) if HAS_BOTO3 else None
    for service, type_name in itertools.product(services if loader else (), ("service-2", "endpoint-rule-set-1")):
        with contextlib.suppress(BotoCoreError):
            loader.load_service_model(service, type_name)
    for name in ("endpoints", "partitions", "_retry", "sdk-default-configuration") if loader else ():
        with contextlib.suppress(BotoCoreError):
            loader.load_data(name)


def aws_session(params: Mapping[str, Any], botocore_session: botocore.session.Session | None = None) -> boto3.Session:
    """A boto3 Session from the module's AWS options (unset options fall back to boto3's own chain)."""
    _require_boto3()
    if params.get("profile") and (params.get("access_key") or params.get("secret_key")):
        raise invalid_parameter(
            "profile", "profile cannot be combined with access_key/secret_key; use one or the other")
    if bool(params.get("access_key")) != bool(params.get("secret_key")):
        missing = "secret_key" if params.get("access_key") else "access_key"
        raise invalid_parameter(missing, "access_key and secret_key must be given together (%s is missing)" % missing)
    with translate_aws_errors("create AWS session"):
        session = boto3.Session(
            aws_access_key_id=params.get("access_key") or None,
            aws_secret_access_key=params.get("secret_key") or None,
            aws_session_token=params.get("session_token") or None,
            region_name=params.get("region") or None,
            profile_name=params.get("profile") or None,
            botocore_session=botocore_session,
        )
    if not session.region_name:
        raise invalid_parameter("region", "No AWS region: set the region option or AWS_REGION")
    botocore_session = _botocore_session(session)
    botocore_session.register_component("data_loader", shared_data_loader(botocore_session))
    return session


def _botocore_session(session: boto3.Session) -> botocore.session.Session:
    # boto3 has no public accessor for the botocore session it wraps.
    return session._session  # pylint: disable=protected-access


def _configured_in_botocore(botocore_session: botocore.session.Session, config_name: str, env_name: str) -> bool:
    """Whether the user set a botocore setting (environment or the profile), as opposed to its default."""
    if os.environ.get(env_name):
        return True
    with translate_aws_errors("read the AWS config file"):
        return bool(botocore_session.get_scoped_config().get(config_name))


def _default_retries(botocore_session: botocore.session.Session | None) -> dict[str, Any]:
    """The collection's retry defaults, for what the user did not set through botocore's own settings.

    AWS_RETRY_MODE / AWS_MAX_ATTEMPTS and the profile's retry_mode / max_attempts win over the defaults; botocore
    applies them itself when the client config leaves them out.
    """
    retries: dict[str, Any] = {}
    if botocore_session is None or not _configured_in_botocore(botocore_session, "retry_mode", "AWS_RETRY_MODE"):
        retries["mode"] = RETRY_MODE
    if botocore_session is None or botocore_session.get_config_variable("max_attempts") is None:
        retries["total_max_attempts"] = RETRY_MAX_ATTEMPTS
    return retries


def client_config(params: Mapping[str, Any] | None = None, session: boto3.Session | None = None) -> BotoConfig:
    """The botocore Config of the collection's clients: the user's ``aws_config`` over the collection's defaults.

    Defaults: ``standard`` retries (jittered exponential backoff on throttling and transient errors), 10 attempts
    in total, and the collection's user agent. ``aws_config.retries`` is merged key by key, so
    ``{"retries": {"mode": "adaptive"}}`` keeps the 10 attempts; a ``user_agent_extra`` is appended to ours.
    """
    _require_boto3()
    user = dict((params or {}).get("aws_config") or {})
    retries = _default_retries(_botocore_session(session) if session is not None else None)
    user_retries = user.pop("retries", None) or {}
    if not isinstance(user_retries, dict):
        raise invalid_parameter("aws_config", "aws_config.retries must be a dictionary (mode, total_max_attempts or "
                                "max_attempts), not %r" % (user_retries,))
    if "max_attempts" in user_retries or "total_max_attempts" in user_retries:
        # botocore: total_max_attempts wins over max_attempts (which counts retries only); drop ours for theirs.
        retries.pop("total_max_attempts", None)
    retries.update(user_retries)
    theirs = user.pop("user_agent_extra", None)
    user_agent_extra = "%s %s" % (USER_AGENT_EXTRA, theirs) if theirs else USER_AGENT_EXTRA
    try:
        return BotoConfig(retries=retries, user_agent_extra=user_agent_extra, **user)
    except (TypeError, ValueError, BotoCoreError) as exc:
        raise invalid_parameter("aws_config", "aws_config is not a valid botocore client configuration: %s" % exc)


def _verify(params: Mapping[str, Any]) -> bool | str | None:
    """botocore's ``verify``: False, a CA bundle path, or None (botocore's own: AWS_CA_BUNDLE, profile ca_bundle).

    The AWS option is aws_validate_certs where the module also takes the Kubernetes options, else validate_certs
    (whose alias aws_validate_certs is)."""
    validate_certs = params[AWS_VALIDATE_CERTS] if AWS_VALIDATE_CERTS in params else params.get("validate_certs")
    if validate_certs is False:
        return False
    return params.get("aws_ca_bundle") or None


def aws_client(params: Mapping[str, Any], service: str, session: boto3.Session | None = None) -> Any:
    """A botocore client for ``service``: the collection's retries and user agent, ``aws_config`` over them.

    Endpoint: the ``endpoint_url`` option when set (one URL for every client of the module: a single-endpoint test
    stack); otherwise botocore's own resolution, which reads AWS_ENDPOINT_URL_<SERVICE>, then AWS_ENDPOINT_URL,
    then the profile's ``services`` section and ``endpoint_url`` (and honours AWS_IGNORE_CONFIGURED_ENDPOINT_URLS),
    then the service's regional endpoint. So VPC endpoints, which are per service, are configured per service.
    """
    session = session or aws_session(params)
    config = client_config(params, session)
    rate = requests_per_second("aws_requests_per_second", params.get("aws_requests_per_second"))
    with translate_aws_errors("create %s client" % service):
        return pace_aws_client(session.client(service, endpoint_url=params.get("endpoint_url") or None, config=config,
                                              verify=_verify(params)), rate)


def _explicit_sts_endpoint(botocore_session: botocore.session.Session, config: BotoConfig) -> str | None:
    """The STS endpoint the user configured for STS itself (AWS_ENDPOINT_URL_STS, or ``sts`` in the profile's
    ``services`` section), None when there is none or configured endpoints are ignored."""
    if config.ignore_configured_endpoint_urls or botocore_session.get_config_variable(
            "ignore_configured_endpoint_urls"):
        return None
    if os.environ.get(STS_ENDPOINT_ENV):
        return os.environ[STS_ENDPOINT_ENV]
    with translate_aws_errors("read the AWS config file"):
        section = botocore_session.get_scoped_config().get("services")
        if not section:
            return None
        services = botocore_session.full_config.get("services", {}).get(section) or {}
    return (services.get("sts") or {}).get("endpoint_url") or None


def eks_token_sts_client(params: Mapping[str, Any]) -> Any:
    """The STS client that EKS tokens are presigned with (a presigned GetCallerIdentity URL; no call is made).

    The EKS authenticator replays the URL against STS and accepts only STS's own host names, so the token is
    always presigned against the regional STS endpoint of the session's region as botocore resolves it (e.g.
    sts.us-west-2.amazonaws.com, sts.cn-north-1.amazonaws.com.cn; FIPS when AWS_USE_FIPS_ENDPOINT asks for it),
    even where botocore's sts_regional_endpoints setting says ``legacy``. Neither the ``endpoint_url`` option nor
    AWS_ENDPOINT_URL / the profile's global ``endpoint_url`` apply: they address the other services. Only an
    endpoint configured for STS itself (AWS_ENDPOINT_URL_STS, or ``sts`` in the profile's ``services`` section)
    is kept: the user named STS explicitly.
    """
    _require_boto3()
    botocore_session = botocore.session.Session()
    botocore_session.set_config_variable("sts_regional_endpoints", "regional")
    session = aws_session(params, botocore_session=botocore_session)
    config = client_config(params, session)
    explicit = _explicit_sts_endpoint(botocore_session, config)
    # Without an explicit STS endpoint, botocore must not fall back to AWS_ENDPOINT_URL or the profile's one.
    config = config.merge(BotoConfig(ignore_configured_endpoint_urls=True))
    with translate_aws_errors("create sts client for the EKS token"):
        return session.client("sts", endpoint_url=explicit, config=config, verify=_verify(params))


def _client_error_to_upgrade_error(exc: ClientError, operation_hint: str) -> UpgradeError:
    error = exc.response.get("Error", {})
    code = error.get("Code", "Unknown")
    message = error.get("Message", str(exc))
    operation = getattr(exc, "operation_name", None)
    details = dict(
        aws_error_code=code,
        aws_error_message=message,
        operation=operation_hint,
    )
    request_id = exc.response.get("ResponseMetadata", {}).get("RequestId")
    if request_id:
        details["aws_request_id"] = request_id
    if operation:
        details["aws_operation"] = operation
    return UpgradeError(aws_error_code(code), "%s failed: %s: %s" % (operation_hint, code, message), **details)


def _botocore_error_to_upgrade_error(exc: BotoCoreError, operation_hint: str) -> UpgradeError:
    details = dict(operation=operation_hint, aws_error_code=type(exc).__name__)
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return UpgradeError(ACCESS_DENIED, "%s failed: no usable AWS credentials (%s); set access_key/secret_key, "
                            "profile, or the AWS_* environment variables" % (operation_hint, exc), **details)
    if isinstance(exc, NoRegionError):
        return invalid_parameter("region", "%s failed: no AWS region; set the region option or AWS_REGION"
                                 % operation_hint, **details)
    if isinstance(exc, ProfileNotFound):
        return invalid_parameter("profile", "%s failed: %s" % (operation_hint, exc), **details)
    if isinstance(exc, BotoSSLError):
        # An amazon.aws user may have set validate_certs for AWS in a module where it is the Kubernetes API server's.
        return UpgradeError(AWS_UNREACHABLE, "%s failed: the AWS endpoint's TLS certificate was not verified: %s; to "
                            "trust a private CA set aws_ca_bundle (AWS_CA_BUNDLE). In the modules that also talk to "
                            "Kubernetes validate_certs is the Kubernetes API server's option (kubernetes.core) and "
                            "aws_validate_certs the AWS endpoints'" % (operation_hint, exc), **details)
    if isinstance(exc, BotoConnectionError):
        return UpgradeError(AWS_UNREACHABLE, "%s failed: cannot reach the AWS endpoint: %s" % (operation_hint, exc),
                            **details)
    return UpgradeError(API_ERROR, "%s failed: %s" % (operation_hint, exc), **details)


@contextlib.contextmanager
def translate_aws_errors(operation_hint: str) -> Iterator[None]:
    """Turn botocore errors raised inside the block into UpgradeError with U8 codes.

    The AWS error code stays available in ``details["aws_error_code"]``.
    """
    try:
        yield
    except UpgradeError:
        raise
    except Exception as exc:  # pylint: disable=broad-except
        if not HAS_BOTO3:
            raise
        if isinstance(exc, ClientError):
            raise _client_error_to_upgrade_error(exc, operation_hint)
        if isinstance(exc, BotoCoreError):
            raise _botocore_error_to_upgrade_error(exc, operation_hint)
        raise


def _described(value: Any) -> Any:
    """An argument as an error message shows it: a list as "a, b"; anything else as it is."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(str(item) for item in value)
    return value


def aws_call(description: str | Callable[..., str], stops_with_job: bool = False
             ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a function that makes one AWS API call: its botocore errors become UpgradeError with U8 codes
    (translate_aws_errors), and the message says what was attempted. ``description`` is filled from the function's
    arguments by name (``"describe Auto Scaling group {asg_name}"``; a list argument reads "a, b"), or is a
    function of those arguments, for a message that summarises them. ``stops_with_job``: the call is destructive (a
    termination, a size or process change, an EKS update), refused with JobStopped once the job is gone (SPEC W5,
    host/job_guard.py).

    Every AWS API call of the collection is such a function, one file per service under module_utils/aws/.
    """

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            if callable(description):
                hint = description(**bound.arguments)
            else:
                hint = description.format(**dict((name, _described(value)) for name, value in bound.arguments.items()))
            if stops_with_job:
                job_guard.check(hint)
            with translate_aws_errors(hint):
                return function(*args, **kwargs)

        return call

    return decorate


__all__ = ["AWS_ARGUMENT_SPEC", "AWS_OPTION_NAMES", "COLLECTION_VERSION", "HAS_BOTO3", "BOTO3_IMPORT_ERROR",
           "USER_AGENT_EXTRA", "aws_call", "aws_client", "aws_error_code", "aws_session", "client_config",
           "eks_token_sts_client", "translate_aws_errors"]
