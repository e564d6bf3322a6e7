"""``gpulease init``: a stack file from a few answers (asked when stdin is a terminal, else from flags), the GPU
sized from the model and the method, written with a comment on every field, valid by construction, and reviewed
at once (``gpulease/lifecycle``)."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from gpulease.cli.envelope import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    add_parser,
    envelope,
    error,
    guarded,
    one_line,
    print_json,
)
from gpulease.cli.output_file import OutputPathError, os_reason, refuse_hidden, refuse_inputs
from gpulease.cli.prompt import ask
from gpulease.core.errors import UserError
from gpulease.core.printable import printable
from gpulease.lifecycle.answer_numbers import BUDGET, HOURS, MAX_HOURS

T = TypeVar("T")
ASK: Callable[[str], str] = ask
"""How a missing answer is asked for on a terminal (a test replaces it)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_parser(
        sub, "init", help="write a stack file from a few answers: model and method -> the GPU that fits; reviewed at once",
        description="Write stacks/Pulumi.NAME.yaml from a few answers (asked on a terminal, else from the flags), "
        "with a comment on every field; the GPU is the cheapest catalog type that holds the model with the method. "
        "The file is validated before it is written, never written over without --force, and reviewed at once "
        "(the same review as `gpulease plan`).",
        codes=((EXIT_OK, "written; the review passes"),
               (EXIT_FAILED, "written; the review found a mandatory violation or could not finish (see its lines)")))
    p.add_argument("--name", help="the stack and experiment name, e.g. llama8b-lora")
    p.add_argument("--owner", help="your e-mail: every resource is tagged with it")
    p.add_argument("--params", help="model size: a preset (1B 3B 7B 8B 13B 14B 32B 34B 70B 405B) or a count, e.g. 8e9")
    p.add_argument("--method", help="full, lora or qlora (default lora)")
    cloud = p.add_argument("--cloud", help="aws or alicloud (default aws)")
    cloud.completion_choices = ("aws", "alicloud")  # type: ignore[attr-defined]  (TAB offers them, not files)
    p.add_argument("--region", help="default us-east-1 (aws) / cn-hangzhou (alicloud)")
    p.add_argument("--ssh-from", action="append", default=[], metavar="CIDR",
                   help="an address SSH is opened to, e.g. 203.0.113.7/32 (repeatable)")
    p.add_argument("--no-port", action="store_true",
                   help="no inbound port: Session Manager (aws, ssm) or Cloud Assistant (alicloud)")
    p.add_argument("--public-key", metavar="FILE", help="the OpenSSH public key (default ~/.ssh/id_ed25519.pub on "
                   "aws, ~/.ssh/id_rsa.pub on alicloud: Alibaba Cloud's ECS imports no ed25519 key)")
    p.add_argument("--key-name", help="an existing key pair instead of --public-key")
    p.add_argument("--budget", type=BUDGET, help="the experiment's budget in USD, e.g. 60 (ASCII digits)")
    p.add_argument("--source", action="append", default=[], metavar="URI[:/data/FOLDER]",
                   help="data staged before the instance is ready: hf://org/repo, s3://bucket/prefix/, ... (repeatable)")
    p.add_argument("--market", choices=("spot", "on-demand"), help="spot (default) or on-demand")
    p.add_argument("--on-demand-reason", metavar="TEXT",
                   help="with --market on-demand: why it cannot run on spot (onDemandReason, which the pack needs)")
    p.add_argument("--checkpoint-process", metavar="NAME",
                   help="spot: the training script sent SIGUSR1 to save before a reclaim or the deadline "
                   "(checkpoints.signal and process; default train.py)")
    p.add_argument("--no-checkpoint-signal", action="store_true",
                   help="spot: no signal (the last checkpoint the job wrote is synced; the review says so)")
    p.add_argument("--hours", type=HOURS, help=f"maxRuntimeHours, the hard deadline, above 0 and at most {MAX_HOURS:g} "
                   "(default 8; asked on a terminal)")
    p.add_argument("--project", help="the project tag (default: the name)")
    p.add_argument("--cost-center", default="unassigned", help="the cost-center tag (default unassigned)")
    p.add_argument("--output", metavar="FILE", help="write here instead of stacks/Pulumi.NAME.yaml")
    p.add_argument("--force", action="store_true",
                   help="replace an existing gpulease stack file (never another program's file or project)")
    p.add_argument("--no-review", action="store_true", help="write only; `gpulease plan NAME` reviews it later")
    p.set_defaults(func=guarded(cmd_init))


