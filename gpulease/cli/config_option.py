"""``--config KEY=VALUE`` of ``gpulease plan`` and ``gpulease cost``: one reading for both, the one a stack file
gets. A value is typed as the Pulumi CLI types the same text in a stack file (YAML 1.2 as ``gopkg.in/yaml.v3``
resolves a plain scalar: ``0x10`` is 16, ``1e3`` 1000, ``true`` a boolean, ``1:00``, ``yes`` and ``٣`` text; the
reader is ``gpulease.core.inputfile.StrictLoader``, its rules in ``gpulease.core.yaml_scalars``), then laid over a
copy of the stack file's config (a dotted key a path into it, as ``pulumi config set --path`` reads one:
``gpulease.review.config_overrides``) and validated by the spec with the rest: the same answer as the value written
into the stack file."""

from __future__ import annotations

import argparse
import re
from typing import Any

import yaml

from gpulease.core.errors import UserError
from gpulease.core.inputfile import MAX_DEPTH, StrictLoader

CONFIG_VALUE_MAX_CHARS = 64 * 1024
MAX_PATH_PARTS = MAX_DEPTH
"""The most parts of a dotted ``--config`` path: as deep as a stack file's values may nest."""
_PATH_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\Z")
"""One field of a dotted ``--config`` path (a config key or a spec field: camelCase, or a key with - or _)."""



CONFIG_HELP = ("a config value for the program, over the stack file's (repeatable): `instanceType=g5.xlarge` "
               "is the project's key, `aws:region=us-west-2` another namespace's, a dotted key a path inside one "
               "(`gpu.count=2`: the experiment's field, as `ephemeral --set` reads it; "
               "`gpulease:experiment.gpu.count=2` as `pulumi config set --path`); values are typed as in a stack "
               "file (YAML 1.2: 3 and 0x10 are numbers, true a boolean, yes and 1:00 text, [a, b] a list)")


def add_config_option(parser: argparse.ArgumentParser, extra: str = "") -> None:
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help=CONFIG_HELP + extra)


class ConfigOptionError(UserError):
    """A ``--config`` that is not ``key=value`` with a YAML value."""


def parse_config(options: list[str]) -> dict[str, Any]:
    """``--config key=value`` options as config: keys as given (the project's namespace is added when the program
    runs, like a stack file's bare keys), values read as YAML (aliases and tags refused)."""
    accepted = ("key=value, e.g. instanceType=g5.xlarge, aws:region=us-west-2, replicas=3 or a dotted path "
                "such as gpu.count=2")
    config: dict[str, Any] = {}
    for option in options:
        key, sep, raw = option.partition("=")
        key = key.strip()
        namespace, colon, name = key.rpartition(":")
        if not sep or not key or (colon and not (namespace and name)) or key.count(":") > 1 or " " in key:
            raise ConfigOptionError(f"--config {option!r}: accepted: {accepted}")
        if name.count(".") >= MAX_PATH_PARTS:
            raise ConfigOptionError(f"--config {key[:60]}...: a dotted path of {name.count('.') + 1} parts, more than "
                                    f"{MAX_PATH_PARTS}; accepted: a path of at most {MAX_PATH_PARTS} field names, "
                                    "e.g. gpu.count=2")
        bad = [part for part in name.split(".") if not _PATH_PART.match(part)]
        if "." in name and bad:
            shown = repr(bad[0]) if bad[0] else "an empty part"
            raise ConfigOptionError(f"--config {key}: {shown} is not a field name in the dotted path; accepted: "
                                    "dotted camelCase field names, e.g. gpu.count=2 or dataDisk.sizeGb=300 "
                                    "(list items are set whole: ssh.allowedCidrs=[203.0.113.7/32])")
        if len(raw) > CONFIG_VALUE_MAX_CHARS:
            raise ConfigOptionError(f"--config {key}: the value is longer than {CONFIG_VALUE_MAX_CHARS} characters")
        try:
            value = yaml.load(raw, Loader=StrictLoader) if raw.strip() else ""
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or type(exc).__name__
            raise ConfigOptionError(f"--config {key}: the value is not valid YAML ({problem}); accepted: a YAML "
                                    "scalar such as 3, true or text, or a flow list or mapping") from None
        except Exception as exc:
            raise ConfigOptionError(f"--config {key}: {exc}") from None
        config[key] = value
    return config
