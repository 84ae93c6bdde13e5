# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SPEC K4: the Kubernetes API in use is shown to be cluster_name's (same endpoint as DescribeCluster's, or the
node group's instances have their nodes there by spec.providerID), else ClusterUnreachable naming both."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import cluster_proof
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import CLUSTER_UNREACHABLE, UpgradeError

EKS = "https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com"
NOW = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
TIMEOUT = 900


# --- endpoints ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("first, second", [
    (EKS, EKS),
    (EKS, EKS + "/"),                                        # DescribeCluster and kubeconfigs differ on this
    (EKS, EKS + ":443"),                                     # the default port spelled out
    (EKS, EKS.upper().replace("HTTPS://", "https://")),      # host names are case-insensitive
    (EKS, "HTTPS://" + EKS[len("https://"):]),               # so is the scheme
    (EKS, "  %s  " % EKS),
    ("http://127.0.0.1", "http://127.0.0.1:80/"),
    ("https://proxy.example.com/k8s/demo", "https://proxy.example.com:443/k8s/demo/"),
])
def test_same_endpoint_ignores_spelling(first, second):
    assert cluster_proof.same_endpoint(first, second)
    swapped = dict(first=second, second=first)
    assert cluster_proof.same_endpoint(**swapped)


@pytest.mark.parametrize("first, second", [
    (EKS, "https://ABCDEF0123456789.gr7.us-east-1.eks.amazonaws.com"),    # another cluster
    (EKS, EKS + ":6443"),                                                 # another port
    (EKS, "http://" + EKS[len("https://"):]),                             # another scheme, so another port
    (EKS, EKS + "/proxy"),                                                # a path is part of the endpoint
    ("https://proxy.example.com/k8s/demo", "https://proxy.example.com/k8s/prod"),
    ("https://127.0.0.1:6443", "https://127.0.0.1:6444"),
    (EKS, ""),
])
def test_different_endpoints_differ(first, second):
    assert not cluster_proof.same_endpoint(first, second)


def test_endpoint_key():
    assert cluster_proof.endpoint_key(EKS + "/") == ("https", EKS[len("https://"):].lower(), 443, "")
    assert cluster_proof.endpoint_key("http://LOCALHOST:8001/api/") == ("http", "localhost", 8001, "/api")


# --- node evidence ------------------------------------------------------------------------------------------

def record(instance_id, node=True, age=3600, state="InService"):
    """A join_instances_nodes record ``age`` seconds after its launch (None: EC2 did not say)."""
    launched = None if age is None else (NOW - datetime.timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return dict(instance_id=instance_id, lifecycle_state=state, launch_time=launched,
                node_name=("ip-" + instance_id) if node else None)


def evidence(*instances):
    return cluster_proof.node_evidence(list(instances), NOW, TIMEOUT)


def test_every_old_instance_with_its_node_proves_the_cluster():
    found = evidence(record("i-1"), record("i-2"))
    assert found == dict(proven=True, with_node=["i-1", "i-2"], missing=[], in_service=2)


def test_a_young_instance_without_a_node_is_still_joining_and_tolerated():
    found = evidence(record("i-1"), record("i-2", node=False, age=TIMEOUT - 1))
    assert found["proven"] is True and found["missing"] == [] and found["with_node"] == ["i-1"]


def test_an_old_instance_without_a_node_disproves_the_cluster():
    """An instance launched longer ago than the node-ready timeout would have its node by now in its own
    cluster: one node by chance (an instance id reused in a test cluster, a stale node) proves nothing."""
    found = evidence(record("i-1"), record("i-2", node=False, age=TIMEOUT))
    assert found["proven"] is False and found["missing"] == ["i-2"] and found["with_node"] == ["i-1"]


def test_no_node_at_all_is_no_proof_even_when_every_instance_is_young():
    found = evidence(record("i-1", node=False, age=10), record("i-2", node=False, age=20))
    assert found == dict(proven=False, with_node=[], missing=[], in_service=2)
    assert evidence()["proven"] is False


def test_only_in_service_instances_count():
    found = evidence(record("i-1"), record("i-2", node=False, state="Pending"),
                     record("i-3", node=False, state="Terminating"), record("i-4", state="Terminating"))
    assert found == dict(proven=True, with_node=["i-1"], missing=[], in_service=1)
    # an instance leaving the group with its node does not prove anything on its own
    assert evidence(record("i-4", state="Terminating"))["proven"] is False


def test_an_instance_of_unknown_age_without_a_node_is_not_held_against_the_cluster():
    found = evidence(record("i-1"), record("i-2", node=False, age=None))
    assert found["proven"] is True and found["missing"] == []


# --- the error ----------------------------------------------------------------------------------------------

API = "https://127.0.0.1:6443"


@pytest.mark.parametrize("found, why", [
    (None, "no node group was given"),
    (dict(proven=False, with_node=[], missing=[], in_service=3), "none of the 3 InService instances"),
    (dict(proven=False, with_node=["i-1"], missing=["i-2", "i-3"], in_service=3), "i-2, i-3"),
])
def test_wrong_cluster_error_names_both_endpoints_and_cluster_name(found, why):
    err = cluster_proof.wrong_cluster_error("demo", API, EKS, found, asg_name=None if found is None else "workers-1")
    assert err.code == CLUSTER_UNREACHABLE
    assert err.details["parameter"] == "cluster_name"
    assert (err.details["api_endpoint"], err.details["eks_endpoint"]) == (API, EKS)
    assert API in err.msg and EKS in err.msg and "demo" in err.msg
    assert why in err.msg and "changed nothing" in err.msg
    if found is not None:
        assert "workers-1" in err.msg
        assert (err.details["instances_with_node"], err.details["instances_without_node"]) == (
            found["with_node"], found["missing"])


def test_nodeless_instances_say_why_each_has_no_node():
    ec2 = {"i-young": {"LaunchTime": NOW - datetime.timedelta(seconds=60)},
           "i-old": {"LaunchTime": NOW - datetime.timedelta(seconds=TIMEOUT + 300)}}
    found = cluster_proof.nodeless_instances(["i-young", "i-old", "i-unknown"], ec2, NOW, TIMEOUT)
    assert [(i["instance_id"], i["launched_seconds_ago"]) for i in found] == [
        ("i-young", 60), ("i-old", TIMEOUT + 300), ("i-unknown", None)]
    assert "has not joined the cluster yet" in found[0]["reason"]
    assert "never joined the cluster" in found[1]["reason"]
    assert "does not say when it was launched" in found[2]["reason"]


# --- prove_cluster: the endpoints first, the node evidence only when they differ -----------------------------

class Unused:
    def __getattr__(self, name):
        raise AssertionError("called %s although the endpoints match" % name)


def test_matching_endpoints_need_no_aws_or_kubernetes_call():
    cluster_proof.prove_cluster(dict(cluster_name="demo", nodegroup_name="workers"),
                                lambda service: Unused(), Unused(), EKS + ":443/", EKS)


def test_other_endpoint_without_a_node_group_fails_without_looking_further():
    with pytest.raises(UpgradeError) as raised:
        cluster_proof.prove_cluster(dict(cluster_name="demo", nodegroup_name=None),
                                    lambda service: Unused(), Unused(), API, EKS)
    assert raised.value.code == CLUSTER_UNREACHABLE
    assert API in raised.value.msg and EKS in raised.value.msg
