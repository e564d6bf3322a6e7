"""`gpulease ssh` and `gpulease logs --journal` pass the remote command's exit code through; their --help says so."""

from __future__ import annotations

from tests.cli.test_cost_narrow_cli import gl


def test_ssh_and_logs_help_say_the_remote_exit_code_is_passed_through() -> None:
    for command, remote in (("ssh", "the remote session's (or -- COMMAND's) own exit code"),
                            ("logs", "with --journal: the remote journal command's own exit code")):
        out = " ".join(gl(command, "--help", columns=200).stdout.split())
        assert f"1-255 {remote}, passed through as is" in out, out
