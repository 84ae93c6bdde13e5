# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    # Which node group a module acts on, for the modules that find its Auto Scaling group
    # (argument spec: NODEGROUP_ARGUMENT_SPEC in module_utils/nodegroup/discovery.py).
    DOCUMENTATION = r"""
options:
  cluster_name:
    description:
      - Name of the EKS cluster.
      - The Kubernetes API the module talks to must be this cluster's (SPEC K4) - its endpoint is the one
        C(DescribeCluster) returns, or (with another endpoint, e.g. a proxy in a kubeconfig) the node group's
        InService instances have their nodes there, matched by C(spec.providerID). Otherwise the module fails
        with C(ClusterUnreachable) before changing anything.
    type: str
    required: true
  nodegroup_name:
    description:
      - Name of the node group. Its kind (SPEC K1) is found with it, in this order - an EKS managed node group
        of that name (C(DescribeNodegroup)); an Auto Scaling group tagged by eksctl
        C(alpha.eksctl.io/cluster-name=<cluster_name>) and C(alpha.eksctl.io/nodegroup-name=<nodegroup_name>);
        an Auto Scaling group tagged C(kubernetes.io/cluster/<cluster_name>) whose C(Name) tag is
        C(<nodegroup_name>) (terraform-aws-eks) or C(<cluster_name>-<nodegroup_name>-Node) (the CloudFormation
        node group template), or whose own name is C(<nodegroup_name>) or C(<nodegroup_name>-<suffix>)
        (terraform's name_prefix suffix - 18 digits and 8 hex digits). Two matches are refused, naming both.
    type: str
    required: true
  asg_name:
    description:
      - Name of the node group's Auto Scaling group, when discovery by O(nodegroup_name) cannot find it or finds
        several. Its kind is read from its tags.
      - A group whose tags name another cluster, or (EKS managed and eksctl groups, whose tags name their node
        group) another node group, is refused.
    type: str
"""
