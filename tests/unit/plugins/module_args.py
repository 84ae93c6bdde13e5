# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""patch_module_args on every ansible-core the collection claims (issue 25 item 2): ansible-core 2.19 ships it in
ansible.module_utils.testing; before that, AnsibleModule read its arguments from basic._ANSIBLE_ARGS, which is
what 2.19's helper patches too."""

from __future__ import annotations

import contextlib
import json
from unittest import mock

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19
    @contextlib.contextmanager
    def patch_module_args(args=None):
        from ansible.module_utils import basic

        with mock.patch.object(basic, "_ANSIBLE_ARGS", json.dumps(dict(ANSIBLE_MODULE_ARGS=args or {})).encode()):
            yield

__all__ = ["patch_module_args"]
