"""``gpulease init`` never writes into another project or over another program's file: a folder that is a Python
project of its own (``pyproject.toml``, ``requirements.txt``, ``__main__.py``, ...) or another Pulumi project
(any runtime, Python included, whose program is not gpulease's) is refused in one line saying what is there and what
to do, also with ``--force``; ``--force`` replaces only a gpulease stack file."""

from __future__ import annotations

import shutil

import pytest

from gpulease.cli.main import main
from gpulease.review import stacks

FLAGS = ["init", "--name", "my-llama", "--owner", "ada@ml-team.io", "--params", "8B", "--method", "lora",
         "--region", "us-west-2", "--ssh-from", "203.0.113.7/32", "--budget", "60", "--no-review"]
ACCEPTED = ("accepted: a new folder (mkdir my-llama && cd my-llama), a gpulease project, or --output FILE elsewhere "
            "(--force never writes into another project)")


@pytest.mark.parametrize("own", [["pyproject.toml"], ["requirements.txt", "__main__.py"], ["setup.py"], ["Pipfile"]])
@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_python_project_of_the_users_own_is_never_written_into(tmp_path, key_file, monkeypatch, capsys, own,
                                                                 force):
    for name in own:
        (tmp_path / name).write_text("# the user's own\n")
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main([*FLAGS, "--public-key", str(key_file), *force]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (
        f"gpulease: {tmp_path / 'Pulumi.my-llama.yaml'}: not written; {tmp_path} is a Python project of its own "
        f"({', '.join(own)}): a stack file there would mix with it; {ACCEPTED}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert all((tmp_path / name).read_text() == "# the user's own\n" for name in own)


def test_the_stacks_folder_of_a_python_project_is_refused_too(tmp_path, key_file, monkeypatch, capsys):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'mine'\n")
    (tmp_path / "stacks").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main([*FLAGS, "--public-key", str(key_file)]) == 2
    assert f"not written; {tmp_path} is a Python project of its own (pyproject.toml)" in capsys.readouterr().err
    assert list((tmp_path / "stacks").iterdir()) == []


def test_a_python_pulumi_project_that_is_not_gpulease_is_refused(tmp_path, key_file, monkeypatch, capsys):
    (tmp_path / "Pulumi.yaml").write_text("name: webshop\nruntime: python\n")
    (tmp_path / "__main__.py").write_text("import pulumi_aws as aws\naws.s3.BucketV2('site')\n")
    monkeypatch.chdir(tmp_path)
    assert main([*FLAGS, "--public-key", str(key_file), "--force"]) == 2
    assert capsys.readouterr().err == (
        f"gpulease: {tmp_path / 'Pulumi.my-llama.yaml'}: not written; {tmp_path / 'Pulumi.yaml'} is the Pulumi "
        "project 'webshop' (runtime python) whose __main__.py does not run the gpulease program (components.program): "
        f"a stack file there would configure that program; {ACCEPTED}\n")
    assert not (tmp_path / "Pulumi.my-llama.yaml").exists()


def test_a_gpulease_project_and_a_new_folder_are_written_into(tmp_path, key_file, monkeypatch, capsys):
    project = tmp_path / "proj"
    (project / "stacks").mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py", "requirements.txt", "pyproject.toml"):
        shutil.copy(stacks.PROJECT_ROOT / name, project / name)  # the kit's own files: its program
    monkeypatch.chdir(project)
    assert main([*FLAGS, "--public-key", str(key_file)]) == 0
    assert (project / "stacks" / "Pulumi.my-llama.yaml").is_file()
    (tmp_path / "mine" / "my-llama").mkdir(parents=True)
    (tmp_path / "mine" / "pyproject.toml").write_text("[project]\nname = 'mine'\n")
    monkeypatch.chdir(tmp_path / "mine" / "my-llama")  # the new folder the refusal names
    assert main([*FLAGS, "--public-key", str(key_file)]) == 0
    assert (tmp_path / "mine" / "my-llama" / "Pulumi.my-llama.yaml").is_file()


@pytest.mark.parametrize(("text", "why"), [
    ("config:\n  aws:region: us-east-1\n  webshop:size: 3\n", "its config holds webshop:size"),
    ("secretsprovider: awskms://alias/x\nconfig:\n  gpulease:experiment: {name: x}\n", "it holds more than a config: section"),
    ("config:\n  aws:region: us-east-1\n", "its config holds no gpulease: key"),
])
def test_force_replaces_only_a_gpulease_stack_file(tmp_path, key_file, monkeypatch, capsys, text, why):
    monkeypatch.chdir(tmp_path)
    theirs = tmp_path / "Pulumi.my-llama.yaml"
    theirs.write_text(text)
    assert main([*FLAGS, "--public-key", str(key_file), "--force"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpulease: {theirs}: not replaced, even with --force: it is not a gpulease stack file "
                          f"({why}") and err.count("\n") == 1
    assert theirs.read_text() == text
    theirs.unlink()
    assert main([*FLAGS, "--public-key", str(key_file)]) == 0
    assert main([*FLAGS, "--public-key", str(key_file), "--force", "--budget", "70"]) == 0  # init's own: replaced
    assert "budgetUsd: 70 " in theirs.read_text()


def _next_line(out: str) -> str:
    """The ``next:`` line, its continuation lines joined back (the wrap breaks between words only, never in a
    path)."""
    return " ".join(out.split("\nnext: ", 1)[1].split()).join(("next: ", ""))


@pytest.mark.parametrize("output", ["away/my-llama.yaml", "away/Pulumi.my-llama.yaml", "Pulumi.my-llama.yaml",
                                    "stacks/Pulumi.my-llama.yaml"])
def test_the_next_line_names_the_written_file_by_what_finds_it(tmp_path, key_file, monkeypatch, capsys, output):
    import shlex
    import subprocess

    (tmp_path / "work" / "away").mkdir(parents=True)
    (tmp_path / "work" / "stacks").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    written = tmp_path / "work" / output
    assert main([*FLAGS, "--public-key", str(key_file), "--output", str(written)]) == 0
    line = _next_line(capsys.readouterr().out)
    if " mv " in line:  # nowhere a command looks: the move it prints, then the name, finds it
        move = shlex.split(line.split(" mv ", 1)[1].split(", then ", 1)[0])
        subprocess.run(["mv", *move], check=True)
        assert line.endswith(", then gpulease plan my-llama")
        assert move[0] == "--"  # a name starting with - is moved too
        assert stacks.resolve_one("my-llama") == (tmp_path / "work" / move[-1]).resolve()
        return
    target = shlex.split(line.removeprefix("next: gpulease check ").split(",", 1)[0])[0]
    assert stacks.resolve_one(target).resolve() == written.resolve()
    assert target == ("my-llama" if written.parent.name != "away" else str(written))
