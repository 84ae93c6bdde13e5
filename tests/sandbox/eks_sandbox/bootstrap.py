# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EC2 user data of EKS nodes, in the formats the EKS AMIs read: what the sandbox writes into launch templates
(render_user_data, merge_user_data) and what a simulated kubelet reads back when its instance boots
(parse_user_data): the cluster it joins and the labels, taints and max pods it registers with.

Four formats, each modelled on its upstream source (named next to the code):
- AL2: a shell script calling /etc/eks/bootstrap.sh (plain, or in a text/x-shellscript MIME part);
- AL2023: nodeadm NodeConfig documents (plain, or in application/node.eks.aws MIME parts);
- Bottlerocket: TOML settings;
- Windows: PowerShell in a <powershell> tag calling Start-EKSBootstrap.ps1.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import email
import gzip
import ipaddress
import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

import yaml

__all__ = ["OS_AL2", "OS_AL2023", "OS_BOTTLEROCKET", "OS_WINDOWS", "OS_UNKNOWN", "BootConfig", "os_of_ami_family",
           "render_user_data", "merge_user_data", "parse_user_data"]

OS_AL2, OS_AL2023, OS_BOTTLEROCKET, OS_WINDOWS = "al2", "al2023", "bottlerocket", "windows"
OS_UNKNOWN = "unknown"

BOOTSTRAP_SH = "/etc/eks/bootstrap.sh"
NODECONFIG_MEDIA_TYPE = "application/node.eks.aws"
NODECONFIG_API_VERSION = "node.eks.aws/v1alpha1"
SHELL_MEDIA_TYPE = "text/x-shellscript"
SHELL_PART_HEADER = f'Content-Type: {SHELL_MEDIA_TYPE}; charset="us-ascii"'
NODECONFIG_PART_HEADER = f"Content-Type: {NODECONFIG_MEDIA_TYPE}"
EKS_MIME_BOUNDARY = "//"  # the boundary of the user data EKS generates for managed node groups
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

# Options of bootstrap.sh: every one takes the next word as its value ("$2"; shift; shift), and any other word is
# positional, the first positional being the cluster name. Source: awslabs/amazon-eks-ami
# templates/al2/runtime/bootstrap.sh (removed from main in b2289030 "chore: remove AL2 support"; read at its parent).
BOOTSTRAP_OPTIONS = frozenset({
    "--use-max-pods", "--b64-cluster-ca", "--apiserver-endpoint", "--kubelet-extra-args", "--enable-docker-bridge",
    "--aws-api-retry-attempts", "--docker-config-json", "--containerd-config-file", "--pause-container-account",
    "--pause-container-version", "--dns-cluster-ip", "--container-runtime", "--ip-family", "--service-ipv4-cidr",
    "--service-ipv6-cidr", "--enable-local-outpost", "--cluster-id", "--mount-bpf-fs", "--local-disks"})
# The kubelet's own default maxPods (KubeletConfiguration), which AL2 keeps when told --use-max-pods false and
# given no --max-pods; awslabs/amazon-eks-ami's kubelet-config.json sets none.
KUBELET_DEFAULT_MAX_PODS = 110

# Kubernetes label syntax
# (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set):
# [DNS subdomain prefix "/"] name, name and value at most 63 characters; the value may be empty.
_LABEL_NAME = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")
_SHELL_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*)")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)
_SHELL_OPERATOR = re.compile(r"[;&|<>()]+")
_BARE_TOML_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class BootConfig:
    """What a node's bootstrap read from its user data. None/empty means the user data does not set it (the AMI
    then decides: e.g. max pods from the instance type)."""
    os: str                      # OS_AL2, OS_AL2023, OS_BOTTLEROCKET, OS_WINDOWS, or OS_UNKNOWN (never joins)
    cluster_name: str | None = None
    api_server_endpoint: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)  # [{"key", "value", "effect"}], value "" when none
    max_pods: int | None = None


