# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""User data formats: real AL2, AL2023 and Bottlerocket user data read as the EKS AMIs read it, round trips through
render/merge/parse, base64/gzip input and unknown input."""

from __future__ import annotations

import base64
import gzip

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eks_sandbox.bootstrap import (OS_AL2, OS_AL2023, OS_BOTTLEROCKET, OS_UNKNOWN, OS_WINDOWS, TAINT_EFFECTS, BootConfig,
                                   merge_user_data, os_of_ami_family, parse_user_data, render_user_data)

ENDPOINT = "https://0123456789ABCDEF0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com"
CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM1ekNDQWMrZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWTVJNd0VRWUQK"

# An AL2 managed node group's user data as EKS generates it (shape as posted in terraform-aws-modules/
# terraform-aws-eks issues #1770 and #2297): no blank line after the part header, variables, one bootstrap.sh call.
# (A backslash at the end of a source line here only folds the long line: the user data has no line break there.)
EKS_AL2_USER_DATA = f"""MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: text/x-shellscript; charset="us-ascii"
#!/bin/bash
set -ex
B64_CLUSTER_CA={CA}
API_SERVER_URL={ENDPOINT}
K8S_CLUSTER_DNS_IP=172.20.0.10
/etc/eks/bootstrap.sh prod-cluster --kubelet-extra-args '--node-labels=eks.amazonaws.com/sourceLaunchTemplateV\
ersion=1,eks.amazonaws.com/nodegroup-image=ami-0a1b2c3d4e5f60001,eks.amazonaws.com/capacityType=ON_DEMAND,eks.amazon\
aws.com/nodegroup=ng1,eks.amazonaws.com/sourceLaunchTemplateId=lt-0aa2abf08a23e8ddc --max-pods=58' --b64-cluster-ca $\
B64_CLUSTER_CA --apiserver-endpoint $API_SERVER_URL --dns-cluster-ip $K8S_CLUSTER_DNS_IP --use-max-pods false

--//--
"""
EKS_AL2_LABELS = {
    "eks.amazonaws.com/sourceLaunchTemplateVersion": "1", "eks.amazonaws.com/nodegroup-image": "ami-0a1b2c3d4e5f60001",
    "eks.amazonaws.com/capacityType": "ON_DEMAND", "eks.amazonaws.com/nodegroup": "ng1",
    "eks.amazonaws.com/sourceLaunchTemplateId": "lt-0aa2abf08a23e8ddc"}

# The EKS user guide's launch template example for bootstrap.sh (launch-templates.adoc), with line continuations.
GUIDE_AL2_USER_DATA = f"""MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="==MYBOUNDARY=="

--==MYBOUNDARY==
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
set -ex
/etc/eks/bootstrap.sh my-cluster \\
  --b64-cluster-ca {CA} \\
  --apiserver-endpoint {ENDPOINT} \\
  --dns-cluster-ip 10.100.0.10 \\
  --kubelet-extra-args '--max-pods=30' \\
  --use-max-pods false

--==MYBOUNDARY==--
"""

# nodeadm's own example of merging (awslabs/amazon-eks-ami nodeadm/doc/examples.md), plus a part of kubelet settings.
NODEADM_MERGE_USER_DATA = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: application/node.eks.aws

---
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: my-cluster
    apiServerEndpoint: https://example.com
    certificateAuthority: Y2VydGlmaWNhdGVBdXRob3JpdHk=
    cidr: 10.100.0.0/16

--BOUNDARY
Content-Type: application/node.eks.aws

---
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      shutdownGracePeriod: 30s
      maxPods: 17
      featureGates:
        DisableKubeletCloudCredentialProviders: true
    flags:
    - --node-labels=eks.amazonaws.com/nodegroup-image=ami-0a1b2c3d4e5f60001,eks.amazonaws.com/capacityType=SPOT,\
eks.amazonaws.com/nodegroup=ng1
    - --register-with-taints=dedicated=gpu:NoSchedule

--BOUNDARY--
"""