TRIES = 3
"""A refused answer on a terminal is asked again, this many times in all; then the command ends (exit 2)."""


def _get(given: object, question: str, check: Callable[[str], T], *, default: str | None = None,
         missing: tuple[str, str] | None = None) -> T:
    """A flag's value (``given``), checked; else, on a terminal, the answer to ``question`` (asked again after a
    refused answer, ``TRIES`` times in all); else ``default``, or the one line naming the missing flag."""
    from gpulease.lifecycle.answers import AnswerError

    if given is not None:
        return check(given)  # type: ignore[arg-type]
    if not sys.stdin.isatty():
        if default is None and missing is not None:
            flag, what = missing
            raise AnswerError(f"{flag} is missing: {what} (stdin is not a terminal, so nothing is asked)")
        return check(default or "")
    shown = f" [{default}]" if default else ""
    for attempt in range(1, TRIES + 1):
        typed = ASK(f"{question}{shown}: ").strip()
        try:
            return check(typed or default or "")
        except AnswerError as exc:
            if attempt == TRIES:
                raise AnswerError(f"{exc} ({TRIES} answers refused; nothing was written)") from None
            left = TRIES - attempt
            sys.stderr.write(f"  {exc}; asked again ({left} {'try' if left == 1 else 'tries'} left)\n")
    raise AssertionError("unreachable")


def output_stack(output: str | None) -> str | None:
    """The stack an ``--output`` file is to ``plan``, ``up`` and ``pulumi`` (``Pulumi.zz.yaml``: ``zz``), or None
    for a file not named ``Pulumi.<stack>.yaml`` (or ``.yml``)."""
    from gpulease.review import stacks

    name = Path(output).name if output else ""
    if name in stacks.PROJECT_FILES or not name.startswith("Pulumi.") or not name.endswith((".yaml", ".yml")):
        return None
    return stacks.stack_name(Path(name)) or None


