"""gpulease ssh: the command for each access mode, with keep-alives, port forwards and the job's tmux session;
``--print`` shows it, otherwise it runs (the runner seam records it here)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from components.spec.experiment import ExperimentSpec
from gpulease.cli.main import EXIT_BAD_INPUT, main
from gpulease.live import connect
from gpulease.live.target import LiveError, Target
from tests.support.specs import experiment

KEEPALIVE = "-o ServerAliveInterval=30 -o ServerAliveCountMax=10"


def _outputs(tmp_path: Path, **values: Any) -> str:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"instanceId": "i-0abc", "publicIp": "198.51.100.7", **values}))
    return str(path)


def _print(capsys, *argv: str) -> list[str]:
    assert main(["ssh", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def test_ssh_mode_keeps_alive_forwards_the_ports_and_attaches_to_the_job_session(tmp_path: Path, capsys) -> None:
    # aws-lora-7b: ssh.forward [6006], job session "train", user ubuntu.
    [line] = _print(capsys, "aws-lora-7b", "--print", "--outputs", _outputs(tmp_path))
    assert line == (f"ssh {KEEPALIVE} -L 6006:localhost:6006 -t ubuntu@198.51.100.7 "
                    + shlex.quote("tmux attach -t train || exec bash -l"))
    [line] = _print(capsys, "aws-lora-7b", "--print", "-i", "~/.ssh/lora", "--outputs", _outputs(tmp_path), "--",
                    "nvidia-smi", "-L")
    assert line == f"ssh {KEEPALIVE} -i '~/.ssh/lora' -L 6006:localhost:6006 ubuntu@198.51.100.7 'nvidia-smi -L'"


def test_ssm_mode_uses_session_manager_documents(tmp_path: Path, capsys) -> None:
    # aws-debug-t4 is in ssm mode (no job, no forwards): a plain session; a command through StartInteractiveCommand.
    assert _print(capsys, "aws-debug-t4", "--print", "--outputs", _outputs(tmp_path)) == [
        "aws ssm start-session --target i-0abc --region us-west-2"]
    [line] = _print(capsys, "aws-debug-t4", "--print", "--outputs", _outputs(tmp_path), "--", "df", "-h")
    argv = shlex.split(line)
    assert argv[:8] == ["aws", "ssm", "start-session", "--target", "i-0abc", "--region", "us-west-2",
                        "--document-name"]
    assert argv[8] == "AWS-StartInteractiveCommand"
    assert json.loads(argv[10]) == {"command": ["sudo -iu ubuntu bash -lc 'df -h'"]}


def _target(mode: str, cloud: str = "aws") -> Target:
    ssh = {"mode": mode, "forward": [6006, "18888:8888"]}
    spec = ExperimentSpec.model_validate(experiment(ssh=ssh, job={"command": "python t.py", "session": "lora"},
                                                    **({"cloud": "alicloud", "gpu": {"instanceType": "ecs.gn7i-c8g1.2xlarge"}}
                                                       if cloud == "alicloud" else {})))
    return Target(stack="s", experiment="exp1", outputs={"instanceId": "i-0abc"}, spec=spec,
                  region="cn-hangzhou" if cloud == "alicloud" else "us-east-1", cloud=cloud)


def test_ssm_mode_forwards_each_port_in_the_background_and_attaches_as_the_login_user() -> None:
    conn = connect.plan(_target("ssm"))
    assert [json.loads(argv[-1]) for argv in conn.background] == [
        {"portNumber": ["6006"], "localPortNumber": ["6006"]}, {"portNumber": ["8888"], "localPortNumber": ["18888"]}]
    assert all(argv[:9] == ["aws", "ssm", "start-session", "--target", "i-0abc", "--region", "us-east-1",
                            "--document-name", "AWS-StartPortForwardingSession"] for argv in conn.background)
    assert conn.interactive[7:9] == ["--document-name", "AWS-StartInteractiveCommand"]
    assert json.loads(conn.interactive[-1]) == {
        "command": ["sudo -iu ubuntu bash -lc 'tmux attach -t lora || exec bash -l'"]}
    assert conn.lines()[0].endswith(" &") and not conn.lines()[-1].endswith(" &")


def test_cloud_assistant_mode_uses_ali_instance_cli_and_refuses_a_command(tmp_path: Path, capsys) -> None:
    conn = connect.plan(_target("cloud-assistant", cloud="alicloud"))
    assert conn.background == [
        ["ali-instance-cli", "portforward", "--instance", "i-0abc", "--local-port", "6006", "--remote-port", "6006",
         "--region", "cn-hangzhou"],
        ["ali-instance-cli", "portforward", "--instance", "i-0abc", "--local-port", "18888", "--remote-port", "8888",
         "--region", "cn-hangzhou"]]
    assert conn.interactive == ["ali-instance-cli", "session", "--instance", "i-0abc", "--region", "cn-hangzhou"]
    assert conn.hint == "in the session: sudo -iu ubuntu bash -lc 'tmux attach -t lora || exec bash -l'"
    # Through the CLI on the example stack (cloud-assistant, no job): the session alone; a command is refused.
    assert _print(capsys, "ali-debug-t4", "--print", "--outputs", _outputs(tmp_path)) == [
        "ali-instance-cli session --instance i-0abc --region cn-hangzhou"]
    assert main(["ssh", "ali-debug-t4", "--outputs", _outputs(tmp_path), "--", "ls"]) == EXIT_BAD_INPUT
    assert "runs no command" in capsys.readouterr().err


def test_without_print_the_commands_run_and_the_exit_code_is_the_sessions(tmp_path: Path, capsys,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[connect.Connection] = []
    monkeypatch.setattr(connect, "RUNNER", lambda conn: ran.append(conn) or 5)
    assert main(["ssh", "aws-lora-7b", "--outputs", _outputs(tmp_path)]) == 5
    assert ran[0].interactive[:5] == ["ssh", "-o", "ServerAliveInterval=30", "-o", "ServerAliveCountMax=10"]


def test_run_starts_the_forwards_runs_the_session_and_stops_the_forwards(tmp_path: Path) -> None:
    marker = tmp_path / "forward-alive"
    forward = ["sh", "-c", f"touch {marker}; exec sleep 30"]
    code = connect.run(connect.Connection(["sh", "-c", f"sleep 0.3; test -e {marker} && exit 3"], [forward]))
    assert code == 3  # the forward was up while the session ran; run() returned, so it was stopped and reaped
    with pytest.raises(LiveError, match="cannot run no-such-tool-here"):
        connect.run(connect.Connection(["no-such-tool-here"]))


def test_a_stack_without_an_address_or_outputs_gets_one_clear_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"instanceId": "i-0abc"}))
    assert main(["ssh", "aws-lora-7b", "--print", "--outputs", str(path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err == "gpulease: stack 'aws-lora-7b': no publicIp output for 'llama7b-lora' (not running?)\n"
    path.write_text("[1, 2]")
    assert main(["ssh", "aws-lora-7b", "--print", "--outputs", str(path)]) == EXIT_BAD_INPUT
    assert "expected the JSON object `pulumi stack output --json` prints" in capsys.readouterr().err


def test_a_parked_stack_says_so(tmp_path: Path, capsys) -> None:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"phase": "parked", "dataVolumeId": "vol-0abc"}))
    assert main(["ssh", "aws-lora-7b", "--print", "--outputs", str(path)]) == EXIT_BAD_INPUT
    assert "stack 'aws-lora-7b' is parked: no instance runs" in capsys.readouterr().err
