"""On Alibaba Cloud the deadline tag may not be in the metadata service (``InstanceMetadataTags`` is documented as
"in invitational preview and not publicly available"), so the watchdog and the job agent also read it through the
ECS API: ``DescribeInstances`` for their own instance, signed with the role's STS credentials (read through the
metadata token), as the self-release is. The order: the tag through metadata, then the API (the tag, else
``AutoReleaseTime``), then the last value read, then first boot + max runtime. The ECS stand-in recomputes every
signature with Alibaba Cloud's SDK signer and lists only the instances the role's policy covers."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.userdata import JOB_COMMANDS
from gpulease.core import vocabulary as v
from instance import job_agent
from tests.support.ecs_api import EcsApi
from tests.support.instance import (
    ALI_CREDENTIALS,
    DEADLINE_EPOCH,
    MetadataServer,
    MetadataState,
    deadline_tags,
    iso,
    make_rig,
    run_in_process,
)

HOUR = 3600.0
MIN = 60.0
INSTANCE_ID = "i-bp1deadlineapi"
RENEWED = DEADLINE_EPOCH + 2 * HOUR


@pytest.fixture
def ecs() -> Iterator[EcsApi]:
    api = EcsApi()
    yield api
    api.close()


def _metadata(tags: dict[str, str] | None = None) -> MetadataState:
    return MetadataState(cloud="alicloud", tags=tags or {}, instance_id=INSTANCE_ID, termination_time=None)


def _rig(tmp_path: Path, server: MetadataServer, ecs: EcsApi, **overrides: Any):
    settings = {"cloud": "alicloud", "region": "cn-hangzhou", "checkpoint_uri": "oss://bucket/ckpt/",
                "deadline_api": True, "ecs_endpoint": ecs.url, "warn_hook": None,
                # A loaded test machine must never turn a slow loopback metadata answer into an API call: the order
                # of the sources is what these tests read, not the metadata read's bound.
                "metadata_timeout_seconds": 30, **overrides}
    return make_rig(tmp_path, metadata_url=server.url, **settings)


def _deadlines(log: str) -> list[str]:
    return re.findall(r"^\S+ start: deadline (\S+) \(([^)]*)\)", log, flags=re.M)


def test_the_tag_through_metadata_comes_first_and_the_api_is_not_asked(tmp_path: Path, ecs: EcsApi) -> None:
    ecs.instances[INSTANCE_ID] = {"Tags": {v.TAG_EXPIRES_AT: iso(RENEWED)}}
    with MetadataServer(_metadata(deadline_tags(DEADLINE_EPOCH))) as server:
        dog, _ = run_in_process(_rig(tmp_path, server, ecs), start=DEADLINE_EPOCH - 3 * HOUR, max_ticks=5)
    assert dog.deadline == DEADLINE_EPOCH and dog.deadline_source == "tag through the metadata service"
    assert ecs.hits == 0


def test_without_the_tag_in_metadata_the_api_gives_it_signed_with_the_role(tmp_path: Path, ecs: EcsApi) -> None:
    ecs.instances[INSTANCE_ID] = {"Tags": {v.TAG_EXPIRES_AT: iso(RENEWED), "gpulease:owner": "ana"},
                                  "AutoReleaseTime": iso(DEADLINE_EPOCH + 9 * HOUR)}
    state = _metadata()
    with MetadataServer(state) as server:
        rig = _rig(tmp_path, server, ecs, poll_seconds=30)
        # 10 minutes before the tag's deadline (first boot + 8 h, the fallback, is two hours earlier still).
        dog, _ = run_in_process(rig, start=RENEWED - 10 * MIN, max_ticks=40)
    assert ecs.bad_signatures == 0
    call = ecs.calls[0]
    assert call["Action"] == "DescribeInstances" and json.loads(call["InstanceIds"]) == [INSTANCE_ID]
    assert call["RegionId"] == "cn-hangzhou" and call["Version"] == "2014-05-26"
    assert (call["AccessKeyId"], call["SecurityToken"]) == (ALI_CREDENTIALS["AccessKeyId"], ALI_CREDENTIALS["SecurityToken"])
    assert state.refused == []  # the instance id and the credentials were read through the token
    assert _deadlines(rig.log_text()) == [(iso(RENEWED), "tag through the ECS API")]
    # The watchdog ends the instance by that deadline, not by the fallback's (which had passed already).
    assert dog.done and rig.names() == ["checkpoint-hook", "sync", "shutdown"]
    (when,) = re.findall(r"^(\S+) deadline: ", rig.log_text(), flags=re.M)
    assert iso(RENEWED - 5 * MIN) <= when <= iso(RENEWED - 5 * MIN + 30)
    assert ALI_CREDENTIALS["AccessKeySecret"] not in rig.log_text()


def test_the_release_time_stands_in_for_a_missing_tag(tmp_path: Path, ecs: EcsApi) -> None:
    ecs.instances[INSTANCE_ID] = {"Tags": {"gpulease:owner": "ana"}, "AutoReleaseTime": "2026-12-01T10:00Z"}
    with MetadataServer(_metadata()) as server:
        dog, _ = run_in_process(_rig(tmp_path, server, ecs), start=DEADLINE_EPOCH - 3 * HOUR, max_ticks=3)
    assert dog.deadline == RENEWED  # 2026-12-01T10:00:00Z, ECS's minute precision
    assert dog.deadline_source == "AutoReleaseTime through the ECS API"


def test_a_renewal_reaches_the_watchdog_through_the_api_asked_once_a_minute(tmp_path: Path, ecs: EcsApi) -> None:
    ecs.instances[INSTANCE_ID] = {"Tags": {v.TAG_EXPIRES_AT: iso(DEADLINE_EPOCH)}}
    with MetadataServer(_metadata()) as server:
        rig = _rig(tmp_path, server, ecs, poll_seconds=5)
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 30 * MIN, max_ticks=3)
        assert dog.deadline == DEADLINE_EPOCH
        ecs.instances[INSTANCE_ID]["Tags"][v.TAG_EXPIRES_AT] = iso(RENEWED)  # pulumi up with deadlineRenewal + 1
        dog.run(max_ticks=int(10 * MIN / 5))
    assert not dog.done and dog.deadline == RENEWED
    assert f"deadline-changed: {v.TAG_EXPIRES_AT} is now {iso(RENEWED)} (was {iso(DEADLINE_EPOCH)}; tag through " \
           "the ECS API)" in rig.log_text()
    # Every poll asks metadata; the API only once a minute (10 minutes: 10 or 11 calls, not 120).
    assert 10 <= ecs.actions().count("DescribeInstances") <= 12


def test_when_the_api_refuses_the_last_value_read_holds(tmp_path: Path, ecs: EcsApi) -> None:
    ecs.instances[INSTANCE_ID] = {"Tags": {v.TAG_EXPIRES_AT: iso(RENEWED)}}
    with MetadataServer(_metadata()) as server:
        rig = _rig(tmp_path, server, ecs)
        run_in_process(rig, start=DEADLINE_EPOCH - 3 * HOUR, max_ticks=2)
        ecs.answers["DescribeInstances"] = 403  # and the watchdog restarts: a new process, the state file
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 3 * HOUR + MIN, max_ticks=2)
    assert dog.deadline == RENEWED
    assert (f"deadline-unread: tag {v.TAG_EXPIRES_AT} is not in the instance metadata; ECS API: DescribeInstances "
            f"answered 403: Forbidden.RAM not allowed; keeping {iso(RENEWED)} (the last value read from the tag)"
            ) in rig.log_text()


def test_an_instance_the_api_does_not_list_falls_back_to_first_boot_plus_max_runtime(tmp_path: Path, ecs: EcsApi) -> None:
    ecs.instances[INSTANCE_ID] = {"Tags": {v.TAG_EXPIRES_AT: iso(RENEWED)}}
    ecs.visible = set()  # a policy that does not cover the instance: DescribeInstances lists nothing
    with MetadataServer(_metadata()) as server:
        rig = _rig(tmp_path, server, ecs, boot_time=DEADLINE_EPOCH - 8 * HOUR, max_runtime_hours=8)
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 3 * HOUR, max_ticks=2)
    assert dog.deadline == DEADLINE_EPOCH
    assert f"ECS API: DescribeInstances did not list {INSTANCE_ID}" in rig.log_text()
    assert ecs.actions() == ["DescribeInstances"]


def test_aws_never_asks_the_ecs_api(tmp_path: Path, ecs: EcsApi) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = make_rig(tmp_path, metadata_url=server.url, deadline_api=True, ecs_endpoint=ecs.url, warn_hook=None)
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 3 * HOUR, max_ticks=3)
    assert ecs.hits == 0 and dog.deadline == DEADLINE_EPOCH  # first boot + max runtime


def test_an_answer_listing_another_instance_is_not_taken_for_this_one(tmp_path: Path, ecs: EcsApi) -> None:
    ecs.instances["i-bp1someoneelse"] = {"Tags": {v.TAG_EXPIRES_AT: iso(DEADLINE_EPOCH + 30 * HOUR)}}
    ecs.also_list = ["i-bp1someoneelse"]
    ecs.visible = {"i-bp1someoneelse"}
    with MetadataServer(_metadata()) as server:
        rig = _rig(tmp_path, server, ecs, boot_time=DEADLINE_EPOCH - 8 * HOUR, max_runtime_hours=8)
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 3 * HOUR, max_ticks=2)
    assert dog.deadline == DEADLINE_EPOCH
    assert f"DescribeInstances did not list {INSTANCE_ID}" in rig.log_text()


# --- the job agent: the same order, then the watchdog's saved state -------------------------------------------


def _agent(tmp_path: Path, server: MetadataServer, ecs: EcsApi, **overrides: Any) -> job_agent.Agent:
    settings = {
        "cloud": "alicloud", "region": "cn-hangzhou", "checkpoint_uri": "oss://bucket/ckpt/",
        "mount_point": str(tmp_path / "data"), "state_dir": str(tmp_path / "jobs"),
        "watchdog_state_dir": str(tmp_path / "state"), "job_agent": dict(JOB_COMMANDS["alicloud"]),
        "metadata_url": server.url, "deadline_api": True, "ecs_endpoint": ecs.url, "max_runtime_hours": 8,
        "boot_time": DEADLINE_EPOCH - 8 * HOUR, **overrides,
    }
    return job_agent.Agent(settings)


def _watchdog_state(tmp_path: Path, **state: float) -> None:
    (tmp_path / "state").mkdir(exist_ok=True)
    (tmp_path / "state" / "watchdog-state.json").write_text(json.dumps(state))


def test_the_job_agent_reads_the_tag_through_metadata_first(tmp_path: Path, ecs: EcsApi) -> None:
    with MetadataServer(_metadata(deadline_tags(RENEWED))) as server:
        assert _agent(tmp_path, server, ecs).instance_deadline() == RENEWED
    assert ecs.hits == 0


def test_the_job_agent_reads_the_tag_through_the_api_when_metadata_has_none(tmp_path: Path, ecs: EcsApi) -> None:
    ecs.instances[INSTANCE_ID] = {"Tags": {v.TAG_EXPIRES_AT: iso(RENEWED)}}
    state = _metadata()
    with MetadataServer(state) as server:
        assert _agent(tmp_path, server, ecs).instance_deadline() == RENEWED
    assert ecs.actions() == ["DescribeInstances"] and ecs.bad_signatures == 0 and state.refused == []


def test_the_job_agent_then_takes_the_watchdogs_last_value(tmp_path: Path, ecs: EcsApi) -> None:
    ecs.answers["DescribeInstances"] = 403
    _watchdog_state(tmp_path, first_boot=DEADLINE_EPOCH - 20 * HOUR, deadline=RENEWED)
    with MetadataServer(_metadata()) as server:
        assert _agent(tmp_path, server, ecs).instance_deadline() == RENEWED


def test_the_job_agent_last_takes_the_watchdogs_first_boot_plus_max_runtime(tmp_path: Path, ecs: EcsApi) -> None:
    """The watchdog's record of the first boot, not this boot: a reboot does not push the deadline out."""
    ecs.answers["DescribeInstances"] = 403
    _watchdog_state(tmp_path, first_boot=DEADLINE_EPOCH - 10 * HOUR)
    with MetadataServer(_metadata()) as server:
        agent = _agent(tmp_path, server, ecs)
        assert agent.instance_deadline() == DEADLINE_EPOCH - 2 * HOUR
        (tmp_path / "state" / "watchdog-state.json").unlink()
        assert agent.instance_deadline() == DEADLINE_EPOCH  # no record at all: this boot + max runtime
