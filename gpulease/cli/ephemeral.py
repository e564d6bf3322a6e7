"""``gpulease ephemeral``: short-lived training stacks for CI (run, up, down, ls, gc), on the Automation API."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpulease.cli import ephemeral_collect
from gpulease.cli.conventions import error_entry, one_line, print_json
from gpulease.cli.output_file import refuse_input_folder
from gpulease.cli.stack_arg import CI_ACCEPTED, stack_type
from gpulease.core import clock
from gpulease.core.errors import UserError
from gpulease.core.flag_numbers import number
from gpulease.core.printable import printable
from gpulease.ephemeral import artifact_bounds, gc, naming, orchestrator, preflight, rendering
from gpulease.ephemeral.backend import AutomationBackend, OutputsUnreadableError, StackBackend
from gpulease.ephemeral.channel import InstanceChannel, open_channel
from gpulease.ephemeral.config import DEFAULT_MAX_HOURS, EphemeralConfig, build_config
from gpulease.ephemeral.progress import make_progress, print_summary
from gpulease.ephemeral.teardown import collect_hint
from gpulease.review.stacks import PROJECT_ROOT as PROJECT_DIR


class EphemeralUsageError(UserError):
    pass


# Seams for tests: the backend and the channel are built here, so a test can hand in stand-ins.
def default_backend(args: argparse.Namespace) -> StackBackend:
    return AutomationBackend(secrets_provider=getattr(args, "secrets_provider", None))


def default_channel(cfg: EphemeralConfig) -> InstanceChannel:
    return open_channel(cfg.spec.cloud, cfg.region)


BACKEND_FACTORY: Callable[[argparse.Namespace], StackBackend] = default_backend
CHANNEL_FACTORY: Callable[[EphemeralConfig], InstanceChannel] = default_channel
CREDENTIALS_CHECK: Callable[[str, str], str] = preflight.check_credentials
COST_ESTIMATOR: Callable[[EphemeralConfig], dict[str, float | None] | None] = rendering.rendered_cost
RENDER_CHECK: Callable[[EphemeralConfig], None] = rendering.render_check

GRACE_MINUTES = number("a number of minutes", 0, 7 * 24 * 60, example="60")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ephemeral",
        help="short-lived training stacks for CI: create, train, collect, always tear down",
        description="Ephemeral stacks are named ci-<run id>-<short sha>, tagged with the CI run, capped to a short "
        "deadline, and are destroyed however the run ends; a checkpoint bucket whose artifacts were not all "
        "collected is kept with its stack (ephemeral collect downloads them, ephemeral down --with-buckets deletes "
        "it).",
    )
    esub = p.add_subparsers(dest="ephemeral_command", required=True, metavar="SUBCOMMAND")

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--json", action="store_true", help="print one JSON document on stdout (progress on stderr)")
        q.add_argument(
            "--secrets-provider",
            default=os.environ.get("GPULEASE_SECRETS_PROVIDER"),
            help="secrets provider for new stacks, e.g. awskms://alias/pulumi (default: $GPULEASE_SECRETS_PROVIDER)",
        )

    def creating(q: argparse.ArgumentParser) -> None:
        q.add_argument("--base-stack", required=True, type=stack_type(),
                       help="the stack in stacks/ whose config is copied")
        q.add_argument(
            "--set",
            dest="overrides",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override an experiment field by its dotted camelCase path (e.g. maxRuntimeHours=1, "
            "gpu.instanceType=g5.xlarge) or a provider key (aws:region=us-west-2); repeatable",
        )
        q.add_argument(
            "--max-hours",
            type=number("a number of hours", 0, 168, above=True, example="2"),
            default=DEFAULT_MAX_HOURS,
            help=f"cap on maxRuntimeHours, the stack's hard deadline (default {DEFAULT_MAX_HOURS:g})",
        )
        q.add_argument("--keep-data", action="store_true", help="retain the data disk and bucket on destroy")
        q.add_argument("--stack-name", type=stack_type(CI_ACCEPTED),
                       help="the ephemeral stack's name (default: ci-<run id>-<short sha>)")
        q.add_argument(
            "--ready-timeout-minutes", type=number("a number of minutes", 0, 1440, above=True, example="20"), default=20.0, help="how long to wait for the instance (default 20)"
        )

    run = esub.add_parser(
        "run",
        help="create a stack, run a training command on it, collect artifacts, always tear it down",
        usage="gpulease ephemeral run --base-stack STACK [--set KEY=VALUE ...]\n"
              "                              [options] -- COMMAND ...",
    )
    creating(run)
    common(run)
    run.add_argument("--artifacts-dir", type=Path, default=Path("artifacts"), help="where artifacts are downloaded")
    artifact_bounds.add_options(run)
    run.add_argument("training_command", nargs=argparse.REMAINDER, help="the command, after --")
    run.set_defaults(func=cmd_run)

    up = esub.add_parser("up", help="create and up an ephemeral stack, wait until the instance is ready")
    creating(up)
    common(up)
    up.add_argument("--no-wait", action="store_true", help="do not wait for the instance's ready marker")
    up.add_argument("--keep-on-failure", action="store_true", help="leave a failed stack for inspection")
    up.set_defaults(func=cmd_up)

    down = esub.add_parser("down", help="destroy an ephemeral stack but its checkpoint buckets (--with-buckets: "
                           "all of it, and remove it)")
    ci_stack = down.add_argument("stack", nargs="?", type=stack_type(CI_ACCEPTED), help="a ci-* stack name")
    ci_stack.completion_stacks = False  # type: ignore[attr-defined]  # a backend's CI stack: no stack file to offer
    down.add_argument(
        "--current-run", action="store_true", help="the stack of this CI run (from GITHUB_RUN_ID and GITHUB_SHA)"
    )
    down.add_argument("--with-buckets", action="store_true",
                      help="destroy the checkpoint buckets too, with any artifacts in them, and remove the stack "
                      "(default: kept with the stack, as gc keeps them)")
    common(down)
    down.set_defaults(func=cmd_down)
    ephemeral_collect.register(esub, common, sys.modules[__name__])

    ls = esub.add_parser("ls", help="list ephemeral stacks with their deadlines")
    ls.add_argument("--all", action="store_true", help="every stack of the project, not only ci-*")
    ls.add_argument("--grace-minutes", type=GRACE_MINUTES, default=60.0, help=argparse.SUPPRESS)
    common(ls)
    ls.set_defaults(func=cmd_ls)

    gc = esub.add_parser("gc", help="destroy ci-* stacks past their deadline (runners that died), buckets kept")
    gc.add_argument("--dry-run", action="store_true", help="only list what would be destroyed")
    gc.add_argument("--with-buckets", action="store_true",
                    help="destroy the checkpoint buckets too, with any artifacts in them (default: kept with the stack)")
    gc.add_argument(
        "--grace-minutes",
        type=GRACE_MINUTES,
        default=60.0,
        help="a stack with no deadline output (its up never finished) is collected this long after its last update",
    )
    common(gc)
    gc.set_defaults(func=cmd_gc)


def _command_text(parts: list[str]) -> str:
    if parts and parts[0] == "--":
        parts = parts[1:]
    if not parts:
        raise EphemeralUsageError("ephemeral run: give the training command after --, e.g. -- python train.py --steps 100")
    return parts[0] if len(parts) == 1 else shlex.join(parts)


def _prepare(args: argparse.Namespace) -> tuple[StackBackend, EphemeralConfig]:
    """Everything that can refuse the run, in order, before anything is created."""
    env = dict(os.environ)
    stack = naming.ephemeral_stack_name(env) if args.stack_name is None else args.stack_name
    if not naming.STACK_NAME.match(stack):
        raise EphemeralUsageError(
            f"--stack-name {stack!r}: accepted: ci- followed by lowercase letters, digits and hyphens"
        )
    cfg = build_config(
        args.base_stack,
        stack,
        overrides=args.overrides,
        max_hours=args.max_hours,
        keep_data=args.keep_data,
        ci_run=naming.ci_run_label(env, stack),
    )
    _ = cfg.region  # a stack without any region cannot be created
    if getattr(args, "artifacts_dir", None) is not None:
        reads, within = _artifact_inputs(cfg)
        refuse_input_folder(args.artifacts_dir, reads, within=within)
    RENDER_CHECK(cfg)  # a program that fails offline would fail halfway through pulumi up
    backend = BACKEND_FACTORY(args)
    backend.cli_version()
    CREDENTIALS_CHECK(cfg.spec.cloud, cfg.base_stack)
    return backend, cfg


def _artifact_inputs(cfg: EphemeralConfig | None) -> tuple[list[Path], list[Path]]:
    """What ``--artifacts-dir`` must not be, hold or lie inside: the project's Pulumi.yaml, the base stack file
    (with ``cfg``), the stack files' folder and a program folder of its own (``main:``), all read by this run."""
    from gpulease.review import stacks

    project = PROJECT_DIR
    try:
        _, stack_dir = stacks.project_info(project)
        main = stacks.project_meta(project).get("main")
    except UserError:
        stack_dir, main = project, None
    program = [project / main] if isinstance(main, str) and main.strip() and (project / main) != project else []
    program = [p.parent if p.suffix == ".py" else p for p in program]
    within = [*([stack_dir] if stack_dir.resolve() != project.resolve() else []), *program]
    base = [cfg.base_file] if cfg is not None else []
    return [project / "Pulumi.yaml", project / "Pulumi.yml", *base, stack_dir, *program], within


