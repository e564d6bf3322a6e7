"""``make mutate`` rows for the checks that keep the review's faster paths as strict as the paths they replace:
the secret scan's skip by literals (necessary literals only, and no skip for a text that is not ASCII), and the
skipped-apply probe run from the data's done-callback (before the SDK can stop waiting) and skipped only for a value
already known; the secret scan's case-sensitive forms over the lower-cased text; the stack request's plain reading
made with its proxies (unknowns as ``UNKNOWN``, each resource's its own)."""

from __future__ import annotations

from tools.mutation_row import Mutation

INSTANCE = ("tests/policies/test_instance.py",)
LATE_APPLIES = ("tests/review/test_skipped_applies_late.py",)
RESOLVED_APPLIES = ("tests/review/test_skipped_applies_resolved.py",)
SERVICER_PLAIN = ("tests/policies/test_servicer_plain.py",)

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
    Mutation("reviewspeed", "gpulease/review/skipped_applies.py",
             "data.exception() is None and data.result().is_known", "data.exception() is None", RESOLVED_APPLIES,
             "an apply on an output already resolved to an unknown value is run offline"),
    Mutation("reviewspeed", "policies/guardrails/servicer.py",
             "            flat[key] = common.UNKNOWN if text in _SENTINELS else text", "            flat[key] = text",
             SERVICER_PLAIN, "an unknown property value is UNKNOWN in the plain reading the stack rules get"),
    Mutation("reviewspeed", "policies/guardrails/servicer.py",
             "flat.append(common.UNKNOWN if text in _SENTINELS else text)", "flat.append(text)", SERVICER_PLAIN,
             "an unknown list element is UNKNOWN in the plain reading the stack rules get"),
    Mutation("reviewspeed", "policies/guardrails/servicer.py",
             "        return proxied, common.plain_element(proxied)", "        return proxied, proxied", SERVICER_PLAIN,
             "a secret or asset is read plain as common.plain reads it"),
    Mutation("reviewspeed", "policies/guardrails/common.py",
             'return memoized("plain", (props,), lambda: plain(props))', 'return memoized("plain", (), lambda: plain(props))',
             SERVICER_PLAIN, "each resource's plain reading is its own"),
]
