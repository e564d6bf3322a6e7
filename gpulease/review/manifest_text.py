"""GPU compute in Kubernetes manifests a program hands over as text (``pulumi_kubernetes.yaml.ConfigGroup``,
``ConfigFile``, ``yaml.v2.ConfigGroup``).

Under a real engine the Kubernetes provider parses those manifests (the ``kubernetes:yaml:decode`` lookup for the
v1 components, the provider's own code for the v2 remote components), so their objects never pass through the
program; offline nothing answers them, and the review is partial. So that the partial says what may be inside,
the manifests the program gives literally (``yaml=`` text, ``objs=`` objects; not ``files=``, which may be URLs)
are read here as YAML 1.2-compatible safe YAML, at most ``MAX_TEXT`` characters and ``MAX_DOCUMENTS`` documents, and
scanned with the same rules as resources of unknown types (``gpulease.core.compute.scan.gpu_mentions``: Karpenter
requirements, node selectors on accelerated types, ``nvidia.com/gpu`` requests). What cannot be read says GPU
compute may be inside: never that there is none.

A v1 ``ConfigGroup`` given one string rather than a list (``yaml=text``) iterates it: each character is decoded
on its own, so no one lookup holds the manifests. The string is kept when the group registers
(``note_component``, from the registration's stack trace) and read in place of a one-character text.
"""

from __future__ import annotations

import contextvars
from typing import Any

import yaml

from gpulease.core.compute.scan import gpu_mentions

MAX_TEXT = 1_000_000
MAX_DOCUMENTS = 1_000
MAX_NODES = 200_000
"""Values walked in all the manifests together: YAML aliases share nodes, so a few hundred bytes can expand to
10**9 values (a "billion laughs"); past this, the manifests count as unreadable."""
MAX_DEPTH = 64
TEXT_KEYS = ("yaml", "text")
"""Inputs holding manifest text: the components' ``yaml`` (v1 and v2), ``kubernetes:yaml:decode``'s ``text``."""
OBJECT_KEYS = ("objs",)

GROUP_TEXT: contextvars.ContextVar[str | None] = contextvars.ContextVar("gpulease_group_text", default=None)
"""The single string a v1 ``ConfigGroup`` registered in this context was given as ``yaml`` (None: a list)."""
_V1_GROUP = "ConfigGroup.__init__"


def note_component(frame: Any) -> None:
    """Keep a v1 ``ConfigGroup``'s ``yaml`` string (``frame``: a concrete resource's constructor registering)."""
    code = frame.f_code
    if code.co_name == "__init__" and getattr(code, "co_qualname", "") == _V1_GROUP \
            and "pulumi_kubernetes" in code.co_filename:
        text = frame.f_locals.get("yaml")
        GROUP_TEXT.set(text if isinstance(text, str) else None)


def decode_inputs(args: dict[str, Any]) -> dict[str, Any]:
    """The manifests a ``kubernetes:yaml:decode`` stands for: one character of a group's single string stands
    for the whole string."""
    text, group = args.get("text"), GROUP_TEXT.get()
    if group is not None and isinstance(text, str) and len(text) <= 1:
        return {"yaml": group}
    return args


def _documents(value: Any) -> list[Any] | None:
    texts = value if isinstance(value, list | tuple) else [value]
    found: list[Any] = []
    for text in texts:
        if not isinstance(text, str) or len(text) > MAX_TEXT:
            return None
        try:
            for document in yaml.safe_load_all(text):
                found.append(document)
                if len(found) > MAX_DOCUMENTS:
                    return None
        except (yaml.YAMLError, RecursionError, ValueError):
            return None
    return found


def _bounded(documents: list[Any]) -> bool:
    """Whether the documents hold at most ``MAX_NODES`` values, none nested deeper than ``MAX_DEPTH`` and no
    cycle (an object that holds itself): walked without recursion, aliases counted each time they are reached."""
    budget = MAX_NODES
    stack: list[tuple[Any, int, frozenset[int]]] = [(d, 0, frozenset()) for d in documents]
    while stack:
        node, depth, above = stack.pop()
        budget -= 1
        if budget < 0 or depth > MAX_DEPTH:
            return False
        if isinstance(node, dict | list | tuple):
            if id(node) in above:
                return False
            inner = above | {id(node)}
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1, inner) for child in children)
    return True


def gpu_note(inputs: Any) -> str:
    """``""`` when the literal manifests hold no GPU compute, else what the partial's line adds."""
    if not isinstance(inputs, dict):
        return ""
    documents: list[Any] = []
    unread = False
    for key in TEXT_KEYS:
        if key in inputs:
            read = _documents(inputs[key])
            unread |= read is None
            documents += read or []
    for key in OBJECT_KEYS:
        value = inputs.get(key)
        if isinstance(value, list | tuple):
            documents += list(value)
        elif value is not None:
            documents.append(value)
    if inputs.get("files"):
        unread = True
    if not _bounded(documents):
        documents, unread = [], True
    hits = gpu_mentions(documents)
    if hits:
        what = "; ".join(f"{_kind(documents, path)}{found}" for path, found in hits)
        return f"; the manifests it was given hold GPU compute the offline review cannot judge ({what})"
    if unread:
        return ("; GPU compute may be among its manifests (files, or text that cannot be read here): the offline "
                "review cannot see them")
    return ""


def _kind(documents: list[Any], path: str) -> str:
    """``NodePool 'gpu': `` for the document a hit's path starts in (``[2].spec…``)."""
    if not path.startswith("[") or "]" not in path:
        return ""
    try:
        document = documents[int(path[1:path.index("]")])]
    except (ValueError, IndexError):
        return ""
    if not isinstance(document, dict):
        return ""
    kind = document.get("kind")
    meta = document.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return f"{kind} {name!r}: " if kind and name else (f"{kind}: " if kind else "")
