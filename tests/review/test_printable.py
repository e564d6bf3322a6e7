"""Control and invisible format characters in a program's names are escaped in every line of every report."""

from __future__ import annotations

import json

from gpulease.cli import main
from gpulease.review.printable import printable

NAME = "gpu\x1b[31m\r\u202eevil\x00"
SHOWN = "gpu\\x1b[31m\\r\\u202eevil\\x00"


def test_printable_escapes_control_and_bidi_characters_and_keeps_the_rest():
    assert printable(NAME) == SHOWN
    assert printable("café ✓ p4d.24xlarge\x7f\x9b") == "café ✓ p4d.24xlarge\\x7f\\x9b"


def test_a_hostile_name_is_escaped_in_the_terminal_and_markdown_reports(tmp_path, capsys):
    (tmp_path / "Pulumi.yaml").write_text("name: hostile\nruntime: python\n")
    (tmp_path / "Pulumi.test.yaml").write_text("config:\n  aws:region: us-east-1\n")
    (tmp_path / "__main__.py").write_text(f"import pulumi_aws as aws\n\naws.s3.Bucket({NAME!r})\n")
    for fmt in ("text", "markdown"):
        main(["plan", str(tmp_path), "--format", fmt])
        out = capsys.readouterr().out
        assert not any(c in out for c in "\x1b\r\u202e\x00"), fmt
        assert f"({SHOWN})" in out if fmt == "text" else f"| {SHOWN} |" in out, out
    main(["plan", str(tmp_path), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in doc["stacks"][0]["resources"]} == {NAME}
