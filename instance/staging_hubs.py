#!/usr/bin/env python3
"""The file lists of the model hubs staging reads, each entry checked before anything is downloaded (standard
library only).

- Hugging Face: ``GET /api/{models|datasets}/{repo}/tree/{revision}?recursive=true``, paged through the ``Link: <...>;
  rel="next"`` header (huggingface_hub ``HfApi.list_repo_tree``); a next page already read (a loop: the same request as
  sent, ``sent_as``, whatever fragment or letter case the link spells it with) or more than
  ``max_pages`` pages fails the source, and so does a next page a redirect could not lead to (``redirect_target``:
  only http(s), never from https down to http), before it is read. Each file from ``/{repo}/resolve/{revision}/{path}``.
- ModelScope: ``GET /api/v1/models/{repo}/repo/files?Revision=..&Recursive=true`` ({Data: {Files: [{Path, Size, Sha256,
  Type}]}}); each file from ``/api/v1/models/{repo}/repo?Revision=..&FilePath=..`` (the modelscope SDK's
  ``HubApi.get_model_files`` and ``get_file_download_url``).

An entry whose path, size or digest is missing or of the wrong type (``"size": "abc"``, ``true``, a negative
number, a digest that is not hexadecimal) fails the source with a ``StagingError`` naming the entry and the field.
"""

from __future__ import annotations

import re
import unicodedata
import urllib.parse
from collections.abc import Callable
from typing import Any

try:
    from instance.bounds import MAX_PAGES, PageGuard
    from instance.staging_files import StagingError, rel_parts, shown
    from instance.staging_http import redirect_target, sent_as
    from instance.staging_parts import FileJob
except ImportError:  # on the instance: installed next to this file
    from bounds import MAX_PAGES, PageGuard  # type: ignore[no-redef]
    from staging_files import StagingError, rel_parts, shown  # type: ignore[no-redef]
    from staging_http import redirect_target, sent_as  # type: ignore[no-redef]
    from staging_parts import FileJob  # type: ignore[no-redef]

SHA256 = re.compile(r"^[0-9a-f]{64}\Z")
SHA1 = re.compile(r"^[0-9a-f]{40}\Z")

MAX_FILE_BYTES = 16 * 1024 ** 4
"""The largest file a listing may name: 16 TiB, ext4's largest file with 4 KiB blocks
(https://docs.kernel.org/filesystems/ext4/blocks.html, "File Size, Extents"), above S3's 5 TiB
object limit (https://docs.aws.amazon.com/AmazonS3/latest/userguide/upload-objects.html) and no data set's file:
a larger size is a broken or hostile listing, refused before any space is reserved for it."""

GetJson = Callable[[str], tuple[Any, Any]]


def _field(entry: Any, key: str, kinds: tuple[type, ...], where: str, required: bool = True) -> Any:
    if not isinstance(entry, dict):
        raise StagingError(f"{where}: the listing holds {type(entry).__name__} {str(entry)[:80]!r} where an object "
                           "is expected")
    value = entry.get(key)
    if value is None and not required:
        return None
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    if not ok:
        names = " or ".join(k.__name__ for k in kinds)
        raise StagingError(f"{where}: the listing's entry {str(entry.get('path') or entry.get('Path') or '')[:200]!r} "
                           f"has {key!r} = {str(value)[:80]!r} ({type(value).__name__}); accepted: {names}")
    return value


def _size(entry: dict[str, Any], key: str, where: str) -> int:
    value = _field(entry, key, (int,), where)
    if not 0 <= value <= MAX_FILE_BYTES:
        raise StagingError(f"{where}: the listing's entry {entry.get('path') or entry.get('Path')!r} has {key!r} = "
                           f"{str(value)[:40]}; accepted: a size of 0 to {MAX_FILE_BYTES} bytes (16 TiB)")
    return int(value)


def _digest(entry: dict[str, Any], key: str, pattern: re.Pattern[str], where: str, required: bool) -> str | None:
    digits = 64 if pattern is SHA256 else 40
    value = _field(entry, key, (str,), where, required)
    if value is None:
        return None
    value = value.lower()
    if not pattern.match(value):
        raise StagingError(f"{where}: the listing's entry {entry.get('path') or entry.get('Path')!r} has {key!r} = "
                           f"{value[:80]!r}; accepted: {digits} hexadecimal digits")
    return value


