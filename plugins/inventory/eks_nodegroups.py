# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: eks_nodegroups
short_description: Every node group of your EKS clusters, one host each
version_added: 0.1.0
description:
  - One inventory host per node group of the EKS clusters of the O(regions) given, of every kind this collection
    upgrades (EKS managed node groups, eksctl unmanaged node groups, plain self-managed Auto Scaling groups as
    terraform-aws-eks or the CloudFormation node group template make them), with the variables the playbooks take
    (C(cluster_name), C(nodegroup_name), C(asg_name), C(aws_region)) and what the group runs.
  - The configuration file must end with C(eks_nodegroups.yml) or C(eks_nodegroups.yaml).
  - One account per file, as amazon.aws's aws_ec2 inventory; put one file per account (a profile or a role each)
    in an inventory directory for several accounts.
  - "Host variables: C(cluster_name), C(nodegroup_name), C(asg_name), C(aws_region), C(aws_account_id), C(cluster_arn),
    C(cluster_version), C(kind) (V(managed), V(self_managed_eksctl) or V(self_managed)), C(owner) (V(EKS), V(eksctl),
    V(CloudFormation), V(terraform-aws-eks) or null), C(nodegroup_kubernetes_version), C(nodegroup_release_version)
    and C(nodegroup_ami_type) (managed), C(nodegroup_image_id) and C(nodegroup_image_name) (self-managed, from the
    launch template version the group launches), C(launch_template), C(nodegroup_status) (managed),
    C(nodegroup_tags), and C(cluster_nodegroups), the host names of every node group of its cluster that this source
    lists (with which C(playbooks/upgrade_fleet.yml) tells a job slice of AWX from the whole inventory)."
  - The AWS requests are bounded per region by the clusters and managed node groups, never by the Auto Scaling
    groups; docs/inventory.md counts them. Turn on O(cache) to make them once per O(cache_timeout).
extends_documentation_fragment:
  - inventory_cache
  - constructed
