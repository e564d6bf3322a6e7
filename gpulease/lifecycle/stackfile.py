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
from gpulease.core import inputfile
from gpulease.core.errors import UserError
from gpulease.core.shown import shown_path
from gpulease.lifecycle.answers import DEFAULT_CHECKPOINT_SIGNAL, Answers
from gpulease.review import stacks


class StackFileExistsError(UserError):
    """The stack file is there already and ``--force`` was not given."""


def _q(value: Any) -> str:
    """A YAML 1.2 scalar: JSON's double-quoted strings and numbers are YAML too, with nothing left to guess."""
    return json.dumps(value)


KIT_NAMESPACES = ("gpulease", "aws", "alicloud")
"""The config namespaces of a stack file ``init`` writes (the cloud's only for its region)."""
COMMENT_COLUMN = 40
SCHEMA_URI = (stacks.PROJECT_ROOT / "schema" / "stack-config.schema.json").as_uri()
"""The schema the editor checks the file with: by its full path, since the file may live outside the kit."""


def _c(text: str, comment: str) -> str:
    """A line with its comment at one column (or one space after a long value)."""
    return f"{text.ljust(COMMENT_COLUMN - 1)} # {comment}"


def render(answers: Answers, instance_type: str | None, target: str | None = None) -> str:
    """The stack file's text; its header names the stack to ``plan``, ``check`` and ``up`` as ``target`` (one shell
    word: the file's path where the bare name finds another file), by default by its name."""
    a = answers
    named = target or a.name
    mode = a.ssh_mode
    chosen = f" (today: {instance_type}, the cheapest type that holds it in {a.region})" if instance_type else ""
    lines = [
        f"# yaml-language-server: $schema={SCHEMA_URI}",
        f"# Written by `gpulease init`: {a.params} {a.method} on {a.cloud} {a.region}. Review it with",
        f"# `gpulease plan {named}`, check this machine and the account with `gpulease check {named}`, then",
        f"# `gpulease up {named}`. Every field is explained in docs/config.md.",
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
    ]
    if a.on_demand_reason:
        lines.append(_c(f"    onDemandReason: {_q(a.on_demand_reason)}", "why not spot: the pack needs it on-demand"))
    lines += [
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
    if a.checkpoint_process:
        lines += [
            _c(f"      signal: {_q(DEFAULT_CHECKPOINT_SIGNAL)}", "sent before a spot reclaim's (or the deadline's) sync"),
            _c(f"      process: {_q(a.checkpoint_process)}", "to processes whose command line holds this: save, exit"),
        ]
    if a.sources:
        lines += [_c("    data:", "what the instance fetches onto /data"), _c("      sources:", "staged on the instance before it reports ready")]
        lines += [f"        - {{uri: {_q(s.uri)}, to: {_q(s.to)}}}" for s in a.sources]
    return "\n".join(lines) + "\n"


def target_path(answers: Answers, output: str | None, project_dir: Path = stacks.PROJECT_ROOT) -> Path:
    """``--output``; else the folder the command runs in: its ``stacks/`` when it has one (the kit's own folder
    has), else the folder itself; in a project running the kit's program (``pulumi new`` from the kit's template,
    the folder or one above it), that project's stack folder. ``gpulease plan NAME`` and ``up NAME`` find it there
    by its name."""
    if output:
        return Path(output)
    if (own := stacks.kit_project_here(project_dir)) is not None:
        return stacks.project_info(own)[1] / stacks.stack_file_name(own, answers.name)
    here = Path.cwd()
    if here.resolve() == project_dir.resolve():
        _, config_dir = stacks.project_info(project_dir)
        return config_dir / stacks.stack_file_name(project_dir, answers.name)
    folder = here / "stacks" if (here / "stacks").is_dir() else here
    return folder / f"Pulumi.{answers.name}.yaml"


def validate(path: Path, stack: str, named: Path | None = None) -> None:
    """Read ``path`` back as ``gpulease plan`` and ``pulumi up`` would and validate it (SpecError on a problem,
    naming ``named``: the file it is about to become)."""
    config = stacks.load_stack_config(path)
    load_stack_spec(stack, {k: v for k, v in config.items() if k.startswith("gpulease:")}, source=shown_path(named or path))


PYTHON_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile", "__main__.py")
"""The files that make a folder a Python project of its own: a stack file written there would mix with it."""
PROGRAM_MARK = "components.program"
"""What a gpulease program's ``__main__.py`` runs (the kit's own, and the ``pulumi new`` template's)."""
PROGRAM_MAX_BYTES = 64 * 1024


def _gpulease_program(folder: Path) -> bool:
    """Whether ``folder``'s ``__main__.py`` is a gpulease program (it runs ``components.program``); read only when
    it is a regular file, at most ``PROGRAM_MAX_BYTES``."""
    main = folder / "__main__.py"
    try:
        if not main.is_file() or main.stat().st_size > PROGRAM_MAX_BYTES:
            return False
        return PROGRAM_MARK in main.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def foreign_project(path: Path, kit: Path = stacks.PROJECT_ROOT) -> str | None:
    """Why ``path`` would land in another program's project: its folder (or the folder above, for a ``stacks/``
    folder) holds a Pulumi.yaml that is not a gpulease program (``pulumi up`` there would run that program with
    this config), or the files of a Python project of its own (``pyproject.toml``, ``requirements.txt``,
    ``__main__.py``, ...). The kit's own folder and a project made from its template are gpulease's."""
    folder = path.parent if str(path.parent) else Path(".")
    for candidate in (folder, folder.parent) if folder.resolve().name == "stacks" else (folder,):
        if candidate.resolve() == kit.resolve():
            return None
        if candidate.resolve().parent == (kit / "templates").resolve():
            return (f"{candidate} is the kit's `pulumi new` template, copied whole into every project made from it: "
                    f"run `pulumi new {candidate.resolve()}` in a new folder first, then init there")
        if (project := stacks.project_file(candidate)) is not None and project.is_file():
            raw = stacks.project_meta(candidate)
            runtime = raw.get("runtime")
            runtime = runtime.get("name") if isinstance(runtime, dict) else runtime
            if str(runtime).strip().lower() != "python":
                return (f"{project} is the Pulumi project {str(raw.get('name'))!r} (runtime "
                        f"{runtime}), not a gpulease program: a stack file there would configure that program")
            if not _gpulease_program(candidate):
                return (f"{project} is the Pulumi project {str(raw.get('name'))!r} (runtime "
                        f"python) whose __main__.py does not run the gpulease program ({PROGRAM_MARK}): a stack file "
                        "there would configure that program")
            return None
        own = [name for name in PYTHON_PROJECT_FILES if os.path.lexists(candidate / name)]
        if own:
            return (f"{candidate} is a Python project of its own ({', '.join(own)}): a stack file there would mix "
                    "with it")
    return None


def kit_stack_file(path: Path) -> str | None:
    """Why ``--force`` may not replace ``path``, or None when it is a gpulease stack file (what ``init`` writes:
    a ``config:`` whose keys are all ``gpulease:`` or a cloud's, with a ``gpulease:`` one, and nothing else: no
    secrets provider, no encrypted key); an empty one holds nothing to lose."""
    try:
        doc = inputfile.load_yaml_document(path, what="stack file", max_bytes=stacks.STACK_FILE_MAX_BYTES).data
    except UserError as exc:
        return f"it is not a gpulease stack file (it cannot be read as one: {' '.join(str(exc).split())})"
    if not isinstance(doc, dict) or set(doc) - {"config"} or not isinstance(doc.get("config"), dict):
        return "it is not a gpulease stack file (it holds more than a config: section)"
    keys = [str(k) for k in doc["config"]]
    others = [k for k in keys if k.partition(":")[0] not in KIT_NAMESPACES]
    if others or (keys and not any(k.startswith("gpulease:") for k in keys)):
        return (f"it is not a gpulease stack file (its config holds {', '.join(others[:3]) or 'no gpulease: key'})")
    return None


def write(text: str, path: Path, stack: str, *, force: bool) -> None:
    """Validate ``text`` as the stack ``stack`` in a temporary file beside ``path``, then put it in place; never
    into another program's project."""
    if (foreign := foreign_project(path)) is not None:
        raise StackFileExistsError(f"{path}: not written; {foreign}; accepted: a new folder (mkdir {stack} && cd "
                                   f"{stack}), a gpulease project, or --output FILE elsewhere (--force never "
                                   "writes into another project)")
    if os.path.lexists(path) and not force:
        raise StackFileExistsError(f"{path}: exists already; accepted: another --name, or --force to replace it")
    if os.path.lexists(path) and not path.is_file():
        raise StackFileExistsError(f"{path}: is not a regular file; it is left alone")
    if os.path.lexists(path) and (why := kit_stack_file(path)) is not None:
        raise StackFileExistsError(f"{path}: not replaced, even with --force: {why}; --force replaces only a "
                                   "gpulease stack file; accepted: another --name, or --output FILE elsewhere")
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


def replace_text(path: Path, text: str, stack: str) -> None:
    """Put ``text`` (validated as ``stack`` first) in place of the stack file ``write`` has just put at ``path``, in
    one rename: the same stack, its header naming it otherwise."""
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".yaml", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        validate(Path(tmp), stack, named=path)  # only the header differs: still valid
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
