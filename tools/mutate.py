"""``make mutate``: apply each mutation of ``tools/mutations.py`` to a scratch copy of the repository, run its
tests there, and report the survivors (mutations no test noticed).

A small explicit list rather than a generic tool: mutmut and cosmic-ray mutate every operator of every module and
need many full-suite runs (hours on two shared cores); the rules worth pinning are few and named. The working
tree is never touched: the tracked files are copied once into a temporary folder, each mutation is written
there, its tests run (``pytest -x``, no xdist) and the file is restored.

Usage: ``python -m tools.mutate [--area spec|loader|policy|...] [--only TEXT] [--row N] [--list]``; exit 1 when
any mutation survived or a row is stale. ``--list`` numbers the chosen rows; ``--row`` runs those numbers of the
chosen rows (repeatable), ``--only`` the rows whose rule or path contains the text, so that a long area runs in
pieces.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools.mutations import MUTATIONS, Mutation

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 600


def _copy_tree(target: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout.split(b"\0")
    for raw in files:
        if not raw:
            continue
        rel = raw.decode()
        source = ROOT / rel
        if not source.exists():
            continue
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest)


def _run_tests(copy: Path, tests: tuple[str, ...]) -> int:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(copy)}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", *tests]
    try:
        return subprocess.run(cmd, cwd=copy, env=env, capture_output=True, timeout=TIMEOUT_S).returncode
    except subprocess.TimeoutExpired:
        return -1  # a hang counts as noticed, but is reported


def run(mutations: list[Mutation]) -> int:
    survivors: list[Mutation] = []
    stale: list[Mutation] = []
    with tempfile.TemporaryDirectory(prefix="gpulease-mutate-") as scratch:
        copy = Path(scratch)
        _copy_tree(copy)
        for m in mutations:
            path = copy / m.path
            original = path.read_text()
            if original.count(m.find) != 1:
                stale.append(m)
                print(f"STALE    {m.area:7} {m.path}: {m.find!r} occurs {original.count(m.find)} times")
                continue
            path.write_text(original.replace(m.find, m.replace))
            started = time.monotonic()
            try:
                code = _run_tests(copy, m.tests)
            finally:
                path.write_text(original)
            verdict = "killed" if code != 0 else "SURVIVED"
            if code == 0:
                survivors.append(m)
            print(f"{verdict:8} {m.area:7} {m.rule} ({m.path}, {time.monotonic() - started:.0f} s)", flush=True)
    total = len(mutations) - len(stale)
    print(f"\n{total - len(survivors)}/{total} mutations killed; {len(survivors)} survived; {len(stale)} stale rows")
    for m in survivors:
        print(f"  survivor: {m.area}: {m.rule}: {m.path}: {m.find!r} -> {m.replace!r}")
    return 1 if survivors or stale else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--area", action="append", help="only these areas (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--only", action="append", metavar="TEXT",
                        help="only the rows whose rule or path contains TEXT (repeatable)")
    parser.add_argument("--row", action="append", type=int, metavar="N",
                        help="only the chosen rows of these numbers, as --list numbers them (repeatable)")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.area or m.area in args.area]
    if args.only:
        chosen = [m for m in chosen if any(text in m.rule or text in m.path for text in args.only)]
    if args.row:
        wrong = [n for n in args.row if not 1 <= n <= len(chosen)]
        if wrong:
            parser.error(f"--row {wrong[0]}: the chosen rows are numbered 1 to {len(chosen)}")
        chosen = [chosen[n - 1] for n in sorted(set(args.row))]
    if args.list:
        for n, m in enumerate(chosen, 1):
            print(f"{n:3} {m.area:7} {m.rule}: {m.path}")
        return 0
    return run(chosen)


if __name__ == "__main__":
    sys.exit(main())
