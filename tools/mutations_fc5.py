"""``make mutate`` rows for skipped applies run offline: side effects refused, ``Output.all``'s shape, an interrupt
named at its line, an apply not seen into partial on its own, and a node group on a template made elsewhere."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "fc5"
OFFLINE = ("tests/review/test_skipped_applies_offline.py",)
SA = "gpulease/review/skipped_applies.py"
GUARD = "gpulease/review/offline_guard.py"

MUTATIONS: list[Mutation] = [
    Mutation(AREA, SA, "            with refusing_side_effects():  # offline_guard",
             "            with allowing_side_effects():  # offline_guard", OFFLINE,
             "a callback run offline runs under the side-effect guard"),
    Mutation(AREA, GUARD, " or (event == \"open\" and _writes(args)) or (",
             " or (", OFFLINE, "open for writing is refused while a callback runs offline"),
    Mutation(AREA, GUARD, "    if isinstance(flags, int) and flags & WRITE_FLAGS:\n        return True",
             "    if False:\n        return True", OFFLINE, "os.open with create or write flags is a write"),
    Mutation(AREA, SA, "            return data.result().value if data.result().is_known else self.value(raw)",
             "            return data.result().value if data.result().is_known else rpc.UNKNOWN", OFFLINE,
             "a nested Output.all's part is read as a list too"),
    Mutation(AREA, SA, "            runs.run(func, site_text(location), runs.value(self))",
             "            runs.run(func, site_text(location))",
             OFFLINE, "Output.all's callback gets a list or dict of markers"),
    Mutation(AREA, SA, "        except BaseException as exc:  # KeyboardInterrupt",
             "        except ArithmeticError as exc:  # KeyboardInterrupt", OFFLINE,
             "a KeyboardInterrupt in a callback is one line at its file:line"),
    Mutation(AREA, SA, "        if self.rendering is not None:\n            self.rendering.unseen = True",
             "        if False:\n            self.rendering.unseen = True", OFFLINE,
             "an apply not seen into is partial with nothing else registered"),
    Mutation(AREA, "gpulease/review/render.py", "        return self.error is not None and (bool(self.resources) or self.unseen)",
             "        return self.error is not None and bool(self.resources)", OFFLINE,
             "Rendering.partial reads unseen"),
    Mutation(AREA, "gpulease/review/unknown_compute.py",
             "        if me is None or not templates_of(me, regs)[1]:", "        if True:", OFFLINE,
             "a node group on a template no resource of the program is, is partial"),
]
