"""A replacement instance on the experiment's retained data disk (a new instance id, the same disk, as after a
reclaim that replaces the instance): the verification that passed on this experiment is not run again when the
stack, experiment, verification, job and instance type are the same, and the job resumes from its checkpoint."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from instance import run_job
from tests.support.instance import MetadataServer, MetadataState

INSTANCE = "i-0123456789abcdef0"
EARLIER = "i-0earlier000000001"
TYPE_PATH = "/latest/meta-data/instance-type"


def _settings(tmp_path: Path, url: str, **changes: Any) -> dict[str, Any]:
    data = tmp_path / "data"
    (data / "logs").mkdir(parents=True, exist_ok=True)
    # The login user is no account here: a verification that does run fails at once ("not run: ...").
    return {**run_job.DEFAULTS, "mount_point": str(data), "state_dir": str(tmp_path / "state"), "stack": "s1",
            "experiment": "e1", "data_owner": "no-such-user-here", "metadata_url": url,
            "metadata_timeout_seconds": 0.5, "boot_time": 1_796_000_000, "proc_root": str(tmp_path),
            "verify": {"command": "python train.py", "max_minutes": 5}, "job": {"command": "python train.py"},
            **changes}


def _passed_on_disk(s: dict[str, Any], instance_type: str, **changes: Any) -> None:
    record = {"passed": True, "instanceId": EARLIER, "time": "2026-12-01T01:00:00Z", "stack": s["stack"],
              "experiment": s["experiment"], "fingerprint": run_job.verification_fingerprint(s, instance_type),
              **changes}
    (Path(s["mount_point"]) / "logs" / "verify.json").write_text(json.dumps(record))


def test_a_pass_on_this_experiments_disk_stands_for_a_replacement_of_the_same_type(tmp_path: Path, capsys) -> None:
    with MetadataServer(MetadataState(values={TYPE_PATH: "g5.xlarge"})) as server:
        s = _settings(tmp_path, server.url)
        _passed_on_disk(s, "g5.xlarge")
        assert run_job.run_verification(s) is True
    out = capsys.readouterr().out
    assert f"verification passed on this experiment's data disk ({EARLIER}, 2026-12-01T01:00:00Z)" in out
    assert "VERIFY" not in out  # nothing ran


@pytest.mark.parametrize("change", [{"instance_type": "g5.2xlarge"}, {"verify": {"command": "python other.py"}},
                                    {"job": {"command": "python train.py --lr 3e-4"}}, {"stack": "s2"},
                                    {"fingerprint": None}])
def test_a_pass_on_the_disk_for_anything_else_is_not_trusted(tmp_path: Path, capsys, change: dict) -> None:
    with MetadataServer(MetadataState(values={TYPE_PATH: "g5.xlarge"})) as server:
        s = _settings(tmp_path, server.url)
        recorded = {**s, **{k: v for k, v in change.items() if k in ("verify", "job", "stack")}}
        _passed_on_disk(recorded, change.get("instance_type", "g5.xlarge"),
                        **({"fingerprint": None} if "fingerprint" in change else {}))
        assert run_job.run_verification(s) is False  # it ran (and failed here): the earlier pass did not count
    out = capsys.readouterr().out
    assert "not run again" not in out and "VERIFY FAILED" in out
    # The record it writes carries the fingerprint a later replacement compares.
    written = json.loads((Path(s["mount_point"]) / "logs" / "verify.json").read_text())
    assert written["fingerprint"] == run_job.verification_fingerprint(s, "g5.xlarge") and written["stack"] == "s1"


IMAGE_PATH = "/latest/meta-data/ami-id"
TOOLS = "a" * 64


@pytest.mark.parametrize(("image", "tools", "trusted"), [("ami-0same", TOOLS, True), ("ami-0old", TOOLS, False),
                                                         ("ami-0same", "b" * 64, False)])
def test_a_pass_on_the_disk_counts_only_for_the_same_image_and_tools(tmp_path: Path, capsys, image: str,
                                                                      tools: str, trusted: bool) -> None:
    with MetadataServer(MetadataState(values={TYPE_PATH: "g5.xlarge", IMAGE_PATH: "ami-0same"})) as server:
        s = _settings(tmp_path, server.url, tools={"sha256": TOOLS})
        record = {"passed": True, "instanceId": EARLIER, "time": "2026-12-01T01:00:00Z",
                  "fingerprint": run_job.verification_fingerprint({**s, "tools": {"sha256": tools}}, "g5.xlarge", image)}
        (Path(s["mount_point"]) / "logs" / "verify.json").write_text(json.dumps(record))
        assert run_job.run_verification(s) is trusted
    assert ("not run again" in capsys.readouterr().out) is trusted


def _manifest(s: dict[str, Any], **changes: Any) -> None:
    doc = {"stack": s["stack"], "experiment": s["experiment"], "job": "train", "instance": {"id": EARLIER}, **changes}
    (Path(s["mount_point"]) / "logs" / "manifest.json").write_text(json.dumps(doc))


def test_a_replacement_on_the_same_disk_resumes_the_job_from_its_checkpoint(tmp_path: Path, capsys,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    now = 1_796_010_800.0  # 2026-11-30T03:53:20Z
    monkeypatch.setattr(run_job.control, "now_epoch", lambda: now)
    with MetadataServer(MetadataState()) as server:
        s = _settings(tmp_path, server.url)
        _manifest(s)
        log = Path(s["mount_point"]) / "logs" / "train.log"
        log.write_text("GPULEASE_CHECKPOINT_STEP=300\n")
        # The previous instance's last writes on the disk: its manifest, then its job's log 3 h 5 min before now.
        os.utime(Path(s["mount_point"]) / "logs" / "manifest.json", (now - 20000, now - 20000))
        os.utime(log, (now - 11100, now - 11100))
        env = run_job.resume_environment(s, "train")
    assert (env["GPULEASE_RESUMED"], env["GPULEASE_RESUME_FROM_STEP"]) == ("1", "300")
    assert f"carries this experiment's job from instance {EARLIER}: a resumption on the same disk" in capsys.readouterr().out
    # The new instance on the same disk is recorded as a resumption (the manifest and status list it), once a boot:
    # stopped when the previous instance last wrote the job's files there.
    run_job.resume_environment(s, "train")
    [entry] = json.loads((Path(s["state_dir"]) / "identity.json").read_text())["interruptions"]
    assert {k: entry[k] for k in ("kind", "previousInstance", "stoppedAt", "resumedAt", "stoppedSeconds",
                                  "resumedFromStep")} == {
        "kind": "new-instance", "previousInstance": EARLIER, "stoppedAt": "2026-11-30T00:48:20Z",
        "resumedAt": "2026-11-30T03:53:20Z", "stoppedSeconds": 11100, "resumedFromStep": 300}


@pytest.mark.parametrize("how", ["none", "symlink", "future"])
def test_an_unknown_last_write_leaves_the_stop_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       how: str) -> None:
    now = 1_796_010_800.0
    monkeypatch.setattr(run_job.control, "now_epoch", lambda: now)
    with MetadataServer(MetadataState()) as server:
        s = _settings(tmp_path, server.url)
        _manifest(s)
        logs = Path(s["mount_point"]) / "logs"
        if how == "none":
            (logs / "manifest.json").unlink()  # read first; then no file of the previous instance is left
            monkeypatch.setattr(run_job, "_earlier_instance_on_disk", lambda *a: EARLIER)
        elif how == "symlink":  # a link is not the previous instance's file: never followed
            target = tmp_path / "elsewhere"
            target.write_text("x")
            os.utime(target, (now - 100, now - 100))
            (logs / "manifest.json").unlink()
            (logs / "manifest.json").symlink_to(target)
            os.utime(logs / "manifest.json", (now - 100, now - 100), follow_symlinks=False)
            monkeypatch.setattr(run_job, "_earlier_instance_on_disk", lambda *a: EARLIER)
        else:  # a clock that was ahead: a stop after the resumption is no stop
            os.utime(logs / "manifest.json", (now + 600, now + 600))
        run_job.resume_environment(s, "train")
    [entry] = json.loads((Path(s["state_dir"]) / "identity.json").read_text())["interruptions"]
    assert (entry["stoppedAt"], entry["stoppedSeconds"]) == (None, None)


@pytest.mark.parametrize("changes", [{"experiment": "e2"}, {"stack": "other"}, {"job": "eval"},
                                     {"instance": {"id": INSTANCE}}, {"instance": None}])
def test_a_disk_with_another_experiments_or_this_instances_manifest_is_no_resumption(tmp_path: Path,
                                                                                    changes: dict) -> None:
    with MetadataServer(MetadataState()) as server:
        s = _settings(tmp_path, server.url)
        _manifest(s, **changes)
        (Path(s["mount_point"]) / "logs" / "train.log").write_text("GPULEASE_CHECKPOINT_STEP=300\n")
        env = run_job.resume_environment(s, "train")
    assert "GPULEASE_RESUMED" not in env and "GPULEASE_RESUME_FROM_STEP" not in env