def next_link(header: str) -> str | None:
    for part in header.split(","):
        if 'rel="next"' in part and "<" in part and ">" in part:
            return part[part.index("<") + 1:part.index(">")]
    return None


def hf_files(get_json: GetJson, base: str, kind: str, repo: str, revision: str, uri: str,
             max_pages: int = MAX_PAGES) -> list[FileJob]:
    rev = urllib.parse.quote(revision, safe="")
    url: str | None = f"{base}/api/{kind}/{repo}/tree/{rev}?recursive=true"
    guard = PageGuard(uri, max_pages)
    jobs: list[FileJob] = []
    prefix = "" if kind == "models" else "datasets/"
    while url:
        problem = guard.problem(url, sent_as(url))  # the same request, however the link spells it
        if problem:
            raise StagingError(problem)
        items, resp = get_json(url)
        if not isinstance(items, list):
            raise StagingError(f"{uri}: the listing page {url} is {type(items).__name__}, not a list of entries")
        for item in items:
            if _field(item, "type", (str,), uri) != "file":
                continue
            path = _field(item, "path", (str,), uri)
            rel_parts(path)
            lfs = _field(item, "lfs", (dict,), uri, required=False)
            if lfs:
                size = _size(lfs, "size", uri)
                sha256, sha1 = _digest(lfs, "oid", SHA256, uri, True), None
            else:
                size = _size(item, "size", uri)
                sha256, sha1 = None, _digest(item, "oid", SHA1, uri, True)
            jobs.append(FileJob(f"{base}/{prefix}{repo}/resolve/{rev}/{urllib.parse.quote(path)}", path, size, sha256,
                                sha1, f"{uri} {path}"))
        link = next_link(resp.getheader("Link") or "")
        url = redirect_target(url, link, "links its next page to") if link else None  # as a redirect is held
    return _once_each(jobs, uri)


def modelscope_files(get_json: GetJson, base: str, repo: str, revision: str, uri: str) -> list[FileJob]:
    rev = urllib.parse.quote(revision, safe="")
    answer, _ = get_json(f"{base}/api/v1/models/{repo}/repo/files?Revision={rev}&Recursive=true")
    data = answer.get("Data") if isinstance(answer, dict) else None
    files = data.get("Files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        raise StagingError(f"{uri}: the listing has no Data.Files list")
    jobs = []
    for item in files:
        if _field(item, "Type", (str,), uri, required=False) == "tree":
            continue
        path = _field(item, "Path", (str,), uri)
        rel_parts(path)
        size = _size(item, "Size", uri)
        sha256 = _digest(item, "Sha256", SHA256, uri, required=False) if item.get("Sha256") else None
        jobs.append(FileJob(f"{base}/api/v1/models/{repo}/repo?Revision={rev}&FilePath={urllib.parse.quote(path)}",
                            path, size, sha256, None, f"{uri} {path}"))
    return _once_each(jobs, uri)


def _once_each(jobs: list[FileJob], uri: str) -> list[FileJob]:
    """The listing's files, each path once: a path listed twice (with two sizes or digests, or one) is refused
    before anything is downloaded, as neither entry can be told to be the right one. So are two paths that differ
    only in their Unicode form, a file's or a folder's (``caf\\u00e9`` and ``cafe\\u0301``, NFC and NFD): two on
    Linux, but one name to macOS and to whoever reads them (a copy to a laptop keeps one of the two, which one
    unsaid)."""
    seen: set[str] = set()
    forms: dict[str, str] = {}
    for job in jobs:
        if job.rel in seen:
            raise StagingError(f"{uri}: the listing names {shown(job.rel)} twice; accepted: a listing naming each "
                               "file once")
        seen.add(job.rel)
        parts = job.rel.split("/")
        for path in ("/".join(parts[:n]) for n in range(1, len(parts) + 1)):  # its folders too: dé/a and dé/b
            other = forms.setdefault(unicodedata.normalize("NFC", path), path)
            if other != path:
                raise StagingError(f"{uri}: the listing names {spelled(other)} and {spelled(path)}, one name in two "
                                   "Unicode forms (NFC and NFD); accepted: a listing naming each file and folder in "
                                   "one form")
    return jobs


def spelled(text: str) -> str:
    """``text`` quoted with every character past printable ASCII as its code point (``'cafe\\u0301'``): the two
    forms of one name read apart."""
    return "'" + "".join(c if c.isascii() and c.isprintable() and c not in "\\'" else
                         f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}" for c in text) + "'"
