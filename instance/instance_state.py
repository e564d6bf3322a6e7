"""Whose state is this? The instance-side state keyed by instance id and boot (standard library only).

Everything the tools keep under ``state_dir`` (``/var/lib/gpulease``) belongs to one instance: the watchdog's first
boot, last deadline and budget warnings, the ready and verify records, the heartbeat. ``identity.json`` beside them
names that instance and lists its boots:

- **a new instance id** (an instance started from an image baked on another one, whose system disk carried the
  old state) starts clean: what the old instance left is moved to ``previous/<old id>/`` (kept for reading, never
  read by the tools), and the login user's ``authorized_keys`` is rewritten with the keys this instance's metadata
  lists (the old instance's key is not trusted);
- **the same instance id on a new boot** (a reboot, or a spot instance stopped by a reclaim and started again) is a
  resumption of the same experiment: the deadline and the spend continue, the verification that passed here is
  not run again. When the previous boot had handled a spot notice (``stopExpected``, written by the watchdog), the
  interval between its last sign of life and this boot is recorded as an interruption (``kind`` spot-reclaim,
  ``stoppedAt``, ``resumedAt``, ``stoppedSeconds``; the run manifest adds ``resumedFromStep``). Without one (a
  reboot, or a watchdog that died or was stopped while the instance ran on) the interval counts as running and no
  interruption is recorded (the boot is marked ``after: reboot``);
- **this instance's own record, damaged** (over the size cap, not JSON, a link, its boots not a list) is never taken
  for another instance's: it is kept as ``previous/damaged-identity.json``, rebuilt, and nothing else is moved;
  a time in it that is not one (``1e300``, negative) is reported in one line and treated as unknown.

The spend estimate counts running time only: the sum over the boots of (last sign of life - boot), never the
stopped intervals known as such. The watchdog refreshes its boot's ``lastAlive`` about once a minute.

Every tool that starts at boot (the bootstrap, the watchdog, the run unit) claims the state first, under a lock,
so whichever starts first does it once. An instance id that cannot be read (no metadata, no cloud-init record)
leaves the state as it is and says so: nothing is moved on a guess.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

IDENTITY_FILE = "identity.json"
PREVIOUS_DIR = "previous"
LOCK_FILE = ".lock"
# What an instance keeps that must not travel to another one (in the state folder). Everything else there (the
# tools' own logs) is moved too: a new instance starts with an empty folder but for the identity.
KEEP = (IDENTITY_FILE, PREVIOUS_DIR, LOCK_FILE)
CLOUD_INIT_INSTANCE_ID = "/var/lib/cloud/data/instance-id"
_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}\Z")
MAX_BOOTS = 1000
"""Boots kept in identity.json (a reboot loop must not grow it without bound); the running total is kept apart."""


class StateFileError(ValueError):
    """A state file that exists but cannot be used (not a regular file, not JSON, not an object, wrong types)."""


def read_state_file(path: str, max_bytes: int = 256 * 1024) -> dict[str, Any]:
    """A JSON object from the state folder, read strictly (a regular file, not followed through a link, bounded,
    UTF-8, an object): ``{}`` when it does not exist, ``StateFileError`` naming the file when it is unusable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise StateFileError(f"{path}: cannot open: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        if info.st_mode & 0o170000 != 0o100000:
            raise StateFileError(f"{path}: not a regular file")
        raw = os.read(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(raw) > max_bytes:
        raise StateFileError(f"{path}: more than {max_bytes} bytes")
    try:
        value = json.loads(raw.decode("utf-8"), parse_int=_bounded(int), parse_float=_bounded(float),
                           parse_constant=_no_constant)
    except StateFileError as exc:
        raise StateFileError(f"{path}: {exc}") from exc
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise StateFileError(f"{path}: not a JSON document ({exc})") from exc
    if not isinstance(value, dict):
        raise StateFileError(f"{path}: expected a JSON object, found {type(value).__name__}")
    return value


MAX_NUMBER_CHARS = 100
"""The longest number a state file may hold (as the settings file: ``cloud_access.SETTINGS_MAX_NUMBER_CHARS``)."""


def _bounded(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """A JSON number parser for what no state file holds: a number over ``MAX_NUMBER_CHARS`` characters (an
    integer too large for a float) or one that is not finite (``1e999`` reads as infinity) is kept as its text, so
    that the field it is in is reported and treated as unknown while the rest of the record is kept."""
    def read(literal: str) -> Any:
        if len(literal) > MAX_NUMBER_CHARS:
            return literal
        value = parse(literal)
        return literal if number(value) is None else value

    return read


def _no_constant(name: str) -> Any:
    return name  # NaN, Infinity: not numbers JSON allows; kept as text, so the field is reported as unknown


def read_or_empty(path: str, warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """``read_state_file``, with an unusable file reported through ``warn`` and read as empty (the clear fallback)."""
    try:
        return read_state_file(path)
    except StateFileError as exc:
        if warn is not None:
            warn(f"{exc}; starting from an empty record")
        return {}


def write_state_file(path: str, value: dict[str, Any]) -> None:
    """Through a temporary file and a rename: a reader never sees half of it."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(value, fh, sort_keys=True)
    os.replace(tmp, path)


def number(value: Any) -> float | None:
    """A finite number from a state file (never a boolean), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        found = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return found if found == found and abs(found) != float("inf") else None


LATEST_EPOCH = 253402300799.0
"""9999-12-31T23:59:59Z, the last instant a UTC stamp can name: a time past it (or before 1970) is not a time."""


def epoch(value: Any) -> float | None:
    """A point in time from a state file (seconds since 1970, up to ``LATEST_EPOCH``), else None (unknown)."""
    found = number(value)
    return found if found is not None and 0.0 <= found <= LATEST_EPOCH else None


# --- who and which boot ---------------------------------------------------------------------------------------


def instance_id(read_metadata: Callable[[], str | None], cloud_init_file: str = CLOUD_INIT_INSTANCE_ID,
                boot_time: float | None = None) -> str | None:
    """This instance's id: the metadata service first, then cloud-init's record of it; None when neither answers
    (or answers something that is not an id).

    cloud-init's record (``/var/lib/cloud/data/instance-id``, "ID of the instance as discovered by cloud-init",
    https://docs.cloud-init.io/en/latest/development/internal_files.html) lives on the system disk, so it travels
    in a baked image with the baking instance's id in it. It is taken only when it was written during this boot
    (modified at or after ``boot_time``): cloud-init writes it on every boot once it has found its datasource, and
    until then it names whichever instance the disk last ran on."""
    try:
        value = (read_metadata() or "").strip()
    except Exception:  # a metadata read that fails in any way is "not known from there"
        value = ""
    if _SAFE_ID.match(value):
        return value
    if boot_time is not None:
        try:
            if os.stat(cloud_init_file).st_mtime < boot_time:
                return None  # an earlier boot's record: perhaps another instance's (a baked image)
        except OSError:
            return None
    value = _read_text(cloud_init_file).strip()
    return value if _SAFE_ID.match(value) else None


def boot_key(proc_root: str, boot_time: float) -> str:
    """This boot: the kernel's boot id, else the boot time (a new boot has a new one of each)."""
    text = _read_text(os.path.join(proc_root, "sys", "kernel", "random", "boot_id")).strip()
    return text if re.match(r"^[0-9a-f-]{8,64}\Z", text) else f"btime-{boot_time:.0f}"


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(4096)
    except OSError:
        return ""


# --- the claim ------------------------------------------------------------------------------------------------


@dataclass
class Claim:
    """What the state folder says about this instance and this boot."""

    instance_id: str | None
    boot: str
    kind: str
    """``first-boot`` (a new instance, or a new id: clean state), ``resumed`` (same id, new boot), ``same-boot``
    (claimed earlier in this boot by another tool), ``repaired`` (this instance's own record was damaged: rebuilt,
    nothing moved), ``unknown-id`` (nothing moved, nothing recorded)."""

    @property
    def after(self) -> str | None:
        """What ended the boot before this one: ``spot-reclaim`` (a stop was known to come) or ``reboot``."""
        boots = self.identity.get("boots")
        last = boots[-1] if isinstance(boots, list) and boots and isinstance(boots[-1], dict) else {}
        return last.get("after") if last.get("boot") == self.boot else None
    identity: dict[str, Any] = field(default_factory=dict)
    moved: list[str] = field(default_factory=list)
    previous_id: str | None = None

    @property
    def interruptions(self) -> list[dict[str, Any]]:
        found = self.identity.get("interruptions")
        return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []

    def running_seconds(self, now: float) -> float:
        """Seconds this instance has run, over all its boots, up to ``now`` (stopped intervals not counted)."""
        return running_seconds(self.identity, self.boot, now)


@contextlib.contextmanager
def _locked(state_dir: str) -> Iterator[None]:
    os.makedirs(state_dir, exist_ok=True)
    fd = os.open(os.path.join(state_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def claim(state_dir: str, instance: str | None, boot: str, boot_time: float, now: float,
          warn: Callable[[str], None] | None = None, on_new_instance: Callable[[str | None], None] | None = None) -> Claim:
    """Claim ``state_dir`` for this instance and boot (idempotent within a boot). ``on_new_instance`` runs once,
    under the lock, when the state was another instance's (or had no owner) and has just been moved aside.

    A record that names this instance, or that exists but cannot be read (damaged, a link, too large), is never
    taken for another instance's: nothing is moved, it is rebuilt for this instance (``_rebuild``)."""
    path = os.path.join(state_dir, IDENTITY_FILE)
    say = warn or (lambda _m: None)
    if instance is None:
        return Claim(None, boot, "unknown-id", read_or_empty(path, warn))
    with _locked(state_dir):
        try:
            identity, damage = read_state_file(path), None
        except StateFileError as exc:
            identity, damage = {}, str(exc)
        owner = identity.get("instanceId") if isinstance(identity.get("instanceId"), str) else None
        boots = _usable_boots(path, identity, say)
        if damage is None and owner == instance and boots and boots[-1].get("boot") == boot:
            return Claim(instance, boot, "same-boot", identity)
        if damage is None and owner == instance and boots:
            return _resume(path, identity, boots, instance, boot, boot_time, now, say)
        if damage is not None or owner == instance:
            return _rebuild(state_dir, path, instance, boot, boot_time, now,
                            damage or f"{path}: boots: not a list of this instance's boots", say)
        moved = _move_aside(state_dir, owner, boot)
        identity = {"instanceId": instance, "boots": [{"boot": boot, "bootTime": boot_time, "lastAlive": max(now, boot_time)}],
                    "interruptions": [], "firstBoot": boot_time, "earlierBootsSeconds": 0.0}
        if moved or owner is not None:
            # The keys another instance trusted are dropped by the bootstrap (it knows this instance's key),
            # whichever tool claimed the state first: pending until then.
            identity["keysPendingFrom"] = owner or "an unknown instance"
        write_state_file(path, identity)
        if on_new_instance is not None and (moved or owner is not None):
            on_new_instance(owner)
        return Claim(instance, boot, "first-boot", identity, moved, owner)


def _usable_boots(path: str, identity: dict[str, Any], say: Callable[[str], None]) -> list[dict[str, Any]]:
    """The boots of ``identity`` (rewritten in place), each time checked: a value that is not a point in time
    (``epoch``) is reported in one line naming the file and the field, and dropped (unknown)."""
    found = identity.get("boots")
    boots = [b for b in found if isinstance(b, dict)] if isinstance(found, list) else []
    for n, entry in enumerate(boots):
        for key in ("bootTime", "lastAlive"):
            if key in entry and epoch(entry[key]) is None:
                say(f"{path}: boots[{n}].{key}: {str(entry.pop(key))[:40]!r} is not a time (seconds since 1970, "
                    "up to 9999-12-31); treated as unknown")
    earlier = identity.get("earlierBootsSeconds")
    if earlier is not None and (number(earlier) is None or not 0.0 <= float(earlier) <= LATEST_EPOCH):
        say(f"{path}: earlierBootsSeconds: {str(earlier)[:40]!r} is not a duration in seconds; treated as 0")
        identity["earlierBootsSeconds"] = 0.0
    if "firstBoot" in identity and epoch(identity["firstBoot"]) is None:
        say(f"{path}: firstBoot: {str(identity.pop('firstBoot'))[:40]!r} is not a time; treated as unknown")
    if isinstance(found, list):
        identity["boots"] = boots
    return boots


def _resume(path: str, identity: dict[str, Any], boots: list[dict[str, Any]], instance: str, boot: str,
            boot_time: float, now: float, say: Callable[[str], None]) -> Claim:
    """The same instance on a new boot. The time between the last sign of life and this boot counts as stopped only
    when a stop was known before it (a handled spot notice: ``stopExpected``); otherwise (a reboot, a watchdog that
    died while the instance ran) it counts as running, and no interruption is recorded."""
    last = boots[-1]
    stopped_at = epoch(last.get("lastAlive")) or epoch(last.get("bootTime")) or boot_time
    resumed_at = max(boot_time, stopped_at)
    expected = last.get("stopExpected") if isinstance(last.get("stopExpected"), str) else None
    if expected is not None:
        found = identity.get("interruptions")
        interruptions = found if isinstance(found, list) else []
        interruptions.append({"kind": "spot-reclaim", "cause": expected[:200], "boot": boot, "stoppedAt": stamp(stopped_at),
                              "resumedAt": stamp(resumed_at), "stoppedSeconds": round(resumed_at - stopped_at),
                              "resumedFromStep": None})
        identity["interruptions"] = interruptions[-MAX_BOOTS:]
        after = "spot-reclaim"
    else:
        last["lastAlive"] = resumed_at  # the gap counts as running: the spend estimate is an upper bound
        after = "reboot"
    boots.append({"boot": boot, "bootTime": boot_time, "lastAlive": max(now, boot_time), "after": after})
    identity["boots"] = _trim(identity, boots)
    write_state_file(path, identity)
    return Claim(instance, boot, "resumed", identity)


def _rebuild(state_dir: str, path: str, instance: str, boot: str, boot_time: float, now: float, why: str,
             say: Callable[[str], None]) -> Claim:
    """This instance's own record, damaged: kept aside (``previous/damaged-identity.json``), rebuilt for this
    instance; everything beside it (the watchdog's first boot and deadline) stays. The time since the watchdog's
    first boot counts as running (the spend estimate stays an upper bound)."""
    kept = _keep_damaged(state_dir, path)
    watchdog = read_or_empty(os.path.join(state_dir, "watchdog-state.json"), say)
    first = epoch(watchdog.get("first_boot"))
    identity: dict[str, Any] = {
        "instanceId": instance, "boots": [{"boot": boot, "bootTime": boot_time, "lastAlive": max(now, boot_time)}],
        "interruptions": [], "earlierBootsSeconds": max(0.0, boot_time - first) if first is not None else 0.0}
    if first is not None:
        identity["firstBoot"] = min(first, boot_time)
    say(f"{why}; this instance's record ({instance}) is rebuilt" + (f", the damaged one kept as {kept}" if kept else "")
        + "; nothing else is moved (the deadline, first boot and records stay)")
    write_state_file(path, identity)
    return Claim(instance, boot, "repaired", identity)


def _keep_damaged(state_dir: str, path: str) -> str | None:
    """Rename the damaged record (a link itself, never what it points at) under ``previous/``; None when absent."""
    if not os.path.lexists(path):
        return None
    folder = os.path.join(state_dir, PREVIOUS_DIR)
    os.makedirs(folder, exist_ok=True)
    target, n = os.path.join(folder, "damaged-identity.json"), 0
    while os.path.lexists(target):
        n += 1
        target = os.path.join(folder, f"damaged-identity.{n}.json")
    os.rename(path, target)
    return target


def expect_stop(state_dir: str, claim_: Claim, cause: str) -> None:
    """A stop of this boot is known to come (a spot notice was handled): the next boot's gap counts as stopped."""
    identity = _update_this_boot(state_dir, claim_, lambda boot: boot.__setitem__("stopExpected", cause[:200]))
    if identity is not None:
        claim_.identity = identity


def keys_pending(state_dir: str, instance: str, warn: Callable[[str], None] | None = None) -> str | None:
    """Whose keys this instance's state still has to forget (``keysPendingFrom``), None when nothing is pending."""
    identity = read_or_empty(os.path.join(state_dir, IDENTITY_FILE), warn)
    pending = identity.get("keysPendingFrom")
    return pending if identity.get("instanceId") == instance and isinstance(pending, str) else None


def keys_forgotten(state_dir: str, instance: str, warn: Callable[[str], None] | None = None) -> None:
    """Record that the keys ``keys_pending`` named were dropped."""
    with _locked(state_dir):
        path = os.path.join(state_dir, IDENTITY_FILE)
        identity = read_or_empty(path, warn)
        if identity.get("instanceId") == instance and identity.pop("keysPendingFrom", None) is not None:
            write_state_file(path, identity)


def _trim(identity: dict[str, Any], boots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most ``MAX_BOOTS`` boots; the running time of those dropped is added to ``earlierBootsSeconds``."""
    while len(boots) > MAX_BOOTS:
        gone = boots.pop(0)
        ran = (epoch(gone.get("lastAlive")) or 0.0) - (epoch(gone.get("bootTime")) or 0.0)
        identity["earlierBootsSeconds"] = (number(identity.get("earlierBootsSeconds")) or 0.0) + max(0.0, ran)
    return boots


def _move_aside(state_dir: str, owner: str | None, boot: str | None = None) -> list[str]:
    """Move every file of another instance (or of no known instance) to ``previous/<owner>/``; a record of this
    boot (a JSON object whose ``boot`` is ``boot``: ``ready.json``, ``boot-progress.json``) stays: a bootstrap that
    could not read the instance id claimed nothing and wrote them, and the watchdog that reads the id later must
    not move them away."""
    names = [n for n in sorted(os.listdir(state_dir)) if n not in KEEP and not n.endswith(".tmp")
             and not (boot is not None and _of_boot(os.path.join(state_dir, n), boot))]
    if not names:
        return []
    label = owner if owner and _SAFE_ID.match(owner) else "unknown"
    target = os.path.join(state_dir, PREVIOUS_DIR, label)
    n = 0
    while os.path.lexists(target):
        n += 1
        target = os.path.join(state_dir, PREVIOUS_DIR, f"{label}.{n}")
    os.makedirs(target)
    for name in names:
        shutil.move(os.path.join(state_dir, name), os.path.join(target, name))
    return names


def _of_boot(path: str, boot: str) -> bool:
    if not path.endswith(".json") or not os.path.isfile(path) or os.path.islink(path):
        return False
    try:
        return read_state_file(path).get("boot") == boot
    except (OSError, ValueError):
        return False


def alive(state_dir: str, claim_: Claim, now: float) -> None:
    """This boot is still running at ``now`` (the watchdog calls it about once a minute)."""
    _update_this_boot(state_dir, claim_,
                      lambda boot: boot.__setitem__("lastAlive", max(epoch(boot.get("lastAlive")) or 0.0, now)))


def _update_this_boot(state_dir: str, claim_: Claim, change: Any) -> dict[str, Any] | None:
    """Apply ``change`` to this boot's record under the state lock and write it back; None (nothing written) when
    the record is not this instance's latest boot."""
    if claim_.instance_id is None:
        return None
    path = os.path.join(state_dir, IDENTITY_FILE)
    with _locked(state_dir):
        identity = read_or_empty(path)
        boots = identity.get("boots") if isinstance(identity.get("boots"), list) else []
        if identity.get("instanceId") != claim_.instance_id or not boots or not isinstance(boots[-1], dict) \
                or boots[-1].get("boot") != claim_.boot:
            return None
        change(boots[-1])
        write_state_file(path, identity)
        return identity
        claim_.identity = identity


def running_seconds(identity: dict[str, Any], boot: str, now: float) -> float:
    total = max(0.0, min(number(identity.get("earlierBootsSeconds")) or 0.0, LATEST_EPOCH))
    boots = identity.get("boots") if isinstance(identity.get("boots"), list) else []
    for entry in boots:
        if not isinstance(entry, dict):
            continue
        start = epoch(entry.get("bootTime"))
        if start is None:
            continue
        end = now if entry.get("boot") == boot else epoch(entry.get("lastAlive")) or start
        total += max(0.0, end - start)
    return total


def record_new_instance(state_dir: str, claim_: Claim, previous: str, now: float,
                        last_seen: float | None = None) -> None:
    """A new instance on this experiment's data disk (the disk's manifest names ``previous``): an interruption of
    kind ``new-instance``, once per boot. ``last_seen``: when the previous instance last wrote this job's files on
    the disk (its last sign of life there), the ``stoppedAt``; ``stoppedSeconds`` runs from it to now. Unknown
    (no such file, a time after now): both null."""
    if claim_.instance_id is None:
        return
    seen = last_seen if last_seen is not None and epoch(last_seen) is not None and last_seen <= now else None
    path = os.path.join(state_dir, IDENTITY_FILE)
    with _locked(state_dir):
        identity = read_or_empty(path)
        if identity.get("instanceId") != claim_.instance_id:
            return
        found = identity.get("interruptions") if isinstance(identity.get("interruptions"), list) else []
        if any(isinstance(i, dict) and i.get("boot") == claim_.boot for i in found):
            return
        found.append({"kind": "new-instance", "previousInstance": previous[:128], "boot": claim_.boot,
                      "stoppedAt": stamp(seen) if seen is not None else None, "resumedAt": stamp(now),
                      "stoppedSeconds": round(now - seen) if seen is not None else None, "resumedFromStep": None})
        identity["interruptions"] = found[-MAX_BOOTS:]
        write_state_file(path, identity)
        claim_.identity = identity


def record_resumed_step(state_dir: str, step: int | None, boot: str | None = None) -> list[dict[str, Any]]:
    """The step the job resumed from, on the latest interruption without one (of ``boot`` when given: a reboot
    adds none, and must not write its step on an earlier one); the interruptions as recorded."""
    path = os.path.join(state_dir, IDENTITY_FILE)
    with _locked(state_dir):
        identity = read_or_empty(path)
        found = identity.get("interruptions") if isinstance(identity.get("interruptions"), list) else []
        if found and isinstance(found[-1], dict) and found[-1].get("resumedFromStep") is None and step is not None \
                and (boot is None or found[-1].get("boot") == boot):
            found[-1]["resumedFromStep"] = step
            write_state_file(path, identity)
        return [i for i in found if isinstance(i, dict)]


# --- what must not travel: the authorized key ------------------------------------------------------------------


def trust_only(authorized_keys: str, keys: list[str]) -> bool:
    """Rewrite ``authorized_keys`` with ``keys`` alone (the ones this instance's metadata lists); True when a file
    was there to rewrite. Refuses a link (never writes through one)."""
    try:
        info = os.lstat(authorized_keys)
    except FileNotFoundError:
        return False
    if info.st_mode & 0o170000 != 0o100000:
        raise OSError(f"{authorized_keys} is not a regular file; left as it is")
    lines = [k.strip() for k in keys if k.strip().startswith(("ssh-", "ecdsa-", "sk-"))]
    tmp = authorized_keys + ".gpulease.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
    with contextlib.suppress(OSError):
        os.chown(tmp, info.st_uid, info.st_gid)
    os.replace(tmp, authorized_keys)
    return True


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: UP017 - Python 3.10


# --- the tools' entry: claim from the settings ------------------------------------------------------------------


def boot_time(settings: dict[str, Any], now: float) -> float:
    """This boot's start: the settings' ``boot_time`` (tests), else ``btime`` in ``<proc_root>/stat``, else now."""
    given = number(settings.get("boot_time"))
    if given is not None:
        return given
    for root in (settings.get("proc_root") or "/proc", "/proc"):
        found = re.search(r"^btime (\d+)", _read_text_all(os.path.join(root, "stat")), re.M)
        if found:
            return float(found.group(1))
    return now


def _read_text_all(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(1024 * 1024)
    except OSError:
        return ""


def claim_for(settings: dict[str, Any], read_id: Callable[[], str | None], now: float,
              warn: Callable[[str], None] | None = None,
              on_new_instance: Callable[[str | None], None] | None = None) -> Claim:
    """``claim`` with what the settings say: the state folder, the boot (``proc_root``), cloud-init's record of
    the instance id (``instance_id_file``). Never raises: a folder that cannot be claimed is ``unknown-id``."""
    start = boot_time(settings, now)
    boot = boot_key(settings.get("proc_root") or "/proc", start)
    instance = instance_id(read_id, settings.get("instance_id_file") or CLOUD_INIT_INSTANCE_ID, start)
    try:
        return claim(settings.get("state_dir") or "/var/lib/gpulease", instance, boot, start, now, warn, on_new_instance)
    except (OSError, ValueError, OverflowError, TypeError) as exc:  # the guard must start whatever the folder holds
        if warn is not None:
            warn(f"cannot claim the state folder: {exc}; keeping what is there")
        return Claim(None, boot, "unknown-id")


def usable_state(state: dict[str, Any], claim_: Claim, boot_time: float) -> tuple[dict[str, Any], str | None]:
    """The watchdog's record as it may be used under ``claim_``, and why it was set aside (None: used as it is).

    While this instance's id cannot be read, a folder whose identity names an instance is not known to be this
    instance's: the record (and the identity's first boot) may be a baked image's, with its deadline long past
    and its spend. None of it is used: a fresh record from this boot, so the deadline is this boot +
    ``max_runtime_hours`` (the stack's own) until the tag is read, and the state is claimed again once the id can
    be read (``id_readable``). A folder no instance has claimed (every earlier boot had no id either) is used."""
    owner = claim_.identity.get("instanceId")
    boots = claim_.identity.get("boots")
    last = boots[-1] if isinstance(boots, list) and boots and isinstance(boots[-1], dict) else {}
    if claim_.instance_id is not None or not (isinstance(owner, str) and owner) or last.get("boot") == claim_.boot:
        return state, None  # known to be ours, no instance's, or this very boot's (a restart: no image has it)
    why = (f"this instance's id cannot be read yet: the state on the disk (instance {owner[:40]!r}'s, perhaps not "
           f"this one) is not used; starting from this boot ({stamp(boot_time)}) until the id is read")
    return {"first_boot": boot_time}, why


def id_readable(settings: dict[str, Any], read_id: Callable[[], str | None]) -> bool:
    """Whether this instance's id can be read now (the metadata service, or cloud-init's record)."""
    return instance_id(read_id, settings.get("instance_id_file") or CLOUD_INIT_INSTANCE_ID,
                       boot_time(settings, time.time())) is not None


# --- the end of the setup, as the bootstrap and the run unit record it ------------------------------------------

PROGRESS_FILE = "boot-progress.json"


def mark_progress(state_dir: str, boot: str, step: str, now: float, **extra: Any) -> None:
    """Record that ``step`` (``bootstrap`` or ``verify``) finished on this boot (the idle rule starts counting then),
    or that the bootstrap started (``bootstrap_started``, with its ``bootstrap_pid``)."""
    path = os.path.join(state_dir, PROGRESS_FILE)
    progress = read_or_empty(path)
    if progress.get("boot") != boot:
        progress = {"boot": boot}
    progress[step] = now
    progress.update(extra)
    write_state_file(path, progress)


def setup_progress(state_dir: str, boot: str) -> dict[str, Any]:
    """This boot's progress record (``{}`` when there is none, or it is an earlier boot's)."""
    progress = read_or_empty(os.path.join(state_dir, PROGRESS_FILE))
    return progress if progress.get("boot") == boot else {}


def setup_gate(settings: dict[str, Any], boot: Callable[[], str]) -> tuple[
        Callable[[], bool] | None, Callable[[], dict[str, Any]] | None]:
    """The idle rule's "only after the setup" gate: (whether the setup finished, this boot's progress record), both
    read from the boot's own record, keyed by ``boot()`` and never by the instance id (an id read late must not
    open the gate early); (None, None) when the settings say no bootstrap reports (``idle_after_setup``)."""
    if not settings.get("idle_after_setup"):
        return None, None
    state_dir, needs_verify = settings["state_dir"], bool(settings.get("verify"))
    return (lambda: setup_finished(state_dir, boot(), needs_verify)), (lambda: setup_progress(state_dir, boot()))


def setup_finished(state_dir: str, boot: str, needs_verify: bool) -> bool:
    progress = read_or_empty(os.path.join(state_dir, PROGRESS_FILE))
    if progress.get("boot") != boot or number(progress.get("bootstrap")) is None:
        return False
    return not needs_verify or number(progress.get("verify")) is not None
