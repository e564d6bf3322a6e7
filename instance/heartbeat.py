"""The watchdog's heartbeat and spend estimate (standard library only, Python 3.10).

The watchdog calls ``Heartbeat.tick`` on each of its ticks. Every ``heartbeat_minutes`` (5 by default) it writes
``<state_dir>/heartbeat.json`` and copies it, in the background and bounded like the periodic sync, to
``<checkpoint_uri>_gpulease/heartbeat.json``, where ``gpulease status`` reads it:

- ``time``, ``instanceId``, the ``deadline`` the watchdog keeps and where it read it, ``minutesLeft``;
- ``gpus``: utilisation and memory (used, total) of every GPU from nvidia-smi, or ``gpuError``;
- ``lastSync``: when the last periodic checkpoint sync succeeded, ``syncFailures`` since;
- ``newestCheckpoint``: the newest file under the checkpoint directory and its age;
- ``spend``: the estimate ``hours since first boot x the instance's worst-case hourly price`` against its budget.

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
from typing import TYPE_CHECKING, Any

try:
    from instance import cloud_access as ca
    from instance import control
except ImportError:  # on the instance: the other tools are installed next to this file
    import cloud_access as ca  # type: ignore[no-redef]
    import control  # type: ignore[no-redef]

if TYPE_CHECKING:
    from instance.watchdog import Watchdog

TAG_BUDGET = "gpulease:budget-usd"
TAG_MAX_HOURLY = "gpulease:max-hourly-usd"
HEARTBEAT_FILE = "heartbeat.json"
GPU_QUERY = ["--query-gpu=utilization.gpu,memory.used,memory.total", "--format=csv,noheader,nounits"]


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and value >= 0 and value == value and value != float("inf") else None


class Heartbeat:
    def __init__(self, dog: Watchdog):
        self.dog = dog
        self.interval = 60 * float(dog.s.get("heartbeat_minutes", 5))
        # A copy may take two beats before it is killed (the next beat is skipped while one runs).
        self.upload_timeout = 2 * self.interval
        self.last = float("-inf")
        self.upload: ca.Bounded | None = None
        self.upload_call: ca.StorageCall | None = None
        self.tags: dict[str, float] = {}
        self.warned: list[float] = list(dog.state.get("budget_warned") or [])
        self.instance_id: str | None = None

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
        last_ok = getattr(dog, "last_sync_ok", None)
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
            "newestCheckpoint": self.newest_checkpoint(now),
            # Asked only of an instance the stack gave thresholds (every stack does; the older tests' rigs do not).
            "spend": self.spend(now) if dog.s.get("budget_thresholds") else None,
        }
        return beat

    def gpus(self) -> tuple[list[dict[str, float]], str | None]:
        code, out = ca.run_bounded([self.dog.s["nvidia_smi"], *GPU_QUERY], self.dog.clock.real(30))
        if code != 0:
            return [], f"nvidia-smi {'did not answer' if code is None else f'exited {code}'}: {out[-200:]}"
        found = []
        for line in out.splitlines():
            parts = [p.strip() for p in line.split(",")]
            numbers = [_number(p) for p in parts[:3]]
            if len(numbers) >= 2 and None not in numbers[:2]:
                found.append({"utilizationPercent": numbers[0], "memoryUsedMib": numbers[1],
                              "memoryTotalMib": numbers[2] if len(numbers) > 2 else None})
        return found, None if found else f"nvidia-smi printed no readable GPU line: {out[-200:]!r}"

    def newest_checkpoint(self, now: float) -> dict[str, Any] | None:
        newest: tuple[float, str] | None = None
        for folder, _, names in os.walk(self.dog.checkpoint_dir):
            for name in names:
                try:
                    mtime = os.stat(os.path.join(folder, name)).st_mtime
                except OSError:
                    continue
                if newest is None or mtime > newest[0]:
                    newest = (mtime, os.path.relpath(os.path.join(folder, name), self.dog.checkpoint_dir))
        if newest is None:
            return None
        return {"path": newest[1], "modified": ca.utc_stamp(newest[0]), "ageMinutes": round((now - newest[0]) / 60, 1)}

    def _instance_id(self) -> str | None:
        """Asked once, and only when the heartbeat goes to the bucket: there it tells this instance's heartbeat
        from one an earlier instance left in a retained bucket."""
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
                region=self.dog.s["region"], endpoint=self.dog.s.get("ecs_endpoint"), timeout=self.dog.clock.real(10),
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
        hours = max(0.0, now - float(self.dog.state["first_boot"])) / 3600
        usd = round(hourly * hours, 2)
        spend: dict[str, Any] = {"maxHourlyUsd": hourly, "hours": round(hours, 2), "usdAtMost": usd,
                                 "budgetUsd": budget, "percent": None, "warned": self.warned}
        if budget:
            percent = 100 * hourly * hours / budget
            spend["percent"] = round(percent, 1)
            for threshold in sorted(float(t) for t in self.dog.s.get("budget_thresholds") or []):
                if percent >= threshold and threshold not in self.warned:
                    self.warn(threshold, usd, budget, hours, hourly)
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