def os_of_ami_family(family: str) -> str:
    """The user-data format of an AMI family as the sandbox scenarios name families (the SSM parameter path
    segment): "amazon-linux-2", "amazon-linux-2-gpu", "amazon-linux-2-arm64" -> al2;
    "amazon-linux-2023/<arch>/<variant>" -> al2023; "bottlerocket..." -> bottlerocket."""
    if family.startswith("amazon-linux-2023"):
        return OS_AL2023
    if family == "amazon-linux-2" or family.startswith(("amazon-linux-2-", "amazon-linux-2/")):
        return OS_AL2
    if family.startswith("bottlerocket"):
        return OS_BOTTLEROCKET
    if family.startswith("windows/"):
        return OS_WINDOWS
    raise ValueError(f"unknown AMI family {family!r}: expected amazon-linux-2[-gpu|-arm64], "
                     "amazon-linux-2023/<arch>/<variant>, bottlerocket/... or windows/...")


# ---------------------------------------------------------------------------------------------------- rendering

def render_user_data(os: str, *, cluster_name: str, api_server_endpoint: str, certificate_authority: str | None,
                     labels: dict[str, str], taints: list[dict[str, str]], max_pods: int | None,
                     cidr: str = "172.20.0.0/16", extra_bootstrap_args: str = "") -> str:
    """Plain-text user data (not base64) in the real format of `os`, as EKS/eksctl/terraform would write it.
    `certificate_authority` is base64 (DescribeCluster's certificateAuthority.data); `cidr` is the service CIDR,
    whose .10 is the cluster DNS IP. `extra_bootstrap_args` is appended to the bootstrap.sh command line (AL2) or
    split into further kubelet flags (AL2023); Bottlerocket has no command line, so it must be empty there.
    Invalid labels or taints raise ValueError (they could not round-trip: kubelet would refuse them)."""
    _check_labels_and_taints(labels, taints)
    dns_ip = str(ipaddress.ip_network(cidr, strict=False).network_address + 10)
    if os == OS_AL2:
        return _render_al2(cluster_name, api_server_endpoint, certificate_authority, dns_ip,
                           _kubelet_args(labels, taints, max_pods), max_pods is not None, extra_bootstrap_args)
    if os == OS_AL2023:
        return _render_al2023(cluster_name, api_server_endpoint, certificate_authority, cidr,
                              _kubelet_args(labels, taints, None) + _words(extra_bootstrap_args), max_pods)
    if os == OS_BOTTLEROCKET:
        if extra_bootstrap_args:
            raise ValueError("Bottlerocket has no bootstrap command line: extra_bootstrap_args must be empty")
        return _render_bottlerocket(cluster_name, api_server_endpoint, certificate_authority, dns_ip, labels,
                                    taints, max_pods)
    if os == OS_WINDOWS:
        return _render_windows(cluster_name, api_server_endpoint, certificate_authority, dns_ip,
                               _kubelet_args(labels, taints, max_pods) + _words(extra_bootstrap_args))
    raise ValueError(f"unknown user data format {os!r}")


def _render_al2(cluster_name: str, endpoint: str, ca: str | None, dns_ip: str, kubelet_args: list[str],
                fixed_max_pods: bool, extra_args: str) -> str:
    # The shape of the script EKS generates for an AL2 managed node group (as users have posted it, e.g.
    # terraform-aws-modules/terraform-aws-eks issues #1770 and #2297): variables, then one bootstrap.sh call.
    lines = ["#!/bin/bash", "set -ex"]
    command = [BOOTSTRAP_SH, shlex.quote(cluster_name)]
    if kubelet_args:
        command += ["--kubelet-extra-args", shlex.quote(" ".join(kubelet_args))]
    if ca:
        lines.append(f"B64_CLUSTER_CA={shlex.quote(ca)}")
        command += ["--b64-cluster-ca", "$B64_CLUSTER_CA"]
    lines += [f"API_SERVER_URL={shlex.quote(endpoint)}", f"K8S_CLUSTER_DNS_IP={dns_ip}"]
    command += ["--apiserver-endpoint", "$API_SERVER_URL", "--dns-cluster-ip", "$K8S_CLUSTER_DNS_IP"]
    if fixed_max_pods:  # else bootstrap.sh sets maxPods from eni-max-pods.txt for the instance type
        command += ["--use-max-pods", "false"]
    if extra_args:
        command.append(extra_args)
    return "\n".join([*lines, " ".join(command)]) + "\n"


