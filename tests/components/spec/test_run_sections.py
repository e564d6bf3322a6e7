"""The run sections of the spec: verify, job, budgetAlerts and ssh.forward (components/spec/run.py, sections.py)."""

from __future__ import annotations

import pytest

from components.spec.load import SpecError, load_stack_spec
from tests.support.clock import FIXED_NOW
from tests.support.specs import experiment

EXP = "gpulease:experiment"
VERIFY = {"command": "python train.py --max-steps $GPULEASE_VERIFY_STEPS", "steps": 40, "maxMinutes": 20,
          "resumeCommand": "python train.py --resume", "minFreeGpuMemoryPercent": 10}


def load(spec: dict):
    return load_stack_spec("my-stack", {EXP: spec})


def test_the_sections_load_with_their_defaults() -> None:
    spec = load(experiment(verify=VERIFY, job={"command": "python train.py"}, ssh={
        **experiment()["ssh"], "forward": [6006, "18888:8888"]})).base
    assert spec.verify is not None and spec.verify.max_minutes == 20 and spec.verify.steps == 40
    assert spec.verify.min_free_gpu_memory_percent == 10
    assert spec.job is not None and spec.job.session == "train" and spec.job.params_file is None
    assert spec.budget_alerts.emails is None and spec.budget_alerts.thresholds == [50, 80, 100]
    assert spec.ssh.forward == [6006, "18888:8888"]
    plain = load(experiment()).base
    assert plain.verify is None and plain.job is None and plain.ssh.forward == []


INVALID = [
    ("verify without command", {"verify": {"maxMinutes": 10}}, f"{EXP}.verify.command", "is required"),
    ("verify without bound", {"verify": {"command": "x"}}, f"{EXP}.verify.maxMinutes", "is required"),
    ("verify too long", {"verify": {"command": "x", "maxMinutes": 241}}, f"{EXP}.verify.maxMinutes", "240"),
    ("verify eats the run", {"maxRuntimeHours": 1, "verify": {"command": "x", "maxMinutes": 50}},
     f"{EXP}.verify.maxMinutes", "leaves no time for the run itself"),
    ("memory share", {"verify": {"command": "x", "maxMinutes": 5, "minFreeGpuMemoryPercent": 100}},
     f"{EXP}.verify.minFreeGpuMemoryPercent", "less than 100"),
    ("tmux name", {"job": {"command": "x", "session": "a.b"}}, f"{EXP}.job.session",
     "accepted: 1-32 letters, digits, _ and -"),
    ("params outside /data", {"job": {"command": "x", "paramsFile": "/etc/passwd"}}, f"{EXP}.job.paramsFile",
     "accepted: a file under /data"),
    ("params climbing out", {"job": {"command": "x", "paramsFile": "code/../../etc/shadow"}},
     f"{EXP}.job.paramsFile", "accepted: a file under /data"),
    ("alert address", {"budgetAlerts": {"emails": ["not-an-address"]}}, f"{EXP}.budgetAlerts.emails",
     "accepted: e.g. alice@example.com"),
    ("no addresses", {"budgetAlerts": {"emails": []}}, f"{EXP}.budgetAlerts.emails", "omit it to notify the owner"),
    ("threshold range", {"budgetAlerts": {"thresholds": [0]}}, f"{EXP}.budgetAlerts.thresholds", "(0, 1000]"),
    ("too many thresholds", {"budgetAlerts": {"thresholds": [10, 20, 30, 40, 50, 60]}},
     f"{EXP}.budgetAlerts.thresholds", "ten notifications AWS Budgets allows"),
    ("bad forward", {"ssh": {**experiment()["ssh"], "forward": ["tb"]}}, f"{EXP}.ssh.forward",
     "accepted: 1-65535, e.g. 6006 or '16006:6006'"),
    ("port twice", {"ssh": {**experiment()["ssh"], "forward": [6006, "6006:7000"]}}, f"{EXP}.ssh.forward",
     "each local port once"),
]


@pytest.mark.parametrize(("case", "changes", "path", "accepted"), INVALID, ids=[c[0] for c in INVALID])
def test_bad_run_sections_name_the_stack_the_field_and_what_is_accepted(case, changes, path, accepted,
                                                                        monkeypatch) -> None:
    monkeypatch.setattr("gpulease.core.clock.utcnow", lambda: FIXED_NOW)
    with pytest.raises(SpecError) as info:
        load(experiment(**changes))
    message = str(info.value)
    assert "stack 'my-stack'" in message and f"  - {path}" in message, message
    assert accepted in message, message


def test_the_instance_settings_carry_the_sections_only_when_declared(aws_text_for) -> None:
    with_run = aws_text_for(experiment(verify=VERIFY, job={"command": "python train.py", "paramsFile": "p.yaml"}))
    assert with_run["verify"] == {"command": VERIFY["command"], "steps": 40, "max_minutes": 20,
                                  "resume_command": VERIFY["resumeCommand"], "min_free_gpu_memory_percent": 10}
    assert with_run["job"] == {"command": "python train.py", "params_file": "p.yaml", "session": "train"}
    assert "/etc/systemd/system/gpulease-run.service" in with_run["__units__"]
    prep = aws_text_for(experiment(phase="prep", verify=VERIFY, job={"command": "python train.py"}))
    assert "verify" not in prep and "job" not in prep  # the CPU instance of the preparation phase runs neither
    assert "/etc/systemd/system/gpulease-run.service" not in prep["__units__"]
    plain = aws_text_for(experiment())
    assert "verify" not in plain and "job" not in plain and "/etc/systemd/system/gpulease-run.service" not in plain["__units__"]
    assert plain["budget_thresholds"] == [50, 80, 100]


@pytest.fixture
def aws_text_for():
    import json

    from components.userdata import decode_user_data
    from tests.support.specs import render_experiment
    from tests.support.userdata import cloud_config, files

    def read(spec: dict) -> dict:
        r = render_experiment(spec)
        assert r.error is None, r.error
        text = decode_user_data(r.one("aws:ec2/instance:Instance").inputs["userDataBase64"])
        found = files(cloud_config(text))
        settings = json.loads(found["/etc/gpulease/settings.json"]["content"])
        settings["__units__"] = sorted(found)
        settings["__files__"] = found
        return settings

    return read


def test_the_run_unit_passes_systemd_verification_and_waits_for_the_bootstrap(aws_text_for, tmp_path) -> None:
    import shutil
    import subprocess

    from components.userdata.run_settings import RUN_UNIT

    settings = aws_text_for(experiment(job={"command": "python train.py"}))
    text = settings["__files__"][f"/etc/systemd/system/{RUN_UNIT}"]["content"]
    assert "ExecStart=/usr/bin/python3 /opt/gpulease/run_job.py" in text
    # Wants=, not Requires=: a failed bootstrap must not make systemd skip this unit silently (run_job says why).
    assert "Wants=network-online.target gpulease-bootstrap.service" in text and "Requires=" not in text
    assert "After=network-online.target gpulease-bootstrap.service" in text
    assert "TimeoutStartSec=infinity" not in text
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed here")
    path = tmp_path / RUN_UNIT
    path.write_text(text)
    out = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True)
    problems = [line for line in out.stderr.splitlines() if RUN_UNIT in line and "not found" not in line.lower()]
    assert problems == [], out.stderr
