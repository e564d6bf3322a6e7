"""Found by probing: in a ``Pulumi.yml`` project made from the template, the program names its stack file
``Pulumi.<stack>.yaml`` (the template's ``__main__.py`` hard-codes the extension), so every refusal names a file that
does not exist instead of ``Pulumi.<stack>.yml``."""

from __future__ import annotations

from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "gpulease-experiment" / "__main__.py"


def test_the_template_program_does_not_hard_code_the_yaml_extension():
    assert 'f"Pulumi.{pulumi.get_stack()}.yaml"' not in TEMPLATE.read_text()
