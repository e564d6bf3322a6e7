"""The user's catalog folder: price files every command reads by itself, on top of the shipped catalog and under
the files ``GPULEASE_CATALOG_OVERRIDES`` or ``--catalog`` name, and where ``gpulease catalog refresh`` writes.

The folder is ``$GPULEASE_CATALOG_DIR`` when set, else ``$XDG_CONFIG_HOME/gpulease/catalog`` (``~/.config/gpulease/
catalog`` without it, the XDG base directory convention). Its ``*.yaml`` / ``*.yml`` files are read in name order,
so a later one (``prices-2026-12-01.yaml`` after ``prices-2026-11-01.yaml``) overrides an earlier one; each is read
through the same boundary as an override file (regular files only, a size cap)."""

from __future__ import annotations

import os
from pathlib import Path

USER_CATALOG_ENV = "GPULEASE_CATALOG_DIR"
MAX_USER_FILES = 64
"""More files than this in the folder is refused by name: a refresh a day for two months is far less."""


class TooManyCatalogFilesError(ValueError):
    pass


def user_catalog_dir() -> Path:
    explicit = os.environ.get(USER_CATALOG_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".config") / "gpulease" / "catalog"


def user_catalog_files() -> tuple[Path, ...]:
    """The folder's price files in name order (none when the folder does not exist)."""
    folder = user_catalog_dir()
    if not folder.is_dir():
        return ()
    found = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and not p.name.startswith("."))
    if len(found) > MAX_USER_FILES:
        raise TooManyCatalogFilesError(
            f"the catalog folder {folder} holds {len(found)} price files, more than {MAX_USER_FILES}; accepted: "
            "remove the old ones (the newest name wins anyway)")
    return tuple(found)
