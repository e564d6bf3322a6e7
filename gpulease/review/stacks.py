"""Finding stacks: by name in this project's ``stacks/``, or as any Pulumi project directory / stack file."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpulease.core import inputfile
from gpulease.core.errors import UserError
from gpulease.core.shown import echo

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""This project's folder (Pulumi.yaml, stacks/): what a bare stack name is looked up in."""

STACK_FILE_MAX_BYTES = 256 * 1024
"""A stack file is a few kilobytes; a sweep of 256 runs with overrides stays far below this."""


DEFAULT_STACK = "dev"
"""The stack name of a project reviewed without a stack file and without ``--stack`` (``pulumi stack init``'s
usual first stack)."""


class StackNotFoundError(UserError):
    pass


PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")
"""The names the Pulumi CLI takes a folder's project file by (it looks for either)."""


def project_file(folder: Path) -> Path | None:
    """The project file of ``folder`` (``Pulumi.yaml`` or ``Pulumi.yml``), or None: the one test of "this folder is
    a Pulumi project" that the walk, the stack lookup and the project loader share."""
    for name in PROJECT_FILES:
        # a folder named Pulumi.yaml is not a project file: the Pulumi CLI skips it and takes Pulumi.yml
        if os.path.lexists(folder / name) and not _is_dir(folder / name):
            return folder / name
    return None


def stack_suffix(project_dir: Path) -> str:
    """The extension of a project's stack files: the project file's own (``DetectProjectStackPath`` in the Pulumi
    CLI names a stack's file ``Pulumi.<stack>`` + ``filepath.Ext`` of the project file), ``.yaml`` without one."""
    found = project_file(project_dir)
    return found.suffix if found is not None else ".yaml"


def stack_file_name(project_dir: Path, stack: str) -> str:
    """The file name ``pulumi up -s stack`` reads the stack's configuration from in ``project_dir``."""
    return f"Pulumi.{stack}{stack_suffix(project_dir)}"


def _project_doc(project_dir: Path) -> tuple[Path, inputfile.YamlDocument, dict[str, Any]]:
    path = project_file(project_dir)
    if path is None:
        raise StackNotFoundError(f"{project_dir} has no Pulumi.yaml")
    doc = inputfile.load_yaml_document(path, what="Pulumi project file", max_bytes=STACK_FILE_MAX_BYTES)
    if doc.data is None:
        return path, doc, {}
    if not isinstance(doc.data, Mapping):
        raise inputfile.InputFileError(path, f"the top level is {_kind(doc.data)}", line=doc.line(),
                                       accepted="a mapping with name, runtime and other project settings")
    return path, doc, dict(doc.data)


def project_meta(project_dir: Path) -> dict[str, Any]:
    """The project file (``Pulumi.yaml`` or ``Pulumi.yml``) as a mapping, read through the input-file boundary."""
    return _project_doc(project_dir)[2]


def project_info(project_dir: Path) -> tuple[str, Path]:
    """The project name and its stack config directory (``stackConfigDir``; the project root when it is absent or
    empty, as for the Pulumi CLI); a value that is not a folder name is refused, naming the value."""
    path, doc, raw = _project_doc(project_dir)
    config_dir = raw.get("stackConfigDir")
    if config_dir is None or config_dir == "":
        config_dir = "."
    elif not isinstance(config_dir, str):
        raise inputfile.InputFileError(path, f"stackConfigDir: {echo(str(config_dir))} is {_kind(config_dir)}",
                                       line=doc.line("stackConfigDir"),
                                       accepted="a folder name relative to the project folder, e.g. stacks")
    return str(raw.get("name", project_dir.name)), project_dir / config_dir


def _kind(value: Any) -> str:
    return {list: "a list", dict: "a mapping", str: "text", int: "a number", float: "a number", bool: "true/false"}.get(type(value), type(value).__name__)


def load_stack_config(path: Path) -> dict[str, Any]:
    """The ``config:`` map of a ``Pulumi.<stack>.yaml`` file, values as parsed YAML.

    Read through ``gpulease.core.inputfile`` (regular file, size cap, no aliases or tags, no duplicate keys);
    a top level or ``config:`` of the wrong shape is an ``InputFileError`` naming the line."""
    doc = inputfile.load_yaml_document(path, what="stack file", max_bytes=STACK_FILE_MAX_BYTES)
    if doc.data is None:
        return {}
    if not isinstance(doc.data, Mapping):
        raise inputfile.InputFileError(path, f"the top level is {_kind(doc.data)}", line=doc.line(),
                                       accepted="a mapping with a config: section")
    config = doc.data.get("config")
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise inputfile.InputFileError(path, f"config: is {_kind(config)}", line=doc.line("config"),
                                       accepted="a mapping of keys such as gpulease:experiment and aws:region")
    return dict(config)