# bottlerocket-os/bottlerocket README's labels and taints example, with the settings EKS requires.
BOTTLEROCKET_USER_DATA = f"""[settings.kubernetes]
api-server = "{ENDPOINT}"
cluster-certificate = "{CA}"
cluster-name = "prod-cluster"
max-pods = 29

[settings.kubernetes.node-labels]
"eks.amazonaws.com/nodegroup" = "ng1"
"label1" = "foo"

[settings.kubernetes.node-taints]
"dedicated" = ["experimental:PreferNoSchedule", "experimental:NoExecute"]
"special" = ["true:NoSchedule"]
"""


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def render(os: str, **overrides) -> str:
    arguments = {"cluster_name": "prod-cluster", "api_server_endpoint": ENDPOINT, "certificate_authority": CA,
                 "labels": {"eks.amazonaws.com/nodegroup": "ng1", "role": "web"},
                 "taints": [taint("dedicated", "gpu", "NoSchedule")], "max_pods": 58, **overrides}
    return render_user_data(os, **arguments)


# --------------------------------------------------------------------------------------------- AMI families

@pytest.mark.parametrize("family,expected", [
    ("amazon-linux-2", OS_AL2), ("amazon-linux-2-gpu", OS_AL2), ("amazon-linux-2-arm64", OS_AL2),
    ("amazon-linux-2023/x86_64/standard", OS_AL2023), ("amazon-linux-2023/arm64/nvidia", OS_AL2023),
    ("bottlerocket/aws-k8s-1.30/x86_64", OS_BOTTLEROCKET), ("bottlerocket", OS_BOTTLEROCKET),
    ("windows/core-2022", OS_WINDOWS),
])
def test_os_of_ami_family(family, expected):
    assert os_of_ami_family(family) == expected


@pytest.mark.parametrize("family", ["windows-server-2022", "amazon-linux-20", "ubuntu/22.04"])
def test_unknown_ami_family_is_an_error(family):
    with pytest.raises(ValueError, match="unknown AMI family"):
        os_of_ami_family(family)


# ------------------------------------------------------------------------------------------------------- AL2

def test_eks_managed_al2_user_data_is_read_with_its_variables_expanded():
    assert parse_user_data(EKS_AL2_USER_DATA) == BootConfig(
        OS_AL2, cluster_name="prod-cluster", api_server_endpoint=ENDPOINT, labels=EKS_AL2_LABELS, taints=[],
        max_pods=58)


def test_user_guide_al2_example_with_line_continuations():
    assert parse_user_data(GUIDE_AL2_USER_DATA) == BootConfig(
        OS_AL2, cluster_name="my-cluster", api_server_endpoint=ENDPOINT, max_pods=30)


@pytest.mark.parametrize("options,max_pods", [
    ("", None),                                   # bootstrap.sh takes maxPods from eni-max-pods.txt
    ("--use-max-pods true", None),
    ("--use-max-pods false", 110),                # the kubelet's default
    ("--use-max-pods false --kubelet-extra-args '--max-pods=20'", 20),
    ("--kubelet-extra-args '--max-pods 20 --max-pods=30'", 30),   # the last flag wins, either spelling
])
def test_al2_max_pods(options, max_pods):
    assert parse_user_data(f"#!/bin/bash\n/etc/eks/bootstrap.sh c {options}\n").max_pods == max_pods


def test_al2_kubelet_flags_as_the_kubelet_parses_them():
    script = ("#!/bin/bash\n"
              "/etc/eks/bootstrap.sh --apiserver-endpoint https://k c1 --kubelet-extra-args "
              "'--node-labels a=1,b=2 --node-labels=b=3,example.com/tier=db "
              "--register-with-taints=old=x:NoSchedule --register-with-taints=gpu=true:NoSchedule,spot:NoExecute'"
              " --container-runtime containerd && echo joined\n")
    assert parse_user_data(script) == BootConfig(
        OS_AL2, cluster_name="c1", api_server_endpoint="https://k",
        labels={"a": "1", "b": "3", "example.com/tier": "db"},
        taints=[taint("gpu", "true", "NoSchedule"), taint("spot", "", "NoExecute")])


