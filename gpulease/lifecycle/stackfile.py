"""The stack file ``gpulease init`` writes: every field with a comment saying what it does, valid by construction.

Valid by construction: the text is read back through the same reader ``gpulease plan`` uses
(``gpulease.review.stacks.load_stack_config``: YAML 1.2, no aliases, no duplicate keys) and validated by the spec
(``components.spec.load.load_stack_spec``) before it is put in place; a file that is there already is never
written over without ``--force`` (and then replaced in one rename, never half-written)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from components.spec.load import load_stack_spec
from gpulease.core.errors import UserError
from gpulease.core.shown import shown_path
from gpulease.lifecycle.answers import Answers
from gpulease.review import stacks


class StackFileExistsError(UserError):
    """The stack file is there already and ``--force`` was not given."""


def _q(value: Any) -> str:
    """A YAML 1.2 scalar: JSON's double-quoted strings and numbers are YAML too, with nothing left to guess."""
    return json.dumps(value)


COMMENT_COLUMN = 40
SCHEMA_URI = (stacks.PROJECT_ROOT / "schema" / "stack-config.schema.json").as_uri()
"""The schema the editor checks the file with: by its full path, since the file may live outside the kit."""


def _c(text: str, comment: str) -> str:
    """A line with its comment at one column (or one space after a long value)."""
    return f"{text.ljust(COMMENT_COLUMN - 1)} # {comment}"


def render(answers: Answers, instance_type: str | None) -> str:
    """The stack file's text."""
    a = answers
    mode = a.ssh_mode
    chosen = f" (today: {instance_type}, the cheapest type that holds it in {a.region})" if instance_type else ""
    lines = [
        f"# yaml-language-server: $schema={SCHEMA_URI}",
        f"# Written by `gpulease init`: {a.params} {a.method} on {a.cloud} {a.region}. Review it with",
        f"# `gpulease plan {a.name}`, check this machine and the account with `gpulease check {a.name}`, then",
        f"# `gpulease up {a.name}`. Every field is explained in docs/config.md.",
        "config:",
        _c(f"  {a.cloud}:region: {_q(a.region)}", "where the instance, its disk and its bucket live"),
        _c("  gpulease:experiment:", "one experiment (gpulease:sweep holds several)"),
        _c(f"    name: {_q(a.name)}", "the experiment: resource names and the gpulease:experiment tag"),
        _c(f"    cloud: {_q(a.cloud)}", "aws or alicloud (aws when left out)"),
        _c(f"    owner: {_q(a.owner)}", "every resource is tagged with it; budget e-mails go there"),
        _c(f"    project: {_q(a.project or a.name)}", "accounting tag; names the budget"),
        _c(f"    costCenter: {_q(a.cost_center)}", "accounting tag: who pays"),
        _c(f"    budgetUsd: {a.budget_usd:g}", "the review refuses a worst case above it"),
        _c("    gpu:", "one of fit, requirements (gpuMemoryGb, count, model) or instanceType"),
        _c("      fit:", f"the GPU is sized from the workload{chosen}"),
        _c(f"        params: {_q(a.params)}", "model size"),
        _c(f"        method: {_q(a.method)}", "full, lora or qlora"),
        _c(f"    market: {_q(a.market)}", "spot (interruptible, cheaper) or on-demand"),
        _c(f"    maxRuntimeHours: {a.hours:g}", "hard deadline after creation, enforced outside and inside"),
        _c("    idleMinutes: 30", "stop after the GPU has been idle this long"),
        _c("    ssh:", "how you reach it: gpulease ssh NAME"),
        _c(f"      mode: {_q(mode)}", "ssh: port 22 from allowedCidrs only; ssm / cloud-assistant: no port"),
    ]
    if mode == "ssh":
        lines.append(_c(f"      allowedCidrs: {_q(a.ssh_from)}", "your addresses, nothing wider"))
        if a.public_key:
            lines.append(f"      publicKey: {_q(a.public_key)}")
        else:
            lines.append(_c(f"      keyName: {_q(a.key_name)}", "an existing key pair"))
    lines += [
        _c("    dataDisk:", "mounted at /data"),
        _c("      sizeGb: 200", "the data disk (/data), encrypted and kept when the stack goes"),
        _c("    checkpoints:", "the bucket the watchdog syncs to; status and logs read it too"),
        _c("      prefix: \"checkpoints/\"", "under the stack's bucket, synced from /data/checkpoints"),
        _c("      intervalMinutes: 15", "how often the watchdog syncs them"),
    ]
    if a.sources:
        lines += [_c("    data:", "what the instance fetches onto /data"), _c("      sources:", "staged on the instance before it reports ready")]
        lines += [f"        - {{uri: {_q(s.uri)}, to: {_q(s.to)}}}" for s in a.sources]
    return "\n".join(lines) + "\n"


