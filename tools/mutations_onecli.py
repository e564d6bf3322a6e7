"""``make mutate`` rows for the one CLI: ``check``'s bounded ``pulumi`` and its network rows, ``down``'s partial
teardown, the envelope of ``ssh`` and ``schema``, ``cost --config`` (area "jB")."""

from __future__ import annotations

from tools.mutation_row import Mutation

REACH = ("tests/cli/test_check_reach.py",)
PARTIAL = ("tests/cli/test_down_partial.py",)
ENVELOPE = ("tests/cli/test_envelope_schema.py",)
TYPING = ("tests/cli/test_config_typing.py",)

MUTATIONS = [
    Mutation("jB", "gpulease/core/child_process.py", "text=True, env=dict(env) if env is not None else None, cwd=cwd, "
             "start_new_session=True)", "text=True, env=dict(env) if env is not None else None, cwd=cwd)",
             REACH, "a bounded command leads a process group of its own"),
    Mutation("jB", "gpulease/core/child_process.py", "        os.killpg(proc.pid, signal.SIGKILL)",
             "        proc.kill()", REACH, "the deadline kills the command's whole process group"),
    Mutation("jB", "gpulease/lifecycle/reach.py",
             "if botocore is None or not isinstance(exc, botocore.ConnectionError | botocore.HTTPClientError):",
             "if True:", REACH, "an AWS endpoint out of reach is a network row, not a credentials one"),
    Mutation("jB", "gpulease/lifecycle/reach.py", "    if not (wrapped or raw):", "    if True:", REACH,
             "an Alibaba Cloud endpoint out of reach is a network row, not a credentials one"),
    Mutation("jB", "gpulease/lifecycle/readiness.py",
             "if code is None or reach.network_kind(last) != reach.UNKNOWN_KIND:", "if False:", REACH,
             "a backend out of reach (or a whoami that hangs) is not told to log in again"),
    Mutation("jB", "gpulease/cli/down.py", "        return partly_down(args, exc)",
             '        return call_failed(args, "down", "teardown-failed", exc)', PARTIAL,
             "a teardown that stopped part-way is exit 3 with what is gone and left"),
    Mutation("jB", "gpulease/lifecycle/teardown.py",
             "    result.gone = [name for name in dict.fromkeys(deleted) if name not in retained]",
             "    result.gone = list(dict.fromkeys(deleted))", PARTIAL,
             "a retained resource the destroy forgot is left, never gone"),
    Mutation("jB", "gpulease/lifecycle/teardown.py", "    if not values or any(value is None for value in values):",
             "    if False:", PARTIAL, "what is left costs unknown, never $0, when a line is unpriced"),
    Mutation("jB", "gpulease/lifecycle/teardown.py", "            if isinstance(exc, TeardownError) and not result.removed:",
             "            if True:", PARTIAL, "--all that stops after removing the disk is partial, the bucket left"),
    Mutation("jB", "gpulease/cli/ssh.py", '        later = OneLineParser(prog="gpulease ssh", add_help=False)',
             '        later = argparse.ArgumentParser(prog="gpulease ssh", add_help=False)', ENVELOPE,
             "an ssh mistake after STACK is one line and the envelope"),
    Mutation("jB", "gpulease/cli/ssh.py", "    normalise(args)  # --json given after STACK", "", ENVELOPE,
             "ssh --format json after STACK prints the envelope and never runs the session"),
    Mutation("jB", "gpulease/cli/cost.py", "render_target(project_dir, stack_file, overrides=overrides)",
             "render_target(project_dir, stack_file)", TYPING, "cost --config reaches the program"),
]
