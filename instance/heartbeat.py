"""The watchdog's heartbeat and spend estimate (standard library only, Python 3.10).

The watchdog calls ``Heartbeat.tick`` on each of its ticks. Every ``heartbeat_minutes`` (5 by default) it writes
``<state_dir>/heartbeat.json`` and copies it, in the background and bounded like the periodic sync, to
``<control_uri>heartbeat.json`` (outside the expiring checkpoint prefix), where ``gpulease status`` reads it:

- ``time``, ``instanceId``, the ``deadline`` the watchdog keeps and where it read it, ``minutesLeft``;
- ``gpus``: utilisation and memory (used, total) of every GPU from nvidia-smi, or ``gpuError``;
- ``lastSync``: when the last periodic checkpoint sync succeeded, ``syncFailures`` since;
- ``newestCheckpoint``: the newest file under the checkpoint directory and its age;
- ``spend``: the estimate ``hours this instance has run (stopped time not counted) x its worst-case hourly price``
  against its budget;
- ``interruptions``: each stop of this instance and its start again (``stoppedAt``, ``resumedAt``,
  ``stoppedSeconds``, ``resumedFromStep``; ``instance_state``), the latest fifty.

The spend estimate reads the instance's own tags, ``gpulease:max-hourly-usd`` (its spot cap, else the on-demand
price, set by the stack) and ``gpulease:budget-usd``: through the metadata service, and on Alibaba Cloud through
the ECS API (``DescribeInstances`` on this instance, which its role may call) when metadata does not list tags.
At each of the settings' ``budget_thresholds`` (percentages) the watchdog logs ``budget-warning`` once and runs
the warn hook with ``GPULEASE_REASON=budget-<percent>``: on a cloud without budget alerts (Alibaba Cloud) this is
the warning, on AWS it comes hours before the billing data reaches AWS Budgets. It is an upper bound for the
instance alone (no storage, no traffic), never a bill.
"""

from __future__ import annotations

import json
import os
from typing import Any, Protocol

try:
    from instance import bounds, budget_rule, control, disk_space, gpu_query, starved_rule
    from instance import cloud_access as ca
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import budget_rule  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import control  # type: ignore[no-redef]
    import disk_space  # type: ignore[no-redef]
    import gpu_query  # type: ignore[no-redef]
    import starved_rule  # type: ignore[no-redef]


class Host(Protocol):
    """What the heartbeat reads from the watchdog that runs it (the watchdog is not imported: no cycle)."""

    s: dict[str, Any]
    state: dict[str, Any]
    cloud: str
    clock: Any
    metadata: ca.Metadata
    credentials: ca.RoleCredentials

    @property
    def deadline(self) -> float: ...
    @property
    def deadline_source(self) -> str: ...
    @property
    def sync_failures(self) -> int: ...
    @property
    def last_sync_ok(self) -> float | None: ...
    @property
    def checkpoint_dir(self) -> str: ...
    def running_seconds(self, now: float) -> float: ...
    def decide(self, event: str, reason: str) -> None: ...
    def _save_state(self, state: dict[str, Any]) -> None: ...
    def run_command(self, what: str, command: str | list[str], timeout: float, reason: str,
                    env: dict[str, str] | None = None) -> bool: ...

TAG_BUDGET = "gpulease:budget-usd"
TAG_MAX_HOURLY = "gpulease:max-hourly-usd"
HEARTBEAT_FILE = "heartbeat.json"
GPU_QUERY = gpu_query.QUERY
INTERRUPTION_KEYS = ("kind", "stoppedAt", "resumedAt", "stoppedSeconds", "resumedFromStep", "previousInstance")
MAX_INTERRUPTIONS_SHOWN = 50
"""The latest interruptions the heartbeat carries (the run manifest and identity.json keep them all)."""


_number = budget_rule.tag_number


