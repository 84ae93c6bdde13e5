# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which bootstrap a launch template's user data is written for (issue 29 item 4), read as each AMI family's
bootstrap reads it; and the OS of an EKS-optimized AMI by its name."""

from __future__ import annotations

import base64
import gzip

import pytest
from eks_sandbox.bootstrap import OS_AL2, OS_AL2023, OS_BOTTLEROCKET, render_user_data

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.amis import ami_os
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.user_data import AL2, AL2023, BOTTLEROCKET, bootstrap_of

NODECONFIG = """---
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: prod
"""
MIME = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "my own setup"

--BOUNDARY
Content-Type: application/node.eks.aws

%s
--BOUNDARY--
""" % NODECONFIG


def b64(text):
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize("user_data, family", [
    (b64("#!/bin/bash\nset -ex\n/etc/eks/bootstrap.sh prod --kubelet-extra-args '--node-labels=a=b'\n"), AL2),
    (b64(NODECONFIG), AL2023),
    (b64(MIME), AL2023),  # the user's script beside the NodeConfig, as EKS merges a custom template's
    (b64(MIME.replace("application/node.eks.aws", "text/x-shellscript").replace(
        NODECONFIG, "#!/bin/bash\n/etc/eks/bootstrap.sh prod\n")), AL2),
    (b64('[settings.kubernetes]\ncluster-name = "prod"\napi-server = "https://x"\n'), BOTTLEROCKET),
    (base64.b64encode(gzip.compress(NODECONFIG.encode())).decode(), AL2023),
    (b64("#!/bin/bash\necho hello\n"), None),
    (None, None),
    ("", None),
])
def test_issue29_item4_the_bootstrap_user_data_is_written_for(user_data, family):
    assert bootstrap_of(user_data) == family


@pytest.mark.parametrize("os, family", [(OS_AL2, AL2), (OS_AL2023, AL2023), (OS_BOTTLEROCKET, BOTTLEROCKET)])
def test_issue29_item4_the_sandbox_s_user_data_of_each_family_is_recognised(os, family):
    """The formats the sandbox renders from the real tools (eks_sandbox.bootstrap, with its sources) and boots."""
    rendered = render_user_data(os, cluster_name="prod", api_server_endpoint="https://x", certificate_authority=None,
                                labels={"a": "b"}, taints=[], max_pods=None)
    assert bootstrap_of(b64(rendered)) == family


@pytest.mark.parametrize("name, family", [
    ("amazon-eks-node-al2023-x86_64-standard-1.30-v20240615", AL2023),
    ("amazon-eks-node-al2023-arm64-nvidia-1.31-v20241024", AL2023),
    ("amazon-eks-node-1.29-v20240101", AL2),
    ("amazon-eks-gpu-node-1.29-v20240101", AL2),
    ("bottlerocket-aws-k8s-1.30-x86_64-v1.20.3-5d9ac849", BOTTLEROCKET),
    ("my-golden-image", None),
    (None, None),
])
def test_issue29_item4_the_os_of_an_eks_ami_by_its_name(name, family):
    assert ami_os(name) == family
