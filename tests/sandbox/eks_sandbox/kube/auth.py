# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bearer-token authentication: the sandbox's static admin token, and EKS tokens (`k8s-aws-v1.` + the
base64url of a presigned STS GetCallerIdentity URL), checked for shape and age as aws-iam-authenticator
does before it calls STS. The sandbox never calls STS: any well-formed, fresh token is accepted."""

from __future__ import annotations

import base64
import binascii
import hmac
import time
from datetime import datetime, timezone
from typing import Callable
from urllib.parse import parse_qs, urlsplit

EKS_TOKEN_PREFIX = "k8s-aws-v1."
EKS_TOKEN_LIFETIME_SECONDS = 15 * 60
# A token dated this far in the future is not from a sane clock.
ALLOWED_CLOCK_SKEW_SECONDS = 5 * 60
CLUSTER_ID_HEADER = "x-k8s-aws-id"


class Unauthorized(Exception):
    """The request carries credentials that are not valid (answered with 401)."""


def check_eks_token(token: str, now: float) -> None:
    """Raise Unauthorized unless `token` is a well-formed EKS token minted less than 15 minutes ago."""
    payload = token[len(EKS_TOKEN_PREFIX):]
    try:
        url = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise Unauthorized("token is not base64url") from None
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise Unauthorized("token does not hold a URL")
    query = {key.lower(): values[-1] for key, values in parse_qs(parts.query, keep_blank_values=True).items()}
    if query.get("action") != "GetCallerIdentity":
        raise Unauthorized("token is not a presigned GetCallerIdentity request")
    if not query.get("x-amz-signature") or not query.get("x-amz-credential"):
        raise Unauthorized("token is not a signed request")
    signed_headers = query.get("x-amz-signedheaders", "").lower().split(";")
    if CLUSTER_ID_HEADER not in signed_headers:
        raise Unauthorized(f"token does not sign the {CLUSTER_ID_HEADER} header")
    try:
        signed_at = datetime.strptime(query.get("x-amz-date", ""), "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        raise Unauthorized("token has no valid X-Amz-Date") from None
    age = now - signed_at.timestamp()
    if age > EKS_TOKEN_LIFETIME_SECONDS:
        raise Unauthorized("token expired")
    if age < -ALLOWED_CLOCK_SKEW_SECONDS:
        raise Unauthorized("token is dated in the future")


class Authenticator:
    def __init__(self, admin_token: str, clock: Callable[[], float] = time.time):
        self.admin_token = admin_token
        self._clock = clock

    def authenticate(self, authorization: str | None) -> str | None:
        """The user name for an Authorization header, None when there is none (anonymous);
        raises Unauthorized for credentials that do not check out."""
        if not authorization:
            return None
        scheme, dummy, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("only bearer tokens are accepted")
        if hmac.compare_digest(token.encode(), self.admin_token.encode()):
            return "kubernetes-admin"
        if token.startswith(EKS_TOKEN_PREFIX):
            check_eks_token(token, self._clock())
            return "eks-iam-user"
        raise Unauthorized("unknown token")
