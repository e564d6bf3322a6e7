"""A validation pattern ends with ``\\Z``, never ``$``: ``$`` also matches before a trailing newline, so
``ORG_NAME.match("org\\n")`` would pass a name with a line break in it. Checked over every module of the kit. A
pattern that is also a JSON schema's (where ``\\Z`` is no anchor) keeps ``$`` and is only ever ``fullmatch``-ed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulease.review import organization

ROOT = Path(__file__).resolve().parents[2]
DOLLAR_END = re.compile(r"""re\.(?:compile|match|search)\(\s*r?(["'])(?:(?!\1).)*?\$\1""")
NAMED = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*re\.compile\(")


def test_no_validation_pattern_ends_with_a_dollar() -> None:
    found = []
    for folder in ("gpulease", "components", "instance", "policies"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text()
            for number, line in enumerate(text.splitlines(), 1):
                if not DOLLAR_END.search(line) or "MULTILINE" in line:
                    continue
                named = NAMED.match(line)
                if named and not re.search(rf"\b{named.group(1)}\.(match|search)\(", text):
                    continue  # fullmatch only (a JSON schema's pattern too)
                found.append(f"{path.relative_to(ROOT)}:{number}")
    assert found == []


@pytest.mark.parametrize("name", ["org\n", "org\r\n", "my-org\n"])
def test_an_organization_name_with_a_trailing_newline_is_refused(name: str) -> None:
    assert not organization.ORG_NAME.match(name)
    with pytest.raises(organization.OrganizationError, match="not an organization name"):
        organization.check_name(name)
