"""The deadline comes from the instance's own tag, read through the hardened metadata service on every poll: a
renewal reaches a running instance without touching its user-data, on both clouds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpulease.core import vocabulary as v
from tests.support.alicloud import INSTANCE as ALI_INSTANCE
from tests.support.alicloud import ali_experiment, render_ali, user_data_text
from tests.support.clock import FIXED_NOW
from tests.support.instance import (
    DEADLINE_EPOCH,
    MetadataServer,
    MetadataState,
    deadline_tags,
    iso,
    make_rig,
    run_in_process,
)
from tests.support.specs import experiment, render_experiment

MIN = 60.0
HOUR = 3600.0


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_a_renewed_tag_moves_the_deadline_of_a_running_watchdog(tmp_path: Path, cloud: str) -> None:
    state = MetadataState(cloud=cloud, tags=deadline_tags(DEADLINE_EPOCH), termination_time=None)
    with MetadataServer(state) as server:
        # Polling every 30 s (the spec allows up to 60) keeps the hours this test covers to a few hundred ticks;
        # the GPU is busy throughout, so reading it every 10 min instead of every minute changes no decision and
        # spares a few hundred starts of the nvidia-smi stand-in.
        rig = make_rig(tmp_path, metadata_url=server.url, cloud=cloud, warn_hook=None, poll_seconds=30,
                       idle_check_seconds=600,
                       boot_time=DEADLINE_EPOCH - 20 * HOUR)  # first boot + 8 h long past: the tag must win
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 30 * MIN, max_ticks=3)
        assert not dog.done and dog.deadline == DEADLINE_EPOCH
        state.tags = deadline_tags(DEADLINE_EPOCH + 4 * HOUR)  # pulumi up with deadlineRenewal + 1
        dog.run(max_ticks=int(40 * MIN / 30))  # past the old deadline
        assert not dog.done and "shutdown" not in rig.names()
        state.tags = {}  # the tag cannot be read any more: the last value read holds
        dog.run(max_ticks=int(4 * HOUR / 30))
    assert dog.done and rig.names() == ["checkpoint-hook", "sync", "shutdown"]
    log = rig.log_text()
    assert f"deadline-changed: {v.TAG_EXPIRES_AT} is now {iso(DEADLINE_EPOCH + 4 * HOUR)}" in log
    (when,) = re.findall(r"^(\S+) deadline: ", log, flags=re.M)
    assert iso(DEADLINE_EPOCH + 4 * HOUR - 5 * MIN) <= when <= iso(DEADLINE_EPOCH + 4 * HOUR - 5 * MIN + 30)
    assert "deadline-unread: tag gpulease:expires-at is not in the instance metadata" in log
    assert state.refused == []  # every read carried the token
    key = "/latest/meta-data/tags/instance/gpulease:expires-at"
    assert sum(1 for m, p, _ in state.requests if m == "GET" and p == key) > 80  # on every poll


def test_the_last_deadline_read_survives_a_restart_without_the_tag(tmp_path: Path) -> None:
    state = MetadataState(cloud="aws", tags=deadline_tags(DEADLINE_EPOCH + 2 * HOUR))
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url)
        run_in_process(rig, start=DEADLINE_EPOCH - 3 * HOUR, max_ticks=2)
        state.fail = True  # the service breaks, and the watchdog restarts (a new process reads the state file)
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 2 * HOUR, max_ticks=3)
    assert dog.deadline == DEADLINE_EPOCH + 2 * HOUR
    assert json.loads((Path(rig.settings["state_dir"]) / "watchdog-state.json").read_text())["deadline"] == DEADLINE_EPOCH + 2 * HOUR
    assert "the last value read from the tag" in rig.log_text()


def test_without_any_tag_read_the_deadline_is_first_boot_plus_max_runtime(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, boot_time=DEADLINE_EPOCH - 3 * HOUR, max_runtime_hours=2, warn_hook=None, poll_seconds=30)
    dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 2 * HOUR, max_ticks=int(2 * HOUR / 30))
    assert dog.done and rig.names() == ["checkpoint-hook", "sync", "shutdown"]
    assert re.findall(r"^(\S+) deadline: ", rig.log_text(), flags=re.M) == [iso(DEADLINE_EPOCH - HOUR - 5 * MIN)]
    # The first boot is kept: a reboot (a later boot time) does not push the deadline out.
    state = json.loads((Path(rig.settings["state_dir"]) / "watchdog-state.json").read_text())
    assert state == {"first_boot": DEADLINE_EPOCH - 3 * HOUR}


def _user_data(cloud: str, **overrides) -> str:
    if cloud == "aws":
        r = render_experiment(experiment(**overrides), now=overrides.pop("now", FIXED_NOW))
        assert r.error is None, r.error
        return r.one("aws:ec2/instance:Instance").inputs["userDataBase64"]
    r = render_ali(ali_experiment(**overrides))
    assert r.error is None, r.error
    return user_data_text(r.one(ALI_INSTANCE))


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
@pytest.mark.parametrize(
    "renewal",
    [{"deadlineRenewal": 1}, {"expiresAt": "2026-12-01T14:00:00Z"}],
    ids=["deadline-renewal", "explicit-expires-at"],
)
def test_a_deadline_renewal_changes_no_user_data(cloud: str, renewal: dict) -> None:
    assert _user_data(cloud) == _user_data(cloud, **renewal)
