# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    # AWS connection options shared by every module (names and environment variables as in amazon.aws).
    DOCUMENTATION = r"""
options:
  region:
    description:
      - The AWS region, for example C(us-west-2).
      - If not set, the E(AWS_REGION), E(AWS_DEFAULT_REGION) or E(EC2_REGION) environment variable, then the
        profile's region.
    type: str
    aliases: [aws_region, ec2_region]
  profile:
    description:
      - A named profile from the AWS shared credentials/config files.
      - If not set, the E(AWS_PROFILE) or E(AWS_DEFAULT_PROFILE) environment variable.
      - Cannot be combined with O(access_key)/O(secret_key).
    type: str
    aliases: [aws_profile]
  access_key:
    description:
      - AWS access key id.
      - If not set, the E(AWS_ACCESS_KEY_ID), E(AWS_ACCESS_KEY) or E(EC2_ACCESS_KEY) environment variable, then
        boto3's own credential chain (instance profile, web identity, SSO).
    type: str
    aliases: [aws_access_key_id, aws_access_key, ec2_access_key]
  secret_key:
    description:
      - AWS secret access key.
      - If not set, the E(AWS_SECRET_ACCESS_KEY), E(AWS_SECRET_KEY) or E(EC2_SECRET_KEY) environment variable.
    type: str
    aliases: [aws_secret_access_key, aws_secret_key, ec2_secret_key]
  session_token:
    description:
      - AWS session token for temporary credentials.
      - If not set, the E(AWS_SESSION_TOKEN), E(AWS_SECURITY_TOKEN) or E(EC2_SECURITY_TOKEN) environment variable.
    type: str
    aliases: [aws_session_token, security_token, aws_security_token]
  endpoint_url:
    description:
      - Send every AWS API call of the module (Auto Scaling, EC2, EKS, SSM) to this one URL instead of each
        service's endpoint. Meant for a single-endpoint test stack (moto, LocalStack); the EKS token never uses it
        (see notes).
      - For per-service endpoints, such as VPC interface endpoints (one per service) or FIPS endpoints, leave
        this unset and set E(AWS_ENDPOINT_URL_<SERVICE>) (E(AWS_ENDPOINT_URL_AUTO_SCALING),
        E(AWS_ENDPOINT_URL_EC2), E(AWS_ENDPOINT_URL_EKS), E(AWS_ENDPOINT_URL_SSM), E(AWS_ENDPOINT_URL_STS)) or the
        C(services) section of the AWS config file; boto3 resolves those itself, a service's own setting before
        E(AWS_ENDPOINT_URL) and the profile's C(endpoint_url), which apply to all services.
      - If not set, the E(AWS_URL) or E(EC2_URL) environment variable. E(AWS_ENDPOINT_URL) is not read into this
        option (boto3 reads it, below any service-specific endpoint).
    type: str
    aliases: [aws_endpoint_url, ec2_url]
  aws_ca_bundle:
    description:
      - Path to a CA bundle to verify the AWS API endpoints' TLS certificates with.
      - If not set, the E(AWS_CA_BUNDLE) environment variable, then the profile's C(ca_bundle).
    type: path
  aws_config:
    description:
      - "Settings of the botocore client configuration, as keyword arguments of
        U(https://botocore.amazonaws.com/v1/documentation/api/latest/reference/config.html), for example
        C({retries: {mode: adaptive, total_max_attempts: 20}, connect_timeout: 10})."
      - C(retries) is merged key by key over the collection's defaults (C(standard) mode, 10 attempts in total);
        C(max_attempts) counts retries only, C(total_max_attempts) includes the first call.
      - A C(user_agent_extra) is appended to the collection's.
    type: dict
  debug_botocore_endpoint_logs:
    description:
      - Return the AWS API calls the module made, each once, as C(resource_actions) (C(service:Operation), for
        example C(autoscaling:DescribeAutoScalingGroups)), as C(amazon.aws) modules do; on failure too.
      - If not set, the E(ANSIBLE_DEBUG_BOTOCORE_LOGS) environment variable.
    type: bool
    default: false
  aws_requests_per_second:
    description:
      - The AWS requests per second to one region and endpoint of every process of the collection on this host
        together, however many forks run (a token bucket holding 2 s of them, shared through a file per region
        and endpoint under E(EKSOPS_REQUEST_BUDGET_DIR), else the temporary directory). Each retry counts. C(0)
        sets no bound.
      - If not set, the E(EKSOPS_AWS_REQUESTS_PER_SECOND) environment variable.
      - The default is half the rate at which EC2 refills the bucket of each of its Describe actions per account
        and region (20 per second).
    type: float
    default: 10
notes:
  - "AWS endpoints, per client: with O(endpoint_url) set, every AWS API client of the module uses it. Without it,
    boto3 resolves each service's endpoint: E(AWS_ENDPOINT_URL_<SERVICE>), then E(AWS_ENDPOINT_URL), then the
    profile's C(services) section, then the profile's C(endpoint_url), then the service's regional endpoint
    (E(AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true) skips all but the last)."
  - "The EKS token (how the modules that talk to Kubernetes authenticate with C(cluster_name) alone) is a
    GetCallerIdentity request presigned for the regional STS endpoint of O(region) as botocore resolves it (for
    example C(sts.us-west-2.amazonaws.com), C(sts.cn-north-1.amazonaws.com.cn) in the China partition,
    C(sts-fips.us-east-1.amazonaws.com) with E(AWS_USE_FIPS_ENDPOINT=true)), even where
    E(AWS_STS_REGIONAL_ENDPOINTS) or the profile says C(legacy): the cluster's authenticator replays it and
    accepts only STS's own host names. O(endpoint_url), E(AWS_ENDPOINT_URL) and the profile's C(endpoint_url) do
    not apply to it; an endpoint set for STS alone (E(AWS_ENDPOINT_URL_STS) or C(sts) in the profile's
    C(services) section) does, and the cluster answers 401 if its authenticator does not accept that host. An
    STS VPC endpoint with private DNS needs no setting: the regional host name resolves to it."
  - AWS calls are retried with jittered exponential backoff on throttling (botocore C(standard) retry mode, 10
    attempts in total). O(aws_config), else E(AWS_RETRY_MODE)/E(AWS_MAX_ATTEMPTS) or the profile's
    C(retry_mode)/C(max_attempts), override the mode and the number of attempts.
  - AWS errors are reported with C(code) set to an EKS-style code where one fits (C(AccessDenied),
    C(InstanceLimitExceeded), ...), the AWS error code in C(aws_error_code).
requirements:
  - python >= 3.8
  - boto3 >= 1.34.0
  - botocore >= 1.34.0
"""

    # The AWS endpoints' TLS verification in the modules that talk to AWS only, named as in amazon.aws. Beside the
    # Kubernetes options it is aws_validate_certs (doc_fragments/k8s.py).
    VALIDATE_CERTS = r"""
options:
  validate_certs:
    description:
      - Whether the TLS certificates of the AWS API endpoints are verified, as C(amazon.aws)'s C(validate_certs).
        Turning it off is strongly discouraged; set O(aws_ca_bundle) to trust a private CA instead.
      - Named C(aws_validate_certs) in the modules of this collection that also talk to Kubernetes, where
        C(validate_certs) is the Kubernetes API server's; that name is an alias here.
    type: bool
    default: true
    aliases: [aws_validate_certs]
"""
