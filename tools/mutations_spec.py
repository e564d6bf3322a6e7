"""``make mutate`` rows for the stack spec's plan-time refusals, the YAML 1.2 reader and the catalog overrides'
guards: each edit removes one check, and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

REFUSALS = ("tests/components/spec/test_plan_time_refusals.py",)
MESSAGES = ("tests/components/spec/test_messages.py",)
PARITY = ("tests/components/spec/test_schema_parity.py",)
YAML = ("tests/core/test_inputfile_yaml12.py",)
CATALOG = ("tests/core/test_catalog_overrides_strict.py",)
WORKFLOW = "components/spec/workflow.py"
SOURCES = "gpulease/core/datasources.py"
SECTIONS = "components/spec/sections.py"
TEXT = "components/spec/text.py"
EXPERIMENT = "components/spec/experiment.py"

MUTATIONS: list[Mutation] = [
    # --- data sources and their folders -------------------------------------------------------------------
    Mutation("spec", WORKFLOW, "        if top in RESERVED_DIRS:", "        if False:", REFUSALS,
             "a to: folder inside a folder the kit writes (/data/checkpoints) is refused"),
    Mutation("spec", WORKFLOW, '"final", ".gpulease", "lost+found")', '"final")', REFUSALS,
             "a to: folder inside /data/.gpulease is refused"),
    Mutation("spec", WORKFLOW, "            if a.startswith(b) or b.startswith(a):", "            if False:", REFUSALS,
             "overlapping to: folders are refused"),
    Mutation("spec", WORKFLOW, "        if source.is_bucket and source.scheme != scheme:", "        if False:", REFUSALS,
             "a bucket of the other cloud (s3:// on Alibaba, oss:// on AWS) is refused"),
    Mutation("spec", WORKFLOW, "TO_MAX_BYTES = 512", "TO_MAX_BYTES = 10**6", REFUSALS,
             "a to: folder of thousands of characters is refused"),
    Mutation("spec", SOURCES, '    if parts.username or parts.password or "@" in parts.netloc:', "    if False:",
             REFUSALS, "a user name (user@) in a source URI is refused"),
    Mutation("spec", SOURCES, "    if parts.fragment and _CREDENTIAL_QUERY.search(parts.fragment):", "    if False:",
             REFUSALS, "a token in a URI's fragment is named as a credential"),
    Mutation("spec", SOURCES, 'r"auth|authorization|bearer|', 'r"authorization|bearer|', REFUSALS,
             "an auth= query parameter is named as a credential"),
    Mutation("spec", SOURCES, "        port = parts.port\n", "        port = None\n", REFUSALS,
             "an https source's port must be a number in 1-65535"),
    Mutation("spec", SOURCES, '    if parts.fragment or uri.endswith("#"):', "    if False:", REFUSALS,
             "an https source with a fragment is refused"),
    Mutation("spec", SOURCES, '    if any(p in (".", "..") for p in parts):\n        return "the path holds a . or .. part', "    if False:\n        return \"the path holds a . or .. part",
             REFUSALS, "percent-encoded . and .. parts of an https path are refused"),
    Mutation("spec", SOURCES, '    if any(hidden(c) for c in decoded) or "\\\\" in decoded:', "    if False:",
             REFUSALS, "%00 and %0a in an https path are refused"),
    # --- text the instance runs or writes -----------------------------------------------------------------
    Mutation("spec", TEXT, "    bad = _CONTROL.search(path)", "    bad = None", REFUSALS,
             "NUL, CR, ESC and tabs in paths are refused"),
    Mutation("spec", TEXT, "    bad = _CONTROL_IN_COMMAND.search(command)", "    bad = None", REFUSALS,
             "NUL and ESC in commands and hooks are refused"),
    Mutation("spec", TEXT, "    if not command.strip():", "    if False:", REFUSALS,
             "a blank command (or resumeCommand: '') is refused"),
    Mutation("spec", SECTIONS, '''_KEY_PART = r"(?!\\.\\.?(/|(?![\\s\\S])))[A-Za-z0-9!_.'()-]+"''',
             '''_KEY_PART = r"[A-Za-z0-9!_.'()-]+"''', REFUSALS,
             "a checkpoint prefix with empty, . or .. parts (../../etc) is refused"),
    Mutation("spec", "components/spec/run.py", "                or not [p for p in inside if p]):", "                ):",
             REFUSALS, "job.paramsFile: /data (a folder, not a file) is refused"),
    Mutation("spec", "components/spec/run.py", "            if address.lower() in seen:", "            if False:",
             REFUSALS, "the same budget-alert address twice is refused"),
    Mutation("spec", SECTIONS, "                if special.version == net.version and net.overlaps(special):",
             "                if False:", REFUSALS, "SSH CIDRs in multicast, this-network and reserved space are refused"),
    # --- cross-field and stack-wide checks ----------------------------------------------------------------
    Mutation("spec", EXPERIMENT, '        if self.phase == "parked" and not disk.retain:', "        if False:", REFUSALS,
             "phase: parked with dataDisk.retain: false is refused"),
    Mutation("spec", EXPERIMENT, "        problems += rules.runtime_problems(self.prep.max_runtime_hours,",
             "        problems += [] and rules.runtime_problems(self.prep.max_runtime_hours,", REFUSALS,
             "prep.maxRuntimeHours has the cloud's minimum too"),
    Mutation("spec", EXPERIMENT, "BUDGET_USD_MAX = 1_000_000", "BUDGET_USD_MAX = 10**400", REFUSALS,
             "budgetUsd has a sane upper bound (1e308 refused)"),
    Mutation("spec", EXPERIMENT, "            elif t.days < rules.transition_min_days.get(t.storage_class, 0):",
             "            elif False:", REFUSALS, "a STANDARD_IA transition before 30 days is refused on AWS"),
    Mutation("spec", "components/spec/load.py", "        if ref is not None and own_stack(", "        if False and own_stack(",
             REFUSALS, "image.fromStack naming the stack itself is refused"),
    Mutation("spec", "components/spec/run.py", "    if verify is not None and runtime_ok:", "    if verify is not None:",
             MESSAGES, "a tiny maxRuntimeHours is not blamed on verify.maxMinutes"),
    Mutation("spec", "components/spec/regions.py", "    if value in rules.regions:\n        return []",
             "    if True:\n        return []", MESSAGES, "an unknown region is named with the nearest one"),
    # --- strict types: the loader is the schema's contract -------------------------------------------------
    Mutation("spec", "components/spec/load.py", "allow_nan=True), strict=True, by_alias=True, by_name=False)",
             "allow_nan=True), strict=False, by_alias=True, by_name=False)", REFUSALS + PARITY,
             "booleans and text are never coerced to numbers (strict types)"),
    Mutation("spec", "components/spec/load.py", "allow_nan=True), strict=True, by_alias=True, by_name=False)",
             "allow_nan=True), strict=True, by_alias=True, by_name=True)", PARITY + MESSAGES,
             "snake_case field names are unknown fields, as in the schema"),
    # --- the YAML reader ------------------------------------------------------------------------------------
    Mutation("spec", "gpulease/core/yaml_scalars.py", 'TRUES = frozenset(("true", "True", "TRUE"))',
             'TRUES = frozenset(("true", "True", "TRUE", "yes", "on", "y"))', YAML,
             "yes, on and y are text, as the Pulumi CLI reads them"),
    Mutation("spec", "gpulease/core/yaml_scalars.py", r'(re.compile(r"^([-+]?)0([0-7]+)\Z"), 8),',
             r'(re.compile(r"^([-+]?)0([0-7]+)\Z"), 10),', YAML, "010 is octal 8, as yaml.v3 reads it"),
    Mutation("spec", "gpulease/core/yaml_scalars.py",
             "    if math.isfinite(value) and value.is_integer() and abs(value) < _GO_JSON_PLAIN_FLOAT:",
             "    if False:", YAML, "a whole float arrives as an integer, as through the Pulumi CLI's JSON"),
    Mutation("spec", "gpulease/core/inputfile.py",
             "_StrictConstructor.add_constructor(_TAGS[yaml_scalars.OUT_OF_RANGE], _out_of_range)",
             "_StrictConstructor.add_constructor(_TAGS[yaml_scalars.OUT_OF_RANGE], SafeConstructor.construct_yaml_str)",
             YAML, "a number beyond 64 bits is refused, not read as text"),
    # --- catalog overrides ----------------------------------------------------------------------------------
    Mutation("spec", "gpulease/core/catalog/models.py", "HOURLY_PRICE_FLOOR = PRICE_ITEM_FLOOR", "HOURLY_PRICE_FLOOR = 0.0", CATALOG,
             "an instance-hour price below $0.000001 (1e-300) is refused"),
    Mutation("spec", "gpulease/core/catalog/models.py", "PRICE_ITEM_FLOOR = 1e-6", "PRICE_ITEM_FLOOR = 0.0", CATALOG,
             "a price item between 0 and $0.000001 is refused"),
    Mutation("spec", "gpulease/core/catalog/models.py", "    if value > latest:", "    if False:", CATALOG,
             "a price date in the future (9999-12-31) is refused"),
    Mutation("spec", "gpulease/core/catalog/loader.py", "                if (section, key) in in_this_file:",
             "                if False:", CATALOG, "the same row twice in one override file is refused"),
    Mutation("spec", "gpulease/core/catalog/loader.py", "allow_nan=True), strict=True)", "allow_nan=True), strict=False)",
             CATALOG, "a price of true is not 1 (strict catalog rows)"),
]
