"""init's ``next:`` move never suggests ``mv`` onto a stack file that already exists (the move would replace that
stack without a word), and the review's advisory line names what finds the written file (its path when a bare name
does not)."""

from __future__ import annotations

import shlex

from gpulease.cli.main import main

FLAGS = ["init", "--name", "my-llama", "--owner", "ada@ml-team.io", "--params", "8B", "--method", "lora",
         "--region", "us-west-2", "--ssh-from", "203.0.113.7/32", "--budget", "60"]


def _next_line(out: str) -> str:
    return " ".join(out.split("\nnext: ", 1)[1].split()).join(("next: ", ""))


def test_the_move_never_lands_on_an_existing_stack_file(tmp_path, key_file, monkeypatch, capsys):
    work = tmp_path / "work"
    (work / "away").mkdir(parents=True)
    monkeypatch.chdir(work)
    assert main([*FLAGS, "--no-review", "--public-key", str(key_file)]) == 0  # writes work/Pulumi.my-llama.yaml
    existing = work / "Pulumi.my-llama.yaml"
    assert existing.is_file()
    capsys.readouterr()
    assert main([*FLAGS, "--no-review", "--public-key", str(key_file),
                 "--output", str(work / "away" / "x.yaml")]) == 0
    line = _next_line(capsys.readouterr().out)
    assert " mv " in line
    move = shlex.split(line.split(" mv ", 1)[1].split(", then ", 1)[0])
    # A plain `mv SRC DEST` onto an existing stack file replaces it: the hint must not name it (or must say -n / warn)
    assert not (work / move[-1]).exists() or "-n" in move or "-i" in move, line
    assert "already holds a stack" in line and "--name" in line, line
    assert existing.read_text().count("my-llama")  # untouched


def test_the_advisory_line_names_what_finds_the_file(tmp_path, key_file, monkeypatch, capsys):
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "Pulumi.yaml").write_text("name: proj\nruntime: python\n")
    (proj / "__main__.py").write_text("from components.program import main\n\nmain()\n")
    monkeypatch.chdir(proj / "sub")
    code = main([*FLAGS, "--public-key", str(key_file), "--output", "../out.yaml"])
    out = capsys.readouterr().out
    assert "advisory finding" in out, out  # the 8B lora stack has advisories: the line under test is there
    assert "`gpulease plan ../out.yaml`" in out, out
    assert "`gpulease plan my-llama`" not in out, out  # `plan my-llama` finds no stack: the path does
    assert code == 0
