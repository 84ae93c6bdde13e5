# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    # Kubernetes connection options shared by the modules that talk to the cluster (names as in kubernetes.core).
    DOCUMENTATION = r"""
options:
  aws_validate_certs:
    description:
      - The AWS endpoints' TLS verification, C(validate_certs) in C(amazon.aws) and in this collection's modules
        that talk to AWS only; here C(validate_certs) is the Kubernetes API server's (see notes).
      - V(false) is strongly discouraged; for a private CA set O(aws_ca_bundle).
    type: bool
    default: true
  kubeconfig:
    description:
      - Path to a kubeconfig file.
      - If not set, the E(K8S_AUTH_KUBECONFIG) environment variable, then E(KUBECONFIG), then C(~/.kube/config)
        when it exists; with none of them the module authenticates with C(cluster_name) (see notes).
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
      - Authenticates with O(api_key), or without it with an EKS token for C(cluster_name).
      - If not set, the E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - Bearer token for O(host) (or to override the kubeconfig user's credentials).
      - If not set, the E(K8S_AUTH_API_KEY) environment variable.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. If not set, the E(K8S_AUTH_VALIDATE_CERTS) or
        E(K8S_AUTH_VERIFY_SSL) environment variable, then the kubeconfig's setting (verification on).
      - In this collection C(validate_certs) is the Kubernetes API server's option, as in C(kubernetes.core),
        wherever a module talks to Kubernetes; the AWS endpoints' is O(aws_validate_certs) there (see notes).
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA bundle to verify the API server with. If not set, the E(K8S_AUTH_CA_CERT) or
        E(K8S_AUTH_SSL_CA_CERT) environment variable, then the kubeconfig's or EKS cluster's CA.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate to authenticate to the API server with (with O(client_key)).
      - With O(host) and no O(api_key), the certificate alone authenticates (no EKS token is minted).
      - If not set, the E(K8S_AUTH_CLIENT_CERT) or E(K8S_AUTH_CERT_FILE) environment variable.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the private key of O(client_cert).
      - If not set, the E(K8S_AUTH_CLIENT_KEY) or E(K8S_AUTH_KEY_FILE) environment variable.
    type: path
    aliases: [key_file]
  proxy:
    description:
      - URL of an HTTP proxy to reach the API server through.
      - If not set, the E(K8S_AUTH_PROXY) environment variable. E(HTTPS_PROXY) and the like are not read, as in
        C(kubernetes.core).
    type: str
  no_proxy:
    description:
      - Comma-separated hosts, domains, IP addresses or CIDRs to reach without O(proxy), for example
        C(localhost,.internal,10.0.0.0/8).
      - If not set, the E(K8S_AUTH_NO_PROXY) environment variable.
    type: str
  proxy_headers:
    description:
      - Headers for O(proxy), built with urllib3's C(make_headers).
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - Colon-separated C(username:password) for the proxy's basic authentication.
          - If not set, the E(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH) environment variable.
        type: str
      basic_auth:
        description:
          - Colon-separated C(username:password) for a basic authentication header.
          - If not set, the E(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH) environment variable.
        type: str
      user_agent:
        description:
          - The User-Agent sent to the proxy, such as C(foo/1.0).
          - If not set, the E(K8S_AUTH_PROXY_HEADERS_USER_AGENT) environment variable.
        type: str
  persist_config:
    description:
      - Whether the kubernetes client writes refreshed credentials (an OIDC refresh token) back to the
        kubeconfig file. Applies to O(kubeconfig) credentials only.
      - If not set, the E(K8S_AUTH_PERSIST_CONFIG) environment variable, else V(false).
    type: bool
  impersonate_user:
    description:
      - The user to act as (the C(Impersonate-User) header); the credentials' identity needs the C(impersonate)
        verb on it.
      - If not set, the E(K8S_AUTH_IMPERSONATE_USER) environment variable.
    type: str
  impersonate_groups:
    description:
      - The groups to act as (one C(Impersonate-Group) header each).
      - If not set, the E(K8S_AUTH_IMPERSONATE_GROUPS) environment variable, comma-separated (C(group1,group2)).
    type: list
    elements: str
  k8s_requests_per_second:
    description:
      - The Kubernetes requests per second to one API server of every process of the collection on this host
        together, however many forks run (a token bucket holding 2 s of them, shared through a file per API
        server under E(EKSOPS_REQUEST_BUDGET_DIR), else the temporary directory). A watch counts once, at its
        start. C(0) sets no bound.
      - If not set, the E(EKSOPS_K8S_REQUESTS_PER_SECOND) environment variable.
      - The default is what kube-scheduler's own client takes (C(--kube-api-qps) 50).
    type: float
    default: 50
notes:
  - "C(cluster_name) is the module's EKS cluster (for M(eksops.nodegroup.fleet_ring_health), each node group's and
    cluster's own). Kubernetes credentials, in order of precedence: O(host) (with O(api_key), or an EKS token for
    C(cluster_name)); a kubeconfig (O(kubeconfig)/O(context), else E(KUBECONFIG), else C(~/.kube/config));
    C(cluster_name) alone: the module describes the EKS cluster for its endpoint and CA and mints an EKS bearer
    token from the AWS credentials (a presigned STS GetCallerIdentity URL, as C(aws eks get-token) does), so no
    AWS CLI is needed. The token is refreshed before it expires, so long drains keep working."
  - "C(validate_certs) is the Kubernetes API server's option in every module that talks to Kubernetes, with
    C(kubernetes.core)'s alias C(verify_ssl) and environment variables; the AWS endpoints' TLS verification
    (C(amazon.aws)'s C(validate_certs)) is O(aws_validate_certs) in those modules, so that neither side's setting
    changes the other's. In the modules that talk to AWS only, C(validate_certs) is the AWS one, as in
    C(amazon.aws), and C(aws_validate_certs) its alias."
  - Kubernetes API errors 401/403 are reported with C(code=AccessDenied); an unreachable API server with
    C(code=ClusterUnreachable).
requirements:
  - kubernetes >= 28.1.0
"""
