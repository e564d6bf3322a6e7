"""``make mutate`` rows for the checks that keep the JSON Schema and the loader judging alike (issue 24's cases):
each edit removes one, and the schema/loader cases must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

CASES = ("tests/components/spec/test_schema_loader_cases.py",)

MUTATIONS: list[Mutation] = [
    Mutation("schema_loader", "components/spec/sections.py",
             'bare = name.upper().removeprefix("SIG") if name.isascii() else ""',
             'bare = name.upper().removeprefix("SIG")', CASES,
             "a checkpoint signal of non-ASCII letters that str.upper() folds into USR1 is refused"),
    Mutation("schema_loader", "components/spec/sections.py", r'r"^(?![\s\S]*\.\.)[a-z0-9]', 'r"^[a-z0-9]', CASES,
             "a bucket name with .. is refused by the schema and the loader"),
    Mutation("schema_loader", "components/spec/iam.py", "([0-9]{12}|aws)", r"(\d{12}|aws)", CASES,
             "a policy ARN's account id of Arabic-Indic digits is refused"),
    Mutation("schema_loader", "components/spec/tags.py", '"pattern": schema_pattern(v.TAG_VALUE_PATTERN)},\n}',
             '"type": "string"},\n}', CASES, "the schema refuses a tag value the loader refuses"),
    Mutation("schema_loader", "components/spec/keys.py", 'types = "|".join(literal(t)', 'types = "|".join(re.escape(t)',
             CASES, "the publicKey pattern compiles under ECMA-262's u flag"),
]
