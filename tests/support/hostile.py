"""The hostile-input corpus: stack files a careless or hostile user could hand ``gpulease plan``, generated.

Each entry is ``(name, content, phrase)``: the file's bytes and a phrase its one-line error must contain. Files
that are not regular files (a folder, a FIFO, a symlink loop, a device) are made by ``make_special``.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.paths import ROOT, STACKS_DIR

GOOD_STACK = STACKS_DIR / "Pulumi.aws-debug-t4.yaml"

BILLION_LAUGHS = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
    "config:\n  gpulease:experiment: *g\n"
)

CORPUS: list[tuple[str, bytes, str]] = [
    ("toplist", b"- config\n- x\n", "the top level is a list; accepted: a mapping"),
    ("topstring", b"just some text\n", "the top level is text"),
    ("configlist", b"config:\n  - gpulease:experiment\n", "config: is a list"),
    ("configstring", b"config: hello\n", "config: is text"),
    ("syntax", b"config:\n  gpulease:experiment: {name: [x\n", "is not valid YAML"),
    ("tabs", b"config:\n\tgpulease:experiment: {}\n", "a tab indents"),
    ("undefinedalias", b"config:\n  gpulease:experiment: *nothing\n", "YAML alias *nothing is not accepted"),
    ("billionlaughs", BILLION_LAUGHS.encode(), "YAML anchor &a is not accepted"),
    ("pythontag", b"config:\n  gpulease:experiment: !!python/object/apply:os.system [id]\n",
     "YAML tag !!python/object/apply:os.system is not accepted"),
    ("customtag", b"config:\n  aws:region: !region us-east-1\n", "YAML tag !region is not accepted"),
    ("notutf8", b"config:\n  aws:region: us-east-1\n  gpulease:experiment: {name: caf\xe9}\n", "is not UTF-8 text"),
    ("nulbyte", b"config:\n  aws:region: us-\x00east-1\n", "holds a character YAML does not allow"),
    ("duplicatekey", b"config:\n  gpulease:experiment:\n    budgetUsd: 5\n    budgetUsd: 5000\n",
     "key 'budgetUsd' is written twice (first at line 3)"),
    ("numberkey", b"config:\n  1: x\n", "key '1' is not text"),
    ("mergekey", b"config:\n  <<: {aws:region: us-east-1}\n", "merge keys (<<) are not accepted"),
    ("hugeint", b"config:\n  gpulease:experiment: {budgetUsd: " + b"9" * 5000 + b"}\n", "value cannot be read"),
    # Numbers the Pulumi CLI's reader (yaml.v3) would pass on as text: refused with the line, not read as text.
    ("overflowfloat", b"config:\n  gpulease:experiment: {budgetUsd: 1e999}\n", "value cannot be read as a number: 1e999"),
    ("hugehex", b"config:\n  gpulease:experiment: {budgetUsd: 0x" + b"f" * 40 + b"}\n", "is out of range"),
    ("booleankey", b"config:\n  gpulease:experiment: {true: 1}\n", "key 'true' is not text"),
    ("deepnesting", b"config: " + b"[" * 200 + b"]" * 200 + b"\n", "nests deeper than"),
    ("oversized", b"config:\n  x: '" + b"a" * (300 * 1024) + b"'\n", "is larger than"),
]
"""(file name part, content, a phrase of the error)."""

SPECIAL = {
    "folder": "is a directory",
    "fifo": "is a named pipe (FIFO)",
    "symlinkloop": "is a symlink loop",
    "device": "is a character device",
}


def stack_path(directory: Path, name: str) -> Path:
    return directory / f"Pulumi.{name}.yaml"


def make_special(directory: Path, name: str) -> Path:
    """A stack file that is not a regular file: a folder, a FIFO, a symlink loop or a device."""
    path = stack_path(directory, name)
    if name == "folder":
        path.mkdir()
    elif name == "fifo":
        os.mkfifo(path)
    elif name == "symlinkloop":
        other = directory / "loop-partner"
        path.symlink_to(other)
        other.symlink_to(path)
    elif name == "device":
        path.symlink_to("/dev/zero")
    return path


def make_project(directory: Path, *, good: bool = True) -> Path:
    """A Pulumi project running this repository's program, with the whole corpus (and a good stack) in stacks/."""
    root = ROOT
    (directory / "stacks").mkdir(parents=True)
    (directory / "Pulumi.yaml").write_text("name: gpulease\nruntime: python\nstackConfigDir: stacks\n")
    (directory / "__main__.py").symlink_to(root / "__main__.py")
    (directory / "components").symlink_to(root / "components")
    if good:
        stack_path(directory / "stacks", "good").write_bytes(GOOD_STACK.read_bytes())
    for name, content, _ in CORPUS:
        stack_path(directory / "stacks", name).write_bytes(content)
    for name in SPECIAL:
        make_special(directory / "stacks", name)
    return directory
