# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EksopsModule: AnsibleModule plus the collection's AWS/Kubernetes option specs, clients and error reporting."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
import copy

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import (
    AWS_ARGUMENT_SPEC,
    AWS_VALIDATE_CERTS,
    AWS_VALIDATE_CERTS_SPEC,
    BOTO3_IMPORT_ERROR,
    HAS_BOTO3,
    USER_AGENT_EXTRA,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clients import FIRST_CONTACT_RETRY_SECONDS, Clients
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.cluster_proof import prove_cluster
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import STOPPED_CODES, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import K8S_ARGUMENT_SPEC, kubernetes_import_error
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import Clock

__all__ = ["FIRST_CONTACT_RETRY_SECONDS", "ClientsSurface", "EksopsModule", "error_result", "merged_argument_spec", "result_with_diff"]

# Keys fail_json/exit_json own; UpgradeError details never overwrite them.
_RESERVED_RESULT_KEYS = frozenset(["msg", "code", "failed", "changed", "invocation", "warnings", "deprecations"])


def merged_argument_spec(argument_spec: Mapping[str, Any], uses_aws: bool = True, uses_k8s: bool = False) -> dict[str, Any]:
    """The module's own spec plus the shared AWS and/or Kubernetes options (module options win).

    Everything is deep-copied: modules build their specs from shared dicts (NODEGROUP_ARGUMENT_SPEC), and the
    result must not alias them.
    """
    spec = {}
    if uses_aws:
        spec.update(AWS_ARGUMENT_SPEC)
    if uses_aws and uses_k8s:
        # validate_certs names both amazon.aws's and kubernetes.core's TLS verification. Beside the Kubernetes options
        # it is the Kubernetes API server's, as it has always been in this collection, and the AWS one is
        # aws_validate_certs: neither setting changes the other side (doc_fragments/k8s.py notes).
        del spec["validate_certs"]
        spec[AWS_VALIDATE_CERTS] = AWS_VALIDATE_CERTS_SPEC
    if uses_k8s:
        spec.update(K8S_ARGUMENT_SPEC)
    spec.update(argument_spec)
    return copy.deepcopy(spec)


def error_result(err: UpgradeError) -> dict[str, Any]:
    """fail_json keyword arguments for an UpgradeError: msg, code and the details (reserved keys prefixed)."""
    result = dict(msg=err.msg, code=err.code)
    if err.code in STOPPED_CODES:
        # Issue 27: the run stopped at a safe point as asked or as its time ran out; the wrapper role does not fail.
        result["stopped"] = True
    for key, value in err.details.items():
        result["error_%s" % key if key in _RESERVED_RESULT_KEYS else key] = value
    return result


def result_with_diff(result: dict[str, Any], diff: bool, before: Any, after: Any) -> dict[str, Any]:
    """``result``, with ``diff`` set to the state ``before`` and ``after`` the change in diff mode only (``--diff``,
    ``diff: true``): every module's diff (and every step's in an action) is built here, and only when asked for, as
    Ansible expects."""
    if diff:
        result["diff"] = dict(before=before, after=after)
    return result


class ClientsSurface:
    """The clients and the diff of a module's work, over ``self.clients`` (Clients) and ``self._diff``: what
    EksopsModule and an action's StepContext (host/step_context.py) both offer the steps."""

    clients: Clients
    _diff: bool

    def aws(self, service: str) -> Any:
        """A cached botocore client for ``service`` (Clients.aws)."""
        return self.clients.aws(service)

    def k8s(self) -> Any:
        """A cached kubernetes ApiClient, proven to be cluster_name's (Clients.k8s, SPEC K4)."""
        return self.clients.k8s()

    def core_v1(self) -> Any:
        return self.clients.core_v1()

    def with_diff(self, result: dict[str, Any], before: Any, after: Any) -> dict[str, Any]:
        return result_with_diff(result, self._diff, before, after)


class EksopsModule(ClientsSurface):
    """An AnsibleModule with cached AWS clients and a Kubernetes ApiClient built from the shared options.

    Attribute access not defined here goes to the wrapped AnsibleModule (params, check_mode, exit_json, ...).
    """

    def __init__(self, argument_spec: Mapping[str, Any], uses_aws: bool = True, uses_k8s: bool = False, *,
                 clock: Clock | None = None, aws_clients: Callable[[str], Any] | None = None,
                 **ansible_module_kwargs: Any) -> None:
        self.module = AnsibleModule(argument_spec=merged_argument_spec(argument_spec, uses_aws, uses_k8s),
                                    **ansible_module_kwargs)
        self.uses_aws = uses_aws
        self.uses_k8s = uses_k8s
        # Both the AWS API and, for cluster_name auth, the EKS token need boto3.
        if not HAS_BOTO3 and (uses_aws or uses_k8s):
            self.module.fail_json(msg=missing_required_lib("boto3 and botocore"), exception=str(BOTO3_IMPORT_ERROR))
        # Only a module that reaches Kubernetes imports its client (kube/client.py, kubernetes_import_error).
        kubernetes_error = kubernetes_import_error() if uses_k8s else None
        if kubernetes_error is not None:
            self.module.fail_json(msg=missing_required_lib("kubernetes"), exception=str(kubernetes_error))
        self.clients = Clients(self.module.params, self.user_agent, clock=clock, aws_clients=aws_clients,
                               proof=prove_cluster)

    def __getattr__(self, name: str) -> Any:
        # Only reached for names this class does not define; "module" itself is missing only mid-construction.
        if name == "module":
            raise AttributeError(name)
        return getattr(self.module, name)

    @property
    def user_agent(self) -> str:
        return "%s/%s" % (USER_AGENT_EXTRA, self.module._name.rsplit(".", 1)[-1])

    def exit_json(self, **result: Any) -> None:
        """AnsibleModule.exit_json, with ``resource_actions`` under debug_botocore_endpoint_logs (amazon.aws)."""
        self.module.exit_json(**self.clients.with_resource_actions(result))

    def fail_json(self, **result: Any) -> None:
        """AnsibleModule.fail_json, with ``resource_actions`` under debug_botocore_endpoint_logs (amazon.aws)."""
        self.module.fail_json(**self.clients.with_resource_actions(result))

    def fail_upgrade(self, err: UpgradeError, **result: Any) -> None:
        """fail_json for an UpgradeError; ``result`` carries what the module did before failing."""
        payload = dict(result)
        payload.update(error_result(err))
        self.fail_json(**payload)

    def run(self, fn: Callable[[], dict[str, Any] | None]) -> None:
        """Call ``fn()``; a dict it returns goes to exit_json, an UpgradeError it raises to fail_json."""
        try:
            result = fn()
        except UpgradeError as err:
            self.fail_upgrade(err)
        else:
            if result is not None:
                self.exit_json(**result)