def test_al2_variables_follow_shell_quoting_and_export():
    script = ('#!/bin/bash\nexport CLUSTER="c2"\nARGS="--node-labels=team=a --max-pods=12"\n'
              "LABEL=ignored\n"
              '/etc/eks/bootstrap.sh "$CLUSTER" --kubelet-extra-args "$ARGS" --apiserver-endpoint \'$LABEL\'\n')
    assert parse_user_data(script) == BootConfig(
        OS_AL2, cluster_name="c2", api_server_endpoint="$LABEL", labels={"team": "a"}, max_pods=12)


def test_al2_last_bootstrap_call_wins_across_mime_parts():
    user = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="==B=="\n\n--==B==\n'
            'Content-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash\n'
            "/etc/eks/bootstrap.sh mine --kubelet-extra-args '--node-labels=mine=1'\n--==B==--\n")
    merged = merge_user_data(user, render(OS_AL2))
    assert parse_user_data(user).labels == {"mine": "1"}
    assert parse_user_data(merged) == parse_user_data(render(OS_AL2))


@pytest.mark.parametrize("script", [
    "/etc/eks/bootstrap.sh c --kubelet-extra-args '--node-labels=a=b'\n",  # no #!: cloud-init does not run it
    "#!/bin/bash\n# /etc/eks/bootstrap.sh c\necho no call here\n",
    "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args '--node-labels=a=b\n",  # unbalanced quote
])
def test_al2_scripts_without_a_bootstrap_call_are_unknown(script):
    assert parse_user_data(script) == BootConfig(OS_UNKNOWN)


def test_al2_bootstrap_without_cluster_name_is_al2_without_cluster():
    assert parse_user_data("#!/bin/bash\n/etc/eks/bootstrap.sh --use-max-pods false\n") == BootConfig(
        OS_AL2, max_pods=110)


# ---------------------------------------------------------------------------------------------------- AL2023

def test_nodeadm_merges_node_configs_in_order():
    assert parse_user_data(NODEADM_MERGE_USER_DATA) == BootConfig(
        OS_AL2023, cluster_name="my-cluster", api_server_endpoint="https://example.com",
        labels={"eks.amazonaws.com/nodegroup-image": "ami-0a1b2c3d4e5f60001",
                "eks.amazonaws.com/capacityType": "SPOT", "eks.amazonaws.com/nodegroup": "ng1"},
        taints=[taint("dedicated", "gpu", "NoSchedule")], max_pods=17)


def nodeconfig_part(spec: str) -> str:
    return ("--BOUNDARY\nContent-Type: application/node.eks.aws\n\n"
            f"apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n{spec}\n")


def multipart(*parts: str) -> str:
    return 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="BOUNDARY"\n\n' + "".join(parts) + \
        "--BOUNDARY--\n"


def test_nodeadm_merge_appends_flags_and_later_non_empty_values_win():
    first = nodeconfig_part(
        "  cluster:\n    name: first\n    apiServerEndpoint: https://first\n"
        "  kubelet:\n    config:\n      maxPods: 20\n      registerWithTaints:\n"
        "      - {key: a, value: x, effect: NoSchedule}\n    flags: ['--node-labels=a=1,b=1']")
    second = nodeconfig_part(
        "  cluster:\n    name: ''\n    apiServerEndpoint: https://second\n"
        "  kubelet:\n    config:\n      maxPods: 0\n      registerWithTaints:\n"
        "      - {key: b, effect: NoExecute}\n    flags: ['--node-labels=b=2']")
    assert parse_user_data(multipart(first, second)) == BootConfig(
        OS_AL2023, cluster_name="first", api_server_endpoint="https://second", labels={"a": "1", "b": "2"},
        taints=[taint("b", "", "NoExecute")], max_pods=20)   # '' and 0 are Go zero values: they do not override


