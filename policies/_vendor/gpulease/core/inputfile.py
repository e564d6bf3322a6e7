"""The one way the kit reads a file a user hands it: stack files, catalog overrides, policy config.

Every reader goes through ``read_text`` (a regular file, at most ``max_bytes``, strict UTF-8, opened without
blocking) and then ``load_yaml`` / ``load_yaml_document`` / ``load_json``. What is refused, and why:

- anything but a regular file (a directory, a FIFO, a device, a socket, a symlink loop): a FIFO would block
  the reader forever, a device could stream without end;
- more than ``max_bytes``: an input file is a few kilobytes; a cap bounds memory and time;
- bytes that are not UTF-8: both YAML and JSON are text;
- YAML anchors and aliases: one alias-expanding file of a few hundred bytes ("billion laughs") becomes
  gigabytes once turned into JSON for the engine, and no stack file needs them;
- YAML tags (``!!python/object``, ``!custom``, even ``!!str``): the kit reads plain data only;
- a key written twice in one mapping: YAML and JSON parsers silently keep the last one, so a reviewer reading
  the first would be misled;
- keys that are not text, nesting deeper than ``MAX_DEPTH``, and JSON's NaN / Infinity.

Plain scalars mean what they mean to the Pulumi CLI, which reads stack and project files with Go's yaml.v3 (YAML
1.2: ``1:00``, ``yes`` and ``on`` are text, ``0x1F`` and ``017`` are numbers; ``gpulease.core.yaml_scalars``), so
``gpulease plan`` and ``pulumi up`` see the same values.

Each refusal is an ``InputFileError`` (a ``UserError``): ``<file>:<line>: <what is wrong>; accepted: <what is>``.
Timestamps stay text (as the Pulumi engine hands them to a program), so no date arithmetic happens while reading.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
from yaml.scanner import Scanner

from gpulease.core import yaml_scalars
from gpulease.core.errors import UserError

DEFAULT_MAX_BYTES = 1024 * 1024
"""1 MiB: far above any stack file, catalog override or policy config, far below what could hurt."""
MAX_DEPTH = 32
"""Nesting depth of mappings and sequences; a stack file needs about six."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class InputFileError(UserError):
    """A file the kit cannot read as asked: ``<file>:<line>: <problem>; accepted: <accepted>``."""

    def __init__(self, path: str | Path, problem: str, *, line: int | None = None, accepted: str | None = None):
        self.path = str(path)
        self.line = line
        self.problem = problem
        self.accepted = accepted
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}" + (f"; accepted: {accepted}" if accepted else ""))


def _kind(mode: int) -> str | None:
    for test, label in _KINDS:
        if test(mode):
            return label
    return None if stat.S_ISREG(mode) else "not a regular file"


