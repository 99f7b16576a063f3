"""The registry helper: lazy loads, one error for an unknown name."""

from __future__ import annotations

import pytest

from toolcalib.jsonio import InputError
from toolcalib.registry import Registry, pick


def test_a_registry_imports_an_entry_only_when_loaded() -> None:
    registry: Registry[object] = Registry("codec", {"json": "json:dumps", "b": "base64:b64encode"})
    assert list(registry) == ["json", "b"] and registry["b"] == "base64:b64encode"
    assert registry.module("b") == "base64"
    import json

    assert registry.load("json") is json.dumps


def test_an_unknown_name_names_the_registry_the_name_and_the_known_ones_sorted() -> None:
    registry: Registry[object] = Registry("codec", {"zlib": "zlib:compress", "json": "json:x"})
    with pytest.raises(InputError, match=r"^model 'm': unknown codec 'xml' \(known: json, zlib\)$"):
        registry.load("xml", "model 'm'")
    with pytest.raises(InputError, match=r"^unknown codec 'xml' \(known: json, zlib\)$"):
        registry.module("xml")
    with pytest.raises(InputError, match=r"^unknown policy None \(known: a, b\)$"):
        pick("policy", {"b": 2, "a": 1}, None)
    assert pick("policy", {"b": 2, "a": 1}, "a") == 1
