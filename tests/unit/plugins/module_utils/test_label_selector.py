# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Label selectors (module_utils/kube/label_selector.py): a metav1.LabelSelector matched against labels (PDBs), and
selector strings parsed as the API server parses labelSelector (pod_selectors, issue 10 item 24)."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.label_selector import (
    parse_label_selector,
    selector_matches,
)


@pytest.mark.parametrize("selector, labels, expected", [
    ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "1"}, True),
    ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
    ({}, {"app": "web"}, True),
    (None, {"app": "web"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}, {"app": "api"}, True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, {"app": "web"}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {"app": "web"}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {"app": "web"}, True),
])
def test_pdb_selector_matching(selector, labels, expected):
    assert selector_matches(selector, labels) is expected


# ----------------------------------------------------------------------------------------------------------
# Issue 10 item 24: pod_selectors parsed as the API server's labels.Parse, before any change
# ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, labels, expected", [
    ("app=web", {"app": "web"}, True),
    ("app==web", {"app": "db"}, False),
    ("app!=web", {}, True),
    ("app!=web", {"app": "web"}, False),
    ("app in (web, api)", {"app": "api"}, True),
    ("app notin (web,api)", {"app": "db"}, True),
    ("app notin (web)", {}, True),
    ("tier", {"tier": ""}, True),
    ("!tier", {"tier": "x"}, False),
    ("  app = web ,  !canary  ", {"app": "web"}, True),
    ("example.com/tier=front,app", {"example.com/tier": "front", "app": "x"}, True),
    ("in=notin", {"in": "notin"}, True),  # keywords are plain words where a key or a value is read
    ("app in ()", {"app": ""}, True),
    ("app in (,web)", {"app": ""}, True),
    ("app=", {"app": ""}, True),
    ("generation>3", {"generation": "4"}, True),
    ("generation>3", {"generation": "3"}, False),
    ("generation<3", {"generation": "x"}, False),
    ("", {"any": "x"}, True),
])
def test_issue10_item24_label_selector_strings_parse_and_match_as_the_api_server_does(text, labels, expected):
    assert selector_matches(parse_label_selector(text), labels) is expected


@pytest.mark.parametrize("text, says", [
    ("app in ((", "found '(', expected: ',', ')' or identifier"),
    ("app in (web", "found '', expected: ',' or ')'"),
    ("app in web", "expected: '('"),
    ("app=web=x", "found '=', expected: ',' or 'end of string'"),
    ("=web", "expected: !, identifier"),
    (",", "expected: !, identifier"),
    ("app,,tier", "expected: identifier after ','"),
    ("app web", "expected: in, notin, =, ==, !=, >, <"),
    ("!app=web", "found '='"),
    ("app=web tier", "found 'tier'"),
    ("a/b/c=x", "invalid label key 'a/b/c'"),
    ("Example.com/tier=x", "prefix must be a lowercase DNS subdomain"),
    ("-app=x", "invalid label key '-app'"),
    ("app=-web", "invalid label value '-web'"),
    ("app=" + "x" * 64, "invalid label value"),
    ("generation>three", "must be an integer"),
])
def test_issue10_item24_invalid_label_selectors_are_refused_saying_why(text, says):
    with pytest.raises(ValueError) as info:
        parse_label_selector(text)
    assert says in str(info.value)
