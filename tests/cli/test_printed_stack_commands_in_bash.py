"""A command gpulease prints for a stack, pasted into bash, gives ``gpulease`` the stack as its argument: a stack
whose name starts with a dash is named so that the command's parser takes it as the stack (``-- -ab`` or its file),
and a stack file in a symlinked ``stacks/`` folder is found by the path printed for it."""

from __future__ import annotations

import subprocess

import pytest

from gpulease.cli.main import main
from gpulease.review import stacks
from gpulease.review.stack_commands import command

EXAMPLE = stacks.PROJECT_ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml"
FLAGS = ["--params", "8B", "--owner", "a@mylab.org", "--budget", "60", "--no-port", "--no-review"]


def _pasted(line: str) -> list[str]:
    """The words bash gives ``gpulease`` for ``line`` pasted at its prompt."""
    done = subprocess.run(["bash", "-c", 'gpulease() { printf "%s\\0" "$@"; }; ' + line],
                          capture_output=True, check=True)
    return done.stdout.decode().split("\0")[:-1]


def _exit(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_a_printed_status_of_a_dash_named_stack_reaches_the_stack(tmp_path, monkeypatch: pytest.MonkeyPatch, capsys):
    from gpulease.live import target

    monkeypatch.chdir(tmp_path)
    (tmp_path / "Pulumi.-ab.yaml").write_text(EXAMPLE.read_text())
    line = command("status", "-ab", tmp_path / "Pulumi.-ab.yaml")
    asked: list[str] = []
    monkeypatch.setattr(target, "OUTPUTS_READER", lambda stack, project_dir: asked.append(stack) or {})
    _exit(_pasted(line))
    err = capsys.readouterr().err
    assert asked == ["-ab"], f"{line!r} pasted: the parser took no stack ({err.strip()})"


def test_a_stack_file_in_a_symlinked_stacks_folder_is_found_by_its_path(tmp_path, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys):
    here = tmp_path / "runs"
    (tmp_path / "elsewhere" / "stacks").mkdir(parents=True)
    here.mkdir()
    (here / "stacks").symlink_to(tmp_path / "elsewhere" / "stacks")
    monkeypatch.chdir(here)
    assert main(["init", "--name", "ab", *FLAGS]) == 0  # written into stacks/ (the symlinked folder)
    by_name = stacks.resolve_one("ab")
    assert by_name.resolve() == (tmp_path / "elsewhere" / "stacks" / "Pulumi.ab.yaml").resolve()
    assert stacks.resolve_one("stacks/Pulumi.ab.yaml").resolve() == by_name.resolve()


def test_init_next_line_in_a_symlinked_stacks_folder_names_the_file_it_wrote(tmp_path, monkeypatch: pytest.MonkeyPatch,
                                                                             capsys):
    here = tmp_path / "runs"
    (tmp_path / "elsewhere" / "stacks").mkdir(parents=True)
    here.mkdir()
    (here / "stacks").symlink_to(tmp_path / "elsewhere" / "stacks")
    monkeypatch.chdir(here)
    assert main(["init", "--name", "ab", "--output", "Pulumi.ab.yaml", *FLAGS]) == 0  # an older stack of that name
    capsys.readouterr()
    assert main(["init", "--name", "ab", *FLAGS]) == 0
    written = here / "stacks" / "Pulumi.ab.yaml"
    out = " ".join(capsys.readouterr().out.split())  # the wrapped lines joined again
    nxt = out[out.index("next: "):]
    assert "already holds a stack" not in nxt, nxt  # it is the file just written
    assert nxt.startswith("next: gpulease check "), nxt
    argv = _pasted(nxt.removeprefix("next: ").split(",", 1)[0])
    assert argv[0] == "check" and stacks.resolve_one(argv[1]).resolve() == written.resolve(), (nxt, argv)


def test_status_of_a_stack_file_outside_every_project_is_refused_as_up_refuses_it(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys):
    from gpulease.live import target

    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "Pulumi.ab.yaml").write_text(EXAMPLE.read_text())
    here = tmp_path / "runs"
    here.mkdir()
    monkeypatch.chdir(here)
    asked: list[str] = []
    monkeypatch.setattr(target, "OUTPUTS_READER", lambda stack, project_dir: asked.append(stack) or {})
    assert _exit(["up", str(loose / "Pulumi.ab.yaml")]) == 2
    capsys.readouterr()
    for verb in ("status", "logs", "ssh"):
        assert _exit([verb, str(loose / "Pulumi.ab.yaml")]) == 2
    assert asked == [], f"the Pulumi CLI was asked for the stacks {asked} (a file path taken for a stack name)"


@pytest.mark.parametrize("verb, rest", [("status", ()), ("logs", ()), ("logs", ("--journal",)), ("ssh", ()),
                                        ("up", ()), ("resume", ()), ("plan", ()), ("down", ("--all",))])
def test_every_printed_command_of_a_dash_named_stack_parses_to_the_stack(verb, rest, tmp_path, monkeypatch):
    from gpulease.cli.main import build_parser

    monkeypatch.chdir(tmp_path)
    (tmp_path / "Pulumi.-ab.yaml").write_text(EXAMPLE.read_text())
    line = command(verb, "-ab", tmp_path / "Pulumi.-ab.yaml", *rest)
    argv = _pasted(line)
    assert argv[0] == verb, line
    args = build_parser(verb).parse_args(argv)
    assert (args.stacks if verb == "plan" else [args.stack]) == ["-ab"], line
    for option in rest:
        assert option in argv[1:argv.index("--")], line  # its own options still read as options


def test_status_of_a_project_folder_of_several_stacks_is_refused_without_asking_the_pulumi_cli(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys):
    from gpulease.live import target

    project = tmp_path / "proj"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: proj\nruntime: python\n")
    for name in ("a1", "b2"):
        (project / f"Pulumi.{name}.yaml").write_text(EXAMPLE.read_text())
    monkeypatch.chdir(tmp_path)
    asked: list[str] = []
    monkeypatch.setattr(target, "OUTPUTS_READER", lambda stack, project_dir: asked.append(stack) or {})
    assert _exit(["status", str(project)]) == 2
    assert asked == [] and "names 2 stacks" in capsys.readouterr().err


def test_a_stack_named_as_a_plain_folder_here_is_still_asked_of_the_pulumi_cli(tmp_path, monkeypatch, capsys):
    from gpulease.live import target

    (tmp_path / "ci-123").mkdir()  # a folder beside a stack made elsewhere, of the same name: not a stack file
    monkeypatch.chdir(tmp_path)
    asked: list[str] = []
    monkeypatch.setattr(target, "OUTPUTS_READER", lambda stack, project_dir: asked.append(stack) or {})
    _exit(["status", "ci-123"])
    assert asked == ["ci-123"]
