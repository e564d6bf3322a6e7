"""``make mutate`` rows for the instance side's state, resumption, verification, bounds and heartbeat checks (area
``instance``): each edit removes or widens one check, and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

STATE = ("tests/instance/test_instance_state.py",)
IDLE = ("tests/instance/test_idle_after_setup.py",)
VERIFY = ("tests/instance/test_verify_hostile.py",)
RUN = ("tests/instance/test_run_job.py",)
BOUNDS = ("tests/instance/test_bounds.py",)
CLUSTER = ("tests/instance/test_cluster_launch.py",)
NOTICE = ("tests/instance/test_cluster_notice.py",)
BEAT = ("tests/instance/test_heartbeat_disks.py",)
HEARTBEAT = ("tests/instance/test_heartbeat.py",)
GPU = ("tests/instance/test_gpu_query.py",)
MANIFEST = ("tests/instance/test_manifest.py",)
FAULTS = ("tests/instance/test_watchdog_faults.py",)
HOOKS = ("tests/instance/test_example_hooks.py",)

MUTATIONS = [
    # -- whose state: a new instance id starts clean, the same id resumes --
    Mutation("instance", "instance/instance_state.py", "        if damage is None and owner == instance and boots:\n",
             "        if damage is None and boots:\n", STATE, "a new instance id never resumes another instance's state"),
    Mutation("instance", "instance/instance_state.py", "        moved = _move_aside(state_dir, owner, boot)\n",
             "        moved = []\n", STATE, "a new instance id moves the old instance's files aside"),
    Mutation("instance", "instance/instance_state.py",
             "        if on_new_instance is not None and (moved or owner is not None):",
             "        if False:", STATE, "a new instance id forgets the old instance's authorized key"),
    Mutation("instance", "instance/instance_state.py",
             '    lines = [k.strip() for k in keys if k.strip().startswith(("ssh-", "ecdsa-", "sk-"))]',
             "    lines = [k.strip() for k in keys] + ['old-key']", STATE,
             "only the keys this instance's metadata lists are trusted"),
    Mutation("instance", "instance/instance_state.py", "    if info.st_mode & 0o170000 != 0o100000:\n        raise OSError",
             "    if False:\n        raise OSError", STATE, "authorized_keys is never written through a link"),
    Mutation("instance", "instance/instance_state.py",
             "        end = now if entry.get(\"boot\") == boot else epoch(entry.get(\"lastAlive\")) or start",
             "        end = now", STATE, "the spend counts running time only, not the stopped interval"),
    Mutation("instance", "instance/instance_state.py", "    if instance is None:\n        return Claim(None, boot,",
             "    if False:\n        return Claim(None, boot,", STATE, "an unreadable instance id moves nothing"),
    Mutation("instance", "instance/instance_state.py", "        if info.st_mode & 0o170000 != 0o100000:\n            raise StateFileError",
             "        if False:\n            raise StateFileError", STATE, "state files are read as regular files only"),
    # -- idle from the end of the setup --
    Mutation("instance", "instance/idle_rule.py", '        if waiting is not None and waiting.event == "setup-running":',
             "        if False:", IDLE, "idle time is not counted while the bootstrap and verify run"),
    Mutation("instance", "instance/idle_rule.py", "        if mono >= self.setup_deadline:",
             "        if False:", IDLE, "a bootstrap that never reports does not keep the instance alive"),
    Mutation("instance", "instance/instance_state.py",
             '    if progress.get("boot") != boot or number(progress.get("bootstrap")) is None:',
             '    if number(progress.get("bootstrap")) is None:', IDLE, "a progress mark of an earlier boot does not count"),
    Mutation("instance", "instance/instance_state.py",
             '    return not needs_verify or number(progress.get("verify")) is not None',
             "    return True", IDLE, "with a verification, idle waits for it too"),
    # -- verify, the job and the resume contract --
    Mutation("instance", "instance/run_job.py",
             '    if earlier.get("passed") is True and instance and earlier.get("instanceId") == instance:',
             '    if earlier.get("passed") is True:', VERIFY, "a verify pass recorded by another instance is not trusted"),
    Mutation("instance", "instance/verify.py", "    if user.pw_uid == 0:\n        raise RunAsError",
             "    if False:\n        raise RunAsError", VERIFY, "verify and the job never run as root"),
    Mutation("instance", "instance/verify.py", "    if saved is not None and step != saved:",
             "    if saved is not None and step < saved:", VERIFY, "the resumed step must equal the checkpoint's"),
    Mutation("instance", "instance/verify.py", '    if not re.fullmatch(rf"[0-9]{{1,{STEP_DIGITS}}}", text):',
             "    if False:", VERIFY, "a step is 1 to 18 ASCII digits (5,000 digits or a superscript is refused)"),
    Mutation("instance", "instance/verify.py", '        end = data.rfind(b"\\n") + 1\n',
             "        end = len(data)\n", VERIFY, "only complete lines of the job's output are read"),
    Mutation("instance", "instance/verify.py", "        left = process_tree.end_all(self.proc.pid, self.token)",
             "        left = set()", VERIFY, "a daemon that left with setsid is ended with the run"),
    Mutation("instance", "instance/verify.py", "        return _verify(settings, speed)\n    except Exception as exc:",
             "        return _verify(settings, speed)\n    except StepError as exc:", VERIFY,
             "every failure of verify ends in a verify.json saying why"),
    Mutation("instance", "instance/run_job.py", "        if not_ready:\n", "        if False:\n", RUN,
             "the job does not start when the bootstrap is not ready on this boot"),
    Mutation("instance", "instance/run_job.py", '    env["GPULEASE_RESUMED"] = "1"\n', "    return env\n", RUN,
             "a resumed boot gives the job its resume contract"),
    # -- the bounds --
    Mutation("instance", "instance/bounds.py", '"nvidia_smi_setup", "cli_install", "secret_read", "stage", "torch_probes", "bucket_check", "peer_wait",',
             '"nvidia_smi_setup", "cli_install", "secret_read", "torch_probes", "bucket_check", "peer_wait",', BOUNDS,
             "the bootstrap unit's timeout covers the stage's own deadline"),
    Mutation("instance", "instance/bounds.py", "    if isinstance(given, (int, float)) and not isinstance(given, bool) and 0 < given < 1e9:",
             "    if given is not None:", BOUNDS, "a bound from the settings is a finite positive number"),
    # -- the launcher, the cluster notices, the clock --
    Mutation("instance", "instance/cluster.py", "    if missing:\n        raise ValueError", "    if False:\n        raise ValueError",
             CLUSTER, "an empty cluster.env is one line, not a traceback"),
    Mutation("instance", "instance/cluster.py", '        lines.append("export " + " ".join(values))',
             "        pass", CLUSTER, "cluster.env exports its values to what a sourcing shell starts"),
    Mutation("instance", "instance/cluster.py", "        thread.join(max(0.0, end - time.monotonic()))",
             "        thread.join()", NOTICE, "telling the peers of a spot notice is bounded (a hung peer too)"),
    Mutation("instance", "instance/watchdog.py", '        if self._guarded("sync", self.sync.due, mono):', '        if self._guarded("sync", self.sync.due, self.clock.now()):',
             FAULTS, "a wall clock jumping back does not stop the periodic syncs (durations on the monotonic clock)"),
    # -- the heartbeat --
    Mutation("instance", "instance/budget_rule.py", "    return value if math.isfinite(value) and value >= 0 else None",
             "    return value", BEAT, "a NaN or infinite budget tag is no budget"),
    Mutation("instance", "instance/budget_rule.py", "    if not isinstance(found, list):\n        return []",
             "    if False:\n        return []", BEAT, "budget_warned that is not a list reads as none warned"),
    Mutation("instance", "instance/disk_space.py", "        if mount == self.data and newest_size and free < self.factor * newest_size:",
             "        if False:", BEAT, "a checkpoint that would fill the disk warns"),
    Mutation("instance", "instance/disk_space.py", "            elif mount not in self.warned:",
             "            elif True:", BEAT, "a disk warning is given once, not at every beat"),
    Mutation("instance", "instance/starved_rule.py", "        if mean < self.idle or mean >= self.threshold:",
             "        if mean >= self.threshold:", BEAT, "an idle GPU is not starved"),
    Mutation("instance", "instance/gpu_query.py", "            return 100.0 if 100 * used / self.memory_total > MIG_BUSY_MEMORY_PERCENT else 0.0",
             "            return 0.0", GPU, "a MIG GPU whose memory is in use is not idle"),
    Mutation("instance", "instance/gpu_query.py", "        if not all(ok for ok, _ in fields):\n            continue",
             "        if False:\n            continue", GPU, "a stderr line mixed into nvidia-smi's output is skipped"),
    Mutation("instance", "stacks/Pulumi.aws-lora-7b.yaml", "hook: pkill -USR1 -f '[t]rain.py'",
             "hook: pkill -USR1 -f train.py", HOOKS, "the example hook's pattern cannot match its own shell"),
    # -- secrets --
    Mutation("instance", "instance/manifest.py", "    text = _AUTH_HEADER.sub(", "    text = (lambda *a: a[1])(", MANIFEST,
             "an Authorization header's credential is redacted"),
    Mutation("instance", "instance/manifest.py", '|[^/\\s?#]*@)")\n', '|[^/\\s?#@]*@)")\n', MANIFEST,
             "a URL's userinfo is redacted up to the last @"),
]