def _finish(args: argparse.Namespace, document: dict[str, Any], human: Callable[[Console], None]) -> int:
    if args.json:
        # The envelope; the document's own keys stay at the top level too for one release (their old place).
        code = int(document.get("exitCode", 0))
        failed = document.get("error")
        errors = [error_entry("run-failed", " ".join(str(failed).split()))] if failed else []
        print_json(f"ephemeral {args.ephemeral_command}", document, ok=code == 0 and not errors, errors=errors,
                   legacy=document)
    else:
        human(Console())
    return int(document.get("exitCode", 0))


def cmd_run(args: argparse.Namespace) -> int:
    command = _command_text(list(args.training_command))
    backend, cfg = _prepare(args)
    progress = make_progress(args.json)
    try:
        progress.note(f"ephemeral stack {cfg.stack} from {cfg.base_stack}, deadline in {cfg.experiment.max_runtime_hours:g} h")
        summary = orchestrator.EphemeralRun(backend, CHANNEL_FACTORY, progress, estimator=COST_ESTIMATOR).execute(
            cfg,
            orchestrator.RunOptions(
                command=command, artifacts_dir=args.artifacts_dir, ready_timeout_s=args.ready_timeout_minutes * 60,
                artifact_bounds=artifact_bounds.from_args(args),
            ),
        )
    finally:
        progress.close()
    return _finish(args, summary, lambda console: print_summary(summary, console))