class Heartbeat:
    def __init__(self, dog: Host):
        self.dog = dog
        self.interval = 60 * float(dog.s.get("heartbeat_minutes", 5))
        # A copy may take two beats before it is killed (the next beat is skipped while one runs).
        self.upload_timeout = 2 * self.interval
        self.last = float("-inf")
        self.upload: ca.Bounded | None = None
        self.upload_call: ca.StorageCall | None = None
        self.tags: dict[str, float] = {}
        self.warned: list[float] = budget_rule.warned_from_state(dog.state)
        self.instance_id: str | None = None
        self.starved = starved_rule.StarvedRule(dog.s)
        self.disks = disk_space.DiskWatch(dog.s)

    @property
    def path(self) -> str:
        return os.path.join(self.dog.s["state_dir"], HEARTBEAT_FILE)

    def tick(self) -> None:
        self._check_upload()
        mono = self.dog.clock.monotonic()
        if mono - self.last < self.interval:
            return
        self.last = mono
        beat = self.beat()
        try:
            control.write_json(self.path, beat)
        except OSError as exc:
            self.dog.decide("heartbeat", f"cannot write {self.path}: {exc}")
            return
        self._start_upload()

    # -- what it reports --

    def beat(self) -> dict[str, Any]:
        dog, now = self.dog, self.dog.clock.now()
        gpus, error = self.gpus()
        last_ok = dog.last_sync_ok
        newest = self.newest_checkpoint(now)
        disks = self.disks.report(newest_size=(newest or {}).get("sizeBytes"))
        for warning in self.disks.new_warnings(disks):
            self.dog.decide("disk-warning", warning)
            hook = self.dog.s.get("warn_hook")
            if hook:
                self.dog.run_command("warn-hook", hook, float(self.dog.s["hook_timeout_seconds"]), "disk-space")
        beat: dict[str, Any] = {
            "time": ca.utc_stamp(now),
            "experiment": dog.s.get("experiment"),
            "instanceId": self._instance_id(),
            "deadline": ca.utc_stamp(dog.deadline),
            "deadlineSource": dog.deadline_source,
            "minutesLeft": round((dog.deadline - now) / 60, 1),
            "gpus": gpus,
            "gpuError": error,
            "lastSync": ca.utc_stamp(last_ok) if last_ok else None,
            "syncFailures": dog.sync_failures,
            "newestCheckpoint": newest,
            "disks": disks,
            "gpuStarved": self.starved.observe(dog.clock.monotonic(), now, [g["utilizationPercent"] for g in gpus]),
            # Asked only of an instance the stack gave thresholds (every stack does; the older tests' rigs do not).
            "spend": self.spend(now) if dog.s.get("budget_thresholds") else None,
            # Each stop of this instance and its start again (instance_state), as the run manifest lists them.
            "interruptions": self.interruptions(),
        }
        return beat

    def interruptions(self) -> list[dict[str, Any]]:
        claim = getattr(self.dog, "claim", None)
        found = claim.interruptions if claim is not None else []
        return [{k: item.get(k) for k in INTERRUPTION_KEYS} for item in found[-MAX_INTERRUPTIONS_SHOWN:]]

    def gpus(self) -> tuple[list[dict[str, float]], str | None]:
        code, out = ca.run_bounded([self.dog.s["nvidia_smi"], *GPU_QUERY], self.dog.clock.real(bounds.value("gpu_query")))
        if code != 0:
            return [], f"nvidia-smi {'did not answer' if code is None else f'exited {code}'}: {out[-200:]}"
        parsed = gpu_query.parse(out)
        found = [{"utilizationPercent": g.utilization, "memoryUsedMib": g.memory_used, "memoryTotalMib": g.memory_total}
                 for g in parsed]
        return found, gpu_query.problem(out, parsed)

    def newest_checkpoint(self, now: float) -> dict[str, Any] | None:
        newest: tuple[float, str, int] | None = None
        for folder, _, names in os.walk(self.dog.checkpoint_dir):
            for name in names:
                try:
                    info = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue
                if info.st_mode & 0o170000 != 0o100000:
                    continue  # a link, a FIFO: not a checkpoint
                if newest is None or info.st_mtime > newest[0]:
                    newest = (info.st_mtime, os.path.relpath(os.path.join(folder, name), self.dog.checkpoint_dir),
                              info.st_size)
        if newest is None:
            return None
        return {"path": newest[1], "modified": ca.utc_stamp(newest[0]), "ageMinutes": round((now - newest[0]) / 60, 1),
                "sizeBytes": newest[2]}

    def _instance_id(self) -> str | None:
        """Asked once, and only when the heartbeat goes to the bucket: there it tells this instance's heartbeat
        from one an earlier instance left in a retained bucket."""
        claimed = getattr(getattr(self.dog, "claim", None), "instance_id", None)
        if claimed:  # the id this instance's state is keyed by (instance_state), read once at start
            return claimed
        if self.instance_id is None and self.dog.s.get("control_upload_command"):
            try:
                self.instance_id = self.dog.metadata.value("/latest/meta-data/instance-id")
            except ca.MetadataError:
                return None
        return self.instance_id

    # -- the spend estimate --

    def read_tags(self) -> None:
        """The budget and the hourly price from the instance's tags; the last values read stand otherwise."""
        missing = []
        for key in (TAG_BUDGET, TAG_MAX_HOURLY):
            try:
                value = _number(self.dog.metadata.tag(key))
            except ca.MetadataError:
                value = None
            if value is not None:
                self.tags[key] = value
            else:
                missing.append(key)
        if missing and self.dog.cloud == "alicloud":
            self.tags.update(self._tags_from_api(missing))

    def _tags_from_api(self, keys: list[str]) -> dict[str, float]:
        try:
            instance = self.dog.metadata.value("/latest/meta-data/instance-id")
            status, answer = ca.ecs_call(
                "DescribeInstances", {"InstanceIds": json.dumps([instance])}, self.dog.credentials.get(),
                region=self.dog.s["region"], endpoint=self.dog.s.get("ecs_endpoint"), timeout=self.dog.clock.real(bounds.value("ecs_read")),
            )
        except (ca.MetadataError, ca.CredentialsError, ca.HttpError):
            return {}
        if status != 200:
            return {}
        listed = (answer.get("Instances") or {}).get("Instance") or []
        tags = {t.get("TagKey"): t.get("TagValue") for i in listed if isinstance(i, dict) and i.get("InstanceId") == instance
                for t in ((i.get("Tags") or {}).get("Tag") or []) if isinstance(t, dict)}
        return {k: n for k in keys if (n := _number(tags.get(k))) is not None}

    def spend(self, now: float) -> dict[str, Any] | None:
        self.read_tags()
        hourly, budget = self.tags.get(TAG_MAX_HOURLY), self.tags.get(TAG_BUDGET)
        if hourly is None:
            return None
        hours = self.dog.running_seconds(now) / 3600
        spend, crossed = budget_rule.estimate(hourly, budget, hours, list(self.dog.s.get("budget_thresholds") or []),
                                              self.warned)
        for threshold in crossed:
            self.warn(threshold, spend["usdAtMost"], budget or 0.0, hours, hourly)
        return spend

    def warn(self, threshold: float, usd: float, budget: float, hours: float, hourly: float) -> None:
        self.warned.append(threshold)
        self.dog.state["budget_warned"] = self.warned
        self.dog._save_state(self.dog.state)  # a restarted watchdog does not warn twice
        self.dog.decide("budget-warning", f"estimated spend of this instance is at most ${usd:,.2f} ({hours:.1f} h x "
                        f"${hourly:g}/h), {threshold:g}% of its budget ${budget:,.2f} or more")
        hook = self.dog.s.get("warn_hook")
        if hook:
            self.dog.run_command("warn-hook", hook, float(self.dog.s["hook_timeout_seconds"]), f"budget-{threshold:g}")

    # -- the copy to the bucket, beside the loop --

    def _start_upload(self) -> None:
        if self.upload is not None:
            return  # the previous copy is still running; the next beat carries the news
        try:
            call = control.upload_call(self.dog.s, self.path, HEARTBEAT_FILE, self.dog.metadata, self.dog.credentials)
        except (ca.CredentialsError, OSError) as exc:
            self.dog.decide("heartbeat", f"not copied to the bucket: {exc}")
            return
        if call is None:
            return
        try:
            self.upload = ca.Bounded(call.argv, env=call.env, monotonic=self.dog.clock.monotonic)
            self.upload_call = call
        except OSError as exc:
            call.close()
            self.dog.decide("heartbeat", f"the copy could not start: {exc}")

    def _check_upload(self) -> None:
        job = self.upload
        if job is None:
            return
        code = job.poll()
        if code is None and self.dog.clock.monotonic() - job.started < self.upload_timeout:
            return
        if code is None:
            job.kill()
            self.dog.decide("heartbeat", f"the copy took longer than {self.upload_timeout:.0f} s: killed")
        elif code != 0:
            self.dog.decide("heartbeat", f"the copy exited {code}: {job.tail()}")
        job.finish()
        if self.upload_call is not None:
            self.upload_call.close()
        self.upload = self.upload_call = None

    def stop(self) -> None:
        if self.upload is not None:
            self.upload.kill()
            self._check_upload()
