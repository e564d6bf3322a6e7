"""The idle rule's "only after the setup" gate holds however late the instance id is read, and a progress record
with numbers no state file holds (a 401-digit integer, 1e999) never stops a tick: idle is still judged (from the
bootstrap's own bound) and the periodic checkpoint sync still runs. A rule that raises does not stop the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from instance import budget_rule
from instance import instance_state as st
from tests.support.instance import DEADLINE_EPOCH, MetadataServer, MetadataState, make_rig, run_in_process, set_gpus

FAR = DEADLINE_EPOCH - 10 * 3600
BOOT_KEY = f"btime-{FAR:.0f}"
HUGE = "1" + "0" * 400


def _rig(tmp_path: Path, url: str, **overrides: object):
    rig = make_rig(tmp_path, metadata_url=url, **{"boot_time": FAR, "idle_minutes": 30, "idle_after_setup": True,
                                                 "poll_seconds": 60, "market": "on-demand", **overrides})
    set_gpus(rig.gpu_state, util=0)
    proc = Path(rig.settings["proc_root"]) / "4242"
    proc.mkdir(parents=True, exist_ok=True)
    (proc / "cmdline").write_bytes(b"python3\0/opt/gpulease/instance_setup.py\0")
    return rig


def test_an_id_read_late_does_not_let_a_running_bootstrap_be_shut_down_as_idle(tmp_path: Path) -> None:
    state = MetadataState()
    state.instance_id = ""  # unreadable when the watchdog starts
    with MetadataServer(state) as server:
        rig = _rig(tmp_path, server.url, instance_id_file=str(tmp_path / "no-such-id"))
        st.mark_progress(rig.settings["state_dir"], BOOT_KEY, "bootstrap_started", FAR, bootstrap_pid=4242)
        dog, _ = run_in_process(rig, start=FAR, max_ticks=2)
        state.instance_id = "i-0123456789abcdef0"
        dog.run(max_ticks=45)  # 45 min of bootstrap at 0 % GPU, the id readable after the first minutes
        assert dog.claim.instance_id == "i-0123456789abcdef0"
        assert not dog.done and "shutdown" not in rig.names()
        assert "setup-running: the bootstrap or the verification is still running" in rig.log_text()


def test_the_gate_reads_the_boot_record_without_an_id(tmp_path: Path) -> None:
    assert hasattr(st, "setup_gate")
    done, seen = st.setup_gate({"idle_after_setup": True, "state_dir": str(tmp_path)}, lambda: BOOT_KEY)
    assert done is not None and seen is not None and not done() and seen() == {}
    st.mark_progress(str(tmp_path), BOOT_KEY, "bootstrap", FAR)
    assert done() and seen() == {"boot": BOOT_KEY, "bootstrap": FAR}
    assert st.setup_gate({"idle_after_setup": False, "state_dir": str(tmp_path)}, lambda: BOOT_KEY) == (None, None)


@pytest.mark.parametrize("literal", [HUGE, "1e999", "-1e999", "NaN", "Infinity", "1" * 101])
def test_a_state_file_number_no_state_holds_is_kept_as_text_and_read_as_unknown(tmp_path: Path, literal: str) -> None:
    # The rest of the record is kept (nothing lost); the field itself is text, which no reader takes for a time.
    path = tmp_path / "boot-progress.json"
    path.write_text('{"boot": "b", "bootstrap_started": ' + literal + ', "bootstrap_pid": 4242}')
    record = st.read_state_file(str(path))
    assert record == {"boot": "b", "bootstrap_started": literal, "bootstrap_pid": 4242}
    assert st.number(record["bootstrap_started"]) is None


def test_numbers_read_overflow_safe() -> None:
    assert st.number(10 ** 400) is None and st.number(5) == 5.0
    assert budget_rule.warned_from_state({"budget_warned": [10 ** 400, 50, True, "x"]}) == [50.0]


def _progress(rig, value: str) -> None:
    sd = Path(rig.settings["state_dir"])
    sd.mkdir(parents=True, exist_ok=True)
    (sd / "boot-progress.json").write_text(
        f'{{"boot": "{BOOT_KEY}", "bootstrap_started": {value}, "bootstrap_pid": 4242}}')


@pytest.mark.parametrize("value", [HUGE, "1e999"])
def test_a_huge_progress_number_neither_fails_ticks_nor_stops_the_sync(tmp_path: Path, value: str) -> None:
    with MetadataServer(MetadataState()) as server:
        rig = _rig(tmp_path, server.url, checkpoint_interval_minutes=5)
        dog, _ = run_in_process(rig, start=FAR, max_ticks=1)  # the watchdog claims the state folder first
        _progress(rig, value)
        dog.run(max_ticks=25)
        text = rig.log_text()
    assert "tick failed" not in text and "rule failed" not in text and "Traceback" not in text
    assert text.count("periodic sync started") >= 2  # every 5 min, whatever the progress record holds
    assert "setup-running" in text  # the record is read as none: the bootstrap's own bound from the boot holds


def test_a_rule_that_raises_does_not_stop_the_sync(tmp_path: Path) -> None:
    with MetadataServer(MetadataState()) as server:
        rig = _rig(tmp_path, server.url, checkpoint_interval_minutes=5, idle_after_setup=False)
        dog, _ = run_in_process(rig, start=FAR, max_ticks=1)

        def broken(mono: float) -> bool:
            raise OverflowError("int too large to convert to float")

        dog.check_idle = broken  # type: ignore[method-assign]
        dog.run(max_ticks=20)
        text = rig.log_text()
    assert "idle rule failed: OverflowError: int too large to convert to float" in text
    assert "tick failed" not in text
    assert text.count("periodic sync started") >= 2
