"""``make mutate`` rows for the refusals a person reads: the file as typed, a catalog file's own problem never under
a stack field, a catalog folder that is a file refused, user values capped, no line ending in spaces."""

from __future__ import annotations

from tools.mutation_row import Mutation

REFUSALS = ("tests/cli/test_refusals.py",)
WIDTHS = ("tests/core/test_terminal.py",)

MUTATIONS = [
    Mutation("messages", "gpulease/review/engine.py", "        os.environ[STACK_FILE_ENV] = shown_path(stack_file)\n",
             "        pass\n", REFUSALS, "a spec error the program finds names the stack file as the user typed it"),
    Mutation("messages", "components/build.py", "        except CatalogFileError:\n            raise",
             "        except ZeroDivisionError:\n            raise", REFUSALS,
             "a bad catalog override row is the file's error, never reported under the stack's gpu field"),
    Mutation("messages", "gpulease/core/catalog/user_folder.py", "    elif problem := named_folder_problem(folder):",
             "    elif problem := None:", REFUSALS, "a default catalog folder that is a file is refused, never skipped"),
    Mutation("messages", "gpulease/core/shown.py", "    if len(text) <= limit:\n        return text",
             "    if True:\n        return text", REFUSALS, "a value the user gave comes back capped at 80 characters"),
    Mutation("messages", "gpulease/core/terminal.py", '        out = "".join(_TRAILING.sub(r"\\1", line) + "\\n"',
             '        out = "".join(line + "\\n"', WIDTHS, "a report's lines never end in spaces"),
]
