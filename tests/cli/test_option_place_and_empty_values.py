"""A command's own option typed before the command (``gpulease --json size ...``, ``gpulease --format json size``,
``gpulease -n 5 logs STACK``) is a usage mistake: exit 2 and one line that says the option goes after the command
(never "--json: did you mean '--json'?", nor 'json' / '5' taken for a command name); ``gpulease check ''`` names
the empty stack name, as ``plan ''`` does, instead of checking no stack; ``gpulease init --key-name ''`` is refused
instead of silently falling back to a public key file."""

from __future__ import annotations

import pytest

from gpulease.cli.main import main


def _run(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err.strip()


@pytest.mark.parametrize("argv, option", [
    (["--json", "size", "--params", "8B"], "--json"),
    (["--format", "json", "size", "--params", "8B"], "--format"),
    (["-n", "5", "logs", "aws-lora-7b"], "-n"),
])
def test_an_option_before_its_command_is_named_with_where_it_goes(argv, option, capsys):
    code, err = _run(argv, capsys)
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert f"did you mean '{option}'" not in err, err  # the option it names is the one typed
    assert "invalid choice" not in err, err  # the option's value is not a command name
    assert option in err and "after" in err, err  # it says the option goes after the command


def test_check_of_an_empty_stack_name_is_refused_like_plan(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no pulumi: nothing is asked
    planned, plan_err = _run(["plan", ""], capsys)
    assert planned == 2 and "empty stack name" in plan_err, plan_err
    code, err = _run(["check", ""], capsys)
    assert code == 2 and "empty stack name" in err, (code, err)


def test_init_refuses_an_empty_key_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, err = _run(["init", "--name", "kl", "--params", "8B", "--owner", "a@mylab.org", "--budget", "60",
                      "--ssh-from", "203.0.113.7/32", "--key-name", "", "--no-review"], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "--key-name" in err and "empty" in err, (code, err)
    assert not list(tmp_path.iterdir())
