"""The GitHub workflows the tests read, parsed as GitHub reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc
