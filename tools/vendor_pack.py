"""Generate what the published ``gpulease-guardrails`` pack carries besides its rules (``make vendor``).

``pulumi policy publish`` uploads the pack folder alone, and the pack's virtualenv holds only its
``requirements.txt``. So the folder carries, generated here and checked by ``tests/policies/test_publishable.py``:

- ``policies/_vendor/gpulease/core/``: a byte-for-byte copy of ``gpulease/core`` (the vocabulary, resource types,
  catalog, sizing and cost the rules share with the CLI), imported as ``gpulease.core`` when the real package is
  not installed (``policies/__main__.py``);
- ``policies/_vendor/taggable_types.json``: every resource type token of the pinned provider SDKs whose
  constructor takes ``tags``, read from the SDKs' sources, for when the provider SDKs themselves are not installed
  (they are not in the pack's requirements: hundreds of megabytes to answer one question per type).

Run: ``.venv/bin/python -m tools.vendor_pack`` (``--check`` reports a stale copy and exits 1 instead).
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "gpulease" / "core"
VENDOR = ROOT / "policies" / "_vendor"
CORE_COPY = VENDOR / "gpulease" / "core"
TAGGABLE = VENDOR / "taggable_types.json"
SDKS = ("pulumi_aws", "pulumi_alicloud", "pulumiverse_time")
SUFFIXES = (".py", ".yaml")

_INIT = re.compile(r"def _internal_init\(__self__,(?P<params>.*?)\):", re.S)
_TOKEN = re.compile(r"super\(\w+, __self__\)\.__init__\(\s*'(?P<token>[\w-]+:[\w/.-]+:\w+)'")
_PARAM = re.compile(r"^\s*(\w+):", re.M)


def core_files(root: Path) -> dict[str, bytes]:
    """The copied files of a ``core`` folder: relative path -> bytes (sources and data, no caches)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
    }


def taggable_types() -> list[str]:
    """Resource type tokens whose SDK constructor has a ``tags`` parameter, from the installed SDKs' sources."""
    found = set()
    for sdk in SDKS:
        spec = importlib.util.find_spec(sdk)
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit(f"{sdk} is not installed; run make setup")
        for path in Path(next(iter(spec.submodule_search_locations))).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            init, token = _INIT.search(text), _TOKEN.search(text)
            if init and token and "tags" in _PARAM.findall(init.group("params")):
                found.add(token.group("token"))
    return sorted(found)


def write() -> None:
    if CORE_COPY.exists():
        shutil.rmtree(CORE_COPY)
    for rel, data in core_files(SOURCE).items():
        target = CORE_COPY / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    shutil.copyfile(ROOT / "gpulease" / "__init__.py", VENDOR / "gpulease" / "__init__.py")
    TAGGABLE.write_text(json.dumps(taggable_types(), indent=0) + "\n")


def stale() -> list[str]:
    """What differs between the sources and the copy (empty when the copy is current)."""
    problems = []
    source, copy = core_files(SOURCE), core_files(CORE_COPY) if CORE_COPY.exists() else {}
    problems += [f"missing or different: gpulease/core/{rel}" for rel in source if source[rel] != copy.get(rel)]
    problems += [f"not in the source: policies/_vendor/gpulease/core/{rel}" for rel in copy if rel not in source]
    init = VENDOR / "gpulease" / "__init__.py"
    if not init.exists() or not filecmp.cmp(ROOT / "gpulease" / "__init__.py", init, shallow=False):
        problems.append("policies/_vendor/gpulease/__init__.py")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the copy is stale, writing nothing")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale()
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    write()
    print(f"wrote {CORE_COPY.relative_to(ROOT)} and {TAGGABLE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