def test_kubelet_flags_override_the_kubelet_config():
    spec = ("  cluster: {name: c, apiServerEndpoint: 'https://k'}\n  kubelet:\n    config:\n      maxPods: 20\n"
            "      registerWithTaints: [{key: a, value: x, effect: NoSchedule}]\n"
            "    flags: ['--max-pods=40', '--register-with-taints=', '--node-labels', 'x=y']")
    assert parse_user_data(multipart(nodeconfig_part(spec))) == BootConfig(
        OS_AL2023, cluster_name="c", api_server_endpoint="https://k", labels={"x": "y"}, max_pods=40)


def test_nodeconfig_without_mime_and_in_a_base64_part_and_json():
    plain = "---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: plain\n"
    assert parse_user_data(plain) == BootConfig(OS_AL2023, cluster_name="plain")
    encoded_part = ("--BOUNDARY\nContent-Type: application/node.eks.aws\n\n"
                    + base64.b64encode(plain.encode()).decode() + "\n")
    assert parse_user_data(multipart(encoded_part)).cluster_name == "plain"
    as_json = '{"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": {"cluster": {"name": "j"}}}'
    assert parse_user_data(as_json).cluster_name == "j"


def test_nodeconfig_wins_over_a_bootstrap_call_and_other_parts_are_ignored():
    user_data = multipart(
        "--BOUNDARY\nContent-Type: text/x-shellscript\n\n#!/bin/bash\n/etc/eks/bootstrap.sh other\n",
        "--BOUNDARY\nContent-Type: text/cloud-config\n\n#cloud-config\npackages: [jq]\n",
        nodeconfig_part("  cluster: {name: mine}"))
    assert parse_user_data(user_data) == BootConfig(OS_AL2023, cluster_name="mine")


def test_other_kinds_and_api_groups_are_not_node_configs():
    user_data = multipart(
        "--BOUNDARY\nContent-Type: application/node.eks.aws\n\napiVersion: v1\nkind: ConfigMap\n",
        "--BOUNDARY\nContent-Type: application/node.eks.aws\n\napiVersion: other/v1\nkind: NodeConfig\n")
    assert parse_user_data(user_data) == BootConfig(OS_UNKNOWN)


# ---------------------------------------------------------------------------------------------- Bottlerocket

def test_bottlerocket_user_data():
    assert parse_user_data(BOTTLEROCKET_USER_DATA) == BootConfig(
        OS_BOTTLEROCKET, cluster_name="prod-cluster", api_server_endpoint=ENDPOINT,
        labels={"eks.amazonaws.com/nodegroup": "ng1", "label1": "foo"},
        taints=[taint("dedicated", "experimental", "PreferNoSchedule"),
                taint("dedicated", "experimental", "NoExecute"), taint("special", "true", "NoSchedule")],
        max_pods=29)


def test_bottlerocket_single_string_taints_dotted_keys_and_empty_taint_values():
    user_data = ('settings.kubernetes.cluster-name = "c"\n'
                 'settings.kubernetes.node-labels."example.com/role" = "db"\n'
                 "[settings.kubernetes.node-taints]\n"
                 '"dedicated" = "experimental:PreferNoSchedule"\n"bare" = [":NoSchedule"]\n')
    assert parse_user_data(user_data) == BootConfig(
        OS_BOTTLEROCKET, cluster_name="c", labels={"example.com/role": "db"},
        taints=[taint("dedicated", "experimental", "PreferNoSchedule"), taint("bare", "", "NoSchedule")])


def test_bottlerocket_settings_without_kubernetes():
    assert parse_user_data('[settings]\nmotd = "hi"\n') == BootConfig(OS_BOTTLEROCKET)


# ----------------------------------------------------------------------------------------- encodings, unknown

