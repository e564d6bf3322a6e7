"""The instance tools import each other in one direction only: no cycle inside instance/, and every module one
imports is shipped in the tools bundle (components/userdata/tools.py)."""

from __future__ import annotations

import ast

from components.userdata import tools
from tests.support.paths import ROOT

INSTANCE = ROOT / "instance"


def _imports() -> dict[str, set[str]]:
    names = {p.stem for p in INSTANCE.glob("*.py")} - {"__init__"}
    graph: dict[str, set[str]] = {}
    for name in names:
        tree = ast.parse((INSTANCE / f"{name}.py").read_text())
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "instance":
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("instance."):
                found.add(node.module.split(".", 1)[1])
            elif isinstance(node, ast.ImportFrom) and node.module in names:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name in names}
        graph[name] = found & names
    return graph


def test_no_import_cycle_inside_instance() -> None:
    graph = _imports()
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for other in sorted(graph[name]):
            assert state.get(other) != 1, f"import cycle: {' -> '.join([*path, name, other])}"
            if other not in state:
                visit(other, [*path, name])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    assert "watchdog" not in graph["heartbeat"]


def test_every_tool_a_shipped_tool_imports_is_shipped() -> None:
    shipped = {p.stem for p in tools.TOOL_SCRIPTS}
    for name in shipped:
        missing = _imports()[name] - shipped
        assert not missing, f"{name} imports {missing}, which the tools bundle does not carry"
