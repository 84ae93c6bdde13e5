# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EKS node groups in in-process moto (mock_aws), for unit tests of the AWS-facing helpers.

Each kind of node group (SPEC K1) is built the way its own tool builds it, so discovery and the modules see
what they see on a real account; the default is a plain self-managed group as terraform-aws-eks's
self-managed-node-group module makes it. ``node_labels`` gives the labels a node of each kind carries.
"""

from __future__ import annotations

import contextlib
import os
import sys

from .module_docs import ANSIBLE_RESULT_KEYS, result_key

# moto registers hundreds of public AMIs per region unless told not to; the tests need only their own.
os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")

REGION = "us-west-2"
CLUSTER = "demo"
NODEGROUP = "workers"
# terraform's name_prefix suffix: a UTC timestamp to 1/10000 s (18 digits) and a per-run counter (8 hex digits).
TF_LT_SUFFIX = "20240615120000123400000009"
TF_ASG_SUFFIX = "2024061512000012340000000b"
ASG_NAME = "%s-%s" % (NODEGROUP, TF_ASG_SUFFIX)
LT_NAME = "%s-%s" % (NODEGROUP, TF_LT_SUFFIX)
OLD_AMI_NAME = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
NEW_AMI_NAME = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"
AZS = ("us-west-2a", "us-west-2b", "us-west-2c")
AWS_PARAMS = dict(region=REGION, access_key="testing", secret_key="testing", session_token=None, profile=None,
                  endpoint_url=None)

MANAGED = "managed"
SELF_MANAGED_EKSCTL = "self_managed_eksctl"
SELF_MANAGED = "self_managed"
TERRAFORM = "terraform"
CLOUDFORMATION = "cloudformation"
KIND_SETUPS = ((SELF_MANAGED, TERRAFORM), (SELF_MANAGED, CLOUDFORMATION), (SELF_MANAGED_EKSCTL, None),
               (MANAGED, None))


def self_managed_tags(convention, cluster=CLUSTER, nodegroup=NODEGROUP):
    """The tags terraform-aws-eks (self-managed-node-group) or the CloudFormation node group template
    (amazon-eks-nodegroup.yaml) put on the Auto Scaling group."""
    if convention == TERRAFORM:
        return {"Name": nodegroup, "kubernetes.io/cluster/%s" % cluster: "owned",
                "k8s.io/cluster/%s" % cluster: "owned"}
    return dict({"Name": "%s-%s-Node" % (cluster, nodegroup), "kubernetes.io/cluster/%s" % cluster: "owned"},
                **stack_tags("%s-%s-nodes" % (cluster, nodegroup)))


def stack_tags(stack):
    """The tags CloudFormation adds to every Auto Scaling group a stack creates (AWS::AutoScaling::AutoScalingGroup
    TagProperty: "CloudFormation adds the following tags to all Auto Scaling groups")."""
    return {"aws:cloudformation:stack-name": stack, "aws:cloudformation:logical-id": "NodeGroup",
            "aws:cloudformation:stack-id": "arn:aws:cloudformation:%s:123456789012:stack/%s/1" % (REGION, stack)}


def eksctl_tags(cluster=CLUSTER, nodegroup=NODEGROUP):
    """The tags of an eksctl unmanaged node group's Auto Scaling group (its CloudFormation stack sets them)."""
    return {"alpha.eksctl.io/cluster-name": cluster, "alpha.eksctl.io/nodegroup-name": nodegroup,
            "alpha.eksctl.io/nodegroup-type": "unmanaged", "alpha.eksctl.io/eksctl-version": "0.190.0",
            "eksctl.cluster.k8s.io/v1alpha1/cluster-name": cluster,
            "kubernetes.io/cluster/%s" % cluster: "owned", "Name": "%s-%s-Node" % (cluster, nodegroup),
            **stack_tags("eksctl-%s-nodegroup-%s" % (cluster, nodegroup))}


def managed_tags(cluster=CLUSTER, nodegroup=NODEGROUP):
    """The tags EKS puts on a managed node group's own Auto Scaling group."""
    return {"eks:cluster-name": cluster, "eks:nodegroup-name": nodegroup,
            "kubernetes.io/cluster/%s" % cluster: "owned", "k8s.io/cluster-autoscaler/enabled": "true",
            "k8s.io/cluster-autoscaler/%s" % cluster: "owned"}


