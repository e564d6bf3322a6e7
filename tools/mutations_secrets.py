"""``make mutate`` rows for secret inputs: every report replaces a secret's value with ``[secret]`` (plan's text,
markdown and JSON, ``gpulease cost``), secrets nested in dicts and lists are found, the longest is replaced first,
and a program with more secrets than a report can hide is not reviewed."""

from __future__ import annotations

from tools.mutation_row import Mutation

SECRETS = ("tests/review/test_secrets_never_shown.py",)

MUTATIONS = [
    Mutation("secrets", "gpulease/review/redact.py",
             "        forms = {form for v in values if len(v) >= MIN_LENGTH for form in written_forms(v)}",
             "        forms = {v for v in values if len(v) >= MIN_LENGTH}", ("tests/review/test_secrets_escaped.py",),
             "a secret is hidden in every spelling a report may write it (repr, JSON, markdown cell)"),
    Mutation("secrets", "gpulease/review/redact.py", "        return self._pattern.sub(lambda _: shown, text)",
             "        return text", SECRETS, "a secret value in a report's text is replaced with [secret]"),
    Mutation("secrets", "gpulease/review/redact.py",
             "            return SECRET if any(t in self.values for t in number_texts(value)) else value",
             "            return value", SECRETS, "a JSON number whose text is a secret becomes \"[secret]\""),
    Mutation("secrets", "gpulease/review/redact.py", "        for item in value.list_value.values:\n            _walk(",
             "        for item in ():\n            _walk(", SECRETS, "a secret inside a list is found"),
    Mutation("secrets", "gpulease/review/redact.py", "key=lambda v: (-len(v), v))", "key=lambda v: (len(v), v))",
             SECRETS, "the longest secret is matched first, so no part of it is left shown"),
    Mutation("secrets", "gpulease/review/terminal.py",
             "    console = redact.RedactingConsole(console, redact.for_reviews(reviews))\n", "", SECRETS,
             "plan's text report goes through the redaction"),
    Mutation("secrets", "gpulease/review/report.py", '"stacks": redact.for_reviews(reviews).data(out)}',
             '"stacks": out}', SECRETS, "plan's JSON goes through the redaction"),
    Mutation("secrets", "gpulease/review/report.py", ' + hide.text("\\n".join([*head[1:]',
             ' + ("\\n".join([*head[1:]', SECRETS, "plan's markdown goes through the redaction"),
    Mutation("secrets", "gpulease/cli/cost.py", "print_cost(rendering.stack, cost, shown)",
             "print_cost(rendering.stack, cost, console)", SECRETS, "gpulease cost's text goes through the redaction"),
    Mutation("secrets", "gpulease/cli/cost.py", "            results.append(hide.data({",
             "            results.append(({", SECRETS, "gpulease cost's JSON goes through the redaction"),
    Mutation("secrets", "gpulease/review/engine.py", "        if (bound := too_many(rendering_secrets(rendering))) is not None:",
             "        if (bound := None) is not None:", SECRETS, "a program past the secret bound is not reviewed"),
    Mutation("secrets", "gpulease/review/redact.py", "    if len(values) > MAX_SECRETS:", "    if False:", SECRETS,
             "more secret values than the bound are refused"),
    Mutation("secrets", "gpulease/review/resource_refs.py", "    if await output.is_secret():", "    if False:",
             SECRETS, "a secret stack export is recorded as [secret], never its value"),
]
