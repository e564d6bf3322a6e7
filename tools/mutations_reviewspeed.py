"""``make mutate`` rows for the checks that keep the review's faster paths as strict as the paths they replace:
the secret scan's skip by literals (necessary literals only, and no skip for a text that is not ASCII)."""

from __future__ import annotations

from tools.mutation_row import Mutation

INSTANCE = ("tests/policies/test_instance.py",)

MUTATIONS: list[Mutation] = [
    Mutation("reviewspeed", "policies/guardrails/instance.py",
             "if not ascii_text or any(literal in lowered for literal in literals)]",
             "if any(literal in lowered for literal in literals)]", INSTANCE,
             "a user-data text that is not ASCII is scanned with every secret pattern"),
    Mutation("reviewspeed", "policies/guardrails/instance.py",
             '("keysecret", "key_secret", "alicloud_secret_key"),', '("keysecret", "key_secret"),', INSTANCE,
             "ALICLOUD_SECRET_KEY is looked for in user-data"),
    Mutation("reviewspeed", "policies/guardrails/instance.py",
             '("secretaccess", "secret_access"),', '("secret_access",),', INSTANCE,
             "an AWS secret key named without underscores is looked for in user-data"),
]
