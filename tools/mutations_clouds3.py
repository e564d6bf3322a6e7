"""``make mutate`` rows (area ``clouds3``): a MIG GPU judged slice by slice (a process on any slice keeps it busy,
unreadable processes never make it idle); the final sequence's log copy, and its bound; the plan's GPU vCPU quota
advisory; the image rehearsal (a new instance id on a baked root starts clean, its deadline from its own stack)."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "clouds3"
MIG = ("tests/instance/test_gpu_query_mig.py",)
FLUSH = ("tests/instance/test_log_flush.py",)
QUOTA = ("tests/review/test_gpu_quota_advisory.py",)
IMAGE = ("tests/integration/test_image_rehearsal.py",)

MUTATIONS = [
    # -- MIG --
    Mutation(AREA, "instance/gpu_query.py", '        mig = len(parts) > 3 and parts[3].strip().lower() == "enabled"',
             "        mig = False", MIG, "a GPU whose mig.mode.current reads Enabled is judged by its slices"),
    Mutation(AREA, "instance/idle_rule.py", "        utilization[position] = 100.0 if busy else 0.0",
             "        utilization[position] = 0.0", MIG, "a MIG GPU with a process on a slice is busy"),
    Mutation(AREA, "instance/idle_rule.py",
             "            utilization[position] = 100.0\n            notes.append(f\"MIG GPU {index}: its processes",
             "            utilization[position] = 0.0\n            notes.append(f\"MIG GPU {index}: its processes", MIG,
             "a MIG GPU whose processes cannot be read counts as busy, never idle"),
    Mutation(AREA, "instance/gpu_query.py", "    if start is None:\n        return None",
             "    if start is None:\n        return []", MIG, "no Processes table is not \"nothing runs\""),
    Mutation(AREA, "instance/gpu_query.py", "    return bool(own), f\"MIG GPU {gpu}: \"",
             "    return any(p.gi in known for p in own), f\"MIG GPU {gpu}: \"", MIG,
             "a process outside the listed slices still makes the MIG GPU busy"),
    # -- the last log lines before the end --
    Mutation(AREA, "instance/watchdog_end.py", "        self.final_sync(window_end)\n        self.flush_logs(window_end)\n"
             "        if not settled and cause", "        self.final_sync(window_end)\n        if not settled and cause", FLUSH,
             "the final sequence copies the logs before the shutdown"),
    Mutation(AREA, "instance/log_upload.py",
             "            while self.job.poll() is None and time.monotonic() < min(end, started + each):",
             "            while self.job.poll() is None and time.monotonic() < started + each:", FLUSH,
             "a hung log copy never holds the shutdown past the flush bound"),
    # -- the plan's GPU vCPU quota --
    Mutation(AREA, "gpulease/review/engine.py", 'PLAN_QUOTAS = ("eip-quota", "gpu-vcpus")',
             'PLAN_QUOTAS = ("eip-quota",)', QUOTA, "the plan shows the GPU vCPU quota advisory"),
    Mutation(AREA, "gpulease/review/quota_rows.py", "sum(_vcpus(cloud, t) * n for t, n in types.items())",
             "sum(_vcpus(cloud, t) for t in types)", QUOTA, "the vCPUs a stack needs count every instance"),
    # -- the image rehearsal --
    Mutation(AREA, "instance/instance_state.py", "        moved = _move_aside(state_dir, owner, boot)\n",
             "        moved = []\n", IMAGE, "an instance from a baked image starts without the baker's records"),
    Mutation(AREA, "instance/deadline_rule.py", '        hours = st.number(self.s.get("max_runtime_hours"))',
             "        hours = 8.0", IMAGE, "the fallback deadline is this stack's own maxRuntimeHours"),
]
