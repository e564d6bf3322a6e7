"""The run sections of an experiment spec: the verification before the long run (``verify``), the job the instance
starts in a tmux session (``job``) and the budget's alerts (``budgetAlerts``); plus ``run_problems``, their checks
against the rest of the experiment (called from ``ExperimentSpec``'s cross-field check).

The instance side reads them from the settings (``components/userdata/settings.py``) and runs them with
``instance/run_job.py`` and ``instance/verify.py``; the AWS budget is ``components/aws/budget.py``."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import Field, field_validator

from components.spec.sections import PATH_MAX_LENGTH
from components.spec.text import COMMAND_SCHEMA, PATH_SCHEMA, plain_command, plain_path
from components.spec_rules import Problem
from gpulease.core import vocabulary as v
from gpulease.core.model import SpecModel
from gpulease.core.schema_pattern import schema_pattern

if TYPE_CHECKING:
    from components.spec.experiment import ExperimentSpec

# tmux refuses "." and ":" in a session name (they separate window and pane in a target); kept to a short, plain
# name so that `tmux attach -t <name>` needs no quoting.
SESSION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")  # also the JSON schema's pattern: fullmatch here
# AWS Budgets: "A budget can have up to ten notifications" and a notification "up to 10 email subscribers"
# (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_Notification.html,
# .../API_budgets_NotificationWithSubscribers.html). Each threshold is notified twice (actual and forecast).
MAX_ALERT_EMAILS = 10
MAX_THRESHOLDS = 5
DEFAULT_THRESHOLDS = (50.0, 80.0, 100.0)
VERIFY_MAX_MINUTES = 240
COMMAND_MAX_LENGTH = 512
"""The run commands travel in user-data beside the hooks (see components/userdata): a longer command belongs in a
script under /data."""
BOOT_MINUTES = 10
"""The time a verification can count on losing before it starts (boot, disk, readiness), as the runtime check does."""


class VerifySpec(SpecModel):
    """A short run before the long one: the GPU is used, a batch fits with memory to spare, and (with
    ``resumeCommand``) training resumes from a checkpoint instead of starting over."""

    command: str = Field(
        ...,
        min_length=1,
        max_length=COMMAND_MAX_LENGTH, json_schema_extra=COMMAND_SCHEMA,
        description="A short run of the training (a few steps), run as the login user in /data after readiness; "
        "it reads GPULEASE_VERIFY_STEPS and GPULEASE_CHECKPOINT_DIR from its environment.",
    )
    steps: int | None = Field(
        None, ge=1, le=1_000_000, description="How many steps the short run should take (GPULEASE_VERIFY_STEPS)."
    )
    max_minutes: int = Field(
        ..., ge=1, le=VERIFY_MAX_MINUTES, description="The whole verification (both runs) is stopped after this long."
    )
    resume_command: str | None = Field(
        None,
        max_length=COMMAND_MAX_LENGTH, json_schema_extra=COMMAND_SCHEMA,
        description="Started after the first run is killed at its first checkpoint; it must print "
        "GPULEASE_RESUMED_STEP=<n> (or write n to $GPULEASE_RESUME_STEP_FILE) with the step it resumed at.",
    )
    min_free_gpu_memory_percent: float | None = Field(
        None, ge=0, lt=100, description="Fail when the peak GPU memory leaves less than this share free."
    )

    @field_validator("command", "resume_command")
    @classmethod
    def _commands(cls, command: str | None) -> str | None:
        # An empty resumeCommand would turn the resume check off without a word: the check is off only when the
        # field is omitted.
        return plain_command(command)


class JobSpec(SpecModel):
    """The training job the instance starts after readiness (and after ``verify`` passed), in a tmux session."""

    command: str = Field(
        ..., min_length=1, max_length=COMMAND_MAX_LENGTH, json_schema_extra=COMMAND_SCHEMA,
        description="Run with bash -lc as the login user in /data, inside the tmux session.",
    )
    params_file: str | None = Field(
        None,
        max_length=PATH_MAX_LENGTH, json_schema_extra={"minLength": 1, "allOf": [
            PATH_SCHEMA, {"not": {"type": "string", "pattern": r"(^|/)\.{1,2}(/|(?![\s\S]))"}}]},
        description="Hyperparameters / seed file recorded in the run manifest: a path under /data (absolute, or "
        "relative to /data).",
    )
    session: str = Field("train", description="The tmux session's name (gpulease ssh attaches to it).",
                         json_schema_extra={"pattern": schema_pattern(SESSION_NAME)})

    @field_validator("command")
    @classmethod
    def _command(cls, command: str) -> str | None:
        return plain_command(command)

    @field_validator("session")
    @classmethod
    def _session(cls, name: str) -> str:
        if not SESSION_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a tmux session name; accepted: 1-32 letters, digits, _ and -")
        return name

    @field_validator("params_file")
    @classmethod
    def _params_file(cls, path: str | None) -> str | None:
        if path is None:
            return None
        plain_path(path, "file path")
        parts = path.split("/")
        inside = parts[2:] if path.startswith("/") else parts
        if (".." in parts or "." in parts or path.endswith("/") or (path.startswith("/") and parts[1] != "data")
                or not [p for p in inside if p]):
            raise ValueError(f"{path!r} is not a file under /data; accepted: a file under /data (not a folder, no . "
                             "or ..), e.g. /data/code/params.yaml or code/params.yaml")
        return path


class BudgetAlertsSpec(SpecModel):
    """Who hears about the budget, and when: e-mails at each threshold (a percentage of ``budgetUsd``), for the
    actual spend and for the forecast."""

    emails: list[str] | None = Field(
        None, description="Who is notified (at most 10); the owner when omitted.",
        json_schema_extra={"minItems": 1, "maxItems": MAX_ALERT_EMAILS, "uniqueItems": True,
                           "items": {"type": "string", "pattern": schema_pattern(v.EMAIL)}},
    )
    thresholds: list[float] = Field(
        default_factory=lambda: list(DEFAULT_THRESHOLDS),
        description="Percentages of budgetUsd (at most 5, each in (0, 1000]); each is notified for the actual "
        "spend and for the forecast.", json_schema_extra={
            "minItems": 1, "maxItems": MAX_THRESHOLDS, "uniqueItems": True,
            "items": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000}},
    )

    @field_validator("emails")
    @classmethod
    def _emails(cls, emails: list[str] | None) -> list[str] | None:
        if emails is None:
            return None
        if not 1 <= len(emails) <= MAX_ALERT_EMAILS:
            raise ValueError(f"lists {len(emails)} addresses; accepted: 1-{MAX_ALERT_EMAILS} (AWS Budgets' limit per "
                             "notification), or omit it to notify the owner")
        for address in emails:
            if not v.EMAIL.match(address):
                raise ValueError(f"{address!r} is not an email address; accepted: e.g. alice@example.com")
        seen: set[str] = set()
        for address in emails:
            if address.lower() in seen:  # mail domains and, in practice, mailboxes ignore case
                raise ValueError(f"lists {address!r} twice; accepted: each address once")
            seen.add(address.lower())
        return emails

    @field_validator("thresholds")
    @classmethod
    def _thresholds(cls, thresholds: list[float]) -> list[float]:
        if not 1 <= len(thresholds) <= MAX_THRESHOLDS:
            raise ValueError(f"lists {len(thresholds)} thresholds; accepted: 1-{MAX_THRESHOLDS} (each is two of the "
                             "ten notifications AWS Budgets allows per budget: actual and forecast)")
        for value in thresholds:
            if not 0 < value <= 1000:
                raise ValueError(f"{value:g} is not a percentage of the budget; accepted: (0, 1000], e.g. 80")
        if len(set(thresholds)) != len(thresholds):
            raise ValueError("lists a threshold twice; accepted: each percentage once")
        return sorted(thresholds)


def run_problems(spec: ExperimentSpec, runtime_ok: bool = True) -> list[Problem]:
    """What the run sections ask that the rest of the experiment cannot give (a ``maxRuntimeHours`` already
    refused is not blamed on ``verify.maxMinutes`` too)."""
    problems: list[Problem] = []
    verify = spec.verify
    if verify is not None and runtime_ok:
        left = spec.max_runtime_hours * 60 - spec.watchdog.final_sync_minutes - BOOT_MINUTES
        if verify.max_minutes >= left:
            problems.append(("verify.maxMinutes", f"{verify.max_minutes} min leaves no time for the run itself before "
                             f"the deadline ({spec.max_runtime_hours:g} h, less {BOOT_MINUTES} min of boot and the "
                             f"final sync); accepted: less than {max(int(left), 0)} min here"))
    return problems
