# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EksopsModule: AnsibleModule plus the collection's AWS/Kubernetes option specs, clients and error reporting."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
import copy

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import (
    AWS_ARGUMENT_SPEC,
    BOTO3_IMPORT_ERROR,
    HAS_BOTO3,
    USER_AGENT_EXTRA,
    aws_client,
    aws_session,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.cluster_proof import prove_cluster
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.k8s import (
    HAS_KUBERNETES,
    K8S_ARGUMENT_SPEC,
    KUBERNETES_IMPORT_ERROR,
    auth_method,
    core_v1,
    describe_eks_cluster,
    k8s_api_client,
    translate_k8s_errors,
    version_api,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube_watch import SYSTEM_CLOCK, Clock, retry_api_call

# The first request to the Kubernetes API retries for this long only: a cluster that cannot be reached (or that
# refuses the credentials) at the start fails in seconds, before the module changes anything. Later calls retry
# transient failures for longer (kube_watch.DEFAULT_RETRY_WINDOW_SECONDS): a drain outlives an API server blip.
FIRST_CONTACT_RETRY_SECONDS = 15

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
    if uses_k8s:
        spec.update(K8S_ARGUMENT_SPEC)
    spec.update(argument_spec)
    return copy.deepcopy(spec)


def error_result(err: UpgradeError) -> dict[str, Any]:
    """fail_json keyword arguments for an UpgradeError: msg, code and the details (reserved keys prefixed)."""
    result = dict(msg=err.msg, code=err.code)
    for key, value in err.details.items():
        result["error_%s" % key if key in _RESERVED_RESULT_KEYS else key] = value
    return result


class EksopsModule:
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
        if uses_k8s and not HAS_KUBERNETES:
            self.module.fail_json(msg=missing_required_lib("kubernetes"), exception=str(KUBERNETES_IMPORT_ERROR))
        self._aws_session = None
        self._aws_clients = {}
        self._aws_client_factory = aws_clients  # service -> client, instead of building them (tests)
        self._clock = clock  # the first contact's retries (kube_watch's Clock; None: SYSTEM_CLOCK)
        self._k8s_client = None
        self._core_v1 = None

    def __getattr__(self, name: str) -> Any:
        # Only reached for names this class does not define; "module" itself is missing only mid-construction.
        if name == "module":
            raise AttributeError(name)
        return getattr(self.module, name)

    @property
    def user_agent(self) -> str:
        return "%s/%s" % (USER_AGENT_EXTRA, self.module._name.rsplit(".", 1)[-1])

    def aws(self, service: str) -> Any:
        """A cached botocore client for ``service``."""
        if self._aws_client_factory is not None:
            return self._aws_client_factory(service)
        if service not in self._aws_clients:
            if self._aws_session is None:
                self._aws_session = aws_session(self.module.params)
            self._aws_clients[service] = aws_client(self.module.params, service, session=self._aws_session)
        return self._aws_clients[service]

    def k8s(self) -> Any:
        """A cached kubernetes ApiClient (see k8s.k8s_api_client for how credentials are chosen).

        Built on first use and checked with one GET /version, so an unreachable API server or rejected
        credentials fail here, named, rather than after a long retry inside the module's work. With
        ``cluster_name``, the API is then proven to be that cluster's (SPEC K4) before the module uses it.
        """
        if self._k8s_client is None:
            params = self.module.params
            with translate_k8s_errors("connect to the Kubernetes API"):
                client = k8s_api_client(params, user_agent=self.user_agent)
                retry_api_call(version_api(client).get_code, clock=self._clock,
                               deadline=(self._clock or SYSTEM_CLOCK).now() + FIRST_CONTACT_RETRY_SECONDS)
            # Credentials built from cluster_name use DescribeCluster's endpoint: proven by construction.
            if params.get("cluster_name") and auth_method(params) != "cluster_name":
                eks_endpoint = describe_eks_cluster(self.aws("eks"), params["cluster_name"])[0]
                prove_cluster(params, self.aws, core_v1(client), client.configuration.host, eks_endpoint)
            self._k8s_client = client
        return self._k8s_client

    def core_v1(self) -> Any:
        if self._core_v1 is None:
            self._core_v1 = core_v1(self.k8s())
        return self._core_v1

    def with_diff(self, result: dict[str, Any], before: Any, after: Any) -> dict[str, Any]:
        """``result``, with ``diff`` set to the state ``before`` and ``after`` the change in diff mode only (``--diff``,
        ``diff: true``): every module's diff is built here, and only when asked for, as Ansible expects."""
        if self._diff:
            result["diff"] = dict(before=before, after=after)
        return result

    def fail_upgrade(self, err: UpgradeError, **result: Any) -> None:
        """fail_json for an UpgradeError; ``result`` carries what the module did before failing."""
        payload = dict(result)
        payload.update(error_result(err))
        self.module.fail_json(**payload)

    def run(self, fn: Callable[[], dict[str, Any] | None]) -> None:
        """Call ``fn()``; a dict it returns goes to exit_json, an UpgradeError it raises to fail_json."""
        try:
            result = fn()
        except UpgradeError as err:
            self.fail_upgrade(err)
        else:
            if result is not None:
                self.module.exit_json(**result)
