"""An EKS-like node group in in-process moto (mock_aws), for unit tests of the AWS-facing helpers."""

from __future__ import annotations

import os

import boto3

# moto registers hundreds of public AMIs per region unless told not to; the tests need only their own.
os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")

REGION = "us-west-2"
CLUSTER = "demo"
NODEGROUP = "workers"
ASG_NAME = "eks-workers-asg"
OLD_AMI_NAME = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
NEW_AMI_NAME = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"
AZS = ("us-west-2a", "us-west-2b", "us-west-2c")
AWS_PARAMS = dict(region=REGION, access_key="testing", secret_key="testing", session_token=None, profile=None,
                  endpoint_url=None)


class MotoNodegroup:
    """Two AMIs, an EKS cluster, a launch template at version 1 (old AMI), and a tagged ASG pinned to it."""

    def __init__(self, desired=3, asg_tags=None, lt_version="1"):
        self.ec2 = boto3.client("ec2", region_name=REGION)
        self.autoscaling = boto3.client("autoscaling", region_name=REGION)
        self.old_ami = self.ec2.register_image(Name=OLD_AMI_NAME)["ImageId"]
        self.new_ami = self.ec2.register_image(Name=NEW_AMI_NAME)["ImageId"]
        vpc = self.ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        self.subnets = [self.ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.%d.0/20" % (16 * index), AvailabilityZone=az)
                        ["Subnet"]["SubnetId"] for index, az in enumerate(AZS)]
        self.lt_data = dict(ImageId=self.old_ami, InstanceType="m5.large", UserData="IyEvYmluL2Jhc2g=")
        template = self.ec2.create_launch_template(LaunchTemplateName="workers", LaunchTemplateData=self.lt_data)
        self.lt_id = template["LaunchTemplate"]["LaunchTemplateId"]
        boto3.client("eks", region_name=REGION).create_cluster(
            name=CLUSTER, roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": self.subnets})
        tags = {"eks:cluster-name": CLUSTER, "eks:nodegroup-name": NODEGROUP}
        tags.update(asg_tags or {})
        self.autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=ASG_NAME, MinSize=0, MaxSize=12, DesiredCapacity=desired,
            LaunchTemplate=dict(LaunchTemplateId=self.lt_id, Version=lt_version),
            VPCZoneIdentifier=",".join(self.subnets),
            Tags=[dict(ResourceId=ASG_NAME, ResourceType="auto-scaling-group", Key=key, Value=value,
                       PropagateAtLaunch=False) for key, value in tags.items()])

    def asg(self, name=ASG_NAME):
        return self.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]

    def tags(self, name=ASG_NAME):
        return dict((tag["Key"], tag["Value"]) for tag in self.asg(name).get("Tags", []))

    def lt_versions(self):
        return self.ec2.describe_launch_template_versions(LaunchTemplateId=self.lt_id)["LaunchTemplateVersions"]

    def add_version(self, **data):
        """A new version with the full data given (what AWS's SourceVersion would copy), returns its number."""
        full = dict(self.lt_data)
        full.update(data)
        return self.ec2.create_launch_template_version(
            LaunchTemplateId=self.lt_id, LaunchTemplateData=full)["LaunchTemplateVersion"]["VersionNumber"]


def publish_eks_ami(kubernetes_version, family, image_id):
    """Write an EKS public SSM parameter into moto (its PutParameter refuses /aws/ names)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.core.utils import utcnow
    from moto.ssm.models import Parameter, ssm_backends

    backend = ssm_backends[DEFAULT_ACCOUNT_ID][REGION]
    name = "/aws/service/eks/optimized-ami/%s/%s/recommended/image_id" % (kubernetes_version, family)
    backend._parameters[name].append(Parameter(
        account_id=DEFAULT_ACCOUNT_ID, name=name, value=image_id, parameter_type="String", description=None,
        allowed_pattern=None, keyid=None, last_modified_date=utcnow(), version=1, data_type="text"))
    return name


_SESSIONS = {}


def _reused_session(params):
    """aws.aws_session, built once per set of options: a fresh boto3 Session re-reads every service model
    from disk, which dominates the run time of an in-process module test."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils import aws

    key = tuple((name, params.get(name)) for name in aws.AWS_OPTION_NAMES)
    if key not in _SESSIONS:
        _SESSIONS[key] = aws.aws_session(params)
    return _SESSIONS[key]


def _copy_source_version(client):
    """Give moto's CreateLaunchTemplateVersion AWS's SourceVersion semantics (moto copies nothing): the new
    version starts from the source version's data, overlaid with the LaunchTemplateData sent."""

    def merge_source_data(params, **_kwargs):
        if "SourceVersion" in params:
            [source] = client.describe_launch_template_versions(
                LaunchTemplateId=params["LaunchTemplateId"], Versions=[params["SourceVersion"]])[
                "LaunchTemplateVersions"]
            params["LaunchTemplateData"] = dict(source["LaunchTemplateData"], **params.get("LaunchTemplateData", {}))

    client.meta.events.register("provide-client-params.ec2.CreateLaunchTemplateVersion", merge_source_data)
    return client


def _aws_client_like_aws(params, service, session=None):
    from ansible_collections.eksops.nodegroup.plugins.module_utils import aws

    client = aws.aws_client(params, service, session=session)
    return _copy_source_version(client) if service == "ec2" else client


def run_module_in_process(main, args, capsys, check=False, diff=False):
    """Run a module's main() in this process (so moto's mock applies) and return its result dict."""
    import json
    from unittest import mock

    from ansible.module_utils.testing import patch_module_args

    module_args = dict(AWS_PARAMS)
    module_args.update(args)
    module_args.update(_ansible_check_mode=check, _ansible_diff=diff)
    capsys.readouterr()
    with patch_module_args(module_args), mock.patch(
            "ansible_collections.eksops.nodegroup.plugins.module_utils.module.aws_session", _reused_session), \
            mock.patch("ansible_collections.eksops.nodegroup.plugins.module_utils.module.aws_client",
                       _aws_client_like_aws):
        try:
            main()
        except SystemExit:
            pass
    return json.loads(capsys.readouterr().out)
