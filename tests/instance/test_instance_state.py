"""Instance-side state keyed by instance id (instance/instance_state.py), played on one root folder:

- the image rehearsal: the watchdog and the bootstrap's claim run on the state an instance left (a baked image's
  system disk) under a NEW instance id: fresh first boot and deadline, fresh spend, no old ready/verify/heartbeat
  record, no old budget warnings, the old authorized key gone;
- the resumption: the SAME instance id on a new boot after a stopped interval (a spot reclaim with a stop): the
  deadline and the spend continue (running time only), the interruption is recorded with how long it lasted."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gpulease.core import vocabulary as v
from instance import instance_setup, manifest
from instance import instance_state as st
from tests.support.instance import (
    DEADLINE_EPOCH,
    MetadataServer,
    MetadataState,
    deadline_tags,
    iso,
    make_rig,
    run_in_process,
)

MIN = 60.0
HOUR = 3600.0
OLD_ID, NEW_ID = "i-0aaaaaaaaaaaaaaa1", "i-0bbbbbbbbbbbbbbb2"
OLD_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOLDOLDOLDOLDOLDOLDOLDOLDOLDOLDOLDOLDOLDOLD baker@old"
NEW_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINEWNEWNEWNEWNEWNEWNEWNEWNEWNEWNEWNEWNEWNE user@new"
BAKED_BOOT = DEADLINE_EPOCH - 30 * HOUR  # the baking instance's first boot: its deadline passed long ago


def _tags(hourly: str = "10", budget: str = "100", deadline: bool = True) -> dict[str, str]:
    return {**(deadline_tags() if deadline else {}), v.TAG_MAX_HOURLY_USD: hourly, v.TAG_BUDGET_USD: budget}


def _boot(tmp_path: Path, instance: str, boot_time: float, start: float, minutes: float, tags: dict[str, str],
          **overrides: Any) -> tuple[Any, Any, MetadataState]:
    """One boot of the watchdog on the shared root (``tmp_path``) for ``minutes`` of virtual time."""
    state = MetadataState(tags=tags, instance_id=instance)
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, boot_time=boot_time, warn_hook=None, idle_minutes=10_000,
                       budget_thresholds=[50, 80, 100], market="on-demand", **overrides)
        dog, _ = run_in_process(rig, start=start, max_ticks=int(minutes * MIN / 5))
    return dog, rig, state


def _beat(rig: Any) -> dict[str, Any]:
    return json.loads((Path(rig.settings["state_dir"]) / "heartbeat.json").read_text())


def test_a_new_instance_id_on_a_baked_root_starts_clean(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    # The baking instance: 9 hours of running, its deadline read from its tag, budget warnings given, its records.
    dog, rig, _ = _boot(tmp_path, OLD_ID, BAKED_BOOT, BAKED_BOOT + 9 * HOUR, 6, _tags(budget="100"),
                        state_dir=str(state_dir))
    assert dog.deadline == DEADLINE_EPOCH
    assert sorted(json.loads((state_dir / "watchdog-state.json").read_text())["budget_warned"]) == [50, 80]
    for name, doc in (("ready.json", {"ready": True, "instanceId": OLD_ID}),
                      ("verify.json", {"passed": True, "instanceId": OLD_ID})):
        (state_dir / name).write_text(json.dumps(doc))
    keys = tmp_path / "authorized_keys"
    keys.write_text(OLD_KEY + "\n")

    # The image's first boot under a new id: the bootstrap claims the folder first (and forgets the old key) ...
    new_boot = DEADLINE_EPOCH + 5 * HOUR
    with MetadataServer(MetadataState(instance_id=NEW_ID, values={
            "/latest/meta-data/public-keys/0/openssh-key": NEW_KEY})) as server:
        claim = instance_setup.claim_state({**instance_setup.DEFAULTS, "cloud": "aws", "metadata_url": server.url,
                                            "state_dir": str(state_dir), "boot_time": new_boot,
                                            "proc_root": str(tmp_path / "proc"), "authorized_keys_path": str(keys)})
    assert claim.kind == "first-boot" and claim.previous_id == OLD_ID
    assert keys.read_text() == NEW_KEY + "\n"
    moved = state_dir / "previous" / OLD_ID
    assert {"ready.json", "verify.json", "watchdog-state.json", "heartbeat.json"} <= {p.name for p in moved.iterdir()}
    assert not (state_dir / "ready.json").exists() and not (state_dir / "verify.json").exists()

    # ... then the watchdog, whose tag reads fail: its deadline is ITS first boot + max runtime, not the old one.
    dog, rig, _ = _boot(tmp_path, NEW_ID, new_boot, new_boot + 1 * HOUR, 6, _tags(budget="100", deadline=False),
                        state_dir=str(state_dir))
    assert dog.deadline == new_boot + 8 * HOUR and "first boot" in dog.deadline_source
    assert not dog.done
    beat = _beat(rig)
    assert beat["instanceId"] == NEW_ID
    assert 1.0 <= beat["spend"]["hours"] <= 1.15  # from its own boot, not the baking instance's 9 h
    assert beat["spend"]["warned"] == []
    identity = json.loads((state_dir / "identity.json").read_text())
    assert identity["instanceId"] == NEW_ID and identity["interruptions"] == []


def test_the_old_key_is_forgotten_when_the_watchdog_claims_the_state_before_the_bootstrap(tmp_path: Path) -> None:
    """The two units start side by side: whichever claims first, the baking instance's key is not trusted."""
    state_dir = tmp_path / "state"
    _boot(tmp_path, OLD_ID, BAKED_BOOT, BAKED_BOOT + 9 * HOUR, 6, _tags(budget="100"), state_dir=str(state_dir))
    keys = tmp_path / "authorized_keys"
    keys.write_text(OLD_KEY + "\n")
    new_boot = DEADLINE_EPOCH + 5 * HOUR
    _boot(tmp_path, NEW_ID, new_boot, new_boot + 1 * HOUR, 6, _tags(budget="100", deadline=False),
          state_dir=str(state_dir))  # the watchdog first: it moves the old state aside
    assert keys.read_text() == OLD_KEY + "\n"
    with MetadataServer(MetadataState(instance_id=NEW_ID, values={
            "/latest/meta-data/public-keys/0/openssh-key": NEW_KEY})) as server:
        claim = instance_setup.claim_state({**instance_setup.DEFAULTS, "cloud": "aws", "metadata_url": server.url,
                                            "state_dir": str(state_dir), "boot_time": new_boot,
                                            "proc_root": str(tmp_path / "proc"), "authorized_keys_path": str(keys)})
    assert claim.kind == "same-boot"
    assert keys.read_text() == NEW_KEY + "\n"
    assert "keysPendingFrom" not in json.loads((state_dir / "identity.json").read_text())