def _render_al2023(cluster_name: str, endpoint: str, ca: str | None, cidr: str, flags: list[str],
                   max_pods: int | None) -> str:
    # A NodeConfig in a MIME part, as in the EKS user guide ("Launch templates", Amazon Linux 2023 user data) and
    # eksctl's documented default (docs.aws.amazon.com/eks/latest/eksctl/node-bootstrapping.html): labels and
    # taints as kubelet flags, max pods in the kubelet config (where EKS managed node groups put it).
    cluster: dict[str, Any] = {"name": cluster_name, "apiServerEndpoint": endpoint}
    if ca:
        cluster["certificateAuthority"] = ca
    cluster["cidr"] = cidr
    kubelet: dict[str, Any] = {}
    if max_pods is not None:
        kubelet["config"] = {"maxPods": max_pods}
    if flags:
        kubelet["flags"] = flags
    spec: dict[str, Any] = {"cluster": cluster, **({"kubelet": kubelet} if kubelet else {})}
    document = {"apiVersion": NODECONFIG_API_VERSION, "kind": "NodeConfig", "spec": spec}
    return _mime([([NODECONFIG_PART_HEADER], "---\n" + yaml.safe_dump(document, sort_keys=False))])


def _render_bottlerocket(cluster_name: str, endpoint: str, ca: str | None, dns_ip: str, labels: dict[str, str],
                         taints: list[dict[str, str]], max_pods: int | None) -> str:
    # Settings as bottlerocket-os/bottlerocket's README documents them (at 686c7850^, before they moved to
    # bottlerocket.dev): settings.kubernetes.{cluster-name, api-server, cluster-certificate, cluster-dns-ip,
    # max-pods, node-labels, node-taints}; node-taints maps a key to a list of "value:Effect".
    kubernetes: dict[str, Any] = {"cluster-name": cluster_name, "api-server": endpoint}
    if ca:
        kubernetes["cluster-certificate"] = ca
    kubernetes["cluster-dns-ip"] = dns_ip
    if max_pods is not None:
        kubernetes["max-pods"] = max_pods
    if labels:
        kubernetes["node-labels"] = dict(labels)
    if taints:
        by_key: dict[str, list[str]] = {}
        for taint in taints:  # the setting is keyed by taint key: taints group by key, in first-seen order
            by_key.setdefault(taint["key"], []).append(f"{taint.get('value') or ''}:{taint['effect']}")
        kubernetes["node-taints"] = by_key
    return _toml({"settings": {"kubernetes": kubernetes}})


# Windows: the EKS user guide's user data for Start-EKSBootstrap.ps1 ("Customizing managed nodes with launch
# templates", Specifying an AMI, Windows), its parameters as "Bootstrap script configuration parameters" lists them
# (-EKSClusterName, -APIServerEndpoint, -Base64ClusterCA, -DNSClusterIP, -KubeletExtraArgs), each value quoted as
# eksctl's pkg/nodebootstrap/powershell FormatParams writes them ("-%s %q"); eksctl's windows.go ends the call with
# "3>&1 4>&1 5>&1 6>&1".
WINDOWS_BOOTSTRAP_FILE = '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"'
_POWERSHELL_BLOCK = re.compile(r"<powershell>(.*?)</powershell>", re.DOTALL)
_POWERSHELL_PARAM = re.compile(r"""-(\w+)\s+(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s"'`]+))""")


