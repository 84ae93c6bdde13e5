# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EksRouter: which cluster's EksNodegroups answers an EKS request, when one sandbox serves several clusters.

On AWS each region has its own EKS endpoint and a cluster's name is unique within its region (account and region);
the sandbox serves every region on one endpoint, so the request's region is read where SigV4 puts it (the
credential scope of the Authorization header, `<key>/<date>/<region>/<service>/aws4_request`: AWS General Reference
"Signature Version 4 signing process", "Create a string to sign") and the cluster from the request's path
(`/clusters/<name>/...`, botocore's EKS model's requestUri of every node-group operation).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    from .service import EksNodegroups

__all__ = ["EksRouter"]

_SCOPE_REGION = re.compile(r"Credential=[^/,]+/\d{8}/([a-z0-9-]+)/")
_CLUSTER = re.compile(r"^/clusters/([^/]+)")


class EksRouter:
    """What the AWS request middleware asks to answer an EKS request: with one cluster its EksNodegroups, as ever;
    with several, the one of the request's region and cluster (None: moto answers, e.g. an unknown cluster)."""

    def __init__(self, first: EksNodegroups):
        self._services = [first]

    def add(self, service: EksNodegroups) -> None:
        self._services.append(service)

    def answer(self, operation: str | None, environ: dict[str, Any], body: bytes
               ) -> tuple[int, list[tuple[str, str]], bytes] | None:
        service = self._services[0] if len(self._services) == 1 else self._route(environ)
        return service.answer(operation, environ, body) if service is not None else None

    def _route(self, environ: dict[str, Any]) -> EksNodegroups | None:
        region = _SCOPE_REGION.search(environ.get("HTTP_AUTHORIZATION", ""))
        cluster = _CLUSTER.match(environ.get("PATH_INFO", ""))
        if region is None or cluster is None:
            return None
        name = unquote(cluster.group(1))
        return next((s for s in self._services if s.region == region.group(1) and s.cluster_name == name), None)
