"""``make mutate`` rows for the journey commands (init, up, down, logs, status --watch): each guard removed must
fail its tests. Area ``journey``: ``python -m tools.mutate --area journey``."""

from __future__ import annotations

from tools.mutation_row import Mutation

INIT = ("tests/cli/test_init.py",)
UP = ("tests/cli/test_up.py",)
DOWN = ("tests/cli/test_down.py",)
LIVE = ("tests/live/test_logs.py", "tests/live/test_nodes.py")

MUTATIONS = [
    Mutation("journey", "gpulease/lifecycle/stackfile.py", "if os.path.lexists(path) and not force:",
             "if False:", INIT, "init never writes over an existing stack file without --force"),
    Mutation("journey", "gpulease/lifecycle/stackfile.py", "        validate(Path(tmp), stack, named=path)\n", "",
             INIT, "init validates the text through the spec before it is put in place"),
    Mutation("journey", "gpulease/lifecycle/verdict.py", 'return self.status != "pass"',
             'return self.status == "fail"', UP, "up refuses anything but a full, passing review"),
    Mutation("journey", "gpulease/lifecycle/deploy.py", "                    if not first or not single:",
             "                    if False:", UP, "no capacity retry on a stack that had an instance already"),
    Mutation("journey", "gpulease/lifecycle/deploy.py",
             '            if data_zone is None and capacity.holds_data(events):\n'
             '                data_zone = tried[-1].zone or "" if tried else ""',
             '            data_zone = (tried[-1].zone or "" if tried else "") if capacity.holds_data(events) else None',
             UP, "a disk made by an earlier try pins every later try's zone"),
    Mutation("journey", "gpulease/lifecycle/capacity.py",
             "if data_zone is not None and (not data_zone or choice.zone != data_zone):", "if False:", UP,
             "no try moves away from the zone of a data disk"),
    Mutation("journey", "gpulease/lifecycle/deploy.py", "if nxt is None or len(tried) >= capacity.MAX_TRIES:",
             "if nxt is None:", UP, "capacity tries are bounded"),
    Mutation("journey", "gpulease/lifecycle/spot_requests.py",
             "return tags.get(v.TAG_MANAGED_BY) == v.MANAGED_BY_VALUE and tags.get(v.TAG_STACK) == stack",
             "return True", DOWN, "down --all removes only what the stack tags as its own"),
    Mutation("journey", "gpulease/cli/down.py", "    if not sys.stdin.isatty():", "    if False:", DOWN,
             "down --all without a terminal needs --yes"),
    Mutation("journey", "gpulease/cli/down.py", "    if answer.strip() != stack:", "    if False:", DOWN,
             "down --all goes ahead only when the stack's name is typed"),
    Mutation("journey", "gpulease/live/logs.py", "    while clock() < deadline:", "    while True:", LIVE,
             "logs --follow stops at its bound"),
    Mutation("journey", "gpulease/cli/status.py", "            if CLOCK() + every > deadline:", "            if False:",
             LIVE, "status --watch stops by itself"),
    Mutation("journey", "gpulease/live/status.py", '"low": free is not None and free < LOW_DISK_PERCENT',
             '"low": False', LIVE, "status marks a disk short of space"),
]
