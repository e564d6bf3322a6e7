"""zsh completion in a real interactive zsh (in tmux), as a user gets it from ``eval "$(gpulease completion zsh)"``:
commands, an option's fixed choices, a subcommand and the stack names (which run ``gpulease completion stacks``
from inside the completion function). ``make setup`` installs zsh and tmux."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from tests.support.paths import ROOT
from tests.support.zsh_session import zsh_with_completion


def test_zsh_completes_commands_choices_and_stack_names(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # `gpulease` on PATH: this Python running this tree's package
    bin_dir.mkdir()
    (bin_dir / "gpulease").write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(ROOT))} exec "
                                      f"{shlex.quote(sys.executable)} -m gpulease \"$@\"\n")
    (bin_dir / "gpulease").chmod(0o755)
    with zsh_with_completion(tmp_path, bin_dir, ROOT) as zsh:
        assert "ready> gpulease plan" in zsh.tab("gpulease pl", "ready> gpulease plan")
        text = zsh.tab("gpulease plan --format ", "markdown")
        assert "json" in text and "markdown" in text and "text" in text
        assert "ready> gpulease catalog refresh" in zsh.tab("gpulease catalog re", "ready> gpulease catalog refresh")
        # A stack name comes from `gpulease completion stacks`, run by the completion function itself.
        assert "ready> gpulease plan aws-lora-7b" in zsh.tab("gpulease plan aws-lor", "ready> gpulease plan aws-lora-7b")
        # After --region: the regions of the cloud the line names (alicloud here), never files.
        assert "ready> gpulease init --cloud alicloud --region cn-hangzhou" in zsh.tab(
            "gpulease init --cloud alicloud --region cn-hangz", "ready> gpulease init --cloud alicloud --region cn-hangzhou")
        # No cloud on the line: both clouds' regions (cn-northwest-1 is an AWS region).
        assert "ready> gpulease status mine --region cn-northwest-1" in zsh.tab(
            "gpulease status mine --region cn-northw", "ready> gpulease status mine --region cn-northwest-1")
        assert "ready> gpulease ls --cloud aws --regions us-gov-east-1" in zsh.tab(
            "gpulease ls --cloud aws --regions us-gov-e", "ready> gpulease ls --cloud aws --regions us-gov-east-1")
