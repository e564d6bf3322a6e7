"""``make mutate`` rows for what the pack cannot see being reported: template intrinsics judged by every value
or reported, unreadable templates, attribute-based selection, launching schedules and commands, JSON text and
deep inputs scanned, scheduled resizes priced, accept lists by URN, one definition of unsafe characters,
partial reviews' hourly cost, engine-form URNs."""

from __future__ import annotations

from tools.mutation_row import Mutation

FAIL = ("tests/policies/test_fail_closed.py",)
PRINTABLE = ("tests/review/test_printable.py",)
PARTIAL = ("tests/review/test_partial_and_urns.py",)
AREA = "fixfailclosed"
CFN = "gpulease/core/compute/cloudformation.py"
UNITS = "gpulease/core/compute/units.py"

MUTATIONS: list[Mutation] = [
    Mutation(AREA, CFN, "            found = self.candidates(arg[1], depth + 1) + self.candidates(arg[2], depth + 1)",
             "            found = self.candidates(arg[2], depth + 1)", FAIL, "both branches of a template's Fn::If are judged"),
    Mutation(AREA, CFN, "            return list(declared[\"AllowedValues\"])", "            raise _OpaqueError", FAIL,
             "a parameter's AllowedValues are judged"),
    Mutation(AREA, UNITS, "    opaque = any(_matches(p, where) for where in res.opaque for p in paths)",
             "    opaque = False", FAIL, "a type chosen by an unresolvable intrinsic is reported"),
    Mutation(AREA, CFN, "        if cfn_type in NESTED:", "        if False:", FAIL, "a nested stack is unreadable"),
    Mutation(AREA, CFN, "    if doc.get(\"Transform\") is not None:", "    if False:", FAIL,
             "a template's Transform macro makes it unreadable"),
    Mutation(AREA, CFN, "        if given is not None and (not isinstance(given, Mapping) or _intrinsic(given) is not None):",
             "        if given is not None and not isinstance(given, Mapping):", FAIL,
             "Properties that are an intrinsic are unreadable, never a traceback"),
    Mutation(AREA, CFN, "        doc = json.loads(body, object_pairs_hook=_no_duplicates)", "        doc = json.loads(body)",
             FAIL, "a JSON template with a key given twice is unreadable"),
    Mutation(AREA, CFN, "    size = len(body.encode(\"utf-8\", \"surrogatepass\"))", "    size = len(body)", FAIL,
             "the template body limit counts bytes"),
    Mutation(AREA, "gpulease/core/compute/requirements.py", "    if isinstance(least, float) and least >= 1:",
             "    if False:", FAIL, "an accelerator count minimum is GPU compute"),
    Mutation(AREA, "policies/guardrails/unjudged.py", "    if unit.open_selection is not None:", "    if False:", FAIL,
             "attribute-based selection that does not exclude accelerators is reported"),
    Mutation(AREA, "gpulease/core/compute/launch_calls.py", "    if hits := gpu_mentions(request):", "    if hits := []:",
             FAIL, "a schedule launching GPUs is reported"),
    Mutation(AREA, "gpulease/core/compute/launch_calls.py",
             "            if size is UNKNOWN or (isinstance(size, float) and size > 0):", "            if False:", FAIL,
             "a schedule raising a group's size is reported"),
    Mutation(AREA, "gpulease/core/compute/launch_calls.py", "        if found := CLI_LAUNCH.search(text):",
             "        if found := None:", FAIL, "a command running a launching CLI call is reported"),
    Mutation(AREA, "gpulease/core/compute/scan.py",
             "            hits.append((path, f\"inputs nested more than {MAX_DEPTH} levels deep, too deep to scan\"))",
             "            pass", FAIL, "inputs too deep to scan are reported"),
    Mutation(AREA, "gpulease/core/compute/scan.py", "                elif (held := embedded_json(child)) is not None:",
             "                elif False:", FAIL, "JSON text inputs are scanned"),
    Mutation(AREA, UNITS, "    elif scheduled is not None and isinstance(own := form.capacity(res.props), float) and scheduled > own:",
             "    elif False:", FAIL, "a scheduled action raising a group sets its worst case"),
    Mutation(AREA, "gpulease/core/cost/estimate.py",
             "        pricer.add(r, \"instances it launches (price unknown)\", None, compute=True)", "        pass", FAIL,
             "a launching schedule's instances are unpriced"),
    Mutation(AREA, "policies/guardrails/common.py", "    return f\"{parts[2].removeprefix(ROOT_STACK)}::{parts[3]}\"",
             "    return parts[3]", FAIL, "an accept entry's URN tail names the parent types"),
    Mutation(AREA, "policies/guardrails/budget.py", '    return name == "default" or name.startswith("default_")',
             '    return name == "default"', FAIL, "the engine's default provider names the budget's region"),
    Mutation(AREA, "gpulease/review/report.py", "                       f\"{_cell(worst)} |", "                       f\"{worst} |",
             PRINTABLE, "the markdown cost table escapes its unknown worst case"),
    Mutation(AREA, "gpulease/core/printable.py", "sorted(UNSAFE + INVISIBLE)",
             "sorted(UNSAFE[:2] + INVISIBLE)", PRINTABLE, "format characters are escaped"),
    Mutation(AREA, "gpulease/review/engine.py", "            _partial(cost.hourly_reason), _partial(cost.expected_reason),",
             "            cost.hourly_reason, _partial(cost.expected_reason),", PARTIAL,
             "a partial review's hourly cost is unknown"),
    Mutation(AREA, "gpulease/review/render.py", "        if qualified and qualified != ROOT_STACK_TYPE:",
             "        if qualified:", PARTIAL, "a top-level resource's URN has no root stack type"),
]