def target_path(answers: Answers, output: str | None, project_dir: Path = stacks.PROJECT_ROOT) -> Path:
    """``--output``; else the folder the command runs in: its ``stacks/`` when it has one (the kit's own folder
    has), else the folder itself. ``gpulease plan NAME`` and ``up NAME`` find it there by its name."""
    if output:
        return Path(output)
    here = Path.cwd()
    if here.resolve() == project_dir.resolve():
        _, config_dir = stacks.project_info(project_dir)
        return config_dir / f"Pulumi.{answers.name}.yaml"
    folder = here / "stacks" if (here / "stacks").is_dir() else here
    return folder / f"Pulumi.{answers.name}.yaml"


def validate(path: Path, stack: str, named: Path | None = None) -> None:
    """Read ``path`` back as ``gpulease plan`` and ``pulumi up`` would and validate it (SpecError on a problem,
    naming ``named``: the file it is about to become)."""
    config = stacks.load_stack_config(path)
    load_stack_spec(stack, {k: v for k, v in config.items() if k.startswith("gpulease:")}, source=shown_path(named or path))


def foreign_project(path: Path) -> str | None:
    """Why ``path`` would be another program's stack: its folder (or the folder above, for a ``stacks/`` folder)
    holds a Pulumi.yaml whose runtime is not Python (``pulumi up`` there would run that program with this config)."""
    folder = path.parent if str(path.parent) else Path(".")
    for candidate in (folder, folder.parent) if folder.resolve().name == "stacks" else (folder,):
        if not any((candidate / name).is_file() for name in ("Pulumi.yaml", "Pulumi.yml")):
            continue
        raw = stacks.project_meta(candidate)
        runtime = raw.get("runtime")
        runtime = runtime.get("name") if isinstance(runtime, dict) else runtime
        if str(runtime).strip().lower() != "python":
            return (f"{candidate / 'Pulumi.yaml'} is the Pulumi project {str(raw.get('name'))!r} (runtime {runtime}), "
                    "not a gpulease program: a stack file there would configure that program")
        return None
    return None


def write(text: str, path: Path, stack: str, *, force: bool) -> None:
    """Validate ``text`` as the stack ``stack`` in a temporary file beside ``path``, then put it in place; never
    into another program's project."""
    if (foreign := foreign_project(path)) is not None:
        raise StackFileExistsError(f"{path}: not written; {foreign}; accepted: an empty folder, a gpulease project "
                                   "(runtime python), or --output FILE elsewhere")
    if os.path.lexists(path) and not force:
        raise StackFileExistsError(f"{path}: exists already; accepted: another --name, or --force to replace it")
    if os.path.lexists(path) and not path.is_file():
        raise StackFileExistsError(f"{path}: is not a regular file; it is left alone")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise StackFileExistsError(f"{path}: the folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".yaml", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        validate(Path(tmp), stack, named=path)
        if force:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if the file appeared meanwhile: never written over
            os.unlink(tmp)
    except FileExistsError:
        raise StackFileExistsError(f"{path}: exists already; accepted: another --name, or --force") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
