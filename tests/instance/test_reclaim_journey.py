"""A spot reclaim played end to end on the instance side, with the real tools and no cloud: the notice -> the
checkpoint hook -> the final sync -> (the cloud's stop); the next boot of the same instance -> the same disk mounted,
never formatted -> staging skipped -> verification not run again -> the job resumed from its checkpoint's step ->
the deadline and the spend continuing from before, the run manifest listing the interruption."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from instance import instance_setup, manifest, run_job, staging, watchdog
from instance import instance_state as st
from tests.support.instance import (
    DEADLINE_EPOCH,
    FakeClock,
    MetadataServer,
    MetadataState,
    deadline_tags,
    events,
    ext4_image,
    iso,
    make_boot_rig,
    make_rig,
)
from tests.support.staging import CdnServer

HOUR = 3600.0
BOOT1 = DEADLINE_EPOCH - 8 * HOUR
INSTANCE = "i-0123456789abcdef0"
CORPUS = b"tokens " * 4096


def _boot_id(proc: Path, boot: str) -> None:
    path = proc / "sys" / "kernel" / "random"
    path.mkdir(parents=True, exist_ok=True)
    (path / "boot_id").write_text(boot + "\n")


def test_a_reclaimed_spot_instance_comes_back_to_the_same_experiment(tmp_path: Path) -> None:
    tags = {**deadline_tags(), "gpulease:max-hourly-usd": "2.0", "gpulease:budget-usd": "100"}
    meta = MetadataState(cloud="aws", tags=tags, instance_id=INSTANCE)
    cdn = CdnServer()
    with MetadataServer(meta) as server, contextlib.closing(cdn):
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, heartbeat_minutes=1,
                       budget_thresholds=[50, 80], warn_hook=None)
        proc, data, state = Path(rig.settings["proc_root"]), Path(rig.settings["mount_point"]), tmp_path / "state"
        _boot_id(proc, "11111111-1111-1111-1111-111111111111")
        # Boot 1: the data staged, the verification passed, the job wrote a checkpoint at step 100.
        source = {"uri": cdn.put("corpus.bin", CORPUS), "to": str(data / "raw" / "corpus")}
        stage = {"data_sources": [source], "metadata_url": server.url, "staging_retry_seconds": 0.01}
        assert staging.Stager({**rig.settings, **stage}, lambda line: None).run()["ok"] is True
        fetched = len(cdn.requests)
        clock = FakeClock(BOOT1 + 2 * HOUR)
        watchdog.configure_logging(rig.settings, clock)
        dog = watchdog.Watchdog(rig.settings, clock)  # claims the state for this instance, first of the tools here
        run_settings = {**run_job.DEFAULTS, **rig.settings, "verify": {"max_minutes": 1}}
        (state / "verify.json").write_text(json.dumps({"passed": True, "instanceId": INSTANCE, "time": iso(BOOT1)}))
        (data / "logs" / "train.log").write_text("step 50\nGPULEASE_CHECKPOINT_STEP=100\nstep 101\n")
        dog.run(max_ticks=36)  # three minutes of training
        meta.instance_action = {"action": "stop", "time": iso(clock.now() + 120)}
        dog.run(max_ticks=3)
        assert rig.names() == ["checkpoint-hook", "sync"] and not dog.done  # saved, synced, NOT shut down
        assert [e["env_reason"] for e in events(rig.events)] == ["spot-interruption", "final"]
        deadline = dog.deadline
        dog.run(max_ticks=12)  # the cloud stops it within the notice window: SIGTERM to the watchdog
        dog.stop()
        identity = json.loads((state / "identity.json").read_text())
        last_alive = identity["boots"][-1]["lastAlive"]
        ran = dog.running_seconds(last_alive)
        assert ran >= 2 * HOUR and "shutdown" not in rig.names()

        # Boot 2, three hours later, the deadline tag unread this time: the bootstrap on the same disk.
        boot2 = last_alive + 3 * HOUR
        _boot_id(proc, "22222222-2222-2222-2222-222222222222")
        meta.tags = {}
        meta.instance_action = None
        image = ext4_image(tmp_path / "disk.img", {"keep": "the experiment's files"})
        boot = make_boot_rig(tmp_path, image, metadata_url=server.url)
        boot.settings.update(proc_root=str(proc), boot_time=boot2, **stage, stage_commands={})
        done = boot.run(Path(instance_setup.__file__))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "mkfs" not in [e["name"] for e in events(boot.events)]  # never formatted
        assert "already holds a ext4 filesystem: mounting it, not formatting" in done.stdout
        assert f"{INSTANCE} booted again" in done.stdout
        [staged] = boot.marker["checks"]["data"]["sources"]
        assert staged["status"] == "skipped" and len(cdn.requests) == fetched  # nothing fetched again

        # The run unit: the verification is not run again, the job gets its resume contract.
        run_settings.update(boot_time=boot2, instance_id_file=str(tmp_path / "no-such-file"))
        assert run_job.run_verification(run_settings) is True  # {"max_minutes": 1} alone would fail if it ran
        env = run_job.resume_environment(run_settings, "train")
        assert (env["GPULEASE_RESUMED"], env["GPULEASE_RESUME_FROM_STEP"]) == ("1", "100")
        doc = manifest.build(run_settings, command="python train.py --resume", cwd=str(data), job="train")
        assert doc["interruptions"] == [{"kind": "spot-reclaim", "stoppedAt": iso(last_alive), "resumedAt": iso(boot2),
                                         "stoppedSeconds": round(boot2 - last_alive), "resumedFromStep": 100,
                                         "previousInstance": None}]

        # The watchdog of boot 2: the same deadline (kept from before: the tag is unread), the spend counts the
        # running time of boot 1 and this boot's minute, never the three stopped hours.
        clock2 = FakeClock(boot2 + 60)
        dog2 = watchdog.Watchdog(rig.settings, clock2)
        dog2.refresh_deadline()
        assert dog2.deadline == deadline == DEADLINE_EPOCH
        assert dog2.running_seconds(clock2.now()) == ran + 60
        meta.tags = tags
        beat = dog2.heartbeat.beat()
        spend = beat["spend"]
        assert spend is not None and spend["hours"] == round((ran + 60) / HOUR, 2)
        assert spend["usdAtMost"] == round(2.0 * (ran + 60) / HOUR, 2)
        # The heartbeat carries the interruption to `gpulease status`, the step included (recorded by the run unit).
        st.alive(str(state), dog2.claim, clock2.now())
        assert dog2.heartbeat.beat()["interruptions"] == doc["interruptions"]