@pytest.mark.parametrize("user_data", [EKS_AL2_USER_DATA, NODEADM_MERGE_USER_DATA, BOTTLEROCKET_USER_DATA])
def test_base64_gzip_and_bytes_read_the_same(user_data):
    expected = parse_user_data(user_data)
    assert expected.os != OS_UNKNOWN
    raw = user_data.encode()
    wrapped = base64.encodebytes(raw).decode()   # 76-column lines, as the base64 CLI writes them
    for variant in (raw, base64.b64encode(raw), base64.b64encode(raw).decode(), wrapped, gzip.compress(raw),
                    base64.b64encode(gzip.compress(raw)).decode()):
        assert parse_user_data(variant) == expected


@pytest.mark.parametrize("user_data", [
    "", "   \n", b"", "hello", "#cloud-config\npackages: [jq]\n", "[other]\nkey = 1\n",
    "apiVersion: v1\nkind: Pod\n", "!!!not base64!!!", b"\x00\xff\xfe",
    'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n--B\nContent-Type: text/cloud-config\n\n'
    "#cloud-config\n--B--\n",
])
def test_unknown_user_data_never_joins(user_data):
    assert parse_user_data(user_data) == BootConfig(OS_UNKNOWN, None, None, {}, [], None)


# ---------------------------------------------------------------------------------------------- round trips

label_keys = st.from_regex(
    r"(?:[a-z0-9]{1,8}(?:\.[a-z0-9]{1,8}){0,2}/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?", fullmatch=True)
label_values = st.from_regex(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?)?", fullmatch=True)
label_maps = st.dictionaries(label_keys, label_values, max_size=6)
taint_lists = st.lists(st.builds(taint, label_keys, label_values, st.sampled_from(TAINT_EFFECTS)), max_size=4,
                       unique_by=lambda t: (t["key"], t["effect"]))   # the kubelet refuses duplicates
max_pods_values = st.none() | st.integers(min_value=1, max_value=737)
formats = st.sampled_from([OS_AL2, OS_AL2023, OS_BOTTLEROCKET, OS_WINDOWS])


def expected_boot_config(os: str, labels, taints, max_pods) -> BootConfig:
    if os == OS_BOTTLEROCKET:  # node-taints is keyed by taint key: taints come back grouped by key
        keys = list(dict.fromkeys(t["key"] for t in taints))
        taints = sorted(taints, key=lambda t: keys.index(t["key"]))
    return BootConfig(os, "prod-cluster", ENDPOINT, labels, taints, max_pods)


@settings(max_examples=60, deadline=None)
@given(os=formats, labels=label_maps, taints=taint_lists, max_pods=max_pods_values, ca=st.sampled_from([CA, None]))
def test_render_parse_round_trip(os, labels, taints, max_pods, ca):
    user_data = render(os, labels=labels, taints=taints, max_pods=max_pods, certificate_authority=ca)
    assert parse_user_data(user_data) == expected_boot_config(os, labels, taints, max_pods)
    assert parse_user_data(base64.b64encode(user_data.encode())) == parse_user_data(user_data)


USER_PARTS = {
    OS_AL2: 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="==MYBOUNDARY=="\n\n--==MYBOUNDARY==\n'
            'Content-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash\necho "Running custom user data '
            'script"\n\n--==MYBOUNDARY==--\n',
    OS_AL2023: "---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n"
               "      shutdownGracePeriod: 30s\n    flags: ['--image-gc-high-threshold=70']\n",
    OS_BOTTLEROCKET: '[settings.kubernetes.system-reserved]\ncpu = "10m"\nmemory = "100Mi"\nephemeral-storage= "1Gi"\n',
    OS_WINDOWS: '<powershell>\nWrite-Host "Running custom user data script"\n</powershell>\n',
}


