"""``gpulease schema``: the JSON Schema of the stack config, printed, written or checked for staleness. Printed as
it is by default (an editor reads it); ``--json`` wraps each answer in the envelope every command prints."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from components.spec.schema import stack_config_json_schema
from gpulease.cli.conventions import error_entry, print_json
from gpulease.cli.envelope import exit_epilog
from gpulease.review.stacks import PROJECT_ROOT

SCHEMA_PATH = PROJECT_ROOT / "schema" / "stack-config.schema.json"


def schema_text() -> str:
    return json.dumps(stack_config_json_schema(), indent=2, sort_keys=True) + "\n"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="print, write or check the stack config JSON Schema (for editors)",
                       epilog=exit_epilog((0, "printed, written, or up to date"), (1, "--check: the schema is stale")))
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"write {SCHEMA_PATH.relative_to(PROJECT_ROOT)}")
    mode.add_argument("--check", action="store_true", help="exit 1 when the checked-in schema is stale")
    p.add_argument("--json", action="store_true",
                   help='the answer in the envelope {"report", "ok", "data", "errors"}: the schema itself is "data"')
    p.set_defaults(func=run)


def _answer(args: argparse.Namespace, data: Any, line: str, *, error: str | None = None) -> None:
    if args.json:
        print_json("schema", data, ok=error is None, errors=[error_entry("schema-stale", error)] if error else [])
    elif error:
        print(error, file=sys.stderr)
    else:
        print(line)


def run(args: argparse.Namespace) -> int:
    text = schema_text()
    where = str(SCHEMA_PATH.relative_to(PROJECT_ROOT))
    if args.write:
        SCHEMA_PATH.write_text(text)
        _answer(args, {"path": where, "written": True}, f"wrote {where}")
        return 0
    if args.check:
        current = SCHEMA_PATH.read_text() if SCHEMA_PATH.exists() else ""
        fresh = current == text
        _answer(args, {"path": where, "upToDate": fresh}, "schema is up to date",
                error=None if fresh else f"{where} is stale: run `make schema`")
        return 0 if fresh else 1
    if args.json:
        print_json("schema", json.loads(text), ok=True)
    else:
        sys.stdout.write(text)
    return 0