def node_labels(kind, availability_zone, hostname, image_id=None, nodegroup=NODEGROUP, cluster=CLUSTER):
    """The labels a node of ``kind`` registers with: the kubelet's well-known ones, plus what the kind's own
    bootstrap adds (nothing for a plain self-managed group; eksctl's labels; EKS's for a managed group)."""
    labels = {"kubernetes.io/hostname": hostname, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "node.kubernetes.io/instance-type": "m5.large", "topology.kubernetes.io/region": REGION,
              "topology.kubernetes.io/zone": availability_zone}
    if kind == SELF_MANAGED_EKSCTL:
        labels.update({"alpha.eksctl.io/cluster-name": cluster, "alpha.eksctl.io/nodegroup-name": nodegroup})
    elif kind == MANAGED:
        labels.update({"eks.amazonaws.com/nodegroup": nodegroup, "eks.amazonaws.com/capacityType": "ON_DEMAND"})
        if image_id:
            labels["eks.amazonaws.com/nodegroup-image"] = image_id
    return labels


def raw_node(name, instance_id, availability_zone, labels, ready=True, unschedulable=None):
    """A node as the API server returns it (raw JSON), its spec.providerID naming its instance (SPEC K2)."""
    spec = {"providerID": "aws:///%s/%s" % (availability_zone, instance_id)}
    if unschedulable is not None:
        spec["unschedulable"] = unschedulable
    return {"metadata": {"name": name, "labels": dict(labels)}, "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def asg_tag_list(name, tags):
    return [dict(ResourceId=name, ResourceType="auto-scaling-group", Key=key, Value=value, PropagateAtLaunch=True)
            for key, value in tags.items()]


def moto_client(service):
    """A boto3 client of the tests' own, for moto, from the session _reused_session keeps for the run: mock_aws
    resets boto3's default session, so boto3.client() parsed every service model's JSON again in each test (about
    0.5 s of the 0.8 s a MotoNodegroup took). moto intercepts the clients of any session made after it was imported."""
    return _reused_session(AWS_PARAMS).client(service)


class MotoNodegroup:
    """Two AMIs, an EKS cluster, a launch template at version 1 (old AMI), and node group ``NODEGROUP``'s Auto
    Scaling group pinned to it, of ``kind`` (SPEC K1) and, for a plain self-managed group, ``convention``:

    - self_managed/terraform (default): ASG ``workers-<terraform suffix>`` tagged Name=workers,
      kubernetes.io/cluster/demo=owned, k8s.io/cluster/demo=owned; launch template ``workers-<suffix>``;
    - self_managed/cloudformation: ASG ``demo-workers-NodeGroup-<id>`` tagged Name=demo-workers-Node and
      kubernetes.io/cluster/demo=owned;
    - self_managed_eksctl: ASG ``eksctl-demo-nodegroup-workers-NodeGroup-<id>`` with eksctl's tags;
    - managed: a node group made with EKS's CreateNodegroup and the Auto Scaling group it names, tagged as EKS
      tags its own, with EKS's launch template ``eks-<id>``.
    """

    def __init__(self, desired=3, asg_tags=None, lt_version="1", kind=SELF_MANAGED, convention=TERRAFORM):
        self.kind = kind
        self.convention = convention if kind == SELF_MANAGED else None
        self.ec2 = moto_client("ec2")
        self.autoscaling = moto_client("autoscaling")
        self.eks = moto_client("eks")
        self.elbv2 = moto_client("elbv2")
        self.elb = moto_client("elb")
        self.old_ami = self.ec2.register_image(Name=OLD_AMI_NAME)["ImageId"]
        self.new_ami = self.ec2.register_image(Name=NEW_AMI_NAME)["ImageId"]
        vpc = self.ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        self.subnets = [self.ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.%d.0/20" % (16 * index), AvailabilityZone=az)
                        ["Subnet"]["SubnetId"] for index, az in enumerate(AZS)]
        # The control plane is on the newer AMI's version: nodes may be upgraded up to it (SPEC K6).
        self.cluster_endpoint = self.eks.create_cluster(
            name=CLUSTER, roleArn="arn:aws:iam::123456789012:role/eks", version="1.30",
            resourcesVpcConfig={"subnetIds": self.subnets})["cluster"]["endpoint"]
        self.managed = None
        if kind == MANAGED:
            self.managed = self.eks.create_nodegroup(
                clusterName=CLUSTER, nodegroupName=NODEGROUP, nodeRole="arn:aws:iam::123456789012:role/eks-node",
                subnets=self.subnets, scalingConfig=dict(minSize=0, maxSize=12, desiredSize=desired))["nodegroup"]
            self.asg_name = self.managed["resources"]["autoScalingGroups"][0]["name"]
            self.lt_name = "eks-" + self.asg_name[len("eks-"):]
            tags = managed_tags()
        elif kind == SELF_MANAGED_EKSCTL:
            self.asg_name = "eksctl-%s-nodegroup-%s-NodeGroup-1K3ZQ8Y2M7P4W" % (CLUSTER, NODEGROUP)
            self.lt_name = "eksctl-%s-nodegroup-%s" % (CLUSTER, NODEGROUP)
            tags = eksctl_tags()
        elif convention == TERRAFORM:
            self.asg_name, self.lt_name = ASG_NAME, LT_NAME
            tags = self_managed_tags(TERRAFORM)
        else:
            self.asg_name = "%s-%s-NodeGroup-9X4T2B7QK1LD" % (CLUSTER, NODEGROUP)
            self.lt_name = "%s-%s-NodeLaunchTemplate" % (CLUSTER, NODEGROUP)
            tags = self_managed_tags(CLOUDFORMATION)
        self.lt_data = dict(ImageId=self.old_ami, InstanceType="m5.large", UserData="IyEvYmluL2Jhc2g=")
        template = self.ec2.create_launch_template(LaunchTemplateName=self.lt_name, LaunchTemplateData=self.lt_data)
        self.lt_id = template["LaunchTemplate"]["LaunchTemplateId"]
        tags.update(asg_tags or {})
        self.autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=self.asg_name, MinSize=0, MaxSize=12, DesiredCapacity=desired,
            LaunchTemplate=dict(LaunchTemplateId=self.lt_id, Version=lt_version),
            VPCZoneIdentifier=",".join(self.subnets), Tags=asg_tag_list(self.asg_name, tags))

    def asg(self, name=None):
        return self.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name or self.asg_name])[
            "AutoScalingGroups"][0]

    def tags(self, name=None):
        return dict((tag["Key"], tag["Value"]) for tag in self.asg(name).get("Tags", []))

    def lt_versions(self):
        return self.ec2.describe_launch_template_versions(LaunchTemplateId=self.lt_id)["LaunchTemplateVersions"]

    def add_version(self, **data):
        """A new version with the full data given (what AWS's SourceVersion would copy), returns its number."""
        full = dict(self.lt_data)
        full.update(data)
        return self.ec2.create_launch_template_version(
            LaunchTemplateId=self.lt_id, LaunchTemplateData=full)["LaunchTemplateVersion"]["VersionNumber"]

    def raw_nodes(self, unschedulable=(), ready=True, kind=None):
        """A raw node per instance of the group, as its kubelet registers it: named by its private DNS name,
        spec.providerID naming the instance, the labels a node of the group's kind carries."""
        images = dict((i["InstanceId"], i["ImageId"]) for r in self.ec2.describe_instances()["Reservations"]
                      for i in r["Instances"])
        nodes = []
        for index, instance in enumerate(self.asg()["Instances"]):
            name = "ip-10-0-%d-%d.%s.compute.internal" % (index // 250, index % 250 + 10, REGION)
            az = instance["AvailabilityZone"]
            labels = node_labels(kind or self.kind, az, name, image_id=images.get(instance["InstanceId"]))
            nodes.append(raw_node(name, instance["InstanceId"], az, labels, ready=ready,
                                  unschedulable=True if instance["InstanceId"] in unschedulable else None))
        return nodes


def publish_ssm_parameter(name, value, region=REGION):
    """Write a public SSM parameter (/aws/service/...) into moto, whose PutParameter refuses /aws/ names."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.core.utils import utcnow
    from moto.ssm.models import Parameter, ssm_backends

    backend = ssm_backends[DEFAULT_ACCOUNT_ID][region]
    backend._parameters[name].append(Parameter(
        account_id=DEFAULT_ACCOUNT_ID, name=name, value=value, parameter_type="String", description=None,
        allowed_pattern=None, keyid=None, last_modified_date=utcnow(), version=len(backend._parameters[name]) + 1,
        data_type="text"))
    return name


def publish_eks_ami(kubernetes_version, family, image_id):
    """Write an EKS public SSM parameter of the recommended AMI into moto."""
    return publish_ssm_parameter(
        "/aws/service/eks/optimized-ami/%s/%s/recommended/image_id" % (kubernetes_version, family), image_id)


_SESSIONS = {}


def _reused_session(params):
    """aws.aws_session, built once per set of options: a fresh boto3 Session re-reads every service model
    from disk, which dominates the run time of an in-process module test."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import session as aws

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


def _refusing(errors):
    """A botocore before-call handler: an operation named in ``errors`` ({operation: (code, message)}) gets AWS's
    error answer instead of moto's, so botocore raises the ClientError AWS would have caused."""
    from botocore.awsrequest import AWSResponse

    def refuse(model, **_kwargs):
        if model.name not in errors:
            return None
        code, message = errors[model.name]
        body = {"Error": {"Code": code, "Message": message},
                "ResponseMetadata": {"RequestId": "refused-1", "HTTPStatusCode": 403}}
        return AWSResponse("https://aws.invalid/", 403, {}, None), body

    return refuse


# moto 5.2.5 does not implement DescribeInstanceRefreshes: the modules' clients get this answer instead (the
# sandbox models instance refreshes in full; a unit test sets refreshes here with monkeypatch).
INSTANCE_REFRESHES = []


def _answer_instance_refreshes(model, **_kwargs):
    from botocore.awsrequest import AWSResponse

    if model.name != "DescribeInstanceRefreshes":
        return None
    body = {"InstanceRefreshes": list(INSTANCE_REFRESHES), "ResponseMetadata": {"HTTPStatusCode": 200}}
    return AWSResponse("https://aws.invalid/", 200, {}, None), body


def _aws_client_like_aws(params, service, session=None, calls=None, errors=None):
    from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import session as aws

    client = aws.aws_client(params, service, session=session)
    if calls is not None:
        client.meta.events.register("provide-client-params.*.*", lambda model, **_kwargs: calls.append(model.name))
    if errors:
        client.meta.events.register("before-call.*.*", _refusing(errors))
    if service == "autoscaling":
        client.meta.events.register("before-call.autoscaling.DescribeInstanceRefreshes", _answer_instance_refreshes)
    return _copy_source_version(client) if service == "ec2" else client


READ_ONLY_PREFIXES = ("Describe", "List", "Get")


def mutating(calls):
    """The AWS operations among ``calls`` that can change something (all but Describe*, List*, Get*)."""
    return [name for name in calls if not name.startswith(READ_ONLY_PREFIXES)]


@contextlib.contextmanager
def moto_clients(aws_calls=None, aws_errors=None):
    """The collection's AWS clients on this process's moto (see run_module_in_process for the arguments)."""
    from unittest import mock

    with mock.patch("ansible_collections.eksops.nodegroup.plugins.module_utils.host.clients.aws_session", _reused_session), \
            mock.patch("ansible_collections.eksops.nodegroup.plugins.module_utils.host.clients.aws_client",
                       lambda params, service, session=None: _aws_client_like_aws(params, service, session,
                                                                                  aws_calls, aws_errors)):
        yield


def _check_result_key(result, module):
    if not result.get("failed"):
        # Issue 12's result convention: the module's one result key beside Ansible's own.
        assert set(result) - ANSIBLE_RESULT_KEYS <= {result_key(module)}, sorted(result)


def run_module_in_process(main, args, capsys, check=False, diff=False, aws_calls=None, aws_errors=None):
    """Run a module's main() in this process (so moto's mock applies) and return its result dict.

    ``aws_calls``: a list that receives the name of every AWS operation the module calls.
    ``aws_errors``: {operation name: (AWS error code, message)}: those operations fail as AWS fails them.
    """
    import json

    from .module_args import patch_module_args

    module_args = dict(AWS_PARAMS)
    module_args.update(args)
    module_args.update(_ansible_check_mode=check, _ansible_diff=diff)
    capsys.readouterr()
    with patch_module_args(module_args), moto_clients(aws_calls, aws_errors):
        try:
            main()
        except SystemExit:
            pass
    result = json.loads(capsys.readouterr().out)
    _check_result_key(result, sys.modules[main.__module__])
    return result


def run_step_in_process(step, docs, args, check=False, diff=False, aws_calls=None, aws_errors=None, uses_k8s=True):
    """Run the work of a module that its action plugin runs on the controller (plugin_utils StepAction): the
    options checked against ``step``'s ARGUMENT_SPEC and CONSTRAINTS (with the Kubernetes options unless the action
    is AWS only, ``uses_k8s``, as its USES_K8S), then step_context.run_step as the action calls it, in this process
    (so moto's mock applies). ``docs``: the module's documentation file, whose RETURN names the result key.
    Arguments as run_module_in_process's."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clients import Clients

    from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.cluster_proof import prove_cluster
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import run_step

    module_args = dict(AWS_PARAMS)
    module_args.update(args)
    validation = ArgumentSpecValidator(merged_argument_spec(step.ARGUMENT_SPEC, uses_aws=True, uses_k8s=uses_k8s),
                                       **step.CONSTRAINTS).validate(module_args)
    if validation.error_messages:
        return dict(failed=True, msg="; ".join(validation.error_messages))
    params = validation.validated_parameters
    with moto_clients(aws_calls, aws_errors):
        result = run_step(step.run, params, Clients(params, "test", proof=prove_cluster), check, diff,
                          lambda line: None)
    _check_result_key(result, docs)
    return result
