"""Reading the catalog: the shipped data files, then the user's override files merged on top.

An override file has the shape of the shipped files (``sources``, ``instances``, ``regions``, any of them). A row
naming a known instance type (cloud + type) or region (cloud + region) changes only the fields it gives
(``prices`` merge region by region, ``spotPrices`` zone by zone); any other row is a new one and must be complete.
The prices an override gives take its date (undated without one); the others keep theirs
(``gpulease.core.catalog.dating``). Every row is
validated; a malformed one raises ``CatalogError`` naming the file, the line and the row.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gpulease.core import inputfile
from gpulease.core.catalog import dating
from gpulease.core.catalog.models import UNDATED, Catalog, InstanceType, RegionPrices, Source
from gpulease.core.catalog.user_folder import (
    USER_CATALOG_ENV,
    TooManyCatalogFilesError,
    user_catalog_dir,
    user_catalog_files,
)
from gpulease.core.errors import UserError
from gpulease.core.validation_words import described, shown

DATA_DIR = Path(__file__).parent
BASE_FILES = (DATA_DIR / "instances.yaml", DATA_DIR / "prices.yaml")
OVERRIDES_ENV = "GPULEASE_CATALOG_OVERRIDES"
"""Override files, separated by the platform's path separator (``:`` on Linux and macOS)."""

_SECTIONS: dict[str, tuple[type[BaseModel], tuple[str, str]]] = {
    "instances": (InstanceType, ("cloud", "type")),
    "regions": (RegionPrices, ("cloud", "region")),
}
CATALOG_MAX_BYTES = 4 * 1024 * 1024
"""The shipped files are tens of kilobytes; an override with every region of every type stays far below this."""
_MERGED_MAPS = (*dating.DATED_MAPS, dating.REGION_DATES)


class CatalogError(UserError):
    """A malformed catalog file or a request the catalog cannot satisfy.

    For a request, ``field`` is the path inside the experiment spec (``gpu.fit``, ``gpu.instanceType`` ...) and
    ``detail`` the message without it, so that a caller can report ``SpecError(stack, [(prefix + field, detail)])``.
    """

    def __init__(self, message: str, *, field: str | None = None):
        self.field = field
        self.detail = message
        super().__init__(f"{field}: {message}" if field else message)


class CatalogFileError(CatalogError):
    """A catalog file (shipped, an override, the user's folder) that cannot be read or holds a malformed row: the
    file's problem, named by file, line and row, never reported under a stack's field."""


def override_paths() -> tuple[Path, ...]:
    """The user's catalog folder's files (``user_folder``), then the files ``GPULEASE_CATALOG_OVERRIDES`` names."""
    raw = os.environ.get(OVERRIDES_ENV, "")
    try:
        folder = user_catalog_files()
    except (TooManyCatalogFilesError, OSError) as exc:
        raise CatalogFileError(str(exc) if isinstance(exc, TooManyCatalogFilesError) else
                           f"the catalog folder {user_catalog_dir()} cannot be read ({exc}); accepted: a folder "
                           f"of price files, or {USER_CATALOG_ENV} pointing at one") from None
    return (*folder, *(Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip()))


def load_catalog(overrides: Sequence[str | Path] | None = None) -> Catalog:
    """The shipped catalog with ``overrides`` (default: the files named by ``GPULEASE_CATALOG_OVERRIDES``)."""
    paths = tuple(Path(p) for p in overrides) if overrides is not None else override_paths()
    stamps = [(str(p), p.stat().st_mtime_ns) for p in BASE_FILES]
    for path in paths:
        if not os.path.lexists(path):
            raise CatalogFileError(f"catalog override file {path} does not exist (from --catalog or {OVERRIDES_ENV})")
        try:
            stamps.append((str(path), os.stat(path).st_mtime_ns))
        except OSError:  # a symlink loop, an unreadable folder: the input-file boundary says which
            _read(path)
            raise
    # Keyed by modification time too, so that an edited override file is read again.
    return _load(tuple(stamps))


