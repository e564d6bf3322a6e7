"""``make mutate`` rows for the checks that keep the review's faster paths as strict as the paths they replace:
the secret scan's skip by literals (necessary literals only, and no skip for a text that is not ASCII), and the
skipped-apply probe run from the data's done-callback (before the SDK can stop waiting); the secret scan's
case-sensitive forms over the lower-cased text."""

from __future__ import annotations

from tools.mutation_row import Mutation

INSTANCE = ("tests/policies/test_instance.py",)
LATE_APPLIES = ("tests/review/test_skipped_applies_late.py",)

MUTATIONS: list[Mutation] = [
    Mutation("reviewspeed", "policies/guardrails/instance.py",
             "for kind, (_, pattern) in SECRET_PATTERNS.items()]",
             "for kind, (literals, pattern) in SECRET_PATTERNS.items()\n"
             "                      if any(literal in lowered for literal in literals)]", INSTANCE,
             "a user-data text that is not ASCII is scanned with every secret pattern"),
    Mutation("reviewspeed", "policies/guardrails/instance.py",
             "(kind, ASCII_FORMS[kind], lowered)", "(kind, ASCII_FORMS[kind], text)", INSTANCE,
             "the case-sensitive secret forms scan the lower-cased text"),
    Mutation("reviewspeed", "policies/guardrails/instance.py",
             '("keysecret", "key_secret", "alicloud_secret_key"),', '("keysecret", "key_secret"),', INSTANCE,
             "ALICLOUD_SECRET_KEY is looked for in user-data"),
    Mutation("reviewspeed", "policies/guardrails/instance.py",
             '("secretaccess", "secret_access"),', '("secret_access",),', INSTANCE,
             "an AWS secret key named without underscores is looked for in user-data"),
    Mutation("reviewspeed", "gpulease/review/skipped_applies.py",
             "        self._data.add_done_callback(decided)",
             "        self._data.add_done_callback(lambda d: asyncio.ensure_future(asyncio.sleep(0)).add_done_callback(\n"
             "            lambda _: asyncio.ensure_future(asyncio.sleep(0)).add_done_callback(lambda _: decided(d))))",
             LATE_APPLIES, "an apply found unknown is run offline before the SDK can stop waiting for the program"),
]
