# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    # Kubernetes connection options shared by the modules that talk to the cluster (names as in kubernetes.core).
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file.
      - If not set, the E(K8S_AUTH_KUBECONFIG) environment variable, then E(KUBECONFIG), then C(~/.kube/config)
        when it exists; with none of them the module authenticates with O(cluster_name) (see notes).
    type: path
  context:
    description:
      - The kubeconfig context to use. If not set, the E(K8S_AUTH_CONTEXT) environment variable, then the
        kubeconfig's current context.
    type: str
    aliases: [kube_context]
  host:
    description:
      - URL of the Kubernetes API server. Takes precedence over any kubeconfig.
      - Authenticates with O(api_key), or without it with an EKS token for O(cluster_name).
      - If not set, the E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - Bearer token for O(host) (or to override the kubeconfig user's credentials).
      - If not set, the E(K8S_AUTH_API_KEY) environment variable.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. If not set, the E(K8S_AUTH_VERIFY_SSL) environment
        variable, then the kubeconfig's setting (verification on).
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA bundle to verify the API server with. If not set, the E(K8S_AUTH_SSL_CA_CERT) environment
        variable, then the kubeconfig's or EKS cluster's CA.
    type: path
    aliases: [ssl_ca_cert]
notes:
  - "Kubernetes credentials, in order of precedence: O(host) (with O(api_key), or an EKS token for
    O(cluster_name)); a kubeconfig (O(kubeconfig)/O(context), else E(KUBECONFIG), else C(~/.kube/config));
    O(cluster_name) alone: the module describes the EKS cluster for its endpoint and CA and mints an EKS bearer
    token from the AWS credentials (a presigned STS GetCallerIdentity URL, as C(aws eks get-token) does), so no
    AWS CLI is needed. The token is refreshed before it expires, so long drains keep working."
  - Kubernetes API errors 401/403 are reported with C(code=AccessDenied); an unreachable API server with
    C(code=ClusterUnreachable).
requirements:
  - kubernetes >= 28.1.0
"""
