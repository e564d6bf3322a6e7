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


def _stack_arguments():
    """``(command, argument)`` for every stack a command line gives (``stack``, ``stacks``, ``--stack``)."""
    import argparse

    from gpulease.cli.main import COMMANDS, build_parser

    def walk(parser, name):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    yield from walk(child, f"{name} {sub}")
            elif action.dest in ("stack", "stacks"):
                yield name, action

    for command in COMMANDS:
        yield from walk(build_parser(command), "gpulease")


def test_every_stack_argument_refuses_an_empty_name():
    import argparse

    found = list(_stack_arguments())
    assert {name.split()[1] for name, _ in found} >= {"status", "logs", "ssh", "up", "down", "resume", "check",
                                                      "plan", "push", "pull", "cost", "ephemeral"}
    for name, action in found:
        assert action.type is not None, f"{name} {action.dest}: an empty stack name is not refused"
        with pytest.raises(argparse.ArgumentTypeError, match="empty stack name"):
            action.type(" ")
        assert action.type("ab") == "ab"


@pytest.mark.parametrize("argv", [["up", ""], ["down", " "], ["resume", ""], ["cost", ""], ["plan", ".", "--stack", ""],
                                  ["push", "", "file.txt"], ["pull", ""]])
def test_other_commands_refuse_an_empty_stack_name_in_one_line(argv, capsys):
    code, err = _run(argv, capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "an empty stack name" in err, (code, err)


@pytest.mark.parametrize("argv, line", [
    (["--js", "size", "--params", "8B"], "--js: did you mean '--json'? --json is an option of `gpulease size`: put it "
                                         "after the command: gpulease size --json --params 8B"),
    (["--lin=5", "logs", "aws-lora-7b"], "gpulease logs --lines=5 aws-lora-7b"),
    (["-fn5", "logs", "aws-lora-7b"], "gpulease logs -fn5 aws-lora-7b"),
    (["--", "size", "--params", "8B"], "-- (the end of the options) comes after the command, not before it: "
                                       "gpulease size --params 8B"),
])
def test_a_shortened_option_or_a_double_dash_before_the_command_is_said_in_one_line(argv, line, capsys):
    code, err = _run(argv, capsys)
    assert code == 2 and len(err.splitlines()) == 1 and line in err, err
    assert "invalid choice" not in err, err


def test_an_option_is_recognised_only_where_it_is_one_option():
    from gpulease.cli.option_place import option_of

    assert option_of("--j", {"--json", "--journal"}) is None  # ambiguous: not guessed
    assert option_of("--jo", {"--json", "--journal"}) == ("--jo", "--journal")
    assert option_of("--js=1", {"--json", "--journal"}) == ("--js", "--json")
    assert option_of("-", {"-n"}) is None and option_of("--", {"--json"}) is None


def test_init_refuses_an_empty_public_key_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "id_ed25519.pub").write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests a@b\n")
    code, err = _run(["init", "--name", "kl", "--params", "8B", "--owner", "a@mylab.org", "--budget", "60",
                      "--ssh-from", "203.0.113.7/32", "--public-key", "", "--no-review"], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "--public-key" in err and "empty" in err, (code, err)
    assert not list(tmp_path.glob("**/Pulumi.*.yaml"))