options:
  plugin:
    description: The name of this plugin; V(eksops.nodegroup.eks_nodegroups).
    required: true
    type: str
    choices: [eksops.nodegroup.eks_nodegroups]
  regions:
    description:
      - The regions whose clusters to list.
      - Empty, O(region).
    type: list
    elements: str
    default: []
  region:
    description:
      - The region to list when O(regions) is empty, and the one O(assume_role_arn) asks STS in. Unset, the profile's.
    type: str
    aliases: [aws_region]
    env:
      - name: AWS_REGION
      - name: AWS_DEFAULT_REGION
  clusters:
    description:
      - Shell-style patterns (V(prod-*)) of the cluster names to list; a cluster matching none is not described.
    type: list
    elements: str
    default: ['*']
  tags:
    description:
      - Keep only the node groups whose tags (a managed node group's own, a self-managed group's Auto Scaling group's)
        carry every key given, with a value matching its shell-style pattern; a null value matches any value.
    type: dict
    default: {}
  hostname:
    description:
      - A Jinja2 expression over the host variables that names each host, as O(compose) entries are.
      - Unset, C(<cluster_name>/<nodegroup_name>). Two node groups of one name fail the inventory, naming both;
        with clusters of one name in several regions or accounts use for example
        V(aws_account_id ~ '/' ~ aws_region ~ '/' ~ cluster_name ~ '/' ~ nodegroup_name).
    type: str
  access_key:
    description: AWS access key ID.
    type: str
    aliases: [aws_access_key_id, aws_access_key]
    env:
      - name: AWS_ACCESS_KEY_ID
      - name: AWS_ACCESS_KEY
  secret_key:
    description: AWS secret access key.
    type: str
    aliases: [aws_secret_access_key, aws_secret_key]
    env:
      - name: AWS_SECRET_ACCESS_KEY
      - name: AWS_SECRET_KEY
  session_token:
    description: AWS STS session token for use with temporary credentials.
    type: str
    aliases: [aws_session_token]
    env:
      - name: AWS_SESSION_TOKEN
      # What AWX's Amazon Web Services credential injects for temporary credentials (issue 28 item 3), and the
      # collection's modules read too (module_utils/aws/session.py).
      - name: AWS_SECURITY_TOKEN
      - name: EC2_SECURITY_TOKEN
  profile:
    description: A named AWS profile; mutually exclusive with O(access_key) and O(secret_key).
    type: str
    aliases: [aws_profile]
    env:
      - name: AWS_PROFILE
      - name: AWS_DEFAULT_PROFILE
  endpoint_url:
    description:
      - One URL for every AWS API request (a test stack). Unset, botocore's own resolution, which reads
        C(AWS_ENDPOINT_URL) and C(AWS_ENDPOINT_URL_<SERVICE>).
    type: str
    aliases: [aws_endpoint_url]
    env:
      - name: AWS_URL
  assume_role_arn:
    description:
      - The ARN of an IAM role to assume (once per inventory source) with the credentials above, to list another
        account's node groups.
    type: str
    aliases: [iam_role_arn]
notes:
  - The requests need eks:ListClusters, eks:DescribeCluster, eks:ListNodegroups, eks:DescribeNodegroup,
    autoscaling:DescribeAutoScalingGroups, ec2:DescribeLaunchTemplateVersions and ec2:DescribeImages (and
    sts:AssumeRole for O(assume_role_arn)).
"""

EXAMPLES = r"""
# fleet.eks_nodegroups.yml: every node group of the prod-* clusters of two regions, grouped by cluster and by the
# upgrade ring of the tag upgrade-ring.
plugin: eksops.nodegroup.eks_nodegroups
regions: [us-east-1, eu-west-1]
clusters: ['prod-*']
keyed_groups:
  - key: nodegroup_tags['upgrade-ring'] | default('none')
    prefix: ring
  - key: cluster_name
    prefix: cluster
  - key: kind
    prefix: kind
groups:
  outdated: nodegroup_kubernetes_version != cluster_version
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/eks_nodegroups
cache_timeout: 600

# staging.eks_nodegroups.yml, beside it in the inventory directory: another account through a role, only the node
# groups tagged team=payments (one YAML document per file: shown commented here):
# plugin: eksops.nodegroup.eks_nodegroups
# regions: [us-west-2]
# assume_role_arn: arn:aws:iam::210987654321:role/eks-fleet-inventory
# tags:
#   team: payments
# hostname: aws_account_id ~ '/' ~ cluster_name ~ '/' ~ nodegroup_name
"""

from collections.abc import Callable, Mapping
from typing import Any

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import (
    HAS_BOTO3,
    aws_client,
    aws_session,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.sts import assume_role
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.fleet_inventory import region_nodegroups

CREDENTIAL_OPTIONS = ("region", "access_key", "secret_key", "session_token", "profile", "endpoint_url")
# What CloudTrail shows of the assumed role's session (amazon.aws names its own ansible_aws_dynamic_inventory).
ROLE_SESSION_NAME = "eksops_nodegroup_inventory"
# The variables that tell one node group from another of the same host name.
IDENTITY = ("cluster_arn", "kind", "asg_name")


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    """The eks_nodegroups inventory source (issue 28 item 1)."""

    NAME = "eksops.nodegroup.eks_nodegroups"
    INVENTORY_FILE_SUFFIXES = ("eks_nodegroups.yml", "eks_nodegroups.yaml")

    def __init__(self) -> None:
        super().__init__()
        # {region: {operation: requests}} of the last query: the discovery cost, measured (docs/inventory.md).
        self.requests: dict[str, dict[str, int]] = {}

    def verify_file(self, path: str) -> bool:
        return super().verify_file(path) and path.endswith(self.INVENTORY_FILE_SUFFIXES)

    def parse(self, inventory: Any, loader: Any, path: str, cache: bool = True) -> None:
        super().parse(inventory, loader, path)
        self._read_config_data(path)
        if not HAS_BOTO3:
            raise AnsibleParserError("%s needs boto3 and botocore in the Python that runs Ansible" % self.NAME)
        cache_key = self.get_cache_key(path)
        use_cache = cache and self.get_option("cache")
        records = self._cached(cache_key) if use_cache else None
        if records is None:
            try:
                records = self.query()
            except UpgradeError as err:
                raise AnsibleError("%s: %s" % (self.NAME, err)) from err
            if self.get_option("cache"):
                self._cache[cache_key] = records
        self.populate(records)

    def _cached(self, cache_key: str) -> list[dict[str, Any]] | None:
        try:
            return self._cache[cache_key]
        except KeyError:  # not cached, or expired
            return None

    def aws_params(self) -> dict[str, Any]:
        """The AWS options, with an assumed role's credentials in place of the caller's when assume_role_arn is set."""
        params = dict((name, self.get_option(name)) for name in CREDENTIAL_OPTIONS)
        role = self.get_option("assume_role_arn")
        if role:
            sts = aws_client(dict(params, region=params["region"] or (self.get_option("regions") or [None])[0]), "sts")
            params.update(assume_role(sts, role, ROLE_SESSION_NAME), profile=None)
        return params

    def query(self) -> list[dict[str, Any]]:
        """The records of every node group of every region, the AWS requests made shown with -vv."""
        params = self.aws_params()
        regions = self.get_option("regions") or [self._session_region(params)]
        records = []
        for region in regions:
            session = aws_session(dict(params, region=region))
            calls = self.requests.setdefault(session.region_name, {})
            records.extend(region_nodegroups(self._counted_clients(params, session, calls), session.region_name,
                                             self.get_option("clusters"), self.get_option("tags")))
            self.display.vv("%s: %s: %d AWS requests (%s)" % (
                self.NAME, session.region_name, sum(calls.values()),
                ", ".join("%s %d" % call for call in sorted(calls.items()))))
        return records

    def _session_region(self, params: Mapping[str, Any]) -> str:
        """The region of the session when no regions are given (AWS_REGION, the profile's)."""
        try:
            return aws_session(params).region_name
        except UpgradeError as err:
            if err.details.get("parameter") != "region":
                raise
            raise AnsibleParserError("%s: no region; set the regions or region option (AWS_REGION), or the profile's region"
                                     % self.NAME) from err

    @staticmethod
    def _counted_clients(params: Mapping[str, Any], session: Any, calls: dict[str, int]) -> Callable[[str], Any]:
        """``client(service)`` of the region's session, each request counted in ``calls`` by operation."""

        def count(model: Any, **_kwargs: Any) -> None:
            calls[model.name] = calls.get(model.name, 0) + 1

        def client(service: str) -> Any:
            made = aws_client(params, service, session=session)
            made.meta.events.register("before-call", count)
            return made

        return client

    def host_name(self, record: Mapping[str, Any]) -> str:
        expression = self.get_option("hostname")
        if not expression:
            return "%s/%s" % (record["cluster_name"], record["nodegroup_name"])
        return str(self._compose(expression, dict(record)))

    def populate(self, records: list[dict[str, Any]]) -> None:
        """One host per record, its variables set, then compose, groups and keyed_groups as aws_ec2 applies them."""
        strict = self.get_option("strict")
        named: dict[str, Mapping[str, Any]] = {}
        for record in records:
            name = self.host_name(record)
            self._refuse_duplicate(name, record, named.get(name) or self._known_host(name))
            named[name] = record
            self.inventory.add_host(name)
            for key, value in record.items():
                self.inventory.set_variable(name, key, value)
            self._set_composite_vars(self.get_option("compose"), record, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), record, name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), record, name, strict=strict)
        # Each host names its cluster's node groups: AWX's job slicing hands a job only some hosts of the inventory
        # (awx/main/models/inventory.py, get_sliced_hosts), which the fleet playbook sees by what is missing.
        clusters: dict[str, list[str]] = {}
        for name, record in named.items():
            clusters.setdefault(record["cluster_arn"], []).append(name)
        for name, record in named.items():
            self.inventory.set_variable(name, "cluster_nodegroups", sorted(clusters[record["cluster_arn"]]))

    def _known_host(self, name: str) -> Mapping[str, Any] | None:
        """The variables of a host of that name another source (another file of the directory) already added."""
        host = self.inventory.get_host(name)
        return host.get_vars() if host is not None else None

    def _refuse_duplicate(self, name: str, record: Mapping[str, Any], other: Mapping[str, Any] | None) -> None:
        """Two node groups under one host name would merge their variables: a playbook would upgrade one of them
        with the other's."""
        if other is None or all(other.get(key) == record.get(key) for key in IDENTITY):
            return
        raise AnsibleParserError(
            "%s: host %s would be two node groups: %s and %s; set the hostname option to tell them apart, for "
            "example aws_account_id ~ '/' ~ aws_region ~ '/' ~ cluster_name ~ '/' ~ asg_name" % (
                self.NAME, name, *("%s %s (%s, Auto Scaling group %s)" % (
                    group.get("cluster_arn"), group.get("nodegroup_name"), group.get("kind"), group.get("asg_name"))
                    for group in (other, record))))
