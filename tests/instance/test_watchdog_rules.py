"""Watchdog rules pinned at their edges: a GPU exactly at ``idleGpuPercent`` is busy, not idle; the ECS API (the
self-release and the deadline on Alibaba Cloud) is reached over https by default. ``make mutate --area watchdog``
removes each rule in turn."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from instance import cloud_access
from tests.support.instance import DEADLINE_EPOCH, iso, make_rig, run_in_process, set_gpus

MIN = 60.0
FAR = DEADLINE_EPOCH - 10 * 3600  # only idle can end the run


@pytest.mark.parametrize(("util", "idle"), [([5, 5], False), ([5, 0], False), ([4.9, 0], True)])
def test_a_gpu_exactly_at_the_idle_threshold_is_not_idle(tmp_path: Path, util: list[float], idle: bool) -> None:
    rig = make_rig(tmp_path, idle_minutes=10, idle_gpu_percent=5)
    set_gpus(rig.gpu_state, util=util)
    dog, _ = run_in_process(rig, start=FAR, max_ticks=int(25 * MIN / 5))
    assert dog.done is idle
    log = rig.log_text()
    if idle:
        assert re.findall(r"^(\S+) idle-shutdown: ", log, flags=re.M) == [iso(FAR + 10 * MIN)]
    else:
        assert "shutdown" not in rig.names() and "GPU utilization 5% >= 5%" in log


def test_the_ecs_api_is_reached_over_https_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def answer(method: str, url: str, headers: dict[str, str], total: float, **_: Any) -> tuple[int, bytes]:
        seen.append(url)
        return 200, b'{"RequestId": "R-1"}'

    monkeypatch.setattr(cloud_access, "http_request", answer)
    creds = {"id": "STS.key", "secret": "s3cr3t", "token": "tok"}
    status, _ = cloud_access.ecs_call("DeleteInstance", {"InstanceId": "i-1"}, creds, region="cn-hangzhou")
    assert status == 200
    (url,) = seen
    assert url.startswith("https://ecs.cn-hangzhou.aliyuncs.com/?Action=DeleteInstance&")
