"""Hypothesis over the input-file loader and the spec: whatever the input, the answer is data or the project's
one user error, never another exception; what is accepted keeps the promises the clouds need."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.spec.clouds import SPEC_RULES
from components.spec.load import SpecError, load_stack_spec
from gpulease.core import inputfile, yaml_scalars
from tests.support.specs import experiment

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

yaml_pieces = st.sampled_from(
    ["config:", "\n", "  ", "\t", "- ", ": ", "&a ", "*a", "!!python/object ", "!x ", "{", "}", "[", "]", "'", '"',
     "<<: ", "~", "1e999", ".nan", "9999-12-31T23:59:59-05:00", "gpulease:experiment", "budgetUsd", "#", "\x00",
     "é", "\ufeff", "---", "...", "%YAML 1.1", "? "]
)


def _write(data: bytes) -> Path:
    with tempfile.NamedTemporaryFile(suffix=".yaml", delete=False) as handle:
        handle.write(data)
    return Path(handle.name)


@FAST
@given(st.one_of(st.binary(max_size=400), st.lists(yaml_pieces, max_size=40).map(lambda p: "".join(p).encode())))
def test_the_loader_returns_data_or_its_own_error(data: bytes) -> None:
    path = _write(data)
    try:
        for load in (inputfile.load_yaml, inputfile.load_json):
            try:
                load(path, what="stack file")
            except inputfile.InputFileError as exc:
                assert str(exc).startswith(str(path)) and "\n" not in str(exc).strip()
    finally:
        path.unlink()


# Printable text: PyYAML itself does not round-trip control characters such as NEL (U+0085).
printable = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))
plain = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(printable, max_size=20),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(printable, min_size=1, max_size=8), inner, max_size=4),
    max_leaves=20,
)


class _Yaml12Dumper(yaml.SafeDumper):
    """PyYAML's emitter follows YAML 1.1 and leaves ``0E0`` or ``1e3`` (text in 1.1, numbers in YAML 1.2, as the
    Pulumi CLI reads a stack file) unquoted: a writer of stack files quotes every text that YAML 1.2 would read
    as something else (the kit's own writers emit JSON scalars, always quoted)."""


def _text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = None if data and yaml_scalars.resolve(data)[0] == yaml_scalars.STR else '"'
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Yaml12Dumper.add_representer(str, _text)


def test_yaml_1_2_numbers_that_pyyaml_leaves_plain_read_as_numbers() -> None:
    """Why the writer above quotes: the reader follows YAML 1.2, not PyYAML's 1.1."""
    assert yaml.safe_dump({"0E0": "1e3"}) == "0E0: 1e3\n"  # plain: text to PyYAML
    path = _write(b"config: {b: 1e3, a: 0o17}\n")
    key = _write(b"config: {0E0: x}\n")
    try:
        assert inputfile.load_yaml(path, what="stack file") == {"config": {"b": 1000, "a": 15}}
        with pytest.raises(inputfile.InputFileError, match="key '0E0' is not text"):
            inputfile.load_yaml(key, what="stack file")
    finally:
        path.unlink()
        key.unlink()


@FAST
@given(plain)
def test_plain_yaml_reads_back_exactly(value: Any) -> None:
    path = _write(yaml.dump({"config": value}, Dumper=_Yaml12Dumper, allow_unicode=True).encode())
    try:
        assert inputfile.load_yaml(path, what="stack file") == {"config": value}
    finally:
        path.unlink()


hostile_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**12), 10**12),
    st.text(max_size=300),
    st.none(),
    st.booleans(),
    st.lists(st.text(max_size=40), max_size=70),
    st.dictionaries(st.text(max_size=140), st.text(max_size=300), max_size=60),
)
fields = st.sampled_from(
    ["budgetUsd", "maxSpotPriceUsd", "maxRuntimeHours", "expiresAt", "owner", "tags", "name", "idleMinutes"]
)
nested = st.sampled_from(
    [("ssh", "allowedCidrs"), ("ssh", "publicKey"), ("ssh", "user"), ("dataDisk", "iops"), ("dataDisk", "throughput"),
     ("dataDisk", "sizeGb"), ("dataDisk", "type"), ("checkpoints", "prefix"), ("gpu", "gpuMemoryGb"),
     ("watchdog", "finalSyncMinutes")]
)


@FAST
@given(st.sampled_from(["aws", "alicloud"]), st.lists(st.tuples(fields, hostile_values), max_size=3),
       st.lists(st.tuples(nested, hostile_values), max_size=3))
def test_the_spec_answers_every_input_with_a_spec_or_a_spec_error(cloud, top, inner) -> None:
    spec = experiment(cloud=cloud) if cloud == "alicloud" else experiment()
    if cloud == "alicloud":
        spec["gpu"] = {"instanceType": "ecs.gn7i-c8g1.2xlarge"}
    for key, value in top:
        spec[key] = value
    for (section, key), value in inner:
        spec[section] = {**(spec.get(section) or {}), key: value}
    try:
        exp = load_stack_spec("prop", {"gpulease:experiment": spec}).base
    except SpecError as exc:
        assert "gpulease:experiment" in str(exc) and "Traceback" not in str(exc)
        return
    # What was accepted keeps the promises the clouds and the guards rely on.
    assert math.isfinite(exp.budget_usd) and exp.budget_usd > 0
    assert exp.max_spot_price_usd is None or math.isfinite(exp.max_spot_price_usd)
    assert len(exp.tags) + 11 <= SPEC_RULES[cloud].max_tags
    assert len(exp.owner) <= SPEC_RULES[cloud].tag_value_max
    assert exp.max_runtime_hours * 60 >= SPEC_RULES[cloud].min_runtime_minutes or exp.expires_at is not None
