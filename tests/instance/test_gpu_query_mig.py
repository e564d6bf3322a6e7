"""A GPU in MIG mode, judged slice by slice (instance/gpu_query.py, instance/idle_rule.py): ``--query-gpu`` with
``mig.mode.current``, ``nvidia-smi mig -lgi`` and ``nvidia-smi``'s Processes table, the samples written in the layout
NVIDIA's MIG user guide shows (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/), parsed, and the real
watchdog against a fake nvidia-smi that prints them."""

from __future__ import annotations

import time
from pathlib import Path

from instance import gpu_query, idle_rule
from tests.support.instance import DEADLINE_EPOCH, make_rig, run_in_process

# An A100 80GB in MIG mode with two GPU instances, an A10G beside it not in MIG mode.
QUERY_OUT = "[N/A], 1200, 81920, Enabled, 0\n3, 512, 23028, [N/A], 1\n"
SLICES_OUT = """\
+-------------------------------------------------------+
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
|   0  MIG 3g.40gb          9        2          4:4     |
+-------------------------------------------------------+
|   0  MIG 2g.20gb         14        3          0:2     |
+-------------------------------------------------------+
"""
HEADER = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 550.127.05   Driver Version: 550.127.05   CUDA Version: 12.4     |
|-------------------------------+----------------------+----------------------+
| MIG devices:                                                                |
+------------------+----------------------+-----------+-----------------------+
"""
PROCESSES_BUSY = HEADER + """\
+-----------------------------------------------------------------------------+
| Processes:                                                                  |
|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|        ID   ID                                                   Usage      |
|=============================================================================|
|    0    3    0      20915      C   python train.py                   300MiB |
+-----------------------------------------------------------------------------+
"""
PROCESSES_NONE = HEADER + """\
+-----------------------------------------------------------------------------+
| Processes:                                                                  |
|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|        ID   ID                                                   Usage      |
|=============================================================================|
|  No running processes found                                                 |
+-----------------------------------------------------------------------------+
"""


def runner(answers: dict[str, tuple[int | None, str]]):
    def run(args: list[str]) -> tuple[int | None, str]:
        return answers[" ".join(args)]

    return run


def test_the_query_slices_and_processes_are_parsed_as_documented() -> None:
    gpus = gpu_query.parse(QUERY_OUT)
    assert gpus == [gpu_query.Gpu(None, 1200, 81920, True, 0), gpu_query.Gpu(3, 512, 23028, False, 1)]
    assert gpu_query.slices(SLICES_OUT) == [gpu_query.Slice(0, 2, "3g.40gb"), gpu_query.Slice(0, 3, "2g.20gb")]
    assert gpu_query.processes(PROCESSES_BUSY) == [gpu_query.Process(0, 3, 20915, "python train.py")]
    assert gpu_query.processes(PROCESSES_NONE) == []
    assert gpu_query.processes(HEADER) is None  # no table: not "nothing runs"
    without_mig = "|    1   N/A  N/A     4242      C   python                           9000MiB |\n"
    assert gpu_query.processes("| Processes: |\n" + without_mig) == [gpu_query.Process(1, None, 4242, "python")]
    hostile = "|    0    3    0      20915      C   " + " " * 100_000 + "x"  # no row, and no quadratic scan
    started = time.monotonic()
    assert gpu_query.processes("| Processes: |\n" + hostile * 3) == [] and gpu_query.slices(hostile) == []
    assert time.monotonic() - started < 0.5


def test_a_process_on_one_slice_makes_the_mig_gpu_busy_whatever_its_memory() -> None:
    # 1200 MiB of 81920 is under the 5 % a GPU without MIG mode is judged by: the slice's process decides.
    reading = idle_rule.gpu_reading(0, QUERY_OUT, runner({"": (0, PROCESSES_BUSY), "mig -lgi": (0, SLICES_OUT)}))
    assert reading == ([100.0, 3.0], None, "1200 MiB, 512 MiB; MIG GPU 0: GI 2 (3g.40gb): no process; "
                                           "GI 3 (2g.20gb): pid 20915 python train.py")


def test_a_mig_gpu_with_no_process_on_any_slice_is_idle() -> None:
    reading = idle_rule.gpu_reading(0, QUERY_OUT, runner({"": (0, PROCESSES_NONE), "mig -lgi": (0, SLICES_OUT)}))
    assert reading == ([0.0, 3.0], None, "1200 MiB, 512 MiB; MIG GPU 0: GI 2 (3g.40gb): no process; "
                                         "GI 3 (2g.20gb): no process")


def test_unreadable_processes_make_a_mig_gpu_busy_never_idle() -> None:
    for answer, why in (((9, "NVIDIA-SMI has failed"), "nvidia-smi exited 9"), ((None, ""), "nvidia-smi did not answer"),
                        ((0, HEADER), "no Processes table in nvidia-smi's output")):
        reading = idle_rule.gpu_reading(0, QUERY_OUT, runner({"": answer, "mig -lgi": (0, SLICES_OUT)}))
        assert reading == ([100.0, 3.0], None, f"1200 MiB, 512 MiB; MIG GPU 0: its processes could not be read "
                                               f"({why}): counted as busy"), why
    assert idle_rule.gpu_reading(0, QUERY_OUT)[0] == [100.0, 3.0]  # nothing to run the tables with


def test_a_process_outside_the_listed_slices_still_counts() -> None:
    reading = idle_rule.gpu_reading(0, QUERY_OUT, runner({"": (0, PROCESSES_BUSY), "mig -lgi": (6, "")}))
    assert reading[0] == [100.0, 3.0]
    assert reading[2].endswith("MIG GPU 0: outside a listed slice: pid 20915 python train.py")


def mig_rig(tmp_path: Path):
    rig = make_rig(tmp_path, idle_minutes=10, gpu_grace_minutes=30, poll_seconds=60, market="on-demand")
    state = rig.gpu_state
    (state / "utilization.csv").write_text("[N/A], 1200, 81920, Enabled, 0\n")
    (state / "lgi.txt").write_text(SLICES_OUT)
    (state / "processes.txt").write_text(PROCESSES_BUSY)
    smi = Path(rig.settings["nvidia_smi"])
    smi.write_text(f"""#!/bin/sh
state='{state}'
case "$*" in
  *utilization.gpu*) cat "$state/utilization.csv" ;;
  "mig -lgi") cat "$state/lgi.txt" ;;
  "") cat "$state/processes.txt" ;;
  *) exit 6 ;;
esac
""")
    return rig


def test_the_watchdog_keeps_a_mig_gpu_with_a_small_job_on_one_slice_and_ends_it_when_none_runs(tmp_path: Path) -> None:
    rig = mig_rig(tmp_path)
    dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 10 * 3600, max_ticks=20 * 12)  # 20 minutes
    assert not dog.done and "gpu-unreadable" not in rig.log_text()
    assert "GI 3 (2g.20gb): pid 20915 python train.py" in rig.log_text()
    (rig.gpu_state / "processes.txt").write_text(PROCESSES_NONE)
    dog.run(max_ticks=15 * 12)
    assert dog.done and rig.names() == ["sync", "shutdown"]
    assert "idle-shutdown: GPU utilization below 5% (or unreadable) for 10.0 min" in rig.log_text()