def cmd_up(args: argparse.Namespace) -> int:
    backend, cfg = _prepare(args)
    progress = make_progress(args.json)
    try:
        result = orchestrator.bring_up(
            backend,
            None if args.no_wait else CHANNEL_FACTORY,
            progress,
            cfg,
            ready_timeout_s=args.ready_timeout_minutes * 60,
            keep_on_failure=args.keep_on_failure,
        )
    finally:
        progress.close()

    def human(console: Console) -> None:
        if result["exitCode"] == 0:
            name = escape(printable(cfg.stack))
            console.print(f"[green]{name} is up[/green]; it is destroyed at its deadline or by: "
                          f"gpulease ephemeral down {name} --with-buckets (without it, its checkpoint bucket is kept)")
            for key in ("instanceId", "instanceType", "sshCommand", "checkpointUri", "deadline"):
                if key in result["outputs"]:
                    console.print(f"  {key}: {printable(result['outputs'][key])}", markup=False)
        else:
            console.print(f"[red]{escape(printable(cfg.stack))} failed[/red]: {escape(printable(result['error']))}",
                          markup=True)

    return _finish(args, result, human)


def cmd_down(args: argparse.Namespace) -> int:
    if bool(args.stack) == bool(args.current_run):
        raise EphemeralUsageError("ephemeral down: name a stack or give --current-run (not both)")
    stack = naming.current_run_stack_name(os.environ) if args.current_run else args.stack
    if not naming.is_ephemeral(stack):
        raise EphemeralUsageError(
            f"ephemeral down: {stack!r} is not an ephemeral stack (ci-*); it is left alone. Use pulumi destroy."
        )
    backend = BACKEND_FACTORY(args)
    backend.cli_version()
    progress = make_progress(args.json)
    try:
        result = orchestrator.take_down(backend, progress, stack, with_buckets=args.with_buckets)
    except OutputsUnreadableError as exc:
        return unreadable_outputs(args, stack, exc, "nothing was destroyed (its outputs name the buckets to keep); "
                                  f"`gpulease ephemeral down {stack} --with-buckets` destroys all of it")
    finally:
        progress.close()
    return _finish(args, result, lambda console: console.print(_teardown_line(result)))