def gather(args: argparse.Namespace) -> object:
    from gpulease.lifecycle import answers as a

    cloud = _get(args.cloud, "cloud (aws, alicloud)", a.check_cloud, default="aws")
    params = _get(args.params, "model size (e.g. 8B)", lambda p: a.check_workload(p, "lora")[0],
                  missing=("--params", "the model size, e.g. 8B"))
    method = _get(args.method, "method (full, lora, qlora)", lambda m: a.check_workload(params, m)[1],
                  default="lora")
    region = _get(args.region, "region", lambda r: a.check_region(cloud, r), default=a.DEFAULT_REGION[cloud])
    from_output = output_stack(args.output)
    usual = f"exp-{params.lower()}-{method}"
    name = _get(args.name, "stack name", a.check_name,
                default=from_output if from_output and a.NAME.match(from_output) else usual)
    owner = _get(args.owner, "your e-mail (tags every resource)", a.check_owner,
                 missing=("--owner", "your e-mail"))
    budget = _get(args.budget, "budget in USD", a.check_budget, missing=("--budget", "the budget in USD"))
    hours = _get(args.hours, "hours until the hard deadline (maxRuntimeHours)", lambda h: a.check_hours(h, cloud),
                 default=f"{a.DEFAULT_HOURS:g}")
    market = _get(args.market, "market (spot, on-demand)", a.check_market, default="spot")
    reason = process = None
    if market == "on-demand":
        if args.checkpoint_process is not None or args.no_checkpoint_signal:
            raise a.AnswerError("--checkpoint-process and --no-checkpoint-signal are for --market spot (the signal "
                                "answers a spot notice); accepted: leave them out on on-demand")
        reason = _get(args.on_demand_reason, "why it cannot run on spot (a sentence the review shows)",
                      a.check_reason, missing=("--on-demand-reason", "why it cannot run on spot (--market "
                                               "on-demand), e.g. 'interactive debugging - cannot be interrupted'"))
    else:
        if args.on_demand_reason is not None:
            raise a.AnswerError("--on-demand-reason is only for --market on-demand; accepted: leave it out on spot")
        process = None if args.no_checkpoint_signal else _get(
            args.checkpoint_process, f"training script sent SIG{a.DEFAULT_CHECKPOINT_SIGNAL} to save before a spot "
            f"reclaim ({a.NO_ANSWER}: not signalled)", a.check_process, default=a.DEFAULT_CHECKPOINT_PROCESS)
    ssh_from, no_port = list(args.ssh_from), bool(args.no_port)
    if ssh_from and no_port:
        raise a.AnswerError("--ssh-from and --no-port exclude each other; accepted: one of them")
    if not ssh_from and not no_port:
        if not sys.stdin.isatty():
            raise a.AnswerError("--ssh-from CIDR or --no-port is missing: how you reach the instance (stdin is not a "
                                "terminal, so nothing is asked)")
        given = _get(None, "SSH from which address (CIDR; empty: no inbound port)",
                     lambda c: a.check_cidr(c) if c else "", default="")
        ssh_from, no_port = ([given], False) if given else ([], True)
    cidrs = [a.check_cidr(c) for c in ssh_from]
    public_key = key_name = None
    if args.key_name is not None and not args.key_name.strip():
        raise a.AnswerError("--key-name '': an empty key pair name; accepted: the name of a key pair in the "
                            f"region, or leave --key-name out for --public-key (default {a.DEFAULT_PUBLIC_KEY[cloud]})")
    if args.public_key is not None and not args.public_key.strip():  # never the default key file in its place
        raise a.AnswerError("--public-key '': an empty file name; accepted: an OpenSSH public key file, or leave "
                            f"--public-key out for the default ({a.DEFAULT_PUBLIC_KEY[cloud]})")
    if not no_port:
        if args.key_name:
            key_name = args.key_name
        else:
            public_key = a.read_public_key(args.public_key or a.DEFAULT_PUBLIC_KEY[cloud], cloud)
    if from_output is not None and name != from_output:
        out = Path(args.output)
        suffix = out.name.rsplit(".", 1)[1]
        other = f", or --name {from_output}" if a.NAME.match(from_output) else ""
        raise a.AnswerError(f"--output {printable(args.output)} is the stack {from_output!r} to plan, up and pulumi "
                            f"(Pulumi.<stack>.{suffix}), but --name is {name!r}; accepted: --output "
                            f"{shlex.quote(printable(str(out.with_name(f'Pulumi.{name}.{suffix}'))))}{other}")
    return a.Answers(name=name, owner=owner, cloud=cloud, region=region, params=params, method=method,
                     budget_usd=budget, ssh_from=cidrs, no_port=no_port, public_key=public_key, key_name=key_name,
                     sources=[a.parse_source(s) for s in args.source], market=market, on_demand_reason=reason,
                     checkpoint_process=process, hours=hours, project=args.project,
                     cost_center=args.cost_center)


