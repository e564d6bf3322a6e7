"""Stack files read as the Pulumi CLI reads them: YAML 1.2 plain scalars as Go's yaml.v3 resolves them, then the
value as the program receives it through JSON. Each row is what ``pulumi up`` would hand the program."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpulease.core import inputfile, yaml_scalars

# (plain scalar, the value the program sees): PyYAML's YAML 1.1 reading in the comment where it differs.
PULUMI_READS = [
    ("1:00", "1:00"),  # YAML 1.1: 60 (base 60)
    ("1:30", "1:30"),  # YAML 1.1: 90
    ("yes", "yes"),  # YAML 1.1: True
    ("no", "no"),  # YAML 1.1: False
    ("on", "on"),  # YAML 1.1: True
    ("off", "off"),  # YAML 1.1: False
    ("y", "y"),
    ("Yes", "Yes"),
    ("true", True),
    ("True", True),
    ("FALSE", False),
    ("tRuE", "tRuE"),
    ("0o10", 8),  # YAML 1.1: the text '0o10'
    ("010", 8),  # yaml.v3 keeps YAML 1.1's leading-zero octal
    ("09", 9),  # not an octal: a float in yaml.v3, a whole number in the program's JSON
    ("0x10", 16),
    ("-0x10", -16),
    ("0b11", 3),
    ("1_000", 1000),
    ("1e3", 1000),  # a float that JSON carries as 1000
    ("1.5e3", 1500),
    ("8.0", 8),
    ("8.5", 8.5),
    (".5", 0.5),
    ("+1", 1),
    ("-1", -1),
    ("1.", 1),
    ("99999999999999999999", 100000000000000000000),  # above 64 bits: a float, written without exponent by Go
    ("18446744073709551615", 18446744073709551615),  # the largest uint64
    ("2026-11-30", "2026-11-30"),  # YAML 1.1: a date
    ("2026-11-30T10:00:00Z", "2026-11-30T10:00:00Z"),
    ("2026-11-30 10:00:00", "2026-11-30 10:00:00"),
    ("~", None),
    ("null", None),
    ("NULL", None),
    ("Null", None),
    ("nULL", "nULL"),
    (".nan", math.nan),
    (".inf", math.inf),
    ("-.Inf", -math.inf),
    (".Nan", ".Nan"),
    ("+", "+"),
    ("1_", 1),
    ("_1", "_1"),
    ("0x", "0x"),
    ("1e", "1e"),
]


@pytest.fixture
def read(tmp_path: Path):
    def parse(text: str):
        path = tmp_path / "Pulumi.dev.yaml"
        path.write_text(f"value: {text}\n")
        return inputfile.load_yaml(path, what="stack file")["value"]
    return parse


@pytest.mark.parametrize(("text", "expected"), PULUMI_READS, ids=[t[:20] for t, _ in PULUMI_READS])
def test_plain_scalars_mean_what_they_mean_to_the_pulumi_cli(read, text, expected) -> None:
    got = read(text)
    if isinstance(expected, float) and math.isnan(expected):
        assert isinstance(got, float) and math.isnan(got)
        return
    assert got == expected and type(got) is type(expected), (text, got)


@pytest.mark.parametrize("text", ["'1:00'", '"yes"', "'010'", '"0x10"', "'true'", "'~'", "'2026-11-30'"])
def test_quoted_scalars_are_always_text(read, text) -> None:
    assert read(text) == text[1:-1]


def test_a_stack_file_with_a_sexagesimal_runtime_reads_it_as_text(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("config:\n  gpulease:experiment:\n    maxRuntimeHours: 1:00\n    idleMinutes: 0x1E\n")
    exp = inputfile.load_yaml(path, what="stack file")["config"]["gpulease:experiment"]
    assert exp == {"maxRuntimeHours": "1:00", "idleMinutes": 30}


@pytest.mark.parametrize(("body", "phrase"), [
    ("a: &x 1\nb: *x\n", "anchor &x"),
    ("a: !!str 1\n", "tag !!str"),
    ("a: 1\na: 2\n", "written twice"),
    ("true: 1\n", "is not text"),
    ("<<: {a: 1}\n", "merge keys"),
])
def test_the_guards_still_hold_with_the_new_scalars(tmp_path: Path, body: str, phrase: str) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(body)
    with pytest.raises(inputfile.InputFileError) as err:
        inputfile.load_yaml(path, what="stack file")
    assert phrase in str(err.value) and str(err.value).startswith(f"{path}:") and "accepted:" in str(err.value)


def test_yes_as_a_key_is_text_as_in_yaml_12(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("yes: 1\non: 2\n")
    assert inputfile.load_yaml(path, what="stack file") == {"yes": 1, "on": 2}


def test_resolve_keeps_64_bit_limits() -> None:
    assert yaml_scalars.resolve("9223372036854775807") == (yaml_scalars.INT, 2**63 - 1)
    assert yaml_scalars.resolve("-9223372036854775808") == (yaml_scalars.INT, -(2**63))
    # Below int64 and signed: not a uint64 either, so yaml.v3 tries a float.
    assert yaml_scalars.resolve("-9223372036854775809") == (yaml_scalars.FLOAT, -9223372036854775809.0)
    assert yaml_scalars.resolve("0x" + "f" * 17) == (yaml_scalars.OUT_OF_RANGE, "0x" + "f" * 17)


@pytest.mark.parametrize("text", ["1e999", "-1e999", "9" * 5000, "0x" + "f" * 40])
def test_a_number_out_of_64_bit_range_is_refused_not_read_as_text(tmp_path: Path, text: str) -> None:
    # yaml.v3 would hand it on as text; nobody means the text, so the reader says so with the line.
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(f"a: 1\nvalue: {text}\n")
    with pytest.raises(inputfile.InputFileError) as err:
        inputfile.load_yaml(path, what="stack file")
    message = str(err.value)
    assert message.startswith(f"{path}:2: value cannot be read as a number") and "accepted: an ordinary number" in message
    assert len(message) < 300
