# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which node bootstrap a launch template's user data is written for (issue 29 item 4): each EKS AMI family runs its
own (awslabs/amazon-eks-ami; bottlerocket-os/bottlerocket), and user data for another one makes nodes that never
join, found only when the new nodes' wait times out.

- Amazon Linux 2 runs ``/etc/eks/bootstrap.sh`` from a shell script (plain, or a ``text/x-shellscript`` MIME part);
- Amazon Linux 2023 runs nodeadm, which reads ``NodeConfig`` documents (``apiVersion: node.eks.aws/...``, alone or
  in ``application/node.eks.aws`` MIME parts); its bootstrap.sh only errors out;
- Bottlerocket reads TOML settings (``[settings.kubernetes]``).
"""

from __future__ import annotations

import base64
import binascii
import email
import gzip
import re

AL2, AL2023, BOTTLEROCKET = "Amazon Linux 2", "Amazon Linux 2023", "Bottlerocket"
BOOTSTRAP_OF = {AL2: "/etc/eks/bootstrap.sh", AL2023: "nodeadm (a NodeConfig)", BOTTLEROCKET: "TOML settings"}
_NODECONFIG = re.compile(r"^apiVersion:\s*node\.eks\.aws/", re.MULTILINE)
_BOTTLEROCKET = re.compile(r"^\[settings(\.kubernetes)?\]", re.MULTILINE)


def _text(user_data: str) -> str:
    """The user data as the instance reads it: EC2 keeps it base64; it may be gzipped."""
    try:
        raw = base64.b64decode(user_data, validate=True)
    except (binascii.Error, ValueError):
        raw = user_data.encode()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", errors="replace")


def _of_text(text: str, content_type: str = "") -> str | None:
    if content_type == "application/node.eks.aws" or _NODECONFIG.search(text):
        return AL2023
    if _BOTTLEROCKET.search(text):
        return BOTTLEROCKET
    if "/etc/eks/bootstrap.sh" in text and (content_type == "text/x-shellscript" or text.startswith("#!")):
        return AL2
    return None


def bootstrap_of(user_data: str | None) -> str | None:
    """AL2, AL2023 or BOTTLEROCKET: the bootstrap ``user_data`` (a launch template's UserData) is written for; None
    when it tells nothing (no user data, or a script of the user's own)."""
    if not user_data:
        return None
    text = _text(user_data)
    message = email.message_from_string(text)
    if message.is_multipart():
        found = [_of_text(part.get_payload(decode=True).decode("utf-8", errors="replace"), part.get_content_type())
                 for part in message.walk() if not part.is_multipart()]
        # nodeadm reads the NodeConfig parts of a MIME document beside the user's own scripts
        for family in (AL2023, BOTTLEROCKET, AL2):
            if family in found:
                return family
        return None
    return _of_text(text)
