"""The user-data's YAML from libyaml's emitter is the pure-Python SafeDumper's, byte for byte."""

from __future__ import annotations

import yaml

from components.userdata import cloudinit


class _PythonDumper(yaml.SafeDumper):
    pass


_PythonDumper.add_representer(cloudinit._Literal, cloudinit._literal)


def _python_dump(value: object) -> str:
    return yaml.dump(value, Dumper=_PythonDumper, sort_keys=False, width=1000, allow_unicode=False)


def test_the_fast_emitter_is_libyamls() -> None:
    assert issubclass(cloudinit._Dumper, yaml.CSafeDumper)  # the pinned PyYAML wheel has libyaml


def test_the_cloud_config_is_emitted_as_the_python_dumper_does() -> None:
    awkward = "line with trailing space \n\ttabbed\n#!/bin/sh\necho 'quoted' \"twice\" : colon - dash\n\n\nlast"
    documents = [
        {"write_files": [{"path": "/opt/x", "permissions": "0644", "owner": "root:root",
                          "content": cloudinit._Literal(text)}]}
        for text in (awkward, "{\"json\": [1, 2, {\"k\": \"v\"}], \"u\": \"\\u00e9\"}\n", "x" * 3000 + "\n", "a\n  b\n")
    ]
    documents.append({"runcmd": [["systemctl", "enable", "--now", "--no-block", "unit.service"]], "n": 3, "t": True})
    for document in documents:
        assert cloudinit._dump(document) == _python_dump(document)