@lru_cache(maxsize=8)
def _load(stamps: tuple[tuple[str, int], ...]) -> Catalog:
    rows: dict[str, dict[tuple[str, str], tuple[dict[str, Any], str, BaseModel]]] = {name: {} for name in _SECTIONS}
    sources: dict[str, Source] = {}
    files = []
    undated: dict[tuple[str, tuple[str, ...], str], str] = {}  # (section, row key, price) -> the row that left it undated
    for path_text, _ in stamps:
        path = Path(path_text)
        files.append(str(path))
        document, lines = _read(path)
        in_this_file: dict[tuple[str, tuple[str, ...]], str] = {}
        for key, raw in (document.get("sources") or {}).items():
            try:
                sources[str(key)] = Source.model_validate(raw)
            except ValidationError as exc:
                raise CatalogFileError(f"{path}: sources.{key}: {_first_error(exc)}") from None
        for section, (model, key_fields) in _SECTIONS.items():
            items = document.get(section) or []
            if not isinstance(items, list):
                raise CatalogFileError(f"{path}: '{section}' must be a list of rows")
            for i, raw in enumerate(items):
                where = f"{path} line {lines.get((section, i), '?')}: {section}[{i}]"
                if not isinstance(raw, dict):
                    raise CatalogFileError(f"{where}: a row must be a mapping of fields")
                key = tuple(str(raw.get(f, "")) for f in key_fields)
                label = f"{where} ({' '.join(k for k in key if k) or 'no ' + ' / '.join(key_fields)})"
                if not all(key):
                    raise CatalogFileError(f"{label}: needs {' and '.join(key_fields)} to identify the row; accepted: a row "
                                       f"with {' and '.join(key_fields)}")
                if (section, key) in in_this_file:
                    # YAML keeps the last of two rows silently; a reviewer reading the first would be misled.
                    raise CatalogFileError(f"{label}: {' '.join(key)} is listed twice in this file (first at "
                                       f"{in_this_file[(section, key)]}); accepted: each row once per file")
                in_this_file[(section, key)] = f"line {lines.get((section, i), '?')}"
                previous = rows[section].get(key)
                merged = dating.redate(section, previous[0], raw, _merge(previous[0], raw)) if previous else dict(raw)
                for item in dating.undated_items(section, raw) if previous else ():
                    undated[(section, key, item)] = label
                try:
                    # As JSON, strictly: a price of true is not 1, a price of "0.5" is not a number.
                    validated = model.model_validate_json(json.dumps(merged, default=str, allow_nan=True), strict=True)
                except ValidationError as exc:
                    raise CatalogFileError(f"{label}: {_first_error(exc)}") from None
                rows[section][key] = (merged, label, validated)
    # Each row was validated as it was merged; the last validation of a row is the row.
    instances = [item for _, _, item in rows["instances"].values()]
    regions = [item for _, _, item in rows["regions"].values()]
    for section, items in (("instances", instances), ("regions", regions)):
        for item, (_, label, _) in zip(items, rows[section].values(), strict=True):
            if item.source not in sources and "://" not in item.source:
                raise CatalogFileError(
                    f"{label}: source: {item.source!r} is neither a key of 'sources' ({', '.join(sorted(sources))}) nor a URL"
                )
    return Catalog(instances=instances, regions=regions, sources=sources, files=files,
                   undated=_still_undated(undated, instances, regions))


def _still_undated(found: dict[tuple[str, tuple[str, ...], str], str], instances: list[InstanceType],
                   regions: list[RegionPrices]) -> list[str]:
    """``<file> line N: instances[0] (aws g6.xlarge): prices.us-west-2`` for each row whose prices are still undated
    once every file is merged (a later file may have dated them)."""
    rows = {("instances", (i.cloud, i.type)): i for i in instances} | {("regions", (r.cloud, r.region)): r for r in regions}
    by_label: dict[str, list[str]] = {}
    for (section, key, item), label in found.items():
        row = rows[(section, key)]
        name, _, sub = item.partition(".")
        if isinstance(row, InstanceType):
            when = row.price_date(sub) if name == "prices" else row.spot_price_date(sub)
        else:
            when = row.item_date(item)
        if when == UNDATED:
            by_label.setdefault(label, []).append(item)
    return [f"{label}: {', '.join(items)}" for label, items in by_label.items()]


def _read(path: Path) -> tuple[dict[str, Any], dict[tuple[str, int], int]]:
    """The parsed document and the line of each row, so that an error can point at it.

    An override file is read through ``gpulease.core.inputfile``'s boundary (a regular UTF-8 file, size-capped, no
    aliases, tags or duplicate keys); the shipped files are the package's own data."""
    try:
        doc = (inputfile.load_package_yaml(path) if path in BASE_FILES
               else inputfile.load_yaml_document(path, what="catalog file", max_bytes=CATALOG_MAX_BYTES))
    except inputfile.InputFileError as exc:
        raise CatalogFileError(str(exc)) from None
    document = doc.data if doc.data is not None else {}
    if not isinstance(document, dict):
        raise CatalogFileError(f"{path}:{doc.line()}: expected a mapping with sources, instances and/or regions")
    unknown = sorted(set(document) - {"sources", *_SECTIONS})
    if unknown:
        raise CatalogFileError(f"{path}: unknown top-level key(s) {', '.join(unknown)}; accepted: sources, instances, regions")
    lines = {key: line for key, line in doc.lines.items() if len(key) == 2 and key[0] in _SECTIONS and isinstance(key[1], int)}
    return document, lines


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if key in _MERGED_MAPS and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _first_error(exc: ValidationError) -> str:
    """The row's first problems in the user's words (``validation_words``), never pydantic's own text."""
    parts = []
    for err in exc.errors()[:3]:
        field = ".".join(str(p) for p in err["loc"]) or "row"
        given = err.get("input")
        msg = described(err) or f"{shown(given)} is not accepted here; accepted: what docs/prices.md says of it"
        if err["type"] == "value_error" and not isinstance(given, dict):
            msg += f" (got {shown(given)})"
        parts.append(f"{field}: {msg}")
    return "; ".join(parts)
