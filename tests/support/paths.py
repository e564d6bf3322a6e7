"""Where the tests find the project: its root, its example stacks, their own fixture files."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STACKS_DIR = ROOT / "stacks"
FIXTURES = ROOT / "tests" / "fixtures"
