"""The mutations ``make mutate`` applies to the safety code: small edits a careless change could make.

Each one must make at least one of its tests fail ("killed"); one that leaves them green is a survivor: a rule
no test pins. Add a group for new safety code (the reaper's decisions in gpulease/inventory/reaper.py, the
watchdog's rules in instance/watchdog.py) by appending ``Mutation`` rows to ``MUTATIONS``.
``find`` must occur exactly once in ``path``; the runner reports a stale row otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    area: str
    path: str
    find: str
    replace: str
    tests: tuple[str, ...]
    rule: str


SPEC_TESTS = ("tests/components/spec/test_spec.py", "tests/components/spec/test_limits.py", "tests/components/spec/test_alicloud.py")
LOADER_TESTS = ("tests/integration/test_hostile_input.py", "tests/integration/test_hostile_cli.py")
POLICY_TESTS = ("tests/policies/test_network.py", "tests/policies/test_budget.py", "tests/policies/test_runtime.py")
PRICE_TESTS = ("tests/core/test_catalog_dates.py", "tests/core/test_price_dates.py", "tests/catalog_refresh/test_writer.py")

MUTATIONS: list[Mutation] = [
    # --- the spec's guards ------------------------------------------------------------------------------------
    Mutation("spec", "gpulease/core/vocabulary.py", "MIN_SSH_PREFIX_V6 = 48", "MIN_SSH_PREFIX_V6 = 16", SPEC_TESTS,
             "IPv6 SSH sources wider than a /48 are refused"),
    Mutation("spec", "gpulease/core/vocabulary.py", "MIN_SSH_PREFIX_V4 = 16", "MIN_SSH_PREFIX_V4 = 8", SPEC_TESTS,
             "IPv4 SSH sources wider than a /16 are refused"),
    Mutation("spec", "components/spec/sections.py", 'if "%" in raw:', "if False:", SPEC_TESTS,
             "zone-scoped IPv6 sources are refused"),
    Mutation("spec", "components/spec/experiment.py", 'if self.market == "spot" and not self.checkpoints.enabled:', "if False:",
             SPEC_TESTS, "spot needs checkpoints"),
    Mutation("spec", "gpulease/core/model.py", "        allow_inf_nan=False,\n", "        allow_inf_nan=True,\n", SPEC_TESTS,
             "numbers are finite"),
    Mutation("spec", "components/spec/experiment.py", "if not first <= value.year <= last:", "if False:", SPEC_TESTS,
             "expiresAt within the years a deadline can be computed in"),
    Mutation("spec", "components/spec/sections.py", "if not POSIX_USER.match(user):", "if False:", SPEC_TESTS,
             "ssh.user is a POSIX user name"),
    Mutation("spec", "components/spec/experiment.py", "if len(builtin) + len(extra) > most:", "if False:", SPEC_TESTS,
             "tag count within the cloud's limit"),
    Mutation("spec", "components/spec/experiment.py", "if len(self.owner) > value_max:", "if False:", SPEC_TESTS,
             "owner fits a tag value"),
    Mutation("spec", "components/spec_rules.py", "if declared in self.key_types:", "if True:", SPEC_TESTS,
             "key types the cloud's ImportKeyPair refuses are refused"),
    Mutation("spec", "components/spec/keys.py", "key.key_size < MIN_RSA_BITS", "key.key_size < 1024", SPEC_TESTS,
             "RSA keys of at least 2048 bits"),
    Mutation("spec", "components/spec_rules.py", "if not explicit_deadline and minutes < floor:", "if False:",
             SPEC_TESTS, "runtime minimum per cloud"),
    Mutation("spec", "components/aws/spec.py", 'if iops is None and disk_type in ("io1", "io2"):', "if False:",
             SPEC_TESTS, "io1/io2 need iops"),
    Mutation("spec", "components/aws/spec.py", "elif iops is not None and iops > ratio * size_gb:", "elif False:",
             SPEC_TESTS, "IOPS per GiB"),
    Mutation("spec", "components/aws/spec.py", "if count > SG_RULES_PER_FAMILY:", "if False:", SPEC_TESTS,
             "SSH sources within the security-group rule quota"),
    Mutation("spec", "components/spec/experiment.py", "if pinned and pinned != zone:", "if False:", SPEC_TESTS,
             "a pinned zone other than the existing disk's is an error"),
    # --- the input boundary -----------------------------------------------------------------------------------
    Mutation("loader", "gpulease/core/inputfile.py", "if isinstance(event, AliasEvent):", "if False:", LOADER_TESTS,
             "YAML aliases are refused"),
    Mutation("loader", "gpulease/core/inputfile.py", "            if event.anchor is not None:", "            if False:",
             LOADER_TESTS, "YAML anchors are refused (no billion laughs)"),
    Mutation("loader", "gpulease/core/inputfile.py", "            if event.tag is not None:", "            if False:",
             LOADER_TESTS, "YAML tags are refused"),
    Mutation("loader", "gpulease/core/inputfile.py", "if key_node.value in seen:", "if False:", LOADER_TESTS,
             "duplicate keys are refused"),
    Mutation("loader", "gpulease/core/inputfile.py", "for test, label in _KINDS:", "for test, label in ():",
             LOADER_TESTS, "only regular files are read (a FIFO, a folder, a device are refused)"),
    Mutation("loader", "gpulease/core/inputfile.py", "    if size > max_bytes:", "    if False:", LOADER_TESTS,
             "input files are size-capped"),
    Mutation("loader", "gpulease/core/catalog/models.py", "Field(ge=0, allow_inf_nan=False)", "Field(allow_inf_nan=True)",
             LOADER_TESTS, "catalog prices are finite and not negative"),
    # --- the policy conditions --------------------------------------------------------------------------------
    Mutation("policy", "policies/guardrails/budget.py", "if number is None or number <= 0:",
             "if number is None or number < 0:", POLICY_TESTS, "a budget tag of 0 fails budget-tags"),
    Mutation("policy", "gpulease/core/resources.py", "return parsed if math.isfinite(parsed) else None",
             "return parsed", POLICY_TESTS, "nan/inf are not numbers"),
    Mutation("policy", "policies/guardrails/runtime.py",
             "if not covering and len(schedules) == 1 and len(aws_gpus) == 1 and unmatched:",
             "if not covering and unmatched:", POLICY_TESTS,
             "one unmatched schedule covers a single GPU instance only"),
    Mutation("policy", "policies/guardrails/runtime.py", "    if expires > limit:", "    if False:", POLICY_TESTS,
             "expires-at within maxHours"),
    Mutation("policy", "policies/guardrails/network.py", 'c.known(props, "ipv6CidrIp")', "None", POLICY_TESTS,
             "Alibaba IPv6 sources are judged"),
    Mutation("policy", "policies/guardrails/common.py", "    if net.prefixlen < minimum:", "    if False:",
             POLICY_TESTS, "a wide (not only a /0) source is open"),
    # --- prices: dates, staleness, the refresh's gate -----------------------------------------------------------
    Mutation("prices", "gpulease/core/catalog/dating.py", "        elif item in given and override.get(\"asOf\") is not None:", "        elif False:",
             PRICE_TESTS, "an override's asOf dates only the prices it gives"),
    Mutation("prices", "gpulease/catalog_refresh/fetched.py", "    if number <= 0:", "    if number < 0:", PRICE_TESTS,
             "a refresh never keeps a zero price"),
    Mutation("prices", "gpulease/catalog_refresh/fetched.py", "    if not math.isfinite(number):", "    if False:",
             PRICE_TESTS, "a refresh never keeps a NaN or an infinity"),
    Mutation("prices", "gpulease/core/catalog/freshness.py", "        if price.age_days(today) > max_age_days:",
             "        if price.age_days(today) > 10 * max_age_days:", PRICE_TESTS, "a price older than the maximum age is stale"),
    Mutation("prices", "gpulease/core/cost/spot.py", "    worst = min(cap, on_demand) if cap else on_demand",
             "    worst = on_demand", PRICE_TESTS, "the worst case keeps the stack's spot cap"),
    # Reaper decisions and watchdog rules: append their rows here (area "reaper" / "watchdog").
]
