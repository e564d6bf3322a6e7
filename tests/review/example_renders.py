"""Every example stack rendered once per worker, as created and (where a bake is accepted) with ``image.bake``:
what the precondition and permission tables are checked against."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

from gpulease.review.render import Rendering, load_stack_file, render
from tests.support.clock import FIXED_NOW
from tests.support.paths import STACKS_DIR

STACKS = sorted(STACKS_DIR.glob("Pulumi.*.yaml"))


def stack_id(path: Path) -> str:
    return path.name.removeprefix("Pulumi.").removesuffix(".yaml")


def _section(config: dict) -> dict:
    return config["gpulease:experiment"] if "gpulease:experiment" in config else config["gpulease:sweep"]["base"]


def bakes(path: Path) -> bool:
    """A single-instance experiment with checkpoints: where the spec accepts ``image.bake``."""
    config = load_stack_file(path)
    spec = config.get("gpulease:experiment")
    return bool(spec) and spec.get("nodes", 1) == 1 and spec.get("checkpoints", {}).get("enabled", True)


@functools.cache
def example(path: Path, *, bake: bool = False) -> Rendering:
    config = copy.deepcopy(load_stack_file(path))
    if bake:
        _section(config).setdefault("image", {})["bake"] = True
    r = render(config, stack=stack_id(path), now=FIXED_NOW)
    assert r.error is None, f"{stack_id(path)}: {r.error}"
    return r


def every_example() -> list[tuple[str, Rendering]]:
    """(name, rendering) of every example stack, and of each that bakes with ``image.bake`` set."""
    out = [(stack_id(p), example(p)) for p in STACKS]
    out += [(f"{stack_id(p)}+bake", example(p, bake=True)) for p in STACKS if bakes(p)]
    return out