def _os_problem(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symlink loop (or a chain of too many symlinks)"
    if exc.errno == errno.ENOENT:
        return "does not exist"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "cannot be read (permission denied)"
    if exc.errno == errno.ENOTDIR:
        return "does not exist (a part of its path is not a folder)"
    return f"cannot be read ({exc.strerror or exc})"


def read_bytes(path: str | Path, *, what: str, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; never blocks on a FIFO or streams a device."""
    accepted = f"a regular {what} of at most {max_bytes:,} bytes"
    try:
        kind = _kind(os.stat(path).st_mode)
        if kind:
            raise InputFileError(path, f"is {kind}, not a {what}", accepted=accepted)
        # O_NONBLOCK: if the path was swapped for a FIFO since the stat, opening it still returns at once.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputFileError(path, _os_problem(exc), accepted=accepted) from None
    try:
        kind = _kind(os.fstat(fd).st_mode)
        if kind:
            raise InputFileError(path, f"is {kind}, not a {what}", accepted=accepted)
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(65536, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise InputFileError(path, _os_problem(exc), accepted=accepted) from None
    finally:
        os.close(fd)
    if size > max_bytes:
        raise InputFileError(path, f"is larger than {max_bytes:,} bytes", accepted=accepted)
    return b"".join(chunks)


def read_text(path: str | Path, *, what: str, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The text of a regular UTF-8 file (a leading byte-order mark is dropped)."""
    data = read_bytes(path, what=what, max_bytes=max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFileError(
            path, f"is not UTF-8 text (byte 0x{data[exc.start]:02x})", line=line, accepted=f"a UTF-8 text {what}"
        ) from None
    return text.removeprefix("\ufeff")


# --- YAML ----------------------------------------------------------------------------------------------------


class _RefusedError(Exception):
    def __init__(self, line: int, problem: str, accepted: str):
        super().__init__(problem)
        self.line, self.problem, self.accepted = line, problem, accepted


class _StrictConstructor(SafeConstructor):
    """SafeConstructor that refuses duplicate keys, merge keys and keys that are not text."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:  # type: ignore[override]
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise _RefusedError(line, "merge keys (<<) are not accepted", "the fields written out")
                shown = key_node.value if isinstance(key_node, ScalarNode) else "a collection"
                raise _RefusedError(line, f"key {shown!r} is not text", "text keys (quote a number, e.g. '1':)")
            if key_node.value in seen:
                raise _RefusedError(
                    line, f"key {key_node.value!r} is written twice (first at line {seen[key_node.value]})",
                    "each key once per mapping",
                )
            seen[key_node.value] = line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_timestamp(self, node: ScalarNode) -> str:  # type: ignore[override]
        # As text, like the engine hands config to a program; date arithmetic here could overflow (year 9999).
        return str(self.construct_scalar(node))

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:  # e.g. an integer of more than 4300 digits
            raise _RefusedError(node.start_mark.line + 1, f"value cannot be read ({exc})", "an ordinary number or text") from None


_TAG = "tag:yaml.org,2002:"
_TAGS = {kind: _TAG + kind for kind in (yaml_scalars.NULL, yaml_scalars.BOOL, yaml_scalars.INT, yaml_scalars.FLOAT,
                                         yaml_scalars.STR, yaml_scalars.MERGE_TAG, yaml_scalars.OUT_OF_RANGE)}


class _PulumiResolver(BaseResolver):
    """Tags plain scalars as yaml.v3 resolves them (``yaml_scalars.resolve``); quoted ones are always text."""

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:  # type: ignore[override]
        if kind is ScalarNode:
            return _TAGS[yaml_scalars.resolve(value)[0]] if implicit[0] else _TAGS[yaml_scalars.STR]
        return super().resolve(kind, value, implicit)


def _construct_plain(loader: SafeConstructor, node: ScalarNode) -> Any:
    value = yaml_scalars.resolve(str(node.value))[1]
    return yaml_scalars.as_program_sees(value) if isinstance(value, float) else value


for _kind_tag in (yaml_scalars.NULL, yaml_scalars.BOOL, yaml_scalars.INT, yaml_scalars.FLOAT):
    _StrictConstructor.add_constructor(_TAGS[_kind_tag], _construct_plain)
_StrictConstructor.add_constructor(_TAGS[yaml_scalars.MERGE_TAG], SafeConstructor.construct_yaml_str)


def _out_of_range(loader: SafeConstructor, node: ScalarNode) -> Any:
    shown = node.value if len(node.value) <= 24 else f"{node.value[:12]}...({len(node.value):,} characters)"
    raise _RefusedError(node.start_mark.line + 1, f"value cannot be read as a number: {shown} is out of range "
                        "(the Pulumi CLI would read it as text)", "an ordinary number (64 bits), or quoted text")


_StrictConstructor.add_constructor(_TAGS[yaml_scalars.OUT_OF_RANGE], _out_of_range)
_StrictConstructor.add_constructor(_TAG + "timestamp", _StrictConstructor.construct_yaml_timestamp)


class _StrictComposer(Composer):
    """Composer that refuses anchors, aliases, explicit tags and deep nesting before building anything."""

    depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:  # type: ignore[override]
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, AliasEvent):
            raise _RefusedError(line, f"YAML alias *{event.anchor} is not accepted", "every value written out (no & anchors, no * aliases)")
        if isinstance(event, ScalarEvent | MappingStartEvent | SequenceStartEvent):
            if event.anchor is not None:
                raise _RefusedError(line, f"YAML anchor &{event.anchor} is not accepted", "every value written out (no & anchors, no * aliases)")
            if event.tag is not None:
                shown = event.tag.replace("tag:yaml.org,2002:", "!!")
                raise _RefusedError(line, f"YAML tag {shown} is not accepted", "plain values (text, numbers, true/false, lists, mappings)")
        if isinstance(event, MappingStartEvent | SequenceStartEvent):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise _RefusedError(line, f"nests deeper than {MAX_DEPTH} levels", "the documented fields")
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1
        return super().compose_node(parent, index)


class StrictLoader(Reader, Scanner, Parser, _StrictComposer, _StrictConstructor, _PulumiResolver):
    """PyYAML's safe loader with the refusals above (the class layout of ``yaml.SafeLoader``)."""

    def __init__(self, stream: str):
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        _StrictComposer.__init__(self)
        _StrictConstructor.__init__(self)
        _PulumiResolver.__init__(self)


@dataclass
class YamlDocument:
    """A parsed YAML file and the line of each value, by its path of keys and indexes."""

    path: str
    data: Any
    lines: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def line(self, *keys: Any) -> int | None:
        """The line of the value at ``keys`` (or of its nearest parent that has one)."""
        while keys:
            if keys in self.lines:
                return self.lines[keys]
            keys = keys[:-1]
        return self.lines.get(())


def _record_lines(node: Node, path: tuple[Any, ...], out: dict[tuple[Any, ...], int]) -> None:
    out[path] = node.start_mark.line + 1
    if isinstance(node, MappingNode):
        for key_node, value_node in node.value:
            _record_lines(value_node, (*path, key_node.value), out)
    elif isinstance(node, SequenceNode):
        for i, item in enumerate(node.value):
            _record_lines(item, (*path, i), out)


def _yaml_problem(exc: yaml.YAMLError) -> tuple[int | None, str, str]:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = str(getattr(exc, "problem", None) or exc).strip()
    if "\\t" in problem or "\t" in problem:
        return line, "a tab indents or separates YAML here", "spaces for indentation"
    context = getattr(exc, "context", None)
    return line, f"is not valid YAML ({context + ', ' if context else ''}{problem})", "YAML mappings, lists and values"


def load_yaml_document(path: str | Path, *, what: str, max_bytes: int = DEFAULT_MAX_BYTES) -> YamlDocument:
    """Parse a YAML file under the rules above; an empty file is ``None``."""
    text = read_text(path, what=what, max_bytes=max_bytes)
    loader = None
    try:
        loader = StrictLoader(text)
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except _RefusedError as exc:
        raise InputFileError(path, exc.problem, line=exc.line, accepted=exc.accepted) from None
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        raise InputFileError(path, f"holds a character YAML does not allow (#x{exc.character:04x})", line=line,
                             accepted="printable UTF-8 text") from None
    except yaml.YAMLError as exc:
        line, problem, accepted = _yaml_problem(exc)
        raise InputFileError(path, problem, line=line, accepted=accepted) from None
    except RecursionError:
        raise InputFileError(path, "nests too deeply", accepted="the documented fields") from None
    finally:
        if loader is not None:
            loader.dispose()
    lines: dict[tuple[Any, ...], int] = {}
    if node is not None:
        _record_lines(node, (), lines)
    return YamlDocument(path=str(path), data=data, lines=lines)


if yaml.__with_libyaml__:
    from yaml.cyaml import CParser

    class PackageLoader(CParser, _StrictConstructor, _PulumiResolver):
        """For data files shipped with the package: libyaml's parser and composer (a fifth of the time of the
        pure-Python one; PyYAML's wheels include it), with the strict constructor (no duplicate keys, text
        timestamps)."""

        def __init__(self, stream: str):
            CParser.__init__(self, stream)
            _StrictConstructor.__init__(self)
            _PulumiResolver.__init__(self)
else:  # pragma: no cover - PyYAML built without libyaml
    PackageLoader = StrictLoader


def load_package_yaml(path: Path) -> YamlDocument:
    """A YAML data file shipped with the package (the catalog's own files): reviewed in the repository, not user
    input, so it is parsed fast; what a user hands the kit goes through ``load_yaml_document``."""
    loader = PackageLoader(path.read_text(encoding="utf-8"))
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    lines: dict[tuple[Any, ...], int] = {}
    if node is not None:
        _record_lines(node, (), lines)
    return YamlDocument(path=str(path), data=data, lines=lines)


def load_yaml(path: str | Path, *, what: str, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """The data of a YAML file read under the rules above (``None`` for an empty file)."""
    return load_yaml_document(path, what=what, max_bytes=max_bytes).data


# --- JSON ----------------------------------------------------------------------------------------------------


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json(path: str | Path, *, what: str, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """The data of a strict JSON file: no duplicate keys, no NaN/Infinity, at most ``MAX_DEPTH`` levels."""
    text = read_text(path, what=what, max_bytes=max_bytes)
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out and not duplicates:
                duplicates.append(key)
            out[key] = value
        return out

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"is not valid JSON ({exc.msg})", line=exc.lineno, accepted=f"a JSON {what}") from None
    except ValueError as exc:
        raise InputFileError(path, str(exc), accepted="finite numbers") from None
    except RecursionError:
        raise InputFileError(path, "nests too deeply", accepted=f"a JSON {what}") from None
    if duplicates:
        raise InputFileError(path, f"key {duplicates[0]!r} is written twice in one object", accepted="each key once per object")
    if too_deep(data):
        raise InputFileError(path, f"nests deeper than {MAX_DEPTH} levels", accepted=f"a JSON {what}")
    return data


def too_deep(data: Any) -> bool:
    """Whether ``data`` nests deeper than ``MAX_DEPTH`` levels (iteratively: no recursion on a hostile document)."""
    stack = [(data, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, (dict, list)):
            if level > MAX_DEPTH:
                return True
            stack.extend((item, level + 1) for item in (value.values() if isinstance(value, dict) else value))
    return False
