"""``make mutate`` rows for the GPU reading on an older driver or a bare MIG line, the checkpoint signal's launcher
skip, the hub token error, the preconditions in the plan, the baked image's timeout and the GPU vCPU row."""

from __future__ import annotations

from tools.mutation_row import Mutation

OLD_DRIVER = ("tests/instance/test_gpu_query_old_driver.py",)
SIGNAL = ("tests/instance/test_checkpoint_signal.py",)
TOKEN = ("tests/instance/test_staging.py",)
PLAN = ("tests/review/test_plan_preconditions.py",)

MUTATIONS = [
    Mutation("fixclouds3", "instance/idle_rule.py",
             "    if code is None or (code == 0 and not gpu_query.INVALID_FIELD.search(out)):",
             "    if True:", OLD_DRIVER, "a driver refusing mig.mode.current is asked the plain query"),
    Mutation("fixclouds3", "instance/gpu_query.py", "        if values[0] is None and values[1] is None and not mig:",
             "        if values[0] is None and values[1] is None:", OLD_DRIVER,
             "a MIG line reporting nothing else is kept"),
    Mutation("fixclouds3", "instance/idle_rule.py", "        table = gpu_query.processes(text) if code == 0 else None",
             "        table = gpu_query.processes(text)", OLD_DRIVER,
             "a failed or timed-out processes query means busy"),
    Mutation("fixclouds3", "instance/idle_rule.py", "        index = gpu.index if gpu.index is not None else position",
             "        index = 0", OLD_DRIVER, "two MIG GPUs are told apart by their index"),
    Mutation("fixclouds3", "instance/watchdog_end.py", "        launchers = [pid for pid in matching if _launcher(_argv(self.s[\"proc_root\"], pid))]",
             "        launchers = []", SIGNAL, "the checkpoint signal never reaches torchrun"),
    Mutation("fixclouds3", "instance/watchdog_procs.py", "    if os.path.basename(argv[0]) in LAUNCHER_NAMES + SHELLS:",
             "    if False:", SIGNAL, "torchrun and wrapping shells count as launchers"),
    Mutation("fixclouds3", "instance/staging.py",
             "                raise StagingError(f\"the secret {secret} is a JSON object with {len(parsed)} key(s), {missing}; \"",
             "                raise StagingError(f\"the secret {secret} is a JSON object with keys {list(parsed)}, {missing}; \"",
             TOKEN, "a token secret's keys never reach the error"),
    Mutation("fixclouds3", "gpulease/review/engine.py",
             "        verdict.violations.extend(precondition_findings(rendering))", "        pass", PLAN,
             "the plan reports every violated precondition"),
    Mutation("fixclouds3", "gpulease/review/preconditions.py", 'MANDATORY = ("eip-through-interface",)', "MANDATORY = ()",
             PLAN, "an Elastic IP through a multi-interface instance fails the plan"),
    Mutation("fixclouds3", "gpulease/review/preconditions.py",
             "    return _waits_long_enough(r, IMAGE_DEFAULT_MINUTES, \"an image from the snapshot\")", "    return []",
             PLAN, "the baked image's create timeout is checked"),
    Mutation("fixclouds3", "components/alicloud/workflow.py",
             'opts=exp.opts(retain_on_delete=True, ignore_changes=["imageName", "description", "tags", "snapshotId"],\n'
             "                          custom_timeouts=pulumi.CustomTimeouts(create=snapshot_create_timeout(exp.spec.image.root_disk_gb))),",
             'opts=exp.opts(retain_on_delete=True, ignore_changes=["imageName", "description", "tags", "snapshotId"]),',
             PLAN, "the baked Alibaba Cloud image waits the snapshot's bound"),
    Mutation("fixclouds3", "gpulease/review/quota_rows.py", '    if not any(x.type.startswith("gpulease:") for x in r.resources):',
             "    if False:", PLAN, "the GPU vCPU row is said for the kit's stacks only"),
    Mutation("fixclouds3", "gpulease/review/quota_rows.py", "    if not uncounted:\n        return lines",
             "    if True:\n        return lines", PLAN, "a kit stack with its own fleet is told at least"),
]
