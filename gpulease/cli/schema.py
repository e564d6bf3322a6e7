"""``gpulease schema``: the JSON Schema of the stack config, printed, written or checked for staleness."""

from __future__ import annotations

import argparse
import json
import sys

from components.spec.schema import stack_config_json_schema
from gpulease.review.stacks import PROJECT_ROOT

SCHEMA_PATH = PROJECT_ROOT / "schema" / "stack-config.schema.json"


def schema_text() -> str:
    return json.dumps(stack_config_json_schema(), indent=2, sort_keys=True) + "\n"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="print, write or check the stack config JSON Schema (for editors)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"write {SCHEMA_PATH.relative_to(PROJECT_ROOT)}")
    mode.add_argument("--check", action="store_true", help="exit 1 when the checked-in schema is stale")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    text = schema_text()
    if args.write:
        SCHEMA_PATH.write_text(text)
        print(f"wrote {SCHEMA_PATH.relative_to(PROJECT_ROOT)}")
        return 0
    if args.check:
        current = SCHEMA_PATH.read_text() if SCHEMA_PATH.exists() else ""
        if current != text:
            print(f"{SCHEMA_PATH.relative_to(PROJECT_ROOT)} is stale: run `make schema`", file=sys.stderr)
            return 1
        print("schema is up to date")
        return 0
    sys.stdout.write(text)
    return 0
