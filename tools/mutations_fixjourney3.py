"""``make mutate`` rows for the user's journey: the instance's records read strictly (a verdict is a real
true/false, ``failed`` texts, the depth bounded), unreadable stack outputs one line, a closed pipe or a full disk
on stdout."""

from __future__ import annotations

from tools.mutation_row import Mutation

CHANNEL = ("tests/ephemeral/test_channel.py",)
RECORDS = ("tests/live/test_records.py",)
OUTPUTS = ("tests/cli/test_outputs_unreadable.py",)

MUTATIONS = [
    Mutation("fixjourney3", "gpulease/ephemeral/records.py", "    if not isinstance(doc[key], bool):", "    if False:",
             CHANNEL + RECORDS, "a record's verdict is a real true or false, never a text or a null"),
    Mutation("fixjourney3", "gpulease/ephemeral/records.py", '    if key not in doc:\n', "    if False:\n",
             CHANNEL + RECORDS, "a record without its verdict is unreadable, never ready"),
    Mutation("fixjourney3", "gpulease/ephemeral/records.py", '    if "failed" in doc and not _texts(doc["failed"]):',
             "    if False:", CHANNEL + RECORDS, "a record's failed checks are a list of texts"),
    Mutation("fixjourney3", "gpulease/ephemeral/records.py", "    if too_deep(data):", "    if False:",
             CHANNEL + RECORDS, "a record nests at most MAX_DEPTH levels"),
    Mutation("fixjourney3", "gpulease/ephemeral/records.py", "                if not _number(g.get(key)):",
             "                if False:", RECORDS, "a heartbeat's GPU figures are numbers"),
    Mutation("fixjourney3", "gpulease/ephemeral/channel.py", '                self._checked("ready", key, marker)\n',
             "\n", CHANNEL, "wait_ready takes only a checked ready marker"),
    Mutation("fixjourney3", "gpulease/ephemeral/backend.py",
             "        except (ValueError, TypeError, LookupError, AttributeError) as exc:",
             "        except ZeroDivisionError as exc:", OUTPUTS, "unreadable stack outputs are one line, exit 1"),
]
MUTATIONS += [
    Mutation("fixjourney3", "gpulease/cli/stdout_guard.py", "        except BrokenPipeError:\n            self.closed_pipe = True",
             "        except ZeroDivisionError:\n            self.closed_pipe = True", ("tests/cli/test_stdout_pipes.py",),
             "a closed pipe on stdout ends quietly with the command's own code"),
    Mutation("fixjourney3", "gpulease/cli/main.py", "    except stdout_guard.OutputWriteError as exc:",
             "    except ZeroDivisionError as exc:", ("tests/cli/test_stdout_pipes.py",),
             "a write error on stdout is one line, exit 1"),
]
MUTATIONS += [
    Mutation("fixjourney3", "gpulease/lifecycle/capacity.py", "    if not found.blocks:\n        return None",
             "    if True:\n        return None", ("tests/cli/test_up.py",),
             "a capacity fallback the review would refuse (its worst case over budgetUsd) is never tried"),
]
MUTATIONS += [
    Mutation("fixjourney3", "gpulease/lifecycle/answers.py", "        if not stat.S_ISREG(mode):", "        if False:",
             ("tests/cli/test_init.py",), "init never opens a --public-key that is not a regular file"),
]