@settings(max_examples=40, deadline=None)
@given(os=formats, labels=label_maps, taints=taint_lists, max_pods=max_pods_values)
def test_round_trip_through_merge_user_data(os, labels, taints, max_pods):
    eks_part = render(os, labels=labels, taints=taints, max_pods=max_pods)
    merged = merge_user_data(USER_PARTS[os], eks_part)
    assert parse_user_data(merged) == expected_boot_config(os, labels, taints, max_pods)
    assert parse_user_data(merge_user_data("", eks_part)) == parse_user_data(merged)


# ------------------------------------------------------------------------------------------------- rendering

def test_rendered_al2_is_the_eks_managed_node_group_script():
    assert render(OS_AL2, cidr="10.100.0.0/16", extra_bootstrap_args="--container-runtime containerd") == (
        f"#!/bin/bash\nset -ex\nB64_CLUSTER_CA={CA}\nAPI_SERVER_URL={ENDPOINT}\nK8S_CLUSTER_DNS_IP=10.100.0.10\n"
        "/etc/eks/bootstrap.sh prod-cluster --kubelet-extra-args '--node-labels=eks.amazonaws.com/nodegroup=ng1,"
        "role=web --register-with-taints=dedicated=gpu:NoSchedule --max-pods=58' --b64-cluster-ca $B64_CLUSTER_CA "
        "--apiserver-endpoint $API_SERVER_URL --dns-cluster-ip $K8S_CLUSTER_DNS_IP --use-max-pods false "
        "--container-runtime containerd\n")


def test_rendered_al2023_is_one_nodeconfig_part():
    user_data = render(OS_AL2023, labels={"a": "1"}, taints=[], max_pods=None, extra_bootstrap_args="--v=2")
    assert user_data == (
        'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n--//\n'
        "Content-Type: application/node.eks.aws\n\n---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n"
        f"spec:\n  cluster:\n    name: prod-cluster\n    apiServerEndpoint: {ENDPOINT}\n"
        f"    certificateAuthority: {CA}\n    cidr: 172.20.0.0/16\n  kubelet:\n    flags:\n"
        "    - --node-labels=a=1\n    - --v=2\n\n--//--\n")


def test_rendered_bottlerocket_settings():
    assert render(OS_BOTTLEROCKET, taints=[taint("a", "", "NoSchedule"), taint("a", "x", "NoExecute")]) == (
        f'[settings.kubernetes]\ncluster-name = "prod-cluster"\napi-server = "{ENDPOINT}"\n'
        f'cluster-certificate = "{CA}"\ncluster-dns-ip = "172.20.0.10"\nmax-pods = 58\n\n'
        '[settings.kubernetes.node-labels]\n"eks.amazonaws.com/nodegroup" = "ng1"\n"role" = "web"\n\n'
        '[settings.kubernetes.node-taints]\n"a" = [":NoSchedule", "x:NoExecute"]\n')


@pytest.mark.parametrize("overrides,message", [
    ({"labels": {"k": "a=b"}}, "invalid node label"),
    ({"labels": {"k": "a,b"}}, "invalid node label"),
    ({"labels": {"bad key": "v"}}, "invalid node label"),
    ({"labels": {"a/b/c": "v"}}, "invalid node label"),
    ({"labels": {"k": "x" * 64}}, "invalid node label"),
    ({"taints": [taint("k", "v", "Sometimes")]}, "invalid node taint"),
    ({"taints": [taint("k", "v:w", "NoSchedule")]}, "invalid node taint"),
])
@pytest.mark.parametrize("os", [OS_AL2, OS_AL2023, OS_BOTTLEROCKET, OS_WINDOWS])
def test_labels_and_taints_that_cannot_round_trip_are_refused(os, overrides, message):
    with pytest.raises(ValueError, match=message):
        render(os, **overrides)


def test_render_refuses_unknown_formats_and_bottlerocket_command_lines():
    with pytest.raises(ValueError, match="unknown user data format"):
        render("ubuntu")
    with pytest.raises(ValueError, match="no bootstrap command line"):
        render(OS_BOTTLEROCKET, extra_bootstrap_args="--foo")


