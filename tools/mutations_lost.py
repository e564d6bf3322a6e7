"""``make mutate`` rows for the pull's bounds, the names push and pull refuse, the long names staging refuses, the
job agent's strict state reader, the bootstrap's order, the end of the setup for the idle rule, the IPv6 pattern
and the Elastic IP's interface."""

from __future__ import annotations

from tools.mutation_row import Mutation

PULL = ("tests/transfer/test_pull_bounded.py",)
LOOP = (*PULL,
        "tests/instance/test_staging_hostile.py::test_a_listing_whose_next_page_loops_fails_instead_of_reading_forever")
NAMES = ("tests/transfer/test_destinations.py", "tests/components/spec/test_hidden_and_long_names.py")
LONG = ("tests/instance/test_staging_long_names.py", "tests/components/spec/test_hidden_and_long_names.py")
AGENT = ("tests/instance/test_job_agent_parts.py",)
SETUP = ("tests/instance/test_setup_end.py",)
ORDER = ("tests/instance/test_bootstrap_order.py",)
PARITY = ("tests/components/spec/test_schema_parity.py",)
PRECONDITIONS = ("tests/review/test_replacement_preconditions.py",)

MUTATIONS = [
    Mutation("lost", "instance/bounds.py", "        if key in self.seen:", "        if False:", LOOP,
             "a listing whose next page was already read is a loop (pull and staging)"),
    Mutation("lost", "instance/bounds.py", "        if len(self.seen) >= self.max_pages:", "        if False:", PULL,
             "a listing past the page cap is refused (pull and staging)"),
    Mutation("lost", "gpulease/transfer/bounded.py", '            self.check(f"downloading {key}")', "            pass",
             PULL, "a download past the pull's deadline is cut off"),
    Mutation("lost", "components/spec/text.py", '        if hidden(char):',
             '        if unicodedata.category(char) == "Cc":', NAMES, "format characters (U+202E) are refused in to: and --to"),
    Mutation("lost", "components/spec/text.py", "    if text != text.strip():", "    if False:", NAMES,
             "a space at either end of to: and --to is refused"),
    Mutation("lost", "gpulease/cli/pull.py", "    hidden = hidden_character(text)\n    if hidden:",
             "    hidden = None\n    if hidden:", ("tests/transfer/test_destinations.py",),
             "pull's --dest and PREFIX refuse what does not read as written"),
    # The spec's own length check in components/spec/workflow.py (_fits) is reached only after parse_source, whose
    # path rule refuses the same names first: the rule's file-name limit is what keeps the room.
    Mutation("lost", "gpulease/core/datasources.py", "FILE_NAME_MAX = NAME_MAX - len(LONGEST_SUFFIX)\n",
             "FILE_NAME_MAX = NAME_MAX\n", LONG, "a one-file source's name fits NAME_MAX with .part.json"),
    Mutation("lost", "instance/staging_files.py", '    if len(longest.encode("utf-8", "surrogatepass")) > NAME_LIMIT:', "    if False:", LONG,
             "a listed name over NAME_MAX with .part.json fails its source"),
    Mutation("lost", "instance/staging_files.py", "    if len(rel.encode()) > REL_LIMIT:", "    if False:", LONG,
             "a listed path past PATH_MAX fails its source"),
    Mutation("lost", "instance/job_agent.py", "        st = ca.load_settings(path)\n    except ca.SettingsError as exc:",
             "        st = ca.load_settings(path)\n    except OSError as exc:", AGENT,
             "a job state record the strict reader refuses is left alone, the other jobs go on"),
    Mutation("lost", "instance/job_agent.py", "                          or (isinstance(value, int) and not isinstance(value, bool) and not 0 <= value < 2**62)):",
             "                          or False):", AGENT, "a negative offset in a job record is refused"),
    Mutation("lost", "instance/job_agent.py", "        if key not in st:", "        if False:", AGENT,
             "a job record without its phase's fields is refused"),
    Mutation("lost", "instance/instance_state.py",
             "             and not (boot is not None and _of_boot(os.path.join(state_dir, n), boot))]", "             ]",
             SETUP, "a new instance's claim keeps this boot's records"),
    Mutation("lost", "instance/idle_rule.py", "                and self.running is not None and not self.running(pid):",
             "                and False:", SETUP, "a bootstrap that died unreported ends the wait"),
    Mutation("lost", "instance/idle_rule.py", "        if due is not None and self.wall() >= due:", "        if False:",
             SETUP, "the setup wait is bounded from the bootstrap unit's own start"),
    Mutation("lost", "instance/instance_setup.py", "    ensure_storage_cli(settings)  # what staging needs exists first\n",
             "", ORDER, "the bucket CLI is installed before staging"),
    Mutation("lost", "components/spec/sections.py", "            if slash and len(prefix) > 1 and prefix.startswith(\"0\"):",
             "            if False:", PARITY, "a prefix length with a leading zero is refused, as the schema does"),
    Mutation("lost", "gpulease/review/preconditions.py", "        if inst is None:\n            found.append(f\"{eip.name}: bound",
             "        if False:\n            found.append(f\"{eip.name}: bound", PRECONDITIONS,
             "an Elastic IP is bound to an instance's primary interface"),
    Mutation("lost", "gpulease/review/preconditions.py", "        if len(eips) != 1:", "        if False:", PRECONDITIONS,
             "an EFA node has exactly one Elastic IP on its primary interface"),
    Mutation("lost", "gpulease/review/engine.py", "        verdict.violations.extend(quota_advisories(rendering))",
             "        pass", PRECONDITIONS, "the quota advisories are in the plan output"),
]