def _render_windows(cluster_name: str, endpoint: str, ca: str | None, dns_ip: str, kubelet_args: list[str]) -> str:
    params = [("EKSClusterName", cluster_name), ("APIServerEndpoint", endpoint), ("Base64ClusterCA", ca or ""),
              ("DNSClusterIP", dns_ip), ("KubeletExtraArgs", " ".join(kubelet_args))]
    call = " ".join("-%s %s" % (name, json.dumps(value)) for name, value in params if value)
    return "<powershell>\n%s\n& $EKSBootstrapScriptFile %s 3>&1 4>&1 5>&1 6>&1\n</powershell>\n" % (
        WINDOWS_BOOTSTRAP_FILE, call)


def _from_windows(text: str) -> BootConfig:
    """What Start-EKSBootstrap.ps1 is called with in the user data's <powershell> block (backtick line
    continuations joined); no call: the node never joins."""
    script = "\n".join(_POWERSHELL_BLOCK.findall(text)).replace("`\r\n", " ").replace("`\n", " ")
    calls = [line.split("$EKSBootstrapScriptFile", 1)[1] for line in script.splitlines()
             if line.strip().startswith("& $EKSBootstrapScriptFile")]
    if not calls:
        return BootConfig(OS_UNKNOWN)
    params = dict((m.group(1), next(g for g in m.groups()[1:] if g is not None))
                  for m in _POWERSHELL_PARAM.finditer(calls[-1]))
    labels, taints, max_pods = _kubelet_flags(_words(params.get("KubeletExtraArgs", "")))
    return BootConfig(OS_WINDOWS, cluster_name=params.get("EKSClusterName") or None,
                      api_server_endpoint=params.get("APIServerEndpoint") or None, labels=labels or {},
                      taints=taints or [], max_pods=max_pods)


def _kubelet_args(labels: dict[str, str], taints: list[dict[str, str]], max_pods: int | None) -> list[str]:
    args = []
    if labels:
        args.append("--node-labels=" + ",".join(f"{key}={value}" for key, value in labels.items()))
    if taints:
        args.append("--register-with-taints=" + ",".join(
            f"{t['key']}={t['value']}:{t['effect']}" if t.get("value") else f"{t['key']}:{t['effect']}"
            for t in taints))
    if max_pods is not None:
        args.append(f"--max-pods={max_pods}")
    return args


def _check_labels_and_taints(labels: dict[str, str], taints: list[dict[str, str]]) -> None:
    for key, value in labels.items():
        if not _valid_label_key(key) or not _valid_label_value(value):
            raise ValueError(f"invalid node label {key}={value}")
    for taint in taints:
        if (not _valid_label_key(taint.get("key", "")) or not _valid_label_value(taint.get("value") or "")
                or taint.get("effect") not in TAINT_EFFECTS):
            raise ValueError(f"invalid node taint {taint}")


def _valid_label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    return bool(_LABEL_NAME.fullmatch(name)) and (
        not slash or (len(prefix) <= 253 and bool(_DNS_SUBDOMAIN.fullmatch(prefix))))


def _valid_label_value(value: str) -> bool:
    return value == "" or bool(_LABEL_NAME.fullmatch(value))


# ------------------------------------------------------------------------------------------------------ merging

