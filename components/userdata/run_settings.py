"""The run part of the settings: the verification, the job and the budget thresholds the instance reads, and the
systemd unit that runs ``instance/run_job.py`` after the bootstrap (only when a verification or a job is declared).

The budget itself and the instance's worst-case hourly price are NOT settings: the watchdog reads them from the
instance's tags (``gpulease:budget-usd``, ``gpulease:max-hourly-usd``), so that a new budget or a price refresh
updates a tag in place instead of the user-data (which replaces an AWS instance)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from components.spec.experiment import ExperimentSpec

RUN_UNIT = "gpulease-run.service"


class VerifySettings(BaseModel):
    """``verify`` as ``instance/verify.py`` reads it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str
    steps: int | None = None
    max_minutes: int
    resume_command: str | None = None
    min_free_gpu_memory_percent: float | None = None


class JobSettings(BaseModel):
    """``job`` as ``instance/run_job.py`` reads it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str
    params_file: str | None = None
    session: str = "train"


def run_fields(spec: ExperimentSpec) -> dict[str, object]:
    """The settings fields of the run sections, from the experiment's spec. The preparation phase's CPU instance
    runs neither the verification nor the training job (both need the GPU instance of the train phase)."""
    training = getattr(spec, "phase", "train") == "train"
    verify, job = (spec.verify, spec.job) if training else (None, None)
    return {
        "verify": VerifySettings(**verify.model_dump()) if verify else None,
        "job": JobSettings(**job.model_dump()) if job else None,
        "budget_thresholds": list(spec.budget_alerts.thresholds),
        "image_family": spec.image_family,
    }


# Wants= and After= the bootstrap, not Requires=: with Requires=, a bootstrap that fails (NOT READY) or is killed
# at its timeout keeps systemd from starting this unit at all (systemd.unit(5): "If one of the other units fails to
# activate, and an ordering dependency After= on the failing unit is set, this unit will not be started"), and
# nothing says why. Started after it whatever it reported, run_job.py reads the bootstrap's ready.json for this boot
# and says "NOT STARTED: ..." when it is not ready. The start timeout covers the verification, the tmux install and
# the job's start (instance/bounds.py: run_unit).
RUN_UNIT_TEXT = """[Unit]
Description=gpulease run: the verification, then the job in its tmux session, after the bootstrap
Wants=network-online.target {setup_unit}
After=network-online.target {setup_unit}

[Service]
Type=oneshot
RemainAfterExit=yes
{fetch}ExecStart=/usr/bin/python3 {install_dir}/run_job.py
StandardOutput=journal+console
TimeoutStartSec={timeout}

[Install]
WantedBy=multi-user.target
"""
