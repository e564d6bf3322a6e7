"""A tampered or damaged ``identity.json`` for THIS instance (instance/instance_state.py): a time in it that is not
one is reported in one line naming the file and the field and treated as unknown, the guard starts; a record that
cannot be read, or names this instance with unusable boots, is never taken for another instance's: nothing is
moved, ``watchdog-state.json`` (first boot, deadline) stays, no old keys are dropped."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from instance import instance_state as st
from instance import watchdog
from tests.support.instance import DEADLINE_EPOCH, FakeClock, MetadataServer, MetadataState, make_rig

INSTANCE = "i-0123456789abcdef0"
FIRST = DEADLINE_EPOCH - 20 * 3600.0
NOW = DEADLINE_EPOCH - 3600.0


def _identity(state_dir: Path, doc: Any) -> Path:
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "identity.json"
    path.write_text(json.dumps(doc))
    return path


def test_times_that_are_not_times_are_reported_and_treated_as_unknown(tmp_path: Path) -> None:
    path = _identity(tmp_path, {"instanceId": INSTANCE, "boots": [{"boot": "b1", "bootTime": 1e300, "lastAlive": -1e300}],
                                "earlierBootsSeconds": -1e12, "interruptions": "x", "firstBoot": 10**400})
    warnings: list[str] = []
    claim = st.claim(str(tmp_path), INSTANCE, "b2", 5000.0, 5000.0, warn=warnings.append)
    assert claim.kind == "resumed" and claim.running_seconds(5100.0) == 100.0
    assert warnings == [
        f"{path}: boots[0].bootTime: '1e+300' is not a time (seconds since 1970, up to 9999-12-31); treated as unknown",
        f"{path}: boots[0].lastAlive: '-1e+300' is not a time (seconds since 1970, up to 9999-12-31); treated as unknown",
        f"{path}: earlierBootsSeconds: '-1000000000000.0' is not a duration in seconds; treated as 0",
        f"{path}: firstBoot: '{str(10**400)[:40]}' is not a time; treated as unknown",
    ]
    # The cleaned record is what is kept: read again, nothing more to report.
    again: list[str] = []
    assert st.claim(str(tmp_path), INSTANCE, "b2", 5000.0, 5060.0, warn=again.append).kind == "same-boot"
    assert again == []


def test_the_watchdog_starts_on_a_tampered_record_and_keeps_guarding(tmp_path: Path) -> None:
    with MetadataServer(MetadataState(cloud="aws", instance_id=INSTANCE)) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, spot_recover=True, warn_hook=None)
        state_dir = Path(rig.settings["state_dir"])
        _identity(state_dir, {"instanceId": INSTANCE, "boots": [{"boot": "old-boot-id-0000", "bootTime": 1000.0,
                                                                  "lastAlive": 1e12}]})
        (state_dir / "watchdog-state.json").write_text(json.dumps({"first_boot": 1e300, "deadline": 1e300}))
        clock = FakeClock(NOW)
        watchdog.configure_logging(rig.settings, clock)
        dog = watchdog.Watchdog(rig.settings, clock)
        dog.run(max_ticks=3)
    assert dog.claim.kind == "resumed" and not dog.done
    log = rig.log_text()
    assert "identity.json: boots[0].lastAlive: '1000000000000.0' is not a time" in log
    assert "watchdog-state.json: first_boot: '1e+300' is not a time; treated as unknown" in log
    # The deadline falls back to a real one (the boot + max runtime), not the tampered 1e300.
    assert dog.deadline < st.LATEST_EPOCH


def test_claim_for_never_raises_whatever_the_folder_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> st.Claim:
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(st, "claim", broken)
    warnings: list[str] = []
    claim = st.claim_for({"state_dir": str(tmp_path), "boot_time": NOW, "proc_root": str(tmp_path)},
                         lambda: INSTANCE, NOW, warn=warnings.append)
    assert claim.kind == "unknown-id"
    assert warnings == ["cannot claim the state folder: int too large to convert to float; keeping what is there"]


def _damage(state_dir: Path, how: str) -> None:
    path = state_dir / "identity.json"
    if how == "too large":
        path.write_text(json.dumps({"instanceId": INSTANCE, "boots": [], "pad": "x" * (300 * 1024)}))
    elif how == "not JSON":
        path.write_text('{"instanceId": "' + INSTANCE + '", "boots": [')
    elif how == "a link":
        (state_dir / "elsewhere.json").write_text(json.dumps({"instanceId": INSTANCE, "boots": []}))
        path.symlink_to(state_dir / "elsewhere.json")
    elif how == "boots not a list":
        path.write_text(json.dumps({"instanceId": INSTANCE, "boots": "b1"}))


@pytest.mark.parametrize("how", ["too large", "not JSON", "a link", "boots not a list"])
def test_this_instances_damaged_record_is_rebuilt_and_nothing_is_moved(tmp_path: Path, how: str) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    kept = {"first_boot": FIRST, "deadline": DEADLINE_EPOCH, "budget_warned": [50]}
    (state_dir / "watchdog-state.json").write_text(json.dumps(kept))
    (state_dir / "verify.json").write_text(json.dumps({"passed": True, "instanceId": INSTANCE}))
    _damage(state_dir, how)
    warnings: list[str] = []
    claim = st.claim(str(state_dir), INSTANCE, "b2", NOW, NOW, warn=warnings.append)
    assert claim.kind == "repaired" and claim.moved == [] and claim.previous_id is None
    assert json.loads((state_dir / "watchdog-state.json").read_text()) == kept
    assert (state_dir / "verify.json").exists() and not (state_dir / "previous" / "unknown").exists()
    identity = json.loads((state_dir / "identity.json").read_text())
    assert "keysPendingFrom" not in identity and identity["instanceId"] == INSTANCE
    assert identity["firstBoot"] == FIRST and identity["earlierBootsSeconds"] == NOW - FIRST
    # The time since the first boot counts as running: the spend stays an upper bound.
    assert claim.running_seconds(NOW + 60) == NOW - FIRST + 60
    assert os.path.lexists(state_dir / "previous" / "damaged-identity.json")
    [line] = warnings
    assert line.endswith(f"this instance's record ({INSTANCE}) is rebuilt, the damaged one kept as "
                         f"{state_dir / 'previous' / 'damaged-identity.json'}; nothing else is moved (the deadline, "
                         "first boot and records stay)")
    assert line.startswith(str(state_dir / "identity.json"))
    if how == "a link":  # the link itself was moved, what it pointed at is untouched
        assert json.loads((state_dir / "elsewhere.json").read_text()) == {"instanceId": INSTANCE, "boots": []}


def test_another_instances_readable_record_is_still_moved_aside(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    _identity(state_dir, {"instanceId": "i-0other0000000001", "boots": [{"boot": "b1", "bootTime": FIRST}]})
    (state_dir / "watchdog-state.json").write_text(json.dumps({"first_boot": FIRST}))
    claim = st.claim(str(state_dir), INSTANCE, "b2", NOW, NOW)
    assert claim.kind == "first-boot" and claim.moved == ["watchdog-state.json"]
    assert json.loads((state_dir / "identity.json").read_text())["keysPendingFrom"] == "i-0other0000000001"
