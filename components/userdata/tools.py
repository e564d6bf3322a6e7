"""The instance-side tools as shipped: their readable source in ``instance/``, without docstrings and comments."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from functools import lru_cache
from pathlib import Path

from components.image_bake import record_folder  # the one place the kit's records are named

INSTANCE_DIR = Path(__file__).resolve().parents[2] / "instance"
"""Where the readable sources live (the ``instance`` folder beside ``components``)."""
SETUP_SCRIPT = INSTANCE_DIR / "instance_setup.py"
WATCHDOG_SCRIPT = INSTANCE_DIR / "watchdog.py"
JOB_AGENT_SCRIPT = INSTANCE_DIR / "job_agent.py"
CLOUD_ACCESS_SCRIPT = INSTANCE_DIR / "cloud_access.py"
STAGING_SCRIPT = INSTANCE_DIR / "staging.py"
# Staging's parts: the Unicode table names are checked with, confined files, HTTP with deadlines, the parallel
# downloader and the part files it writes, the hubs' listings.
STAGING_PARTS = tuple(INSTANCE_DIR / name for name in ("unicode_table.py", "staging_files.py", "staging_http.py",
                                                       "staging_hash.py", "staging_fetch.py", "staging_parts.py",
                                                       "staging_hubs.py"))
FETCH_SCRIPT = INSTANCE_DIR / "fetch_tools.py"
# The run tools: the heartbeat and spend estimate (watchdog), the log files' upload (watchdog), the verification, the
# run manifest, the run unit.
RUN_SCRIPTS = tuple(INSTANCE_DIR / name for name in ("control.py", "heartbeat.py", "log_upload.py", "verify.py",
                                                     "manifest.py", "run_job.py"))
# A cluster node's part (cluster.env, peers, spot-notice fan-out) and the gpulease-launch command: shipped to every
# instance, used where the settings carry a ``cluster`` (components/userdata/cluster.py).
CLUSTER_SCRIPT = INSTANCE_DIR / "cluster.py"
LAUNCH_SCRIPT = INSTANCE_DIR / "gpulease_launch.py"
# The watchdog's rules, one module each, and what they share: the clock, the time bounds, this instance's state,
# the nvidia-smi reader, the disk-space watch, the cancel of its own spot request.
RULE_SCRIPTS = tuple(INSTANCE_DIR / name for name in (
    "clock.py", "bounds.py", "instance_state.py", "gpu_query.py", "deadline_rule.py", "idle_rule.py", "spot_rule.py",
    "budget_rule.py", "sync_rule.py", "starved_rule.py", "disk_space.py", "process_tree.py", "spot_request.py",
))
# The watchdog's parts beside its loop: defaults and shared bounds, /proc, the log, the spot notices and recovery,
# the syncs, the idle measurement, the end.
WATCHDOG_PARTS = tuple(INSTANCE_DIR / name for name in (
    "watchdog_defaults.py", "watchdog_procs.py", "watchdog_log.py", "watchdog_spot.py", "watchdog_sync.py",
    "watchdog_idle.py", "watchdog_end.py",
))
TOOL_SCRIPTS = (CLOUD_ACCESS_SCRIPT, SETUP_SCRIPT, WATCHDOG_SCRIPT, *WATCHDOG_PARTS, JOB_AGENT_SCRIPT, STAGING_SCRIPT, *STAGING_PARTS,
                CLUSTER_SCRIPT, LAUNCH_SCRIPT, *RUN_SCRIPTS, *RULE_SCRIPTS)
TOOLS_FOLDER = "tools/"
"""The bundles' folder among the kit's records (``components.image_bake.record_folder``)."""


@lru_cache(maxsize=16)
def shipped_source(path: Path) -> str:
    """An instance-side tool as shipped (in the tools bundle, or the loader in user-data): the same syntax tree
    without docstrings and comments. The readable source lives in ``instance/``, and the tests check that the
    shipped tree equals the source tree less its docstrings.

    Kept beside the bytecode cache (``instance/__pycache__``), keyed by the source and the Python that unparsed
    it: stripping the tools takes longer than the rest of a plan's own work, and they change rarely."""
    source = path.read_bytes()
    key = hashlib.sha256(sys.version.encode() + b"\0" + source).hexdigest()[:20]
    cache = path.parent / "__pycache__" / f"{path.stem}.{key}.shipped"
    try:
        return cache.read_text(encoding="utf-8")
    except OSError:
        pass
    shipped = _strip(path.name, source.decode("utf-8"))
    if not sys.dont_write_bytecode:
        _write_atomically(cache, shipped)
    return shipped


def _strip(name: str, source: str) -> str:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and _has_docstring(node):
            node.body = node.body[1:] or [ast.Pass()]
    header = f"#!/usr/bin/env python3\n# gpulease {name}: readable source in instance/{name}\n"
    return header + ast.unparse(tree) + "\n"


def _write_atomically(path: Path, text: str) -> None:
    """Write through a temporary file and a rename, so a reader never sees half of it; a cache that cannot be
    written (a read-only install) is simply not kept."""
    try:
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


@lru_cache(maxsize=1)
def tools_bundle() -> str:
    """The tools as AWS instances fetch them: one JSON object ``{"files": {name: shipped source}}``."""
    files = {path.name: shipped_source(path) for path in TOOL_SCRIPTS}
    return json.dumps({"files": files}, sort_keys=True, separators=(",", ":"))


@lru_cache(maxsize=1)
def tools_sha256() -> str:
    return hashlib.sha256(tools_bundle().encode()).hexdigest()


def tools_key(prefix: str) -> str:
    """The bundle's object key, ``_gpulease/<prefix>tools/<sha256>.json`` (``record_folder``): outside the checkpoint
    prefix, so the checkpoint lifecycle never expires the object every boot fetches (an instance started, restarted
    or replaced after ``keepDays`` would find no tools). Named by its hash, so that new tools are a new object and a
    running instance keeps the one it was started with; the role may read exactly this key (``allow_tools_read``)."""
    return f"{record_folder(prefix, TOOLS_FOLDER)}{tools_sha256()}.json"


def _has_docstring(node: ast.AST) -> bool:
    body = getattr(node, "body", None)
    return bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(
        body[0].value.value, str
    )

