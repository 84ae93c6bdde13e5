# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure tests of the label/field selector parsers and the three patch flavours."""

from __future__ import annotations

import pytest

from eks_sandbox.kube.errors import ApiError
from eks_sandbox.kube.patch import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, apply_patch
from eks_sandbox.kube.resources import PODS
from eks_sandbox.kube.selectors import (MATCH_NOTHING, from_label_selector_object, parse_field_selector,
                                        parse_label_selector)


@pytest.mark.parametrize("text,labels,expected", [
    ("a=1", {"a": "1"}, True), ("a=1", {"a": "2"}, False), ("a!=1", {}, True), ("a!=1", {"a": "1"}, False),
    ("a in (1, 2)", {"a": "2"}, True), ("a notin (1,2)", {"a": "3"}, True), ("a notin (1,2)", {}, True),
    ("a", {"a": ""}, True), ("!a", {"a": "x"}, False), ("a,b=2", {"a": "1", "b": "2"}, True),
    ("example.com/key=v", {"example.com/key": "v"}, True), ("", {"any": "x"}, True),
])
def test_label_selector_strings(text, labels, expected):
    assert parse_label_selector(text).matches(labels) is expected


@pytest.mark.parametrize("text", ["a in b", "a=b=c", ",", "a in (b", "=x"])
def test_label_selector_errors_are_400(text):
    with pytest.raises(ApiError) as error:
        parse_label_selector(text)
    assert error.value.code == 400


def test_label_selector_objects_null_matches_nothing_empty_matches_all():
    assert from_label_selector_object(None) is MATCH_NOTHING and not MATCH_NOTHING.matches({"a": "b"})
    assert from_label_selector_object({}).matches({"a": "b"})
    selector = from_label_selector_object({"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["a"]}, {"key": "gone", "operator": "DoesNotExist"}]})
    assert selector.matches({"app": "web", "tier": "a"})
    assert not selector.matches({"app": "web", "tier": "a", "gone": "x"})


def test_field_selector():
    selector = parse_field_selector("spec.nodeName=n1,status.phase!=Failed", PODS.field_getters, "Pod")
    assert selector.matches({"metadata": {}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})
    assert not selector.matches({"metadata": {}, "spec": {"nodeName": "n1"}, "status": {"phase": "Failed"}})
    assert selector.equal_value("spec.nodeName") == "n1"
    with pytest.raises(ApiError):
        parse_field_selector("spec.hostname=x", PODS.field_getters, "Pod")


POD = {"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
       "spec": {"containers": [{"name": "app", "image": "v1"}, {"name": "side", "image": "s1"}],
                "tolerations": [{"operator": "Exists"}]},
       "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def test_strategic_merge_patch_merges_lists_by_key_and_handles_directives():
    patched = apply_patch(POD, {
        "metadata": {"labels": {"a": None, "c": "3"}, "finalizers": ["y"]},
        "spec": {"containers": [{"name": "app", "image": "v2"}, {"name": "side", "$patch": "delete"}],
                 "tolerations": [{"key": "k", "operator": "Exists"}]},
        "status": {"conditions": [{"type": "DisruptionTarget", "status": "True"}]},
    }, STRATEGIC_MERGE_PATCH)
    assert patched["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert patched["metadata"]["finalizers"] == ["x", "y"]
    assert patched["spec"]["containers"] == [{"name": "app", "image": "v2"}]
    assert patched["spec"]["tolerations"] == [{"key": "k", "operator": "Exists"}]  # no merge key: replaced
    assert [c["type"] for c in patched["status"]["conditions"]] == ["Ready", "DisruptionTarget"]
    assert POD["spec"]["containers"][0]["image"] == "v1"  # the original is untouched


def test_merge_patch_replaces_lists():
    patched = apply_patch(POD, {"spec": {"containers": [{"name": "only"}]}, "metadata": {"labels": None}},
                          MERGE_PATCH)
    assert patched["spec"]["containers"] == [{"name": "only"}] and "labels" not in patched["metadata"]


def test_json_patch_operations():
    patched = apply_patch(POD, [
        {"op": "add", "path": "/metadata/labels/x~1y", "value": "z"},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "v3"},
        {"op": "remove", "path": "/spec/containers/1"},
        {"op": "copy", "from": "/metadata/labels/a", "path": "/metadata/labels/copied"},
        {"op": "move", "from": "/metadata/labels/b", "path": "/metadata/labels/moved"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "last"},
        {"op": "test", "path": "/metadata/name", "value": "p"},
    ], JSON_PATCH)
    assert patched["metadata"]["labels"] == {"a": "1", "x/y": "z", "copied": "1", "moved": "2"}
    assert patched["spec"]["containers"] == [{"name": "app", "image": "v3"}]
    assert patched["metadata"]["finalizers"] == ["x", "last"]
    with pytest.raises(ApiError) as failed_test:
        apply_patch(POD, [{"op": "test", "path": "/metadata/name", "value": "q"}], JSON_PATCH)
    assert failed_test.value.code == 422
    with pytest.raises(ApiError) as missing:
        apply_patch(POD, [{"op": "remove", "path": "/spec/nothing"}], JSON_PATCH)
    assert missing.value.code == 400