def merge_user_data(user_part: str, eks_part: str) -> str:
    """The user data EKS builds for a managed node group whose launch template has user data (and no AMI id):
    the user's user data (shell script, MIME multipart or NodeConfig; plain or base64) followed by EKS's own part
    (render_user_data's output), in one MIME multipart document for AL2 and AL2023. Bottlerocket: the TOML
    documents merged table by table, the user's values winning, as the EKS user guide says ("The configuration
    that you provide in your user data overrides any settings that are configured by Amazon EKS"; awsdocs/
    amazon-eks-user-guide latest/ug/nodes/launch-templates.adoc, "Amazon EC2 user data")."""
    eks_text, user_text = _decode(eks_part), _decode(user_part) if user_part else ""
    if "<powershell>" in eks_text:
        # Windows: "Your PowerShell commands come first, followed by the managed user data commands, all within one
        # <powershell></powershell> tag" (launch-templates.adoc, "Windows user data").
        blocks = _POWERSHELL_BLOCK.findall(user_text) + _POWERSHELL_BLOCK.findall(eks_text)
        return "<powershell>\n%s\n</powershell>\n" % "\n".join(block.strip("\n") for block in blocks)
    eks_settings = _toml_document(eks_text)
    if eks_settings is not None and "settings" in eks_settings:
        user_settings = _toml_document(user_text) if user_text.strip() else {}
        if user_settings is None:
            raise ValueError("Bottlerocket user data must be TOML")
        return _toml(_merge_tables(eks_settings, user_settings))
    # EKS appends its part after the user's (terraform-aws-modules/terraform-aws-eks PR #997: "Managed Node
    # Group 'merging of userdata' will place a /etc/eks/bootstrap.sh command of its own as the last part").
    parts = _parts_of(user_text) + _parts_of(eks_text)
    return _mime(parts)


def _parts_of(text: str) -> list[tuple[list[str], str]]:
    """MIME parts (header lines, body) of one side of the merge."""
    if not text.strip():
        return []
    message = _multipart(text)
    if message is not None:
        return [([f"{name}: {value}" for name, value in part.items()], str(part.get_payload()))
                for part in message.walk() if not part.is_multipart()]
    if _nodeconfigs(text):
        return [([NODECONFIG_PART_HEADER], text)]
    if text.startswith("#!"):
        return [([SHELL_PART_HEADER], text)]
    if text.startswith("#cloud-config"):
        return [(['Content-Type: text/cloud-config; charset="us-ascii"'], text)]
    raise ValueError("user data of a managed node group must be MIME multipart, a shell script or a NodeConfig")


