"""Finding stacks: by name in this project's ``stacks/``, or as any Pulumi project directory / stack file."""

from __future__ import annotations

from pathlib import Path

import yaml

from components.errors import UserError
from gpulease.render import PROJECT_ROOT


class StackNotFoundError(UserError):
    pass


def project_info(project_dir: Path) -> tuple[str, Path]:
    """The project name and its stack config directory (``stackConfigDir`` or the project root)."""
    for name in ("Pulumi.yaml", "Pulumi.yml"):
        path = project_dir / name
        if path.exists():
            raw = yaml.safe_load(path.read_text()) or {}
            return str(raw.get("name", project_dir.name)), project_dir / str(raw.get("stackConfigDir", "."))
    raise StackNotFoundError(f"{project_dir} has no Pulumi.yaml")


def stack_files(project_dir: Path = PROJECT_ROOT) -> list[Path]:
    _, config_dir = project_info(project_dir)
    return sorted(p for p in config_dir.glob("Pulumi.*.y*ml") if p.name not in ("Pulumi.yaml", "Pulumi.yml"))


def stack_name(path: Path) -> str:
    return path.name.removeprefix("Pulumi.").rsplit(".", 1)[0]


def resolve(target: str, project_dir: Path = PROJECT_ROOT) -> list[tuple[Path, Path]]:
    """``(project_dir, stack_file)`` pairs for a stack name, a stack file, or a project directory (all stacks)."""
    path = Path(target)
    if path.is_dir():
        files = stack_files(path)
        if not files:
            raise StackNotFoundError(f"{path} has no Pulumi.<stack>.yaml files")
        return [(path.resolve(), f) for f in files]
    if path.is_file():
        # A stack file inside a project (or its stackConfigDir): the project is the nearest Pulumi.yaml above.
        for parent in [path.resolve().parent, *path.resolve().parents]:
            if (parent / "Pulumi.yaml").exists():
                return [(parent, path.resolve())]
        raise StackNotFoundError(f"{path} is not inside a Pulumi project (no Pulumi.yaml above it)")
    for f in stack_files(project_dir):
        if stack_name(f) == target:
            return [(project_dir, f)]
    known = ", ".join(stack_name(f) for f in stack_files(project_dir)) or "none"
    raise StackNotFoundError(f"no stack {target!r} in {project_dir / 'stacks'}; known stacks: {known}")