KEY_PATH = "/latest/meta-data/public-keys/0/openssh-key"


def _claim_keys(tmp_path: Path, state_dir: Path, keys: Path, new_boot: float, **metadata) -> st.Claim:
    with MetadataServer(MetadataState(instance_id=NEW_ID, **metadata)) as server:
        return instance_setup.claim_state({**instance_setup.DEFAULTS, "cloud": "aws", "metadata_url": server.url,
                                           "state_dir": str(state_dir), "boot_time": new_boot,
                                           "proc_root": str(tmp_path / "proc"), "authorized_keys_path": str(keys)})


def test_a_key_that_cannot_be_read_leaves_the_file_and_stays_pending_until_it_can(tmp_path: Path) -> None:
    """cloud-init adds the owner's key once per instance: a failed metadata read must never empty the file."""
    state_dir = tmp_path / "state"
    _boot(tmp_path, OLD_ID, BAKED_BOOT, BAKED_BOOT + 9 * HOUR, 6, _tags(budget="100"), state_dir=str(state_dir))
    keys = tmp_path / "authorized_keys"
    keys.write_text(OLD_KEY + "\n" + NEW_KEY + "\n")  # cloud-init added this instance's key to the image's file
    new_boot = DEADLINE_EPOCH + 5 * HOUR
    claim = _claim_keys(tmp_path, state_dir, keys, new_boot, statuses={KEY_PATH: 500})
    assert claim.kind == "first-boot" and claim.previous_id == OLD_ID
    assert keys.read_text() == OLD_KEY + "\n" + NEW_KEY + "\n"
    assert json.loads((state_dir / "identity.json").read_text())["keysPendingFrom"] == OLD_ID
    # The run unit's claim, once the metadata answers: the old key goes, this instance's stays.
    claim = _claim_keys(tmp_path, state_dir, keys, new_boot, values={KEY_PATH: NEW_KEY})
    assert claim.kind == "same-boot" and keys.read_text() == NEW_KEY + "\n"
    assert "keysPendingFrom" not in json.loads((state_dir / "identity.json").read_text())


