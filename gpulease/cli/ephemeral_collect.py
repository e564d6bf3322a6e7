"""``gpulease ephemeral collect STACK --artifacts-dir DIR``: download the job's artifacts of a stack kept with its
checkpoint bucket (a run that did not collect them all, ``ephemeral gc``, ``ephemeral down``), exactly as
``ephemeral run`` collects them: the stack's outputs, read through the backend, say where they are
(``<checkpointUri>_gpulease/jobs/<stack>/artifacts/``); the same channel code writes them (the same bounds, confined
to the folder, never replacing a file). Nothing is destroyed: once everything is collected,
``ephemeral down STACK --with-buckets`` deletes the bucket with the stack."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from components.spec.clouds import SPEC_RULES
from gpulease.cli.stack_arg import CI_ACCEPTED, stack_type
from gpulease.core.errors import UserError
from gpulease.core.printable import printable
from gpulease.ephemeral import artifact_bounds, naming
from gpulease.ephemeral.backend import OutputsUnreadableError, StackMissingError
from gpulease.ephemeral.channel import ChannelError, InstanceChannel, location_from_outputs, open_channel
from gpulease.ephemeral.orchestrator import EXIT_INCOMPLETE, EXIT_OK, stack_buckets
from gpulease.ephemeral.progress import make_progress

# A seam for tests: the channel for a cloud and region (the stack's bucket is reached with the runner's credentials).
COLLECT_CHANNEL: Callable[[str, str], InstanceChannel] = open_channel

CLOUDS = {"s3": "aws", "oss": "alicloud"}

UNFINISHED = ("(the job's result.json is not in the bucket: the job never finished, so its artifacts are not known "
              "to be complete, and what it did not upload is lost)")


def register(esub: argparse._SubParsersAction, common: Callable[[argparse.ArgumentParser], None], host: Any) -> None:
    """``host``: the ``ephemeral`` command's module, whose backend seam, refusals and output this command shares
    (passed in, not imported: it imports this module)."""
    q = esub.add_parser(
        "collect",
        help="download the job's artifacts of a stack kept with its checkpoint bucket (as run collects them)",
        description="Reads the stack's outputs through the Pulumi backend and downloads "
        "<checkpointUri>_gpulease/jobs/<stack>/artifacts/ into --artifacts-dir, within the same bounds as "
        "ephemeral run; nothing is destroyed. Then: gpulease ephemeral down STACK --with-buckets.",
    )
    ci_stack = q.add_argument("stack", type=stack_type(CI_ACCEPTED), help="a ci-* stack name")
    ci_stack.completion_stacks = False  # type: ignore[attr-defined]  # a backend's CI stack: no stack file to offer
    q.add_argument("--artifacts-dir", type=Path, required=True, help="where artifacts are downloaded")
    q.add_argument("--region", help="the bucket's region (default: from the stack's availabilityZone output)")
    artifact_bounds.add_options(q)
    common(q)
    q.set_defaults(func=cmd_collect, ephemeral_host=host)


def bucket_region(outputs: dict[str, Any], cloud: str) -> str:
    """The region of the stack's bucket, from its instance's ``availabilityZone`` output: the longest of the cloud's
    known regions (its spec's list) that the zone's name starts with, followed by the zone's own letter or
    ``-`` part (``us-east-1a``, a Local Zone ``us-east-1-bos-1a``, ``cn-hangzhou-h``, ``ap-southeast-1b``). Without
    a zone output, AWS falls back to ``AWS_REGION`` / ``AWS_DEFAULT_REGION``; a zone of no known region needs
    ``--region``."""
    zone = str(outputs.get("availabilityZone") or "")
    if zone:
        known = [r for r in SPEC_RULES[cloud].regions
                 if zone.startswith(r) and (rest := zone[len(r):]) and (rest[0] == "-" or rest[0].isalpha())]
        if known:
            return max(known, key=len)
        raise UserError(f"ephemeral collect: the stack's availability zone {zone!r} is in no known {cloud} region "
                        "(components/<cloud>/spec.py lists them); give --region")
    if cloud == "aws" and (region := os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")):
        return region
    raise UserError("ephemeral collect: the stack's outputs name no availability zone to read a region from; "
                    "give --region")


def cmd_collect(args: argparse.Namespace) -> int:
    ephemeral = args.ephemeral_host
    stack = args.stack
    if not naming.is_ephemeral(stack):
        raise ephemeral.EphemeralUsageError(f"ephemeral collect: {stack!r} is not an ephemeral stack (ci-*)")
    reads, within = ephemeral._artifact_inputs(None)
    ephemeral.refuse_input_folder(args.artifacts_dir, reads, within=within)
    backend = ephemeral.BACKEND_FACTORY(args)
    backend.cli_version()
    try:
        outputs = backend.outputs(stack)
    except StackMissingError:
        raise UserError(f"ephemeral collect: stack {stack!r} does not exist (nothing kept to collect from)") from None
    except OutputsUnreadableError as exc:
        return int(ephemeral.unreadable_outputs(args, stack, exc, "nothing was collected (the outputs say where the "
                                                "artifacts are); read them with `pulumi stack output --json`"))
    try:
        loc = location_from_outputs(outputs)
    except ChannelError as exc:
        raise UserError(f"ephemeral collect: {stack}: {exc}") from None
    cloud = CLOUDS[loc.scheme]
    channel = COLLECT_CHANNEL(cloud, args.region or bucket_region(outputs, cloud))
    progress = make_progress(args.json)
    written: list[Path] = []
    refused: list[str] = []
    failed: list[str] = []
    try:
        with progress.step("collect artifacts") as record:
            try:
                collected = channel.download_artifacts(outputs, stack, args.artifacts_dir,
                                                       bounds=artifact_bounds.from_args(args))
                written, refused = list(collected), list(getattr(collected, "refused", []))
                failed = list(getattr(collected, "failed", []))
                if not getattr(collected, "finished", True):
                    failed.append(UNFINISHED)
            except Exception as exc:
                failed = [f"(the collection failed: {str(exc).strip()[:300]})"]
            record.detail = f"{len(written)} files into {args.artifacts_dir}" + (
                f"; {len(failed)} not collected" if failed else "")
            if failed:
                record.status = "failed"
    finally:
        progress.close()
    document = {
        "stack": stack,
        "exitCode": EXIT_INCOMPLETE if failed or refused else EXIT_OK,
        "artifactsDir": str(args.artifacts_dir),
        "artifacts": [str(p) for p in written],
        "refusedArtifacts": refused,
        "failedArtifacts": failed,
        "keptBuckets": list(stack_buckets(outputs)),
        "next": next_step(stack, failed, [r for r in refused if r not in failed]),
    }
    return ephemeral._finish(args, document, lambda console: _human(console, document))


def next_step(stack: str, failed: list[str], refused: list[str] | None = None) -> str:
    if refused and not failed:
        return (f"{len(refused)} artifacts refused (never written, named above) are still only in the bucket: move the "
                f"local files away (or choose another --artifacts-dir) and run `gpulease ephemeral collect {stack}` "
                "again; a name refused as unsafe can only be fetched with the storage's own CLI. `gpulease ephemeral "
                f"down {stack} --with-buckets` deletes them with the bucket")
    if failed == [UNFINISHED]:
        return ("the job never finished (no result.json in the bucket): what it uploaded is collected, the rest never "
                f"will be; the checkpoints it synced are still in the bucket, kept with stack {stack}")
    if failed:
        return (f"{len(failed)} artifacts not collected, still in the bucket: run `gpulease ephemeral collect {stack} "
                "--artifacts-dir DIR` again (with a larger --max-artifacts, --max-artifacts-gib or --collect-minutes "
                "if a bound was reached)")
    return f"everything collected: `gpulease ephemeral down {stack} --with-buckets` deletes the bucket and the stack"


def _human(console: Console, document: dict[str, Any]) -> None:
    console.print(f"{printable(document['stack'])}: {len(document['artifacts'])} artifacts collected into "
                  f"{printable(document['artifactsDir'])}", markup=False, soft_wrap=True)
    failed = document["failedArtifacts"]
    for name in [r for r in document["refusedArtifacts"] if r not in failed]:
        console.print(f"  refused (never written): {printable(name)}", markup=False, soft_wrap=True)
    for name in failed:
        console.print(f"  not collected: {printable(name)}", markup=False, soft_wrap=True)
    console.print(printable(document["next"]), markup=False, soft_wrap=True)
