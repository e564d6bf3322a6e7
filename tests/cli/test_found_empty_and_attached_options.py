"""``gpulease status ''`` (and ``logs ''``, ``ssh ''``) name an empty stack, as ``check ''`` and ``plan ''`` do: exit
2 and one line, the Pulumi CLI never asked (``pulumi stack output --stack ''`` reads the selected stack, another
one); a command's option typed before it with its value attached (``gpulease -n5 logs STACK``) is said to go after
the command, as ``-n 5`` and ``--lines=5`` are."""

from __future__ import annotations

import pytest

from gpulease.cli.main import main


def _run(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err.strip()


@pytest.mark.parametrize("verb", ["status", "logs", "ssh"])
@pytest.mark.parametrize("stack", ["", " "])
def test_an_empty_stack_name_is_refused_without_asking_the_pulumi_cli(verb, stack, tmp_path, monkeypatch, capsys):
    from gpulease.live import target

    monkeypatch.chdir(tmp_path)
    asked: list[str] = []
    monkeypatch.setattr(target, "OUTPUTS_READER", lambda name, project_dir: asked.append(name) or {})
    code, err = _run([verb, stack], capsys)
    assert asked == [], f"{verb} {stack!r} asked the Pulumi CLI for stack {asked}"
    assert code == 2 and "empty stack name" in err, (code, err)


def test_an_option_with_its_value_attached_before_its_command_is_said_to_go_after(capsys):
    code, err = _run(["-n5", "logs", "aws-lora-7b"], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "after" in err and "gpulease logs -n5 aws-lora-7b" in err, err
