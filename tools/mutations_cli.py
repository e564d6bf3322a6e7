"""``make mutate`` rows for the CLI's own guards: where --output may write, what push may write to, the
organization name, numbers the policy config may carry."""

from __future__ import annotations

from tools.mutation_row import Mutation

HOSTILE = ("tests/integration/test_hostile_cli.py",)
CONVENTIONS = ("tests/cli/test_conventions.py",)

MUTATIONS = [
    Mutation("cli", "gpulease/core/same_file.py", "        if _same_file(path, read) or", "        if False and (_same_file(path, read)) or",
             (*CONVENTIONS, "tests/cli/test_outputs_never_inputs.py"), "--output never replaces a file the command reads"),
    Mutation("cli", "gpulease/cli/output_file.py", "if path.exists() and not force and not is_own_report(path):",
             "if False:", CONVENTIONS, "--output over a foreign file needs --force"),
    Mutation("cli", "gpulease/transfer/files.py", "    if CONTROL_FOLDER in parts:", "    if False:", HOSTILE,
             "push never writes into the _gpulease control area"),
    Mutation("cli", "gpulease/transfer/files.py", "        if prefix.startswith(folder) or folder.startswith(prefix):",
             "        if False:", HOSTILE, "push never writes into the checkpoints"),
    Mutation("cli", "gpulease/transfer/files.py", '    if text.startswith("/"):', "    if False:", HOSTILE,
             "push --to is relative"),
    Mutation("cli", "gpulease/review/organization.py", 'if not ORG_NAME.match(text) or text in (".", "..") or ".." in text:',
             "if False:", HOSTILE, "--org is an organization name"),
    Mutation("cli", "gpulease/cli/plan.py", "    elif isinstance(config, float) and not math.isfinite(config):",
             "    elif False:", HOSTILE, "the policy config carries finite numbers only"),
    Mutation("cli", "components/naming.py", "    if organization in _UNKNOWN_ORGANIZATIONS:", "    if False:", CONVENTIONS,
             "an unknown organization shows in the names, never hashed as 'None'"),
]
