"""``make mutate`` rows for spot recovery's fixes: parking cancels only the parked runs' requests, one stable delete
hook served from the instance's outputs, the provider's credentials, NotFound checked against the account, the pack's
literal cancel id, bounded interruption records, the instances a re-opened request launched."""

from __future__ import annotations

from tools.mutation_row import Mutation

HOOK = ("tests/components/aws/test_spot_hook.py",)
CREDS = ("tests/components/aws/test_provider_credentials.py",)
UP = ("tests/cli/test_up.py",)
DOWN = ("tests/cli/test_down.py",)
CORPUS = ("tests/policies/test_programs.py",)
STATUS = ("tests/live/test_status.py",)

MUTATIONS = [
    Mutation("fixspot3", "gpulease/lifecycle/spot_requests.py", "        if name is None or name in experiments:",
             "        if True:", UP, "parking cancels only the parked experiments' spot requests"),
    Mutation("fixspot3", "gpulease/lifecycle/spot_requests.py",
             "        name = _tags(raw).get(v.TAG_EXPERIMENT) or by_instance.get(str(raw.get(\"InstanceId\") or \"\"))",
             "        name = _tags(raw).get(v.TAG_EXPERIMENT)", UP,
             "a request without its experiment tag is judged by its instance's"),
    Mutation("fixspot3", "components/aws/lifetime.py", "REQUEST_TAGS = (v.TAG_MANAGED_BY, v.TAG_STACK, v.TAG_EXPERIMENT, v.TAG_EXPIRES_AT)",
             "REQUEST_TAGS = (v.TAG_MANAGED_BY, v.TAG_STACK, v.TAG_EXPIRES_AT)",
             ("tests/components/aws/test_spot_recovery.py",), "the spot request carries its experiment's tag"),
    Mutation("fixspot3", "components/program.py", "        register_program_hook()\n", "", HOOK,
             "every program registers the stable delete hook"),
    Mutation("fixspot3", "components/aws/spot_hook.py", 'HOOK_NAME = "gpulease-cancel-spot-request"',
             'HOOK_NAME = f"gpulease-cancel-spot-request-{id(object())}"', HOOK, "the hook's name is stable"),
    Mutation("fixspot3", "components/aws/spot_hook.py", '        return arn["region"], arn["account"]',
             '        return "us-east-1", arn["account"]', HOOK, "the hook cancels in the instance's region (its ARN)"),
    Mutation("fixspot3", "components/aws/spot_hook.py", "    if account != owner:", "    if False:", HOOK,
             "NotFound in another account refuses the delete"),
    Mutation("fixspot3", "components/aws/spot_hook.py", "    if owner is None or caller is None:", "    if False:", HOOK,
             "NotFound without the instance's account refuses the delete"),
    Mutation("fixspot3", "components/aws_credentials.py", "    for role in creds.roles:", "    for role in ():", CREDS,
             "the stack's assumeRole is assumed"),
    Mutation("fixspot3", "components/aws_credentials.py", "    for key in REFUSED:", "    for key in ():", CREDS,
             "a provider key the kit's calls cannot follow is refused"),
    Mutation("fixspot3", "gpulease/lifecycle/spot_requests.py", "    for instance in strays:", "    for instance in ():",
             DOWN, "down terminates the instances a re-opened request launched"),
    Mutation("fixspot3", "policies/guardrails/deadlines.py", "    if own_readable and not (isinstance(own, str) and own):",
             "    if False:", CORPUS, "a literal cancel id is unconfirmed when the instance's own id is empty"),
    Mutation("fixspot3", "gpulease/live/status.py", "        if seconds > MAX_STOPPED_SECONDS:", "        if False:", STATUS,
             "a stop beyond the runtime cap is inconsistent"),
    Mutation("fixspot3", "gpulease/live/status.py", "    if stopped is not None and resumed is not None and resumed < stopped:",
             "    if False:", STATUS, "a resume before its stop is inconsistent"),
    Mutation("fixspot3", "gpulease/live/status.py", "    return value[:limit] if isinstance(value, str) and value else None",
             "    return value if isinstance(value, str) and value else None", STATUS,
             "interruption texts are bounded"),
    Mutation("fixspot3inv", "gpulease/inventory/collect.py", "    found += cancelled_leftovers(cancelled, held, region)\n", "",
             ("tests/inventory/test_spot_requests.py",), "ls/reap list a cancelled request whose untagged instance runs"),
]
