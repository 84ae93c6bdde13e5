# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way the collection reaches AWS: option spec, session/client factory, error translation."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib

from ansible.module_utils.basic import env_fallback

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
    from botocore.config import Config as BotoConfig
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectionError as BotoConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
        ProfileNotFound,
    )

    HAS_BOTO3 = True
    BOTO3_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - exercised only without boto3
    HAS_BOTO3 = False
    BOTO3_IMPORT_ERROR = exc

COLLECTION_VERSION = "0.1.0"
USER_AGENT_EXTRA = "eksops.nodegroup/%s" % COLLECTION_VERSION
# botocore "standard" retry mode: jittered exponential backoff on throttling and transient errors; 10 attempts
# in total (the first call and 9 retries).
RETRY_MAX_ATTEMPTS = 10

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
    endpoint_url=dict(
        type="str",
        aliases=["aws_endpoint_url", "ec2_url"],
        fallback=(env_fallback, ["AWS_ENDPOINT_URL", "EC2_URL"]),
    ),
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
_INVALID_PARAMETER_CODES = frozenset([
    "ValidationError",
    "ValidationException",
    "InvalidParameter",
    "InvalidParameterValue",
    "InvalidParameterValueException",
    "InvalidParameterCombination",
    "InvalidParameterException",
    "MissingParameter",
])


def aws_error_code(code):
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


def _require_boto3():
    if not HAS_BOTO3:
        raise UpgradeError(API_ERROR, "boto3 and botocore are required on the host that runs this module",
                           import_error=str(BOTO3_IMPORT_ERROR))


def aws_session(params):
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
        )
    if not session.region_name:
        raise invalid_parameter("region", "No AWS region: set the region option or AWS_REGION")
    return session


def client_config():
    """The botocore Config every client of the collection uses."""
    return BotoConfig(
        retries={"mode": "standard", "total_max_attempts": RETRY_MAX_ATTEMPTS},
        user_agent_extra=USER_AGENT_EXTRA,
    )


def aws_client(params, service, session=None):
    """A botocore client for ``service`` with standard jittered retries and the collection's user agent."""
    session = session or aws_session(params)
    with translate_aws_errors("create %s client" % service):
        return session.client(service, endpoint_url=params.get("endpoint_url") or None, config=client_config())


def _client_error_to_upgrade_error(exc, operation_hint):
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


def _botocore_error_to_upgrade_error(exc, operation_hint):
    details = dict(operation=operation_hint, aws_error_code=type(exc).__name__)
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return UpgradeError(ACCESS_DENIED, "%s failed: no usable AWS credentials (%s); set access_key/secret_key, "
                            "profile, or the AWS_* environment variables" % (operation_hint, exc), **details)
    if isinstance(exc, NoRegionError):
        return invalid_parameter("region", "%s failed: no AWS region; set the region option or AWS_REGION"
                                 % operation_hint, **details)
    if isinstance(exc, ProfileNotFound):
        return invalid_parameter("profile", "%s failed: %s" % (operation_hint, exc), **details)
    if isinstance(exc, BotoConnectionError):
        return UpgradeError(AWS_UNREACHABLE, "%s failed: cannot reach the AWS endpoint: %s" % (operation_hint, exc),
                            **details)
    return UpgradeError(API_ERROR, "%s failed: %s" % (operation_hint, exc), **details)


@contextlib.contextmanager
def translate_aws_errors(operation_hint):
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


def aws_tags_to_dict(tags):
    """[{"Key": k, "Value": v}, ...] (any AWS tag shape) -> {k: v}; a dict is returned as a copy."""
    if tags is None:
        return {}
    if isinstance(tags, dict):
        return dict(tags)
    return dict((tag["Key"], tag.get("Value", "")) for tag in tags)


def paginate(client, operation, result_key, **kwargs):
    """All items of a paged AWS describe/list call, in order."""
    items = []
    for page in client.get_paginator(operation).paginate(**kwargs):
        items.extend(page.get(result_key, []))
    return items


__all__ = [
    "AWS_ARGUMENT_SPEC",
    "AWS_OPTION_NAMES",
    "COLLECTION_VERSION",
    "HAS_BOTO3",
    "BOTO3_IMPORT_ERROR",
    "USER_AGENT_EXTRA",
    "aws_client",
    "aws_error_code",
    "aws_session",
    "aws_tags_to_dict",
    "client_config",
    "paginate",
    "translate_aws_errors",
]
