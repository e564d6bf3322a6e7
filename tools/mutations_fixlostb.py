"""``make mutate`` rows for the idle gate read from the boot's record (not the instance id), strict state-file
numbers, rules guarded one by one, ASCII-only header digits, the listed-size cap, the body past its listed size,
per-source containment, hidden characters, duplicates and one name in two Unicode forms in hub listings."""

from __future__ import annotations

from tools.mutation_row import Mutation

GATE = ("tests/instance/test_idle_gate_lost.py",)
NUMBERS = ("tests/instance/test_staging_hostile_numbers.py",)
LISTINGS = ("tests/instance/test_staging_hostile_listings.py",)

MUTATIONS = [
    Mutation("fixlostb", "instance/instance_state.py", '    if not settings.get("idle_after_setup"):\n        return None, None',
             '    if not settings.get("idle_after_setup") or True:\n        return None, None', GATE,
             "the idle gate waits for the setup whether or not the instance id was read at start"),
    Mutation("fixlostb", "instance/instance_state.py", "        if len(literal) > MAX_NUMBER_CHARS:",
             "        if False:", GATE, "a state file's number longer than MAX_NUMBER_CHARS is kept as text, read as unknown"),
    Mutation("fixlostb", "instance/instance_state.py", "        return literal if number(value) is None else value",
             "        return value", GATE, "a state file's non-finite number is kept as text, read as unknown"),
    Mutation("fixlostb", "instance/watchdog.py", '            if self._guarded("idle", self.check_idle, mono):',
             "            if self.check_idle(mono):", GATE, "an idle check that raises does not stop the periodic sync"),
    Mutation("fixlostb", "instance/budget_rule.py", "    return [t for t in (number(x) for x in found) if t is not None]",
             "    return [float(t) for t in found if isinstance(t, (int, float)) and not isinstance(t, bool)]", GATE,
             "warned thresholds are read overflow-safe"),
    Mutation("fixlostb", "instance/staging_http.py", "    return 0 < len(text) <= most and text.isascii() and text.isdigit()",
             "    return text.isdigit()", NUMBERS, "Retry-After and Content-Length take ASCII digits only"),
    Mutation("fixlostb", "instance/staging_hubs.py", "    if not 0 <= value <= MAX_FILE_BYTES:", "    if value < 0:",
             NUMBERS, "a listed size past 16 TiB is refused before any space is reserved"),
    Mutation("fixlostb", "instance/staging_fetch.py",
             "and resp.length is None and read_into(resp, self._buffer()[:1]):",
             "and resp.length is None and False:", NUMBERS,
             "a body going on past the listing's size fails the source"),
    Mutation("fixlostb", "instance/staging.py",
             "        except Exception as exc:  # one source's unforeseen failure",
             "        except StagingError as exc:  # one source's unforeseen failure", NUMBERS,
             "one source's unforeseen exception fails that source alone"),
    Mutation("fixlostb", "instance/staging_files.py", "    bad = next((c for c in rel if hidden(c)), None)",
             "    bad = None", LISTINGS, "a listed path with a hidden character is refused"),
    Mutation("fixlostb", "gpulease/transfer/s3.py", "        except BotoCoreError:  # an endpoint that cannot be reached",
             "        except ZeroDivisionError:  # an endpoint that cannot be reached",
             ("tests/transfer/test_push_pull.py",),
             "push to an endpoint that cannot be reached is one line, exit 2"),
    Mutation("fixlostb", "gpulease/transfer/files.py", "    if longest > NAME_MAX:  # pull writes each folder name",
             "    if False:  # pull writes each folder name", ("tests/transfer/test_push_to_names.py",),
             "push --to refuses a folder name pull could not write (over 255 bytes)"),
    Mutation("fixlostb", "gpulease/transfer/files.py", "    shown = \"'\" + printable(to[:60]) + \"'\"",
             "    shown = repr(to[:60])", ("tests/transfer/test_push_to_names.py",),
             "a refused --to is shown escaped, never with a Hangul filler raw"),
    Mutation("fixlostb", "instance/staging_hubs.py", "        if job.rel in seen:", "        if False:", LISTINGS,
             "a path listed twice is refused before any download"),
    Mutation("fixlostb", "instance/staging_hubs.py", "            if other != path:", "            if False:", LISTINGS,
             "one name listed in two Unicode forms (NFC and NFD) is refused before any download"),
    Mutation("fixlostb", "instance/staging_hubs.py",
             '        for path in ("/".join(parts[:n]) for n in range(1, len(parts) + 1)):',
             "        for path in (job.rel,):", LISTINGS, "a folder named in two Unicode forms is refused too"),
]