def _merge_tables(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge_tables(merged[key], value)
        else:
            merged[key] = value
    return merged


def _mime(parts: list[tuple[list[str], str]]) -> str:
    boundary = EKS_MIME_BOUNDARY
    bodies = "\n".join(body for dummy, body in parts)
    serial = 0
    while re.search(rf"^--{re.escape(boundary)}", bodies, re.MULTILINE):  # a boundary must not occur in a body
        serial += 1
        boundary = f"==BOUNDARY{serial}=="
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{boundary}"', ""]
    for headers, body in parts:
        lines += [f"--{boundary}", *headers, "", body.rstrip("\n"), ""]
    lines.append(f"--{boundary}--")
    return "\n".join(lines) + "\n"


def _toml(table: dict[str, Any], path: tuple[str, ...] = ()) -> str:
    """A minimal TOML writer (tomllib only reads): scalars and arrays first, then one [header] per sub-table.
    Keys of node-labels and node-taints are always quoted, as Bottlerocket's README advises."""
    quote_all = bool(path) and path[-1] in ("node-labels", "node-taints")
    values = [f"{_toml_key(key, quote_all)} = {_toml_value(value)}"
              for key, value in table.items() if not isinstance(value, dict)]
    sections = []
    if path and (values or not any(isinstance(v, dict) for v in table.values())):
        sections.append("\n".join(["[" + ".".join(_toml_key(p, False) for p in path) + "]", *values]))
    elif values:
        sections.append("\n".join(values))
    sections += [_toml(value, (*path, key)).rstrip("\n") for key, value in table.items() if isinstance(value, dict)]
    return "\n\n".join(s for s in sections if s) + "\n"


def _toml_key(key: str, quote: bool) -> str:
    return key if not quote and _BARE_TOML_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


# ------------------------------------------------------------------------------------------------------ parsing

def parse_user_data(text: str | bytes) -> BootConfig:
    """Read what the node's bootstrap reads; accepts plain text, base64 (as EC2 stores UserData) or gzip.
    Unknown or empty user data -> BootConfig(os="unknown"): such an instance never joins."""
    data = _decode(text)
    if not data.strip():
        return BootConfig(OS_UNKNOWN)
    if "<powershell>" in data:  # EC2Launch runs the <powershell> block on Windows
        return _from_windows(data)
    message = _multipart(data)
    if message is not None:
        parts = [(part.get_content_type(), _payload(part)) for part in message.walk() if not part.is_multipart()]
        # nodeadm reads only application/node.eks.aws parts (base64 or gzip allowed in each); on AL2023 a
        # bootstrap.sh call only errors out (templates/al2023/runtime/rootfs/etc/eks/bootstrap.sh), so NodeConfig wins.
        configs = [c for kind, body in parts if kind == NODECONFIG_MEDIA_TYPE for c in _nodeconfigs(_decode(body))]
        if configs:
            return _from_nodeconfig(configs)
        calls = [call for kind, body in parts if kind == SHELL_MEDIA_TYPE for call in _bootstrap_calls(body)]
        return _from_bootstrap_call(calls[-1]) if calls else BootConfig(OS_UNKNOWN)
    configs = _nodeconfigs(data)  # nodeadm falls back to the whole user data as one NodeConfig
    if configs:
        return _from_nodeconfig(configs)
    document = _toml_document(data)
    if document is not None and isinstance(document.get("settings"), dict):
        return _from_bottlerocket(document["settings"])
    if data.startswith("#!"):  # cloud-init runs plain user data as a script only when it starts with "#!"
        calls = _bootstrap_calls(data)
        if calls:
            return _from_bootstrap_call(calls[-1])
    return BootConfig(OS_UNKNOWN)


def _decode(data: str | bytes) -> str:
    """Undo base64 and gzip as nodeadm does (nodeadm/internal/configprovider/encoding.go: decodeIfBase64 keeps the
    data as is when it is not base64; decompressIfGZIP checks the gzip magic number). Go's base64 skips newlines."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    candidates = [raw]
    compact = re.sub(rb"[\r\n]", b"", raw)
    if compact:
        try:
            candidates.insert(0, base64.b64decode(compact, validate=True))
        except (binascii.Error, ValueError):
            pass
    for candidate in candidates:
        if candidate[:2] == b"\x1f\x8b":
            try:
                candidate = gzip.decompress(candidate)
            except (OSError, EOFError):
                continue
        try:
            return candidate.decode("utf-8")
        except UnicodeDecodeError:
            continue  # plain text that merely looked like base64
    return raw.decode("utf-8", errors="replace")


def _multipart(text: str) -> Message | None:
    message = email.message_from_string(text)
    return message if message.is_multipart() else None


def _payload(part: Message) -> str:
    if part.get("Content-Transfer-Encoding", "").lower() in ("base64", "quoted-printable"):
        return part.get_payload(decode=True).decode("utf-8", errors="replace")
    return str(part.get_payload())


# AL2 ------------------------------------------------------------------------------------------------------------

def _bootstrap_calls(script: str) -> list[list[str]]:
    """The argument lists of every bootstrap.sh call in a shell script, in order, with the script's own
    variables expanded (EKS's script passes $B64_CLUSTER_CA and $API_SERVER_URL). The last call counts: each
    call rewrites the kubelet's configuration and restarts it."""
    variables: dict[str, str] = {}
    calls = []
    for line in script.replace("\\\n", "").splitlines():  # backslash-newline continues a line
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        words = _shell_words(_expand(line, variables))
        if words and words[0] == "export":
            words = words[1:]
        assignments = [_ASSIGNMENT.fullmatch(word) for word in words]
        if words and all(assignments):
            variables.update(match.groups() for match in assignments)
            continue
        for index, word in enumerate(words):
            if word.endswith(BOOTSTRAP_SH):
                args = []
                for arg in words[index + 1:]:
                    if _SHELL_OPERATOR.fullmatch(arg):
                        break
                    args.append(arg)
                calls.append(args)
    return calls


def _expand(line: str, variables: dict[str, str]) -> str:
    """$NAME and ${NAME} replaced as the shell would: not inside single quotes, word-split outside double quotes."""
    out, single, double, index = [], False, False, 0
    while index < len(line):
        char = line[index]
        if char == "\\" and not single:
            out.append(line[index:index + 2])
            index += 2
            continue
        if char == "'" and not double:
            single = not single
        elif char == '"' and not single:
            double = not double
        elif char == "$" and not single:
            match = _SHELL_VARIABLE.match(line, index + 1)
            if match:
                value = variables.get(match.group(1) or match.group(2), "")
                out.append(value.replace("\\", "\\\\").replace('"', '\\"') if double
                           else " ".join(shlex.quote(word) for word in value.split()))
                index = match.end()
                continue
        out.append(char)
        index += 1
    return "".join(out)


def _shell_words(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split, lexer.commenters = True, ""
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: bash would refuse the line too
        return []


def _from_bootstrap_call(args: list[str]) -> BootConfig:
    options: dict[str, str] = {}
    positional: list[str] = []
    index = 0
    while index < len(args):
        if args[index] in BOOTSTRAP_OPTIONS:
            options[args[index]] = args[index + 1] if index + 1 < len(args) else ""
            index += 2
        else:
            positional.append(args[index])
            index += 1
    labels, taints, max_pods = _kubelet_flags(_words(options.get("--kubelet-extra-args", "")))
    if max_pods is None and options.get("--use-max-pods", "true") != "true":
        max_pods = KUBELET_DEFAULT_MAX_PODS
    # Without --b64-cluster-ca bootstrap.sh asks DescribeCluster for the endpoint; this reports what user data says.
    return BootConfig(OS_AL2, cluster_name=positional[0] if positional else None,
                      api_server_endpoint=options.get("--apiserver-endpoint") or None,
                      labels=labels or {}, taints=taints or [], max_pods=max_pods)


# Kubelet flags (AL2 --kubelet-extra-args, AL2023 spec.kubelet.flags) -------------------------------------------

def _kubelet_flags(args: list[str]) -> tuple[dict[str, str] | None, list[dict[str, str]] | None, int | None]:
    """(labels, taints, max pods) from kubelet arguments, None where not given. As the kubelet parses them
    (k8s.io/component-base/cli/flag MapStringString; kubernetes pkg/util/flag RegisterWithTaintsVar): repeated
    --node-labels merge, later keys winning; a later --register-with-taints or --max-pods replaces an earlier one."""
    labels: dict[str, str] | None = None
    taints: list[dict[str, str]] | None = None
    max_pods: int | None = None
    index = 0
    while index < len(args):
        name, equals, value = args[index].partition("=")
        if name in ("--node-labels", "--register-with-taints", "--max-pods"):
            if not equals:  # "--flag value"
                index += 1
                value = args[index] if index < len(args) else ""
            if name == "--node-labels":
                labels = {**(labels or {}), **_label_pairs(value)}
            elif name == "--register-with-taints":
                taints = [_taint(*_split_taint(spec)) for spec in value.split(",") if ":" in spec]
            else:
                max_pods = _int(value)
        index += 1
    return labels, taints, max_pods


def _label_pairs(text: str) -> dict[str, str]:
    pairs = {}
    for pair in text.split(","):
        key, equals, value = pair.strip().partition("=")
        if equals:  # the kubelet refuses a pair without "="; the sandbox skips it
            pairs[key.strip()] = value.strip()
    return pairs


def _split_taint(spec: str) -> tuple[str, str, str]:
    """key=value:Effect or key:Effect."""
    key_value, dummy, effect = spec.strip().rpartition(":")
    key, dummy, value = key_value.partition("=")
    return key, value, effect


def _taint(key: str, value: str | None, effect: str) -> dict[str, str]:
    return {"key": str(key), "value": str(value or ""), "effect": str(effect)}


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


# AL2023 ---------------------------------------------------------------------------------------------------------

def _nodeconfigs(text: str) -> list[dict[str, Any]]:
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return []
    return [d for d in documents if isinstance(d, dict) and d.get("kind") == "NodeConfig"
            and str(d.get("apiVersion", "")).startswith("node.eks.aws/")]


def _from_nodeconfig(configs: list[dict[str, Any]]) -> BootConfig:
    merged: dict[str, Any] = {}
    for config in configs:  # in the order they appear, later taking precedence
        merged = _merge_nodeconfig(merged, config)
    spec = merged.get("spec") or {}
    cluster, kubelet = spec.get("cluster") or {}, spec.get("kubelet") or {}
    config = kubelet.get("config") or {}
    flags = [word for flag in kubelet.get("flags") or [] for word in _words(str(flag))]
    labels, taints, max_pods = _kubelet_flags(flags)
    # The kubelet's command-line flags take precedence over its config file (nodeadm writes spec.kubelet.config
    # as a config drop-in and passes spec.kubelet.flags on the command line).
    if taints is None:
        taints = [_taint(t.get("key", ""), t.get("value"), t.get("effect", ""))
                  for t in config.get("registerWithTaints") or [] if isinstance(t, dict)]
    if max_pods is None:
        max_pods = _int(config.get("maxPods"))
    return BootConfig(OS_AL2023, cluster_name=cluster.get("name") or None,
                      api_server_endpoint=cluster.get("apiServerEndpoint") or None,
                      labels=labels or {}, taints=taints, max_pods=max_pods)


def _merge_nodeconfig(dst: Any, src: Any, path: tuple[str, ...] = ()) -> Any:
    """nodeadm's merge of two NodeConfigs (awslabs/amazon-eks-ami nodeadm/internal/api/merge.go; documented in
    nodeadm/doc/examples.md "Merging multiple configuration objects"): mergo.Merge WithOverride, so maps merge
    key by key and a non-empty later value replaces an earlier one (lists included); the one exception is
    spec.kubelet.flags, which are appended, so that repeated --node-labels all reach the kubelet."""
    if path == ("spec", "kubelet", "flags"):
        return [*(dst or []), *(src or [])]
    if isinstance(dst, dict) and isinstance(src, dict):
        merged = dict(dst)
        for key, value in src.items():
            merged[key] = _merge_nodeconfig(dst.get(key), value, (*path, key))
        return merged
    return dst if _empty(src) else src


def _empty(value: Any) -> bool:
    """Go's zero values, which mergo does not let override."""
    if value is None or value is False:
        return True
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value == 0
    return isinstance(value, (str, list, dict)) and not value


# Bottlerocket ---------------------------------------------------------------------------------------------------

def _toml_document(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def _from_bottlerocket(settings: dict[str, Any]) -> BootConfig:
    kubernetes = settings.get("kubernetes") or {}
    taints = []
    for key, values in (kubernetes.get("node-taints") or {}).items():
        # A list of "value:Effect" since Bottlerocket 1.6.0; one string before (bottlerocket-os/bottlerocket
        # sources/settings-migrations/archived/v1.6.0/node-taints-representation). The value may be empty
        # (sources/models/modeled-types/src/kubernetes.rs, KubernetesTaintValue).
        for value in [values] if isinstance(values, str) else values:
            taint_value, dummy, effect = str(value).rpartition(":")
            taints.append(_taint(key, taint_value, effect))
    return BootConfig(OS_BOTTLEROCKET, cluster_name=kubernetes.get("cluster-name") or None,
                      api_server_endpoint=kubernetes.get("api-server") or None,
                      labels={str(k): str(v) for k, v in (kubernetes.get("node-labels") or {}).items()},
                      taints=taints, max_pods=_int(kubernetes.get("max-pods")))
