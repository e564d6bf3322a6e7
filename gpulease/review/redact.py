"""One redaction step for every report: a secret input's value is never printed.

A secret input (``pulumi.Output.secret``, ``Config.require_secret``, a secret nested in a dict or list) is judged
and priced by its value, so its value reaches finding messages, cost lines and tag findings. Before anything is
printed (text, markdown, JSON, ``gpulease cost``) it passes through ``Redactor.text``, which replaces each recorded
secret value with ``[secret]``. The values come from the wire form of each registration
(``CapturedResource.input_struct`` / ``output_struct``), where the SDK keeps a secret in its signed envelope
(``rpc.wrap_rpc_secret``), so a rendering streamed back from an isolated child has them too.

What is recorded: each string of at least ``MIN_LENGTH`` characters inside a secret, and the ``str()`` of each
number there (``42``, ``0.5``). A value that is also a common word (a secret ``p4d.24xlarge`` that a catalog line
names too) is still replaced everywhere: a secret is never shown. In JSON a number whose text is a secret becomes
the string ``"[secret]"``. The work is bounded: at most ``MAX_SECRETS`` values of at most ``MAX_LENGTH``
characters each, matched longest first (``_Matcher``); a program past either bound is not reviewed
(``too_many``), since a report could not promise to hide them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime import rpc

from gpulease.review.captured_values import SECRET

MIN_LENGTH = 3
MAX_SECRETS = 1000
MAX_LENGTH = 4096


def number_texts(value: float) -> list[str]:
    if value != value or value in (float("inf"), float("-inf")):
        return [str(value)]
    texts = [repr(float(value))]
    if float(value).is_integer():
        texts.append(str(int(value)))
    return texts


def _leaves(value: struct_pb2.Value, out: set[str]) -> None:
    """Every string and number text inside a secret's value (a dict's values, never its keys)."""
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        out.add(value.string_value)
    elif kind == "number_value":
        out.update(number_texts(value.number_value))
    elif kind == "struct_value":
        for item in value.struct_value.fields.values():
            _leaves(item, out)
    elif kind == "list_value":
        for item in value.list_value.values:
            _leaves(item, out)


def _walk(value: struct_pb2.Value, out: list[set[str]]) -> None:
    """Find secret envelopes in a wire value; record what each holds (one set per envelope)."""
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        fields = value.struct_value.fields
        sig = fields.get(rpc._special_sig_key)
        if sig is not None and sig.string_value == rpc._special_secret_sig:
            held: set[str] = set()
            if "value" in fields:
                _leaves(fields["value"], held)
            out.append(held)
            return
        for item in fields.values():
            _walk(item, out)
    elif kind == "list_value":
        for item in value.list_value.values:
            _walk(item, out)


def _kept(texts: Iterable[str]) -> set[str]:
    return {v for v in texts if len(v) >= MIN_LENGTH and v != SECRET}


def secret_values(structs: Iterable[Any], made: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """The plain texts held by every secret in ``structs`` (wire ``Struct`` objects; None is skipped).

    One secret inside a dict or list makes the SDK send the whole of it as one secret envelope. When ``made`` (the
    secrets the program made, ``program_secrets``) holds some text of an envelope, the envelope is such a lifting
    and its secret parts are those ``made`` holds: its other texts (plain tags beside one secret tag) are not
    secrets. An envelope none of whose texts the program made is hidden whole."""
    groups: list[set[str]] = []
    for struct in structs:
        if isinstance(struct, struct_pb2.Struct):
            for item in struct.fields.values():
                _walk(item, groups)
    return _kept(text for group in groups if not (made and group & made) for text in group)


def rendering_secrets(rendering: Any) -> set[str]:
    """Every secret value one rendering's resources were registered with (inputs) or answered with (outputs), and
    every one its program made (``program_secrets``)."""
    made = set(getattr(rendering, "secrets", ()))  # short ones too: they tell a lifting apart (not hidden)
    structs = (s for r in rendering.resources for s in (r.input_struct, r.output_struct))
    return _kept(made) | secret_values(structs, made)


def too_many(values: set[str]) -> str | None:
    """Why these secrets are past the bound (one line, naming no value), or None."""
    if len(values) > MAX_SECRETS:
        return (f"the program's secret inputs hold {len(values)} distinct values, more than the {MAX_SECRETS} a "
                "report can hide; not reviewed")
    if any(len(v) > MAX_LENGTH for v in values):
        return (f"a secret input of the program is longer than {MAX_LENGTH} characters, more than a report can "
                "hide; not reviewed")
    return None


def written_forms(value: str) -> set[str]:
    """``value`` as the reports may write it: itself, quoted by ``repr`` or JSON (a tab as ``\\t``), escaped by the
    kit's ``printable`` (``\\x1b``), for rich markup (``\\[``) and in a markdown table cell (``\\|``, a line
    break as ``<br>``), and each of those in a cell: a message that quotes a secret never prints it in another
    spelling."""
    from rich.markup import escape  # only where a program has secrets: a JSON or markdown plan imports no rich

    from gpulease.core.printable import printable

    base = {value, repr(value)[1:-1], json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
            printable(value), escape(value)}
    cells = {form.replace("|", "\\|") for form in base}
    forms = base | cells | {form.replace("\n", "<br>") for form in base | cells}
    return {form for form in forms if len(form) >= MIN_LENGTH}


class _Matcher:
    """Where the given texts (longest first) occur in a text: at the leftmost place, the longest that matches,
    then on after it, as one alternation of them would, in time linear in the text for texts that do not share
    their first characters. Each text's first ``MIN_LENGTH`` characters are looked up in one compiled
    alternation of those heads only (a few characters each): compiling the whole texts (a thousand of 4,000
    characters) took seconds."""

    def __init__(self, ordered: list[str]):
        self._by_head: dict[str, list[str]] = {}
        for form in ordered:
            self._by_head.setdefault(form[:MIN_LENGTH], []).append(form)
        self._heads = re.compile("|".join(re.escape(h) for h in self._by_head))

    def spans(self, text: str) -> list[tuple[int, int]]:
        found, pos = [], 0
        while (head := self._heads.search(text, pos)) is not None:
            at = head.start()
            match = next((f for f in self._by_head[head.group()] if text.startswith(f, at)), None)
            if match is None:
                pos = at + 1
            else:
                found.append((at, at + len(match)))
                pos = at + len(match)
        return found


class Redactor:
    """Replaces each recorded secret value with ``[secret]`` in whatever a report prints."""

    def __init__(self, values: Iterable[str]):
        forms = {form for v in values if len(v) >= MIN_LENGTH for form in written_forms(v)}
        ordered = sorted(forms, key=lambda v: (-len(v), v))
        self.values = frozenset(ordered)
        self._pattern = _Matcher(ordered) if ordered else None

    def text(self, text: str, markup: bool = False) -> str:
        """``text`` with every secret value in it replaced (the one function every report goes through);
        ``markup``: the text is rich markup, where the replacement is escaped so it prints as itself."""
        if self._pattern is None or not isinstance(text, str):
            return text
        shown = "\\" + SECRET if markup else SECRET
        spans = self._pattern.spans(text)
        if not spans:
            return text
        out, start = [], 0
        for begin, end in spans:
            out += [text[start:begin], shown]
            start = end
        out.append(text[start:])
        return "".join(out)

    def renderable(self, value: Any, markup: bool = True) -> Any:
        """What a rich console prints, redacted: markup strings, ``Text`` (styles kept) and tables' cells."""
        if self._pattern is None:
            return value
        from rich.table import Table  # a console is printing: rich is loaded already
        from rich.text import Text

        if isinstance(value, str):
            return self.text(value, markup)
        if isinstance(value, Text):
            spans = self._pattern.spans(value.plain)
            if not spans:
                return value
            out, start = Text(style=value.style, end=value.end), 0
            for begin, end in spans:
                out.append_text(value[start:begin])
                out.append(SECRET)
                start = end
            out.append_text(value[start:])
            return out
        if isinstance(value, Table):
            value.title = self.renderable(value.title) if value.title is not None else None
            for column in value.columns:
                column.header = self.renderable(column.header)
                column._cells[:] = [self.renderable(cell) for cell in column._cells]
        return value


    def data(self, value: Any) -> Any:
        """JSON-like data with every string value redacted (never a key: the report's schema is the kit's, and a
        secret equal to a key name must not rename it); a number whose text is a secret becomes ``"[secret]"``."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int | float):
            return SECRET if any(t in self.values for t in number_texts(value)) else value
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


class RedactingConsole:
    """A rich console whose every ``print`` and ``rule`` goes through one ``Redactor`` first; the rest is the
    console's own."""

    def __init__(self, console: Any, hide: Redactor):
        self._console, self._hide = console, hide

    def print(self, *objects: Any, **kwargs: Any) -> None:
        markup = kwargs.get("markup")
        markup = bool(getattr(self._console, "_markup", True)) if markup is None else markup
        self._console.print(*(self._hide.renderable(o, markup) for o in objects), **kwargs)

    def rule(self, title: Any = "", **kwargs: Any) -> None:
        self._console.rule(self._hide.renderable(title), **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console, name)

def for_reviews(reviews: Iterable[Any]) -> Redactor:
    """One redactor for every stack of a report: a secret of one stack is hidden in the others too."""
    values: set[str] = set()
    for review in reviews:
        values |= rendering_secrets(getattr(review, "rendering", review))
    return Redactor(values)
