"""The mutations ``make mutate`` applies to the safety code: small edits a careless change could make.

Each one must make at least one of its tests fail ("killed"); one that leaves them green is a survivor: a rule
no test pins. Add a group for new safety code by appending ``Mutation`` rows to ``MUTATIONS``, or in a module of its
own, ``tools/mutations_<area>.py`` defining ``MUTATIONS``, which is gathered here; each row names the fewest test
files that must kill it, so that an area runs in minutes.
``find`` must occur exactly once in ``path``; the runner reports a stale row otherwise.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from tools.mutation_row import Mutation

SPEC_TESTS = ("tests/components/spec/test_spec.py", "tests/components/spec/test_limits.py", "tests/components/spec/test_alicloud.py")
LOADER_TESTS = ("tests/integration/test_hostile_input.py", "tests/integration/test_hostile_cli.py")
POLICY_TESTS = ("tests/policies/test_network.py", "tests/policies/test_budget.py", "tests/policies/test_runtime.py")
# Foreign programs: the compute-form registry through the corpus, and the access rules.
FORM_TESTS = ("tests/policies/test_programs.py", "tests/policies/test_access.py", "tests/policies/test_exposure.py")
PRICE_TESTS = ("tests/core/test_catalog_dates.py", "tests/core/test_price_dates.py", "tests/catalog_refresh/test_writer.py")
# The reaper: the pure decisions first (fast), then the sweeps against moto / the Alibaba Cloud stand-in.
DECIDE_TESTS = ("tests/inventory/test_reap_rules.py", "tests/inventory/test_reap_decide.py")
AWS_SWEEP_TESTS = (*DECIDE_TESTS, "tests/inventory/test_reap_fresh_describe.py", "tests/inventory/test_reap_lookup.py")
ALI_SWEEP_TESTS = (*DECIDE_TESTS, "tests/inventory/test_alicloud_reap.py")
# The watchdog: its rules in-process with the accelerated clock, then the shared cloud access.
IDLE_TESTS = ("tests/instance/test_watchdog_rules.py", "tests/instance/test_watchdog_deadline_idle.py")
DEADLINE_TESTS = ("tests/instance/test_watchdog_deadline_idle.py", "tests/instance/test_watchdog_deadline_tag.py")
FAULT_TESTS = ("tests/instance/test_watchdog_faults.py",)
DEADLINE_SOURCE_TESTS = ("tests/instance/test_watchdog_deadline_api.py", "tests/instance/test_watchdog_deadline_tag.py")
DRIVER_TESTS = ("tests/instance/test_driver.py",)
ACCESS_TESTS = ("tests/instance/test_watchdog_rules.py", "tests/instance/test_cloud_access.py",
                "tests/instance/test_watchdog_metadata.py", "tests/instance/test_watchdog_storage_credentials.py")

MUTATIONS: list[Mutation] = [
    # --- the spec's guards ------------------------------------------------------------------------------------
    Mutation("spec", "gpulease/core/vocabulary.py", "MIN_SSH_PREFIX_V6 = 48", "MIN_SSH_PREFIX_V6 = 16", SPEC_TESTS,
             "IPv6 SSH sources wider than a /48 are refused"),
    Mutation("spec", "gpulease/core/vocabulary.py", "MIN_SSH_PREFIX_V4 = 16", "MIN_SSH_PREFIX_V4 = 8", SPEC_TESTS,
             "IPv4 SSH sources wider than a /16 are refused"),
    Mutation("spec", "components/spec/sections.py", 'if "%" in raw:', "if False:", SPEC_TESTS,
             "zone-scoped IPv6 sources are refused"),
    Mutation("spec", "components/spec/experiment.py", 'if self.market == "spot" and not self.checkpoints.enabled:', "if False:",
             SPEC_TESTS, "spot needs checkpoints"),
    Mutation("spec", "gpulease/core/model.py", "        allow_inf_nan=False,\n", "        allow_inf_nan=True,\n", SPEC_TESTS,
             "numbers are finite"),
    Mutation("spec", "components/spec/experiment.py", "if not first <= value.year <= last:", "if False:", SPEC_TESTS,
             "expiresAt within the years a deadline can be computed in"),
    Mutation("spec", "components/spec/sections.py", "if not POSIX_USER.match(user):", "if False:", SPEC_TESTS,
             "ssh.user is a POSIX user name"),
    Mutation("spec", "components/spec/experiment.py", "if len(builtin) + len(extra) > most:", "if False:", SPEC_TESTS,
             "tag count within the cloud's limit"),
    Mutation("spec", "components/spec/experiment.py", "if len(self.owner) > value_max:", "if False:", SPEC_TESTS,
             "owner fits a tag value"),
    Mutation("spec", "components/spec_rules.py", "if declared in self.key_types:", "if True:", SPEC_TESTS,
             "key types the cloud's ImportKeyPair refuses are refused"),
    Mutation("spec", "components/spec/keys.py", "key.key_size < MIN_RSA_BITS", "key.key_size < 1024", SPEC_TESTS,
             "RSA keys of at least 2048 bits"),
    Mutation("spec", "components/spec_rules.py", "if not explicit_deadline and minutes < floor:", "if False:",
             SPEC_TESTS, "runtime minimum per cloud"),
    Mutation("spec", "components/aws/spec.py", 'if iops is None and disk_type in ("io1", "io2"):', "if False:",
             SPEC_TESTS, "io1/io2 need iops"),
    Mutation("spec", "components/aws/spec.py", "elif iops is not None and iops > ratio * size_gb:", "elif False:",
             SPEC_TESTS, "IOPS per GiB"),
    Mutation("spec", "components/aws/spec.py", "if count > SG_RULES_PER_FAMILY:", "if False:", SPEC_TESTS,
             "SSH sources within the security-group rule quota"),
    Mutation("spec", "components/spec/experiment.py", "if pinned and pinned != zone:", "if False:", SPEC_TESTS,
             "a pinned zone other than the existing disk's is an error"),
    # --- the input boundary -----------------------------------------------------------------------------------
    Mutation("loader", "gpulease/core/inputfile.py", "if isinstance(event, AliasEvent):", "if False:", LOADER_TESTS,
             "YAML aliases are refused"),
    Mutation("loader", "gpulease/core/inputfile.py", "            if event.anchor is not None:", "            if False:",
             LOADER_TESTS, "YAML anchors are refused (no billion laughs)"),
    Mutation("loader", "gpulease/core/inputfile.py", "            if event.tag is not None:", "            if False:",
             LOADER_TESTS, "YAML tags are refused"),
    Mutation("loader", "gpulease/core/inputfile.py", "if key_node.value in seen:", "if False:", LOADER_TESTS,
             "duplicate keys are refused"),
    Mutation("loader", "gpulease/core/inputfile.py", "for test, label in _KINDS:", "for test, label in ():",
             LOADER_TESTS, "only regular files are read (a FIFO, a folder, a device are refused)"),
    Mutation("loader", "gpulease/core/inputfile.py", "    if size > max_bytes:", "    if False:", LOADER_TESTS,
             "input files are size-capped"),
    Mutation("loader", "gpulease/core/catalog/models.py", "Field(ge=0, allow_inf_nan=False)", "Field(allow_inf_nan=True)",
             LOADER_TESTS, "catalog prices are finite and not negative"),
    # --- the policy conditions --------------------------------------------------------------------------------
    Mutation("policy", "policies/guardrails/budget.py", "if number is None or number <= 0:",
             "if number is None or number < 0:", POLICY_TESTS, "a budget tag of 0 fails budget-tags"),
    Mutation("policy", "gpulease/core/resources.py", "return parsed if math.isfinite(parsed) else None",
             "return parsed", POLICY_TESTS, "nan/inf are not numbers"),
    Mutation("policy", "policies/guardrails/deadlines.py",
             "if not covering and len(mine) == 1 and needing == 1 and unmatched:",
             "if not covering and unmatched:", POLICY_TESTS,
             "one unmatched schedule covers a single GPU instance only"),
    Mutation("policy", "policies/guardrails/runtime.py", "        if expires > limit:", "        if False:", POLICY_TESTS,
             "expires-at within maxHours"),
    Mutation("policy", "policies/guardrails/network.py", 'c.known(props, "ipv6CidrIp")', "None", POLICY_TESTS,
             "Alibaba IPv6 sources are judged"),
    Mutation("policy", "policies/guardrails/common.py", "    if net.prefixlen < minimum:", "    if False:",
             POLICY_TESTS, "a wide (not only a /0) source is open"),
    Mutation("policy", "gpulease/core/compute/aws_forms.py", 'if rt.flag(read(props, "protectFromScaleIn")):',
             "if False:", FORM_TESTS, "scale-in protection defeats a group's scale-to-zero deadline"),
    Mutation("policy", "gpulease/core/compute/aws_forms.py", 'spot_type = _folded(read(props, "spotType", "persistent"))',
             'spot_type = _folded(read(props, "spotType", "one-time"))', FORM_TESTS,
             "a spot request is persistent unless it says otherwise"),
    Mutation("policy", "policies/guardrails/access.py", 'if st.get("Effect") != "Allow" or not _everyone',
             "if not _everyone", FORM_TESTS, "only an Allow to everyone makes a bucket policy public"),
    Mutation("policy", "policies/guardrails/access.py", 'if "*" in actions:', "if False:", FORM_TESTS,
             'Action "*" on an instance role is reported'),
    # --- prices: dates, staleness, the refresh's gate -----------------------------------------------------------
    Mutation("prices", "gpulease/core/catalog/dating.py", "        elif item in given:", "        elif False:",
             PRICE_TESTS, "an override's asOf dates only the prices it gives"),
    Mutation("prices", "gpulease/catalog_refresh/fetched.py", "    if number < PRICE_ITEM_FLOOR:  # the catalog refuses a positive price below the floor too", "    if number < 0:", PRICE_TESTS,
             "a refresh never keeps a zero price"),
    Mutation("prices", "gpulease/catalog_refresh/fetched.py", "    if not math.isfinite(number):", "    if False:",
             PRICE_TESTS, "a refresh never keeps a NaN or an infinity"),
    Mutation("prices", "gpulease/core/catalog/freshness.py", "if age is None or age > max_age_days:",
             "if age is None or age > 10 * max_age_days:", PRICE_TESTS, "a price older than the maximum age is stale"),
    Mutation("prices", "gpulease/core/cost/spot.py", "    worst = min(cap, on_demand) if cap else on_demand",
             "    worst = on_demand", PRICE_TESTS, "the worst case keeps the stack's spot cap"),
    # --- the reaper's decisions and the listings' managed-by re-checks ------------------------------------------
    Mutation("reaper", "gpulease/inventory/decide.py", "    if value is None:\n", "    if False:\n", DECIDE_TESTS,
             "a missing or unreadable retain tag counts as retained"),
    Mutation("reaper", "gpulease/core/resources.py", 'return {"true": True, "false": False}.get(value.strip().lower())',
             'return {"true": True, "false": False}.get(value.strip().lower(), False)', DECIDE_TESTS,
             "only an explicit retain=false lets a volume go"),
    Mutation("reaper", "gpulease/inventory/decide.py", "    kept = kept_for_retain(vol, vol.tags)\n",
             "    kept = None\n", AWS_SWEEP_TESTS, "retain is checked again on the fresh description"),
    Mutation("reaper", "gpulease/inventory/decide.py", '    if kind == "volume":\n', "    if False:\n", AWS_SWEEP_TESTS,
             "a retained volume is kept from its tags alone (never described for deletion)"),
    Mutation("reaper", "gpulease/inventory/decide.py", '    if vol.state != "available":', "    if False:",
             AWS_SWEEP_TESTS, "a volume is deleted only when available"),
    Mutation("reaper", "gpulease/inventory/decide.py", "    if vol.attached_to:", "    if False:", AWS_SWEEP_TESTS,
             "an attached volume is kept"),
    Mutation("reaper", "gpulease/inventory/decide.py", "    if settings.now >= moment + settings.grace:",
             "    if settings.now >= moment:", DECIDE_TESTS, "nothing is swept within the grace period"),
    Mutation("reaper", "gpulease/inventory/decide.py", '        return False, f"{problem}; never swept"',
             '        return True, f"{problem}; never swept"', DECIDE_TESTS,
             "a resource without a valid expires-at is never swept"),
    Mutation("reaper", "gpulease/inventory/decide.py", "for v in inventory.volumes if is_managed(v.tags))",
             "for v in inventory.volumes)", DECIDE_TESTS, "the decisions re-check managed-by on volumes"),
    Mutation("reaper", "gpulease/inventory/decide.py", "instances = [i for i in inventory.instances if is_managed(i.tags)]",
             "instances = list(inventory.instances)", DECIDE_TESTS, "the decisions re-check managed-by on instances"),
    Mutation("reaper", "gpulease/inventory/collect.py",
             "        if managed_only and not is_managed(tags):\n            continue\n        attached =",
             "        if False:\n            continue\n        attached =", AWS_SWEEP_TESTS,
             "the AWS volume listing re-checks managed-by on the answer"),
    Mutation("reaper", "gpulease/inventory/collect.py",
             "            if not is_managed(tags):\n                continue\n            found.append(\n                Instance(",
             "            if False:\n                continue\n            found.append(\n                Instance(",
             AWS_SWEEP_TESTS, "the AWS instance listing re-checks managed-by on the answer"),
    Mutation("reaper", "gpulease/inventory/lookup.py", "{rid: t for rid, t in ids.items() if is_managed(t)}",
             "{rid: t for rid, t in ids.items()}", AWS_SWEEP_TESTS, "the tag read keeps only managed resources"),
    Mutation("reaper", "gpulease/inventory/alicloud_collect.py",
             "        if not is_managed(tags):\n            continue\n        holder = item.get(\"InstanceId\") or \"\"",
             "        if False:\n            continue\n        holder = item.get(\"InstanceId\") or \"\"", ALI_SWEEP_TESTS,
             "the Alibaba Cloud disk listing re-checks managed-by on the answer"),
    Mutation("reaper", "gpulease/inventory/alicloud_collect.py",
             "        if not is_managed(tags):\n            continue\n        found.append(\n            Instance(",
             "        if False:\n            continue\n        found.append(\n            Instance(", ALI_SWEEP_TESTS,
             "the Alibaba Cloud instance listing re-checks managed-by on the answer"),
    Mutation("reaper", "gpulease/inventory/aws.py", "    if allowed and account not in allowed:", "    if False:",
             (*DECIDE_TESTS, "tests/inventory/test_reap.py", "tests/inventory/test_alicloud_reap.py"), "an account off the allowlist is refused"),
    # --- the watchdog's rules -------------------------------------------------------------------------------------
    Mutation("watchdog", "instance/idle_rule.py", "        if top >= self.threshold:", "        if top > self.threshold:",
             IDLE_TESTS, "a GPU exactly at idleGpuPercent is not idle"),
    Mutation("watchdog", "instance/idle_rule.py", "    if not max_age or age <= max_age:",
             "    if False:", IDLE_TESTS, "a (fresh) busy marker keeps the instance"),
    Mutation("watchdog", "instance/idle_rule.py", "    if not max_age or age <= max_age:",
             "    if True:", IDLE_TESTS, "a busy marker older than its maximum age is ignored"),
    Mutation("watchdog", "instance/watchdog_idle.py", "        if sessions:\n", "        if False:\n", IDLE_TESTS,
             "a live SSH session keeps the instance"),
    Mutation("watchdog", "instance/idle_rule.py", "            if unreadable_for < self.grace:",
             "            if False:", IDLE_TESTS, "an unreadable GPU is not idle during its grace period"),
    Mutation("watchdog", "instance/idle_rule.py", "            if unreadable_for < self.grace:",
             "            if True:", IDLE_TESTS, "an unreadable GPU counts as idle after its grace period"),
    Mutation("watchdog", "instance/watchdog.py", "        if now >= self.deadline_rule.final_at():",
             "        if now >= self.deadline:", DEADLINE_TESTS, "the final sync starts finalSyncMinutes before the deadline"),
    Mutation("watchdog", "instance/watchdog.py", "        if now >= self.deadline_rule.final_at():",
             "        if now >= self.deadline_rule.final_at() + 3600:", DEADLINE_TESTS, "the deadline is acted on when it comes"),
    Mutation("watchdog", "instance/watchdog_sync.py", "            if spent + pause >= budget - 1:",
             "            if True:", FAULT_TESTS, "a failed final sync is retried while the window lasts"),
    Mutation("watchdog", "instance/cloud_access.py", "            os.killpg(self.proc.pid, signal.SIGKILL)",
             "            os.kill(self.proc.pid, signal.SIGKILL)", FAULT_TESTS,
             "a hook or sync past its bound is killed with its whole process group"),
    Mutation("watchdog", "instance/cloud_access.py",
             '        _, token_header = TOKEN_HEADERS[self.cloud]\n        status, body = self._request("GET", path, {token_header: self.token()})',
             '        _, token_header = TOKEN_HEADERS[self.cloud]\n        status, body = self._request("GET", path, {})',
             ACCESS_TESTS, "every metadata GET carries the token"),
    Mutation("watchdog", "instance/cloud_access.py", 'OSS_ENDPOINT = "https://oss-{region}-internal.aliyuncs.com"',
             'OSS_ENDPOINT = "http://oss-{region}-internal.aliyuncs.com"', ACCESS_TESTS, "OSS is reached over https"),
    Mutation("watchdog", "instance/cloud_access.py", 'ECS_ENDPOINT = "https://ecs.{region}.aliyuncs.com"',
             'ECS_ENDPOINT = "http://ecs.{region}.aliyuncs.com"', ACCESS_TESTS, "the ECS API is reached over https"),
    Mutation("watchdog", "instance/cloud_access.py", "        if self.api:\n", "        if False:\n",
             DEADLINE_SOURCE_TESTS, "on Alibaba Cloud the deadline tag is read through the ECS API when metadata lacks it"),
    Mutation("watchdog", "instance/cloud_access.py", "now - self._api_at >= self.api_interval", "True",
             DEADLINE_SOURCE_TESTS, "the ECS API is asked for the deadline at most once a minute"),
    Mutation("watchdog", "instance/deadline_rule.py", "        if kept is not None:",
             "        if False:", DEADLINE_SOURCE_TESTS, "the last deadline read holds when no source answers"),
    Mutation("watchdog", "instance/job_agent.py", 'if isinstance(saved.get("deadline"), (int, float)):',
             "if False:", DEADLINE_SOURCE_TESTS, "the job agent falls back to the watchdog's last deadline"),
    Mutation("watchdog", "instance/cloud_access.py", "os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)",
             "os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)", ACCESS_TESTS, "the ossutil credentials file is 0600"),
    # --- the bootstrap's NVIDIA driver ------------------------------------------------------------------------------
    Mutation("bootstrap", "instance/instance_setup.py", '    if fact != "absent":\n', "    if False:\n",
             DRIVER_TESTS, "a driver is installed only on an image known to have none"),
    Mutation("bootstrap", "instance/instance_setup.py",
             '    seen, said = gpu_visible(smi)\n    if seen:\n        return {"ok": True, "image": fact, "installed": False',
             '    seen, said = gpu_visible(smi)\n    if False:\n        return {"ok": True, "image": fact, "installed": False',
             DRIVER_TESTS, "nothing is installed while nvidia-smi sees the GPU (a reboot, an image with a driver)"),
    Mutation("bootstrap", "instance/instance_setup.py",
             '    if installed.returncode != 0:\n        result["error"] = (f"installing the NVIDIA driver',
             '    if False:\n        result["error"] = (f"installing the NVIDIA driver', DRIVER_TESTS,
             "a failed driver install fails readiness, naming the driver"),
    Mutation("bootstrap", "instance/instance_setup.py",
             "locked = done.returncode != 0 and any(m in said for m in LOCK_MESSAGES)", "locked = False", DRIVER_TESTS,
             "apt is tried again while another package manager holds the lock"),
]


def _gathered() -> list[Mutation]:
    """The rows of every ``tools/mutations_<area>.py`` beside this file, in file-name order."""
    rows: list[Mutation] = []
    for path in sorted(Path(__file__).parent.glob("mutations_*.py")):
        rows.extend(importlib.import_module(f"tools.{path.stem}").MUTATIONS)
    return rows


MUTATIONS = [*MUTATIONS, *_gathered()]
