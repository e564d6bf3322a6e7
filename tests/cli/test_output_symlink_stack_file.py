"""``--output`` through a symlink whose target is a new ``Pulumi.<name>.yaml`` beside the project's stack files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpulease.cli.output_file import check_output


def test_a_symlink_to_a_new_stack_file_name_is_refused(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "Pulumi.dev.yaml").write_text("config: {}\n")
    (tmp_path / "Pulumi.yaml").write_text("name: x\n")
    link = tmp_path / "out.md"
    os.symlink("stacks/Pulumi.new.yaml", link)  # write_text follows it and creates stacks/Pulumi.new.yaml
    with pytest.raises(Exception):  # noqa: B017 - any refusal
        check_output(link, reads=(stacks / "Pulumi.dev.yaml", tmp_path / "Pulumi.yaml"))
