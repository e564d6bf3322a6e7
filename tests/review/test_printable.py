"""Control and invisible format characters in a program's names are escaped in every line of every report."""

from __future__ import annotations

import json

from gpulease.cli import main
from gpulease.core.printable import printable

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


FORMAT_CHARACTERS = "\u061c\u2060\u2064\u206a\u206f\u00ad\U000e0041\u2028"


def test_every_format_character_is_escaped_by_the_one_definition_the_reports_and_logs_share():
    from gpulease.cli.printable import printable as log_printable

    assert printable(FORMAT_CHARACTERS) == "\\u061c\\u2060\\u2064\\u206a\\u206f\\xad\\U000e0041\\u2028"
    assert log_printable(FORMAT_CHARACTERS) == "\\u061c\\u2060\\u2064\\u206a\\u206f\\xad\\U000e0041\\u2028"


def test_an_unpriced_reason_in_the_markdown_cost_table_is_escaped(tmp_path, capsys):
    (tmp_path / "Pulumi.yaml").write_text("name: hostile\nruntime: python\n")
    (tmp_path / "Pulumi.test.yaml").write_text("config:\n  aws:region: us-east-1\n")
    kind = "p4d.24xlarge\x1b]0;t\x07\u2060"
    (tmp_path / "__main__.py").write_text(
        "import pulumi_aws as aws\n\n"
        f"aws.ec2.Instance('gpu', instance_type={kind!r}, ami='ami-0123456789abcdef0', tags={{"
        "'gpulease:experiment': 'x\\x1b[2J', 'gpulease:max-runtime-hours': '8'})\n")
    main(["plan", str(tmp_path), "--format", "markdown"])
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x07\u2060"), out
    assert "p4d.24xlarge\\x1b]0;t\\x07\\u2060" in out
