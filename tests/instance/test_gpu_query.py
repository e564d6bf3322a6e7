"""nvidia-smi --query-gpu output as it comes (instance/gpu_query.py): MIG mode, [N/A] and [Not Supported] fields,
units, a stderr line mixed in. Parsed, not "unreadable"; and what the idle rule and the heartbeat make of it."""

from __future__ import annotations

import json
from pathlib import Path

from instance import gpu_query, idle_rule
from tests.support.instance import DEADLINE_EPOCH, make_rig, run_in_process, set_gpus


def test_mig_na_not_supported_units_and_a_stderr_line_are_parsed() -> None:
    out = ("WARNING: infoROM is corrupted at gpu 0000:00:1E.0\n"
           "[N/A], 20480, 81920\n"           # MIG mode: no utilisation per GPU
           "87, 18000, 23028\n"
           "[Not Supported], [N/A], 81559\n"  # nothing readable but the capacity
           "12 %, 4096 MiB, 23028 MiB\n"     # without nounits
           "N/A, 0, 81920\n")
    assert gpu_query.parse(out) == [
        gpu_query.Gpu(None, 20480, 81920), gpu_query.Gpu(87, 18000, 23028), gpu_query.Gpu(12, 4096, 23028),
        gpu_query.Gpu(None, 0, 81920)]
    assert idle_rule.gpu_reading(0, out) == ([100.0, 87, 12, 0.0], None, "20480 MiB, 18000 MiB, 4096 MiB, 0 MiB")


def test_nothing_readable_says_what_was_printed() -> None:
    assert gpu_query.parse("[N/A], [N/A]\n") == []
    assert idle_rule.gpu_reading(0, "[N/A], [N/A]\n")[1] == "nvidia-smi printed no readable GPU line: '[N/A], [N/A]'"
    assert idle_rule.gpu_reading(0, "")[1] == "nvidia-smi listed no GPU"
    assert idle_rule.gpu_reading(0, "No devices were found\n")[1] == (
        "nvidia-smi printed no readable GPU line: 'No devices were found'")


def test_a_mig_gpu_in_use_keeps_the_instance_alive_and_an_unused_one_is_idle(tmp_path: Path) -> None:
    far = DEADLINE_EPOCH - 10 * 3600
    rig = make_rig(tmp_path, idle_minutes=10, gpu_grace_minutes=30, poll_seconds=60, market="on-demand")
    set_gpus(rig.gpu_state)
    (rig.gpu_state / "utilization.csv").write_text("[N/A], 40000, 81920\n")
    dog, _ = run_in_process(rig, start=far, max_ticks=20)
    assert not dog.done and "gpu-unreadable" not in rig.log_text()
    (rig.gpu_state / "utilization.csv").write_text("[N/A], 300, 81920\n")
    dog.run(max_ticks=15)
    assert dog.done and rig.names() == ["sync", "shutdown"]  # after 10 idle minutes, not the 30-minute grace


def test_the_heartbeat_lists_a_mig_gpu_with_its_memory(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, poll_seconds=60, market="on-demand")
    (rig.gpu_state / "utilization.csv").write_text("warning on stderr\n[N/A], 40000, 81920\n")
    run_in_process(rig, start=DEADLINE_EPOCH - 5 * 3600, max_ticks=2)
    beat = json.loads((Path(rig.settings["state_dir"]) / "heartbeat.json").read_text())
    assert beat["gpus"] == [{"utilizationPercent": None, "memoryUsedMib": 40000, "memoryTotalMib": 81920}]
    assert beat["gpuError"] is None
