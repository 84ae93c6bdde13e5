# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


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
      - Send every AWS API call to this URL instead of the service's regional endpoint (for example a VPC
        endpoint or a local test double).
      - If not set, the E(AWS_ENDPOINT_URL) or E(EC2_URL) environment variable.
    type: str
    aliases: [aws_endpoint_url, ec2_url]
notes:
  - AWS calls are retried with jittered exponential backoff on throttling (botocore C(standard) retry mode, 10
    attempts).
  - AWS errors are reported with C(code) set to an EKS-style code where one fits (C(AccessDenied),
    C(InstanceLimitExceeded), ...), the AWS error code in C(aws_error_code).
requirements:
  - python >= 3.8
  - boto3 >= 1.34.0
  - botocore >= 1.34.0
"""