def stack_files(project_dir: Path = PROJECT_ROOT) -> list[Path]:
    _, config_dir = project_info(project_dir)
    suffix = stack_suffix(project_dir)  # Pulumi reads only these: a Pulumi.dev.yaml in a .yml project is not dev's
    return sorted(p for p in config_dir.glob(f"Pulumi.*{suffix}") if p.name not in PROJECT_FILES)


def stack_name(path: Path) -> str:
    return path.name.removeprefix("Pulumi.").rsplit(".", 1)[0]


def _is_dir(path: Path) -> bool:
    """``path.is_dir()``, False for a name the system refuses to look up (too long, a NUL in it)."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def resolve(target: str, project_dir: Path = PROJECT_ROOT) -> list[tuple[Path, Path]]:
    """``(project_dir, stack_file)`` pairs for a stack name, a stack file, or a project directory (all stacks)."""
    path = Path(target)
    if os.path.lexists(path) and not _is_dir(path):
        # A stack file inside a project (or its stackConfigDir): the project is the nearest Pulumi.yaml above.
        # Anything else that exists (a FIFO, a symlink loop, a device) is handed on too: the loader refuses it
        # with its own message, rather than "no stack named ...".
        located = path.resolve() if path.is_file() else Path(os.path.abspath(path))
        for parent in located.parents:
            if project_file(parent) is not None:
                return [(parent, located)]
        # a stack of the user's folder (gpulease init's): the kit's program. The folder of the path as given is
        # compared, resolved (a stacks/ that is a symlink; a stack file that is a symlink to a shared config is
        # the user's by where it is linked, as its bare name finds it there)
        users = {f.parent.resolve() for f in user_stack_files(project_dir)}
        given = Path(os.path.abspath(path))
        if given.name.startswith("Pulumi.") and given.parent.resolve() in users:
            return [(project_dir, given)]
        if located.name.startswith("Pulumi.") and located.parent.resolve() in users:
            return [(project_dir, located)]
        raise StackNotFoundError(f"{path} is not inside a Pulumi project (no Pulumi.yaml above it)")
    if _is_dir(path):
        files = stack_files(path)
        if not files:
            raise StackNotFoundError(f"{path} has no Pulumi.<stack>.yaml files")
        return [(path.resolve(), f) for f in files]
    here = kit_project_here(project_dir)
    for f in own_stack_files(project_dir):
        if stack_name(f) == target and here is not None:
            return [(here, f)]
    users = user_stack_files(project_dir)
    for f in [*users, *stack_files(project_dir)]:
        if stack_name(f) == target:
            if f not in users and here is None and (problem := foreign_here(target, f, project_dir)):
                raise StackNotFoundError(problem)
            return [(project_dir, f)]
    raise StackNotFoundError(not_found(target, project_dir))


KIT_PROGRAM = "from components.program import main"
"""The line of a project's ``__main__.py`` that makes it the kit's program (the ``pulumi new`` template's, a copy of
the kit's own): a bare stack name finds that project's stacks, which it declares as the kit does."""


def enclosing_project(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (the folder the command runs in) holding a ``Pulumi.yaml``, as the
    Pulumi CLI finds a project; the walk stops below a home folder and at the filesystem root (neither is a
    project: a stray ``~/Pulumi.yaml`` would claim every folder under it)."""
    folder = Path(os.path.abspath(start or Path.cwd()))
    # resolved on both sides: a home folder reached through a symlink (HOME=/home/ada -> /data/ada) stops the walk too
    homes = {Path(os.path.abspath(Path.home())), Path.home().resolve()}
    tops = {Path("/home"), Path("/home").resolve()}
    while (folder != folder.parent and not {folder, folder.resolve()} & homes
           and not {folder.parent, folder.parent.resolve()} & tops):
        if project_file(folder) is not None:
            return folder
        folder = folder.parent
    return None


class ProgramFileError(UserError):
    """A project whose ``main:`` names no program Pulumi could run."""


def program_file(project: Path) -> Path:
    """The program file of a Python project, as Pulumi's Python host runs it: ``<main>/__main__.py`` for ``main:`` a
    folder, ``main:`` itself for a file (joined to the project folder as Pulumi joins it, so ``/etc/x`` is
    ``<project>/etc/x``), ``__main__.py`` of the project folder without one. The one function that decides which file
    the review runs; a ``main:`` naming something missing is refused (Pulumi would fail), never replaced by the
    project's ``__main__.py``."""
    path, doc, meta = _project_doc(project)
    main = meta.get("main")
    if main is None or main == "":
        entry = project / "__main__.py"
        if not entry.is_file():
            raise ProgramFileError(f"{path}: no __main__.py in {project}; accepted: a Python program whose entry point "
                                   "is __main__.py (the Pulumi default), or `main:` naming the program")
        return entry
    where = f"{path}:{doc.line('main')}"
    if not isinstance(main, str):
        raise ProgramFileError(f"{where}: main: is {_kind(main)}; accepted: the program's file or folder, as text")
    target = Path(os.path.normpath(f"{project}/{main}"))
    entry = target / "__main__.py" if _is_dir(target) else target
    try:
        found = entry.is_file()
    except (OSError, ValueError):
        found = False
    if not found:
        missing = "is not a file" if os.path.lexists(entry) else "does not exist"
        names = f"{target}, which {missing}" if entry == target else f"{target}, but {entry} {missing}"
        raise ProgramFileError(f"{where}: main: {echo(main)} names {names}; accepted: main: naming the "
                               "program's file, or a folder holding __main__.py")
    return entry


def _program_or_none(project: Path) -> Path | None:
    try:
        return program_file(project)
    except UserError:
        return None


def foreign_here(target: str, kit_file: Path, project_dir: Path = PROJECT_ROOT) -> str | None:
    """Why a bare name must not find the kit's stack ``kit_file``: the command runs inside a Pulumi project (not the
    kit) whose program is not the kit's, where ``pulumi up`` would mean that project's stack; None elsewhere."""
    here = enclosing_project()
    if here is None or here.resolve() in (project_dir.resolve(), PROJECT_ROOT.resolve()):
        return None
    return (f"{project_file(here)}: {echo(target)} is the kit's stack ({kit_file}), not one of this Pulumi project, "
            f"whose program is not the kit's ({KIT_PROGRAM}); accepted: `gpulease plan .` for this project's "
            f"stacks, or the kit's stack by its path ({kit_file})")


def kit_project_here(project_dir: Path = PROJECT_ROOT) -> Path | None:
    """The project the command runs in (the folder, or the nearest above it with a ``Pulumi.yaml``) when it is a
    Pulumi project running the kit's program (not the kit itself)."""
    here = enclosing_project()
    if here is None or here.resolve() in (project_dir.resolve(), PROJECT_ROOT.resolve()):
        return None  # the kit itself is never "a project running the kit's program"
    program = _program_or_none(here)
    try:
        text = program.read_text(encoding="utf-8", errors="replace")[:65536] if program else ""
    except (OSError, ValueError):
        return None
    return here.resolve() if any(line.strip() == KIT_PROGRAM for line in text.splitlines()) else None


def own_stack_files(project_dir: Path = PROJECT_ROOT) -> list[Path]:
    """The stacks of the project the command runs in, when it runs the kit's program (``kit_project_here``)."""
    here = kit_project_here(project_dir)
    try:
        return stack_files(here) if here is not None else []
    except UserError:
        return []


def deployed_in(path: Path, project_dir: Path | None = None) -> Path | None:
    """The project ``gpulease up``/``down`` run ``pulumi up``/``destroy`` in for the stack file ``path``, and that
    ``status``, ``logs`` and ``ssh`` read its outputs in: the project the command runs in when it runs the kit's
    program and ``path`` is one of its stacks; None for the kit's folder (a stack of its ``stacks/``, or of the folder
    the command runs in, which the kit's program reads with ``--config-file``). A stack file of another project is
    refused: its stack would be deployed (or read) in a project it does not belong to."""
    project_dir = project_dir or PROJECT_ROOT  # read when called: the kit's folder as the process knows it
    resolved = path.resolve()
    own = kit_project_here(project_dir)
    if own is not None and resolved in {f.resolve() for f in own_stack_files(project_dir)}:
        return own
    if resolved.parent != (project_dir / "stacks").resolve() and resolved not in {
            f.resolve() for f in user_stack_files(project_dir)}:
        raise UserError(f"{path}: not a stack of this project ({project_dir}/stacks) nor of this folder; accepted: a "
                        "stack in stacks/ or in the folder you run gpulease in (gpulease runs the kit's program)")
    return None


def known_names(project_dir: Path = PROJECT_ROOT) -> list[str]:
    """Every stack a bare name finds, in the order it is looked up (the folder the command runs in, then the kit's)."""
    return list(dict.fromkeys(stack_name(f) for f in [*own_stack_files(project_dir), *user_stack_files(project_dir),
                                                      *stack_files(project_dir)]))


def nearest_name(target: str, project_dir: Path = PROJECT_ROOT) -> str | None:
    """The known stack name closest to a mistyped ``target``, or None."""
    names = known_names(project_dir)
    close = difflib.get_close_matches(target, names, n=1, cutoff=0.6)
    return close[0] if close else None


def searched(project_dir: Path = PROJECT_ROOT) -> str:
    """The folders a bare stack name is looked up in, as a refusal names them."""
    _, config_dir = project_info(project_dir)
    here = Path.cwd()
    if here.resolve() == project_dir.resolve():
        return str(config_dir)
    if (own := kit_project_here(project_dir)) is not None:
        return f"{project_info(own)[1]} or {config_dir}"
    if project_file(here) is not None:
        return (f"{config_dir} (not {here}: a Pulumi project of its own, whose stacks `gpulease plan .` reviews)")
    if here.resolve() == config_dir.resolve():  # inside the kit's stacks/: that folder, once (no stacks/stacks)
        return str(config_dir)
    return f"{here}, {here / 'stacks'} or {config_dir}"


KNOWN_SHOWN = 10
"""The most known stack names a refusal lists."""


def not_found(target: str, project_dir: Path = PROJECT_ROOT) -> str:
    """One line: where ``target`` was looked for, the nearest known name, and how to make one."""
    close = nearest_name(target, project_dir)
    hint = f"; did you mean {close!r}?" if close else ""
    names = known_names(project_dir)
    if len(names) > KNOWN_SHOWN:  # the nearest ones, so that a folder of thousands of stacks stays one short line
        near = difflib.get_close_matches(target, names, n=KNOWN_SHOWN, cutoff=0.0)
        listed = ", ".join(near) + f", … {len(names) - len(near)} more"
    else:
        listed = ", ".join(names) or "none"
    return (f"no stack {echo(target)} in {searched(project_dir)}{hint} (known stacks: {listed}); "
            "`gpulease init` writes a new one")


def user_stack_files(project_dir: Path = PROJECT_ROOT) -> list[Path]:
    """The stack files of the folder the command runs in (``./Pulumi.NAME.yaml``, ``./stacks/Pulumi.NAME.yaml``),
    where ``gpulease init`` writes them: a bare name is looked up there first, then in the kit's ``stacks/``. A
    folder that is a Pulumi project of its own is not the kit's: its stacks are named by the folder (``plan .``). In a
    project running the kit's program, or a subfolder of one, only that project is searched (``own_stack_files``),
    where ``gpulease init`` writes: never the subfolder."""
    here = Path.cwd()
    if here.resolve() == project_dir.resolve() or project_file(here) is not None:
        return []
    if kit_project_here(project_dir) is not None:
        return []
    found = []
    for folder in (here, here / "stacks"):
        if folder.is_dir():
            found += sorted(p for p in folder.glob("Pulumi.*.y*ml") if p.name not in ("Pulumi.yaml", "Pulumi.yml"))
    return found


def resolve_one(target: str, project_dir: Path = PROJECT_ROOT) -> Path:
    """The one stack file ``target`` names (a stack name or a stack file); a project folder is refused, naming its
    stacks."""
    found = resolve(target, project_dir)
    if len(found) != 1:
        names = ", ".join(stack_name(p) for _, p in found[:8]) or "none"
        raise StackNotFoundError(f"{target!r} names {len(found)} stacks, not one; accepted: one stack name or stack "
                                 f"file ({names})")
    return found[0][1]


def resolve_targets(
    target: str, project_dir: Path = PROJECT_ROOT, stack: str | None = None
) -> list[tuple[Path, Path | None, str]]:
    """``(project_dir, stack_file or None, stack name)`` for what ``gpulease plan`` names: a stack name, a stack
    file, or a project directory, every stack of it, or ``stack`` alone when given.

    A project directory without stack files (most public programs commit none) is one stack without a file,
    named ``stack`` or ``dev``; with ``stack`` given and no ``Pulumi.<stack>.yaml``, likewise."""
    path = Path(target)
    if _is_dir(path):
        files = stack_files(path)
        if stack is not None:
            files = [f for f in files if stack_name(f) == stack]
        if not files:
            return [(path.resolve(), None, stack or DEFAULT_STACK)]
        return [(path.resolve(), f, stack_name(f)) for f in files]
    return [(proj, f, stack_name(f)) for proj, f in resolve(target, project_dir)]