def init_inputs(args: argparse.Namespace, found: object, path: Path) -> list[Path]:
    """The files ``init`` reads: the public key, the catalog override files, the project file beside the stack
    file (and above a ``stacks/`` folder): never the stack file it writes."""
    from gpulease.core.catalog.loader import override_paths

    reads = [*override_paths()]
    if getattr(found, "public_key", None) is not None:
        from gpulease.lifecycle.answers import DEFAULT_PUBLIC_KEY

        reads.append(Path(args.public_key or DEFAULT_PUBLIC_KEY[getattr(found, "cloud", "aws")]).expanduser())
    folder = path.parent if str(path.parent) else Path(".")
    for candidate in (folder, folder.parent):
        reads += [candidate / "Pulumi.yaml", candidate / "Pulumi.yml"]
    return reads


def cmd_init(args: argparse.Namespace) -> int:
    from gpulease.cli.init_next import next_line, plan_command, plan_words, stack_target
    from gpulease.cli.wrap import say
    from gpulease.lifecycle import answers as a
    from gpulease.lifecycle import stackfile, verdict
    from gpulease.lifecycle.advice import config_advisories, lines
    from gpulease.review import stacks

    found = gather(args)
    assert isinstance(found, a.Answers)
    offers = a.gpu_offers(found)
    if not offers:
        raise a.AnswerError(f"--params {found.params} --method {found.method}: no {found.cloud} instance type in "
                            f"{found.region} holds it; accepted: --method lora or qlora, a smaller model, or another "
                            "region (`gpulease size` lists what fits)")
    best = offers[0]
    path = stackfile.target_path(found, args.output)
    option = "--output" if args.output else "the stack file"
    refuse_hidden(Path(path), option, "a file name that reads as itself, e.g. stacks/Pulumi.NAME.yaml")
    try:
        refuse_inputs(path, init_inputs(args, found, path), option=option,
                      accepted="a new stack file, e.g. stacks/Pulumi.NAME.yaml")
        stackfile.write(stackfile.render(found, best.instance.type), path, found.name, force=args.force)
    except OSError as exc:  # a name or path the system refuses (too long), a folder that takes no new file
        raise OutputPathError(f"{option} {printable(str(path))}: the system refuses to create it: {os_reason(exc)}; "
                              "nothing was written; accepted: a shorter name in a folder that takes new files, "
                              "e.g. stacks/Pulumi.NAME.yaml") from None
    if (target := stack_target(path, found.name)) not in (None, found.name):  # the bare name finds another file
        stackfile.replace_text(path, stackfile.render(found, best.instance.type, target=target), found.name)
    data: dict[str, object] = {
        "stack": found.name, "path": str(path), "cloud": found.cloud, "region": found.region,
        "instanceType": best.instance.type, "gpu": f"{best.instance.gpu_count} x {best.instance.gpu_model} "
        f"{best.instance.gpu_memory_gb:g} GB", "neededPerGpuGb": round(best.estimate.total_gb, 1),
        "sshMode": found.ssh_mode, "review": None,
    }
    code = EXIT_OK
    result = None
    if not args.no_review:
        try:
            result = verdict.REVIEW(Path(path), found.name)
        except UserError as exc:  # written and valid; the review could not run where it was written
            result = verdict.Verdict(stack=found.name, status="error", error=one_line(str(exc)))
        data["review"] = result.as_dict()
        code = EXIT_FAILED if result.blocks else EXIT_OK
    advice = config_advisories(found.name, stacks.load_stack_config(Path(path)))
    data["advisories"] = advice
    if args.json:
        print_json(envelope("init", data, [] if code == EXIT_OK else [
            error("review-failed", f"the review says {result.status.upper()}: `{plan_command(path, found.name)}` "
                  "shows why")]))
        return code
    say(f"wrote {printable(str(path))}: {found.params} {found.method} on {found.cloud} {found.region} -> {best.instance.type} "
        f"({data['gpu']}, about {data['neededPerGpuGb']} GB needed per GPU), {found.ssh_mode} access")
    if result is not None:
        say("\n".join(result.lines(plan_words(path, found.name))))
    for line in lines(advice):
        say(line)
    say(next_line(path, found, blocked=result is not None and result.blocks))
    return code


__all__ = ["EXIT_BAD_INPUT", "register"]