def test_no_key_listed_drops_the_old_one_and_a_link_keeps_it_pending(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    _boot(tmp_path, OLD_ID, BAKED_BOOT, BAKED_BOOT + 9 * HOUR, 6, _tags(budget="100"), state_dir=str(state_dir))
    target = tmp_path / "elsewhere"
    target.write_text(OLD_KEY + "\n")
    keys = tmp_path / "authorized_keys"
    keys.symlink_to(target)
    new_boot = DEADLINE_EPOCH + 5 * HOUR
    _claim_keys(tmp_path, state_dir, keys, new_boot, values={KEY_PATH: NEW_KEY})
    assert target.read_text() == OLD_KEY + "\n"  # never written through the link, and not recorded as done
    assert json.loads((state_dir / "identity.json").read_text())["keysPendingFrom"] == OLD_ID
    keys.unlink()
    keys.write_text(OLD_KEY + "\n")
    _claim_keys(tmp_path, state_dir, keys, new_boot)  # started without a key pair: the metadata lists none (404)
    assert keys.read_text() == ""
    assert "keysPendingFrom" not in json.loads((state_dir / "identity.json").read_text())


def test_cloud_init_s_record_from_an_earlier_boot_is_not_this_instance_s_id(tmp_path: Path) -> None:
    """/var/lib/cloud/data/instance-id is on the system disk: in a baked image it names the baking instance until
    cloud-init rewrites it on this boot. Only a record written during this boot stands in for the metadata."""
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    (state_dir / "identity.json").write_text(json.dumps({"instanceId": OLD_ID, "boots": [
        {"boot": "boot-old", "bootTime": BAKED_BOOT, "lastAlive": BAKED_BOOT + HOUR}]}))
    (state_dir / "ready.json").write_text("{}")
    record = tmp_path / "instance-id"
    record.write_text(OLD_ID + "\n")
    new_boot = DEADLINE_EPOCH + 240 * HOUR
    os.utime(record, (BAKED_BOOT + 60, BAKED_BOOT + 60))  # written on the baking instance's boot
    settings = {"state_dir": str(state_dir), "boot_time": new_boot, "proc_root": str(tmp_path),
                "instance_id_file": str(record)}
    claim = st.claim_for(settings, lambda: None, new_boot + 60)
    assert claim.kind == "unknown-id" and claim.instance_id is None
    assert (state_dir / "ready.json").exists()  # kept as it is, and not used (usable_state) until the id is read
    assert not st.id_readable(settings, lambda: None)
    record.write_text(NEW_ID + "\n")
    os.utime(record, (new_boot + 30, new_boot + 30))  # cloud-init found its datasource on this boot
    claim = st.claim_for(settings, lambda: None, new_boot + 60)
    assert claim.instance_id == NEW_ID and claim.kind == "first-boot" and claim.previous_id == OLD_ID


def test_the_same_instance_id_on_a_new_boot_resumes_deadline_and_spend(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    boot1 = DEADLINE_EPOCH - 8 * HOUR
    # First boot: 2 hours of running, the tag read (deadline) and kept.
    _boot(tmp_path, OLD_ID, boot1, boot1 + 2 * HOUR - 10 * MIN, 10, _tags(), state_dir=str(state_dir))
    identity = json.loads((state_dir / "identity.json").read_text())
    last_alive = identity["boots"][-1]["lastAlive"]
    assert boot1 + 2 * HOUR - 2 * MIN <= last_alive <= boot1 + 2 * HOUR

    # A spot notice handled (the watchdog records that a stop comes), then reclaimed and stopped for 3 hours;
    # started again by the cloud: a new boot of the same instance, whose tag reads now fail. The deadline is the
    # one read before (not this boot + max runtime), the spend 2 h + what runs.
    first = st.Claim(OLD_ID, identity["boots"][-1]["boot"], "same-boot", identity)
    st.expect_stop(str(state_dir), first, "spot-interruption: spot instance-action stop")
    boot2 = last_alive + 3 * HOUR
    (tmp_path / "proc").mkdir(exist_ok=True)
    dog, rig, _ = _boot(tmp_path, OLD_ID, boot2, boot2 + 30 * MIN, 6, _tags(deadline=False), state_dir=str(state_dir))
    assert dog.deadline == DEADLINE_EPOCH and dog.deadline_source == "the last value read from the tag"
    spend = _beat(rig)["spend"]
    assert 2.45 <= spend["hours"] <= 2.65, spend  # 2 h before the stop + 30 min now; the 3 stopped hours not counted
    identity = json.loads((state_dir / "identity.json").read_text())
    assert [b["bootTime"] for b in identity["boots"]] == [boot1, boot2]
    [stop] = identity["interruptions"]
    assert stop == {"kind": "spot-reclaim", "cause": "spot-interruption: spot instance-action stop",
                    "boot": identity["boots"][-1]["boot"], "stoppedAt": iso(last_alive), "resumedAt": iso(boot2),
                    "stoppedSeconds": round(3 * HOUR), "resumedFromStep": None}
    assert identity["boots"][-1]["after"] == "spot-reclaim"
    assert "resumed: instance i-0aaaaaaaaaaaaaaa1 booted again: stopped" in rig.log_text()

    # The run unit records the step it resumed from; the manifest lists the interruption.
    st.record_resumed_step(str(state_dir), 120)
    assert manifest.interruptions(str(state_dir)) == [
        {"kind": "spot-reclaim", "stoppedAt": iso(last_alive), "resumedAt": iso(boot2),
         "stoppedSeconds": round(3 * HOUR), "resumedFromStep": 120, "previousInstance": None}]


def test_a_state_folder_with_no_owner_is_moved_aside_once_the_id_is_known(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    (state_dir / "watchdog-state.json").write_text(json.dumps({"first_boot": BAKED_BOOT, "deadline": BAKED_BOOT}))
    claim = st.claim(str(state_dir), NEW_ID, "boot-1", DEADLINE_EPOCH, DEADLINE_EPOCH)
    assert claim.kind == "first-boot" and claim.moved == ["watchdog-state.json"]
    assert (state_dir / "previous" / "unknown" / "watchdog-state.json").exists()
    # The same boot claimed again (the watchdog after the bootstrap): nothing moves, nothing is recorded twice.
    again = st.claim(str(state_dir), NEW_ID, "boot-1", DEADLINE_EPOCH, DEADLINE_EPOCH + 60)
    assert again.kind == "same-boot" and again.moved == []


def test_an_unreadable_instance_id_moves_nothing(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    (state_dir / "ready.json").write_text("{}")
    claim = st.claim_for({"state_dir": str(state_dir), "boot_time": DEADLINE_EPOCH, "proc_root": str(tmp_path),
                          "instance_id_file": str(tmp_path / "no-such-file")}, lambda: None, DEADLINE_EPOCH)
    assert claim.kind == "unknown-id" and (state_dir / "ready.json").exists()
    (tmp_path / "instance-id").write_text(NEW_ID + "\n")  # cloud-init's record when metadata does not answer
    os.utime(tmp_path / "instance-id", (DEADLINE_EPOCH + 1, DEADLINE_EPOCH + 1))  # written during this boot
    claim = st.claim_for({"state_dir": str(state_dir), "boot_time": DEADLINE_EPOCH, "proc_root": str(tmp_path),
                          "instance_id_file": str(tmp_path / "instance-id")}, lambda: None, DEADLINE_EPOCH)
    assert claim.instance_id == NEW_ID and claim.kind == "first-boot"


def test_state_files_are_read_strictly_with_a_clear_fallback(tmp_path: Path) -> None:
    path = tmp_path / "identity.json"
    path.write_text("[1, 2]")
    warnings: list[str] = []
    assert st.read_or_empty(str(path), warnings.append) == {}
    assert warnings == [f"{path}: expected a JSON object, found list; starting from an empty record"]
    fifo = tmp_path / "fifo"
    import os

    os.mkfifo(fifo)
    assert st.read_or_empty(str(fifo), warnings.append) == {}
    assert warnings[-1] == f"{fifo}: not a regular file; starting from an empty record"
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text("{}")
    assert st.read_or_empty(str(link), warnings.append) == {} and "cannot open" in warnings[-1]


def test_the_old_key_is_refused_through_a_link(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_text("keep me\n")
    link = tmp_path / "authorized_keys"
    link.symlink_to(target)
    try:
        st.trust_only(str(link), [NEW_KEY])
    except OSError as exc:
        assert "not a regular file" in str(exc)
    else:
        raise AssertionError("wrote through a link")
    assert target.read_text() == "keep me\n"


def test_the_reports_reader_never_blocks_on_a_fifo(tmp_path: Path) -> None:
    import os

    from instance import control

    fifo = tmp_path / "ready.json"
    os.mkfifo(fifo)
    assert control.read_json(str(fifo)) == {}  # returns at once: a FIFO is not a report


def test_a_boot_with_no_stop_announced_counts_the_gap_as_running_and_records_no_interruption(tmp_path: Path) -> None:
    # The watchdog died (or was stopped) 1 h into the boot while the instance ran on for 8 h more, then a reboot:
    # those 8 h were billed, so the spend counts them; no spot interruption is recorded for a reboot.
    state_dir = str(tmp_path / "state")
    boot1 = DEADLINE_EPOCH - 20 * HOUR
    first = st.claim(state_dir, OLD_ID, "b1", boot1, boot1)
    st.alive(state_dir, first, boot1 + 1 * HOUR)
    boot2 = boot1 + 9 * HOUR
    claim = st.claim(state_dir, OLD_ID, "b2", boot2, boot2)
    assert claim.kind == "resumed" and claim.after == "reboot" and claim.interruptions == []
    assert claim.running_seconds(boot2 + 60) == 9 * HOUR + 60
    # The run unit's step after a reboot is written on no earlier interruption.
    assert st.record_resumed_step(state_dir, 50, "b2") == []


def test_a_stop_announced_by_a_handled_notice_is_not_counted_as_running(tmp_path: Path) -> None:
    state_dir = str(tmp_path / "state")
    boot1 = DEADLINE_EPOCH - 20 * HOUR
    first = st.claim(state_dir, OLD_ID, "b1", boot1, boot1)
    st.alive(state_dir, first, boot1 + 1 * HOUR)
    st.expect_stop(state_dir, first, "spot-interruption: spot instance-action stop")
    claim = st.claim(state_dir, OLD_ID, "b2", boot1 + 9 * HOUR, boot1 + 9 * HOUR)
    assert claim.after == "spot-reclaim" and claim.running_seconds(boot1 + 9 * HOUR + 60) == 1 * HOUR + 60
    [stop] = claim.interruptions
    assert (stop["kind"], stop["stoppedSeconds"], stop["boot"]) == ("spot-reclaim", round(8 * HOUR), "b2")
    assert st.record_resumed_step(state_dir, 50, "b2")[-1]["resumedFromStep"] == 50


def test_an_id_unreadable_at_start_never_uses_the_baked_state_and_claims_once_readable(tmp_path: Path) -> None:
    from instance import watchdog
    from tests.support.instance import FakeClock

    state_dir = tmp_path / "state"
    # The baking instance: its deadline read from its tag (long past by the next boot), budget warnings given.
    _boot(tmp_path, OLD_ID, BAKED_BOOT, BAKED_BOOT + 9 * HOUR, 6, _tags(budget="100"), state_dir=str(state_dir))
    assert sorted(json.loads((state_dir / "watchdog-state.json").read_text())["budget_warned"]) == [50, 80]

    # The image's first boot under a new id the metadata service does not give at first, nor cloud-init.
    new_boot = DEADLINE_EPOCH + 5 * HOUR
    state = MetadataState(tags=_tags(budget="100", deadline=False), instance_id="")
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, boot_time=new_boot, warn_hook=None, idle_minutes=10_000,
                       budget_thresholds=[50, 80, 100], market="on-demand", state_dir=str(state_dir),
                       instance_id_file=str(tmp_path / "no-cloud-init-id"))
        clock = FakeClock(new_boot + 1 * HOUR)
        watchdog.configure_logging(rig.settings, clock)
        dog = watchdog.Watchdog(rig.settings, clock)
        dog.run(max_ticks=12)
        assert dog.claim.instance_id is None
        assert dog.deadline == new_boot + 8 * HOUR, "the baked image's kept deadline must not be used"
        assert dog.state["first_boot"] == new_boot and dog.heartbeat.warned == []
        assert 1.0 <= dog.running_seconds(clock.now()) / HOUR <= 1.1
        assert not dog.done

        state.instance_id = NEW_ID  # the id can be read now: the state is claimed, the old one moved aside
        dog.run(max_ticks=30)
    assert dog.claim.instance_id == NEW_ID and dog.claim.kind == "first-boot" and dog.claim.previous_id == OLD_ID
    assert dog.deadline == new_boot + 8 * HOUR and not dog.done
    assert (state_dir / "previous" / OLD_ID / "watchdog-state.json").exists()
    assert json.loads((state_dir / "identity.json").read_text())["instanceId"] == NEW_ID
    assert 1.0 <= dog.running_seconds(clock.now()) / HOUR <= 1.1
