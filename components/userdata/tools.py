"""The instance-side tools as shipped: their readable source in ``instance/``, without docstrings and comments."""

from __future__ import annotations

import ast
import hashlib
import json
from functools import lru_cache
from pathlib import Path

INSTANCE_DIR = Path(__file__).resolve().parents[2] / "instance"
"""Where the readable sources live (the ``instance`` folder beside ``components``)."""
SETUP_SCRIPT = INSTANCE_DIR / "instance_setup.py"
WATCHDOG_SCRIPT = INSTANCE_DIR / "watchdog.py"
JOB_AGENT_SCRIPT = INSTANCE_DIR / "job_agent.py"
CLOUD_ACCESS_SCRIPT = INSTANCE_DIR / "cloud_access.py"
FETCH_SCRIPT = INSTANCE_DIR / "fetch_tools.py"
TOOL_SCRIPTS = (CLOUD_ACCESS_SCRIPT, SETUP_SCRIPT, WATCHDOG_SCRIPT, JOB_AGENT_SCRIPT)
TOOLS_FOLDER = "_gpulease/tools/"


@lru_cache(maxsize=16)
def shipped_source(path: Path) -> str:
    """An instance-side tool as shipped (in the tools bundle, or the loader in user-data): the same syntax tree
    without docstrings and comments. The readable source lives in ``instance/``, and the tests check that the
    shipped tree equals the source tree less its docstrings."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and _has_docstring(node):
            node.body = node.body[1:] or [ast.Pass()]
    header = f"#!/usr/bin/env python3\n# gpulease {path.name}: readable source in instance/{path.name}\n"
    return header + ast.unparse(tree) + "\n"


@lru_cache(maxsize=1)
def tools_bundle() -> str:
    """The tools as AWS instances fetch them: one JSON object ``{"files": {name: shipped source}}``."""
    files = {path.name: shipped_source(path) for path in TOOL_SCRIPTS}
    return json.dumps({"files": files}, sort_keys=True, separators=(",", ":"))


def tools_sha256() -> str:
    return hashlib.sha256(tools_bundle().encode()).hexdigest()


def tools_key(prefix: str) -> str:
    """The bundle's object key under an experiment's checkpoint prefix (which its role may already read), named by
    its hash, so that new tools are a new object and a running instance keeps the one it was started with."""
    return f"{prefix}{TOOLS_FOLDER}{tools_sha256()}.json"


def _has_docstring(node: ast.AST) -> bool:
    body = getattr(node, "body", None)
    return bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(
        body[0].value.value, str
    )