# --------------------------------------------------------------------------------------------------- Windows

def test_user_guide_windows_example_with_line_continuations():
    """The launch template user data of "Customizing managed nodes with launch templates" (Windows)."""
    text = ('<powershell>\n[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"\n'
            '& $EKSBootstrapScriptFile -EKSClusterName my-cluster `\n\t -Base64ClusterCA certificate-authority `\n'
            '\t -APIServerEndpoint api-server-endpoint `\n\t -DNSClusterIP service-cidr.10\n</powershell>\n')
    assert parse_user_data(text) == BootConfig(OS_WINDOWS, "my-cluster", "api-server-endpoint")


def test_windows_user_data_runs_the_user_s_commands_then_eks_s_in_one_powershell_tag():
    merged = merge_user_data('<powershell>\nWrite-Host "Running custom user data script"\n</powershell>\n',
                             render(OS_WINDOWS))
    assert merged.count("<powershell>") == 1 and merged.index("Write-Host") < merged.index("Start-EKSBootstrap")
    assert parse_user_data(merged).labels == parse_user_data(render(OS_WINDOWS)).labels


def test_powershell_without_a_bootstrap_call_never_joins():
    assert parse_user_data('<powershell>\nWrite-Host "hello"\n</powershell>\n') == BootConfig(OS_UNKNOWN)


# --------------------------------------------------------------------------------------------------- merging

def test_merge_puts_the_user_parts_first_and_eks_part_last():
    merged = merge_user_data(USER_PARTS[OS_AL2], render(OS_AL2))
    assert merged.startswith('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n--//\n')
    assert merged.index('echo "Running custom user data script"') < merged.index("/etc/eks/bootstrap.sh")
    assert merged.count("Content-Type: text/x-shellscript") == 2 and merged.endswith("--//--\n")


def test_merge_accepts_a_plain_script_and_base64_and_avoids_boundary_clashes():
    script = "#!/bin/bash\necho '--//'\ncat <<EOF\n--//\nEOF\n"
    merged = merge_user_data(base64.b64encode(script.encode()).decode(), render(OS_AL2023))
    assert 'boundary="==BOUNDARY1=="' in merged and "cat <<EOF\n--//\nEOF" in merged
    assert parse_user_data(merged).cluster_name == "prod-cluster"


def test_merged_al2023_eks_config_is_later_so_it_wins():
    user = nodeconfig_part("  kubelet:\n    config: {maxPods: 250}\n    flags: ['--node-labels=team=a,role=user']")
    merged = merge_user_data(multipart(user), render(OS_AL2023))
    assert parse_user_data(merged) == BootConfig(
        OS_AL2023, "prod-cluster", ENDPOINT, {"team": "a", "role": "web", "eks.amazonaws.com/nodegroup": "ng1"},
        [taint("dedicated", "gpu", "NoSchedule")], 58)


def test_merged_bottlerocket_user_settings_override_eks_settings():
    user = '[settings.kubernetes]\nmax-pods = 110\n[settings.kubernetes.node-labels]\n"role" = "user"\n"x" = "y"\n'
    merged = merge_user_data(user, render(OS_BOTTLEROCKET))
    assert parse_user_data(merged) == BootConfig(
        OS_BOTTLEROCKET, "prod-cluster", ENDPOINT, {"eks.amazonaws.com/nodegroup": "ng1", "role": "user", "x": "y"},
        [taint("dedicated", "gpu", "NoSchedule")], 110)


@pytest.mark.parametrize("os,user", [(OS_AL2, "echo no shebang"), (OS_AL2023, "[settings]\nmotd = 'x'\n"),
                                     (OS_BOTTLEROCKET, "#!/bin/bash\necho not toml\n")])
def test_merge_refuses_user_data_eks_could_not_merge(os, user):
    with pytest.raises(ValueError):
        merge_user_data(user, render(os))
