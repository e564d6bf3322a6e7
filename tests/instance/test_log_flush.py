"""The last log lines reach the bucket when the watchdog ends the instance (instance/log_upload.py ``flush``, called
by the final sequence of instance/watchdog.py): the real watchdog and uploader, a stand-in copier that keeps each
object as a file, a recorded shutdown, the accelerated clock."""

from __future__ import annotations

import time
from pathlib import Path

from instance import bounds
from tests.support.instance import DEADLINE_EPOCH, events, executable, make_rig, run_in_process

MIN = 60.0


def bucket_copier(path: Path, bucket: Path, hang: bool = False) -> Path:
    """``aws s3 cp SRC DST``: DST's last part as a file in ``bucket`` (or, with ``hang``, never returning)."""
    return executable(path, f"""import os, shutil, sys, time
if {hang!r}:
    time.sleep(60)
os.makedirs({str(bucket)!r}, exist_ok=True)
shutil.copyfile(sys.argv[3], os.path.join({str(bucket)!r}, sys.argv[4].rsplit("/", 1)[-1]))
""")


def rig_with_logs(tmp_path: Path, hang: bool = False, **overrides):
    bucket = tmp_path / "bucket"
    logs = tmp_path / "data" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "bootstrap.log").write_text("staging done\nready\n")
    (logs / "train.log").write_text("step 100 loss 2.31\n")
    # The checkpoint hook runs in the final sequence and writes the job's last lines: only a copy after it has them.
    hook = executable(tmp_path / "hook", f"open({str(logs / 'train.log')!r}, 'a').write('saved step 200\\n')\n")
    rig = make_rig(tmp_path, stack="st", job={"session": "train", "command": "python train.py"},
                   checkpoint_hook=str(hook),
                   control_upload_command=[str(bucket_copier(tmp_path / "cp", bucket, hang)), "s3", "cp", "{src}",
                                           "{dst}"], **overrides)
    return rig, bucket


def test_the_deadline_copies_the_last_log_lines_before_the_shutdown(tmp_path: Path) -> None:
    rig, bucket = rig_with_logs(tmp_path)
    dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 4 * MIN, max_ticks=5)
    assert dog.done and rig.names()[-1] == "shutdown"
    assert (bucket / "train.log").read_text() == "step 100 loss 2.31\nsaved step 200\n"
    assert (bucket / "bootstrap.log").read_text() == "staging done\nready\n"


def test_an_idle_end_copies_the_last_log_lines_before_the_shutdown(tmp_path: Path) -> None:
    rig, bucket = rig_with_logs(tmp_path, idle_minutes=1, idle_check_seconds=30)
    (tmp_path / "gpu" / "utilization.csv").write_text("0, 512\n")
    log = tmp_path / "data" / "logs" / "train.log"
    # The idle end runs no checkpoint hook: the last line is written just before the end, after the first copy.
    dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 6 * 3600, max_ticks=1)
    log.write_text(log.read_text() + "epoch 3 done\n")
    dog.run(max_ticks=60)
    assert dog.done and rig.names()[-1] == "shutdown"
    assert "idle-shutdown" in rig.log_text()
    assert (bucket / "train.log").read_text() == "step 100 loss 2.31\nepoch 3 done\n"


def test_a_hung_copy_never_holds_the_shutdown_past_the_flush_bound(tmp_path: Path) -> None:
    rig, bucket = rig_with_logs(tmp_path, hang=True, log_flush_seconds=20)
    started = time.monotonic()
    dog, clock = run_in_process(rig, start=DEADLINE_EPOCH - 4 * MIN, max_ticks=5)
    took = time.monotonic() - started
    assert dog.done and [e["name"] for e in events(rig.events)][-1] == "shutdown"
    assert not (bucket / "train.log").exists()
    # 20 s of the watchdog's clock is 1 s of real time here, where one copy alone may take 6 s (its own 120 s).
    assert clock.real(bounds.value("log_copy")) > 5 and took < 4.5, took
    assert "the final copy was still running at its bound (20 s for the logs" in rig.log_text()


def test_the_flush_is_bounded_in_the_table() -> None:
    assert bounds.value("log_flush") == 60 and bounds.value("log_flush", {"log_flush_seconds": 15}) == 15