def unreadable_outputs(args: argparse.Namespace, stack: str, exc: OutputsUnreadableError, then: str) -> int:
    """A stack whose outputs cannot be read: one line on stderr (the document too with ``--json``), exit 3."""
    line = one_line(f"ephemeral {args.ephemeral_command} {stack}: {exc}; {then}")
    if args.json:
        _finish(args, {"stack": stack, "exitCode": orchestrator.EXIT_INCOMPLETE, "error": line}, lambda c: None)
    print(f"gpulease: {line}", file=sys.stderr)
    return orchestrator.EXIT_INCOMPLETE


def _teardown_line(result: dict[str, Any]) -> str:
    """The line for the console (rich markup): the stack's name and the error escaped, never raw."""
    t = result["teardown"]
    if t["removed"]:
        return escape(f"{printable(result['stack'])}: destroyed and removed")
    if t.get("destroyed") and t.get("keptBuckets"):
        return escape(f"{printable(result['stack'])}: destroyed but bucket {printable(', '.join(t['keptBuckets']))}, "
                      f"kept with the stack: {printable(collect_hint(result['stack']))}")
    return escape(f"{printable(result['stack'])}: NOT torn down: {printable(t['error'])}")


def cmd_ls(args: argparse.Namespace) -> int:
    backend = BACKEND_FACTORY(args)
    backend.cli_version()
    statuses = gc.list_ephemeral(
        backend, clock.utcnow(), timedelta(minutes=args.grace_minutes), include_all=args.all
    )
    document = {"exitCode": 0, "stacks": [s.as_dict() for s in statuses]}

    def human(console: Console) -> None:
        table = Table(title="ephemeral stacks")
        for column in ("stack", "last update", "resources", "deadline", "buckets kept by gc/down", "state"):
            table.add_column(column)
        for s in document["stacks"]:
            state = "EXPIRED" if s["expired"] else s["reason"]
            if s["outputsUnreadable"]:
                state = f"{state}: {s['outputsUnreadable']}"
            table.add_row(s["stack"], s["lastUpdate"] or "-", str(s["resourceCount"] or 0), s["deadline"] or "-",
                          escape(printable(", ".join(s["buckets"]) or "-")), escape(printable(state)))
        console.print(table)

    return _finish(args, document, human)


def cmd_gc(args: argparse.Namespace) -> int:
    backend = BACKEND_FACTORY(args)
    backend.cli_version()
    progress = make_progress(args.json)
    try:
        result = gc.collect_garbage(
            backend, progress, now=clock.utcnow(), grace=timedelta(minutes=args.grace_minutes), dry_run=args.dry_run,
            with_buckets=args.with_buckets,
        )
    finally:
        progress.close()

    def human(console: Console) -> None:
        if not result["collected"]:
            console.print(f"nothing to collect ({len(result['checked'])} ephemeral stacks checked)")
        for item in result["collected"]:
            if item.get("dryRun"):
                but = f" but bucket {', '.join(item['keptBuckets'])}" if item.get("keptBuckets") else ""
                console.print(f"would destroy {printable(item['stack'])}{printable(but)}", markup=False)
            else:
                console.print(_teardown_line(item))

    return _finish(args, result, human)
