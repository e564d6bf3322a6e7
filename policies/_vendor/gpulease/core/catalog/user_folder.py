"""The user's catalog folder: price files every command reads by itself, on top of the shipped catalog and under
the files ``GPULEASE_CATALOG_OVERRIDES`` or ``--catalog`` name, and where ``gpulease catalog refresh`` writes.

The folder is ``$GPULEASE_CATALOG_DIR`` when set, else ``$XDG_CONFIG_HOME/gpulease/catalog`` (``~/.config/gpulease/
catalog`` without it, the XDG base directory convention). Its ``*.yaml`` / ``*.yml`` files are read in name order,
so a later one (``prices-2026-12-01.yaml`` after ``prices-2026-11-01.yaml``) overrides an earlier one; each is read
through the same boundary as an override file (regular files only, a size cap)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

USER_CATALOG_ENV = "GPULEASE_CATALOG_DIR"
MAX_USER_FILES = 64
"""More files than this in the folder is refused by name: a refresh a day for two months is far less."""


class TooManyCatalogFilesError(ValueError):
    pass


class CatalogFolderError(TooManyCatalogFilesError):
    """``GPULEASE_CATALOG_DIR`` does not name a folder that can be read: refused by name, like too many files."""


def user_catalog_dir() -> Path:
    explicit = os.environ.get(USER_CATALOG_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".config") / "gpulease" / "catalog"


def named_folder_problem(folder: Path) -> str | None:
    """Why ``folder``, named by ``GPULEASE_CATALOG_DIR``, is not a folder that can be read (None when it is)."""
    try:
        if not stat.S_ISDIR(os.stat(folder).st_mode):
            return "is not a folder"
        os.listdir(folder)
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:  # a symlink loop, a name too long, no permission
        return f"cannot be read ({exc.strerror or exc})"
    return None


def user_catalog_files() -> tuple[Path, ...]:
    """The folder's price files in name order. None when the default folder does not exist; the folder named by
    ``GPULEASE_CATALOG_DIR`` must be one that can be read (a mistyped name, a file or a symlink loop there would
    otherwise leave every command pricing with the shipped catalog, silently), and so must the default folder when
    anything is there."""
    folder = user_catalog_dir()
    if os.environ.get(USER_CATALOG_ENV, "").strip():
        problem = named_folder_problem(folder)
        if problem:
            raise CatalogFolderError(f"{USER_CATALOG_ENV}={folder}: {problem}; accepted: a folder of price files "
                                     f"(gpulease catalog refresh makes one), or {USER_CATALOG_ENV} unset for "
                                     "~/.config/gpulease/catalog")
    elif not os.path.lexists(folder):
        return ()
    elif problem := named_folder_problem(folder):
        # The default folder is there but is a file, a dangling link or unreadable: said, never priced around.
        raise CatalogFolderError(f"the catalog folder {folder} {problem}; accepted: a folder of price files there "
                                 f"(gpulease catalog refresh makes one), nothing there, or {USER_CATALOG_ENV} naming "
                                 "another folder")
    found = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and not p.name.startswith("."))
    if len(found) > MAX_USER_FILES:
        raise TooManyCatalogFilesError(
            f"the catalog folder {folder} holds {len(found)} price files, more than {MAX_USER_FILES}; accepted: "
            "remove the old ones (the newest name wins anyway)")
    return tuple(found)
