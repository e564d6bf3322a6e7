"""The watchdog's GPU reading where its MIG-aware query cannot be used or reads less than expected: a driver that
does not know ``mig.mode.current`` (the whole query refused, exit 2), a MIG GPU reporting nothing else, a failed
processes query, two MIG GPUs told apart by their index (instance/gpu_query.py, instance/idle_rule.py)."""

from __future__ import annotations

from pathlib import Path

from instance import gpu_query, idle_rule
from tests.instance.test_gpu_query_mig import HEADER, PROCESSES_NONE, runner
from tests.support.instance import DEADLINE_EPOCH, make_rig, run_in_process

# nvidia-smi's answer on a driver without the field (wording as reported in huggingface/candle#733).
INVALID = 'Field "mig.mode.current" is not a valid field to query.\n'
IDLE_ARGS, OLD_ARGS = " ".join(gpu_query.IDLE_QUERY), " ".join(gpu_query.QUERY)


def test_a_driver_refusing_the_mig_field_is_asked_the_plain_query() -> None:
    run = runner({IDLE_ARGS: (2, INVALID), OLD_ARGS: (0, "87, 30000, 40960\n")})
    code, out = idle_rule.query_gpus(run)
    assert (code, out) == (0, "87, 30000, 40960\n")
    assert idle_rule.gpu_reading(code, out) == ([87.0], None, "30000 MiB")


def test_an_invalid_field_named_in_a_zero_exit_output_falls_back_too() -> None:
    run = runner({IDLE_ARGS: (0, INVALID), OLD_ARGS: (0, "3, 512, 23028\n")})
    assert idle_rule.query_gpus(run) == (0, "3, 512, 23028\n")


def test_the_mig_query_is_kept_when_it_answers_and_a_timeout_is_not_repeated() -> None:
    out = "[N/A], 1200, 81920, Enabled, 0\n"
    assert idle_rule.query_gpus(runner({IDLE_ARGS: (0, out)})) == (0, out)
    assert idle_rule.query_gpus(runner({IDLE_ARGS: (None, "")})) == (None, "")


def test_the_watchdog_keeps_a_busy_gpu_on_a_driver_without_the_mig_field(tmp_path: Path) -> None:
    rig = make_rig(tmp_path, idle_minutes=10, gpu_grace_minutes=5, poll_seconds=60, market="on-demand")
    (rig.gpu_state / "utilization.csv").write_text("87, 30000, 40960\n")
    Path(rig.settings["nvidia_smi"]).write_text(f"""#!/bin/sh
case "$*" in
  *mig.mode.current*) printf '%s' '{INVALID.strip()}' >&2; exit 2 ;;
  *utilization.gpu*) cat '{rig.gpu_state}/utilization.csv' ;;
  *) exit 6 ;;
esac
""")
    dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 10 * 3600, max_ticks=30 * 12)  # 30 minutes
    assert not dog.done and "gpu-unreadable" not in rig.log_text()
    assert "GPU utilization 87% >= 5%" in rig.log_text()


def test_a_mig_gpu_reporting_nothing_else_is_still_judged_by_its_slices() -> None:
    gpus = gpu_query.parse("[N/A], [N/A], [N/A], Enabled, 0\n")
    assert gpus == [gpu_query.Gpu(None, None, None, True, 0)]
    assert gpu_query.parse("[N/A], [N/A], [N/A], Disabled, 0\n") == []  # nothing readable, no MIG: not a GPU line
    from tests.instance.test_gpu_query_mig import PROCESSES_BUSY, SLICES_OUT
    busy = idle_rule.gpu_reading(0, "[N/A], [N/A], [N/A], Enabled, 0\n",
                                 runner({"": (0, PROCESSES_BUSY), "mig -lgi": (0, SLICES_OUT)}))
    assert busy[0] == [100.0] and busy[1] is None


def test_a_failed_or_timed_out_processes_query_means_busy_whatever_table_it_printed() -> None:
    """A partial "No running processes found" table from a query that failed is not "no process"."""
    for code in (9, None):
        reading = idle_rule.gpu_reading(0, "[N/A], 1200, 81920, Enabled, 0\n",
                                        runner({"": (code, PROCESSES_NONE), "mig -lgi": (0, "")}))
        assert reading[0] == [100.0], code
        assert "its processes could not be read" in reading[2]


TWO_SLICES = """\
| GPU instances:                                        |
|=======================================================|
|   0  MIG 3g.40gb          9        2          4:4     |
|   1  MIG 3g.40gb          9        2          4:4     |
"""
ON_GPU_1 = HEADER + """\
| Processes:                                                                  |
|=============================================================================|
|    1    2    0      30001      C   python train.py                   300MiB |
"""


def test_two_mig_gpus_are_told_apart_by_their_index() -> None:
    out = "[N/A], 1200, 81920, Enabled, 0\n[N/A], 1200, 81920, Enabled, 1\n"
    reading = idle_rule.gpu_reading(0, out, runner({"": (0, ON_GPU_1), "mig -lgi": (0, TWO_SLICES)}))
    assert reading[0] == [0.0, 100.0]
    assert "MIG GPU 0: GI 2 (3g.40gb): no process" in reading[2]
    assert "MIG GPU 1: GI 2 (3g.40gb): pid 30001 python train.py" in reading[2]
