#!/usr/bin/env python3
"""gpulease-bootstrap: mount the data disk safely and check the instance is ready (standard library only).

Runs at every boot as a oneshot systemd service and is idempotent:

1. find the data disk by a stable id (AWS: the NVMe serial ``vol...`` under /dev/disk/by-id, the Xen names
   /dev/sdf and /dev/xvdf as a fallback; Alibaba Cloud: the virtio or NVMe serial, the disk id without ``d-``),
   waiting for it to be attached;
2. create a filesystem ONLY when every probe agrees the device is blank (``format_decision``); a disk that
   holds anything (a filesystem, a partition table, unrecognised bytes) is never formatted;
3. mount it at the mount point, recorded in fstab by UUID with ``nofail`` (a missing disk never blocks boot);
4. create raw/ processed/ checkpoints/ final/ logs/ and hand them to the login user;
5. on an image without the NVIDIA driver (``nvidia_driver = absent``) and only while nvidia-smi cannot see the
   GPU: install the pinned driver packages from the Ubuntu archive with apt (non-interactive, bounded, retried
   while another apt holds the lock), load the module and check again (``ensure_driver``); a reboot finds it
   installed and skips it;
6. stage the data sources onto the disk (``staging.py``: buckets, hubs, files; skipped when already there);
7. check readiness (driver, GPU, torch, disk, bucket, data; no GPU checks in the preparation phase) and write it to ``<mount>/logs/bootstrap.log`` and a JSON
   marker (``/var/lib/gpulease/ready.json``, copied to ``<mount>/logs/ready.json``). Failures are reported in
   the marker, the log and the exit status; nothing is hidden.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

try:
    from instance import bounds, staging
    from instance import cloud_access as ca
    from instance import cluster as cl
    from instance import instance_state as st
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import cluster as cl  # type: ignore[no-redef]
    import instance_state as st  # type: ignore[no-redef]
    import staging  # type: ignore[no-redef]

UTC = timezone.utc  # noqa: UP017 - the instance may run Python 3.10 (Ubuntu 22.04), before datetime.UTC

SETTINGS_PATH = "/etc/gpulease/settings.json"
DATA_DIRS = ("raw", "processed", "checkpoints", "final", "logs")
FSTAB_MARK = "# gpulease data disk"
HEAD_BYTES = 1024 * 1024

DEFAULTS: dict[str, Any] = {
    "cloud": "aws",
    "region": "",
    "mount_point": "/data",
    "data_disk_id": "",
    "data_owner": "ubuntu",
    "checkpoint_uri": None,
    "bucket_check_command": None,
    "cli_install_command": None,
    "ready_upload_command": None,
    "metadata_url": None,
    "metadata_timeout_seconds": 3,
    "nvidia_smi": "nvidia-smi",
    "torch_pythons": ["python3", "/opt/conda/bin/python", "/opt/pytorch/bin/python3"],
    "dev_root": "/dev",
    "sys_root": "/sys",
    "fstab_path": "/etc/fstab",
    "state_dir": "/var/lib/gpulease",
    "device_wait_seconds": 900,
    "new_filesystem": "ext4",
    "nvidia_driver": "unknown",
    "driver_packages": [],
    "proc_root": "/proc",
    "apt_update_timeout_seconds": 600,
    "apt_install_timeout_seconds": 1500,
    "apt_lock_attempts": 4,
    "apt_lock_wait_seconds": 30,
    "authorized_keys_path": None,
}

_log_lines: list[str] = []
_log_path: str | None = None


def log(message: str) -> None:
    line = f"{datetime.now(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')} {message}"
    print(line, flush=True)
    _log_lines.append(line)
    if _log_path:
        with open(_log_path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def run(argv: list[str], timeout: float = bounds.value("setup_command"), env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """A command's result; a missing tool or a timeout is an exit status too (127 / 124), never an exception.

    Bounded even when the command leaves a daemon behind (a CLI installer, say): its own process group, killed
    whole at the bound, and its output in files rather than pipes the daemon could hold open."""
    code, out, err = ca.run_bounded_split(argv, timeout, env=env)
    if code is None:
        return subprocess.CompletedProcess(argv, 124, out, f"timed out after {timeout:.0f} s")
    return subprocess.CompletedProcess(argv, code, out, err)


# --- finding the disk --------------------------------------------------------------------------------------


def disk_serial(cloud: str, disk_id: str) -> str:
    """The serial the hypervisor gives the disk: vol-0abc -> vol0abc (AWS); d-bp1xyz -> bp1xyz (Alibaba)."""
    if cloud == "alicloud":
        return disk_id.removeprefix("d-")
    return disk_id.replace("-", "", 1)


def device_candidates(cloud: str, disk_id: str, dev_root: str = "/dev") -> list[str]:
    """Stable paths of the data disk, most specific first."""
    serial = disk_serial(cloud, disk_id)
    by_id = f"{dev_root}/disk/by-id"
    if cloud == "alicloud":
        return [f"{by_id}/virtio-{serial}", f"{by_id}/nvme-Alibaba_Cloud_Elastic_Block_Storage_{serial}"]
    # Nitro exposes EBS volumes as NVMe devices whose serial is the volume id without its dash; Xen instances
    # see the attachment's device name (/dev/sdf), which the kernel may call /dev/xvdf.
    return [f"{by_id}/nvme-Amazon_Elastic_Block_Store_{serial}", f"{dev_root}/sdf", f"{dev_root}/xvdf"]


def device_by_serial(serial: str, sys_root: str = "/sys", dev_root: str = "/dev") -> str | None:
    """Scan sysfs for a block device with this serial, for images whose udev rules make no by-id link."""
    block = os.path.join(sys_root, "block")
    try:
        names = sorted(os.listdir(block))
    except OSError:
        return None
    for name in names:
        for rel in ("serial", "device/serial"):
            try:
                with open(os.path.join(block, name, rel), encoding="utf-8", errors="replace") as fh:
                    found = fh.read().strip()
            except OSError:
                continue
            if found == serial:
                return os.path.join(dev_root, name)
    return None


def find_device(settings: dict[str, Any]) -> str | None:
    cloud, disk_id = settings["cloud"], settings["data_disk_id"]
    for path in device_candidates(cloud, disk_id, settings["dev_root"]):
        if os.path.exists(path):
            return os.path.realpath(path)
    found = device_by_serial(disk_serial(cloud, disk_id), settings["sys_root"], settings["dev_root"])
    return os.path.realpath(found) if found and os.path.exists(found) else None


def wait_for_device(settings: dict[str, Any]) -> str | None:
    """The attachment is made after the instance starts: wait for the disk, reporting progress."""
    deadline = time.monotonic() + float(settings["device_wait_seconds"])
    reported = 0.0
    while True:
        device = find_device(settings)
        if device:
            return device
        now = time.monotonic()
        if now >= deadline:
            return None
        if now - reported >= 30:
            tried = ", ".join(device_candidates(settings["cloud"], settings["data_disk_id"], settings["dev_root"]))
            log(f"waiting for data disk {settings['data_disk_id']} ({tried})")
            reported = now
        time.sleep(bounds.value("device_poll"))


def holds_root(device: str) -> bool:
    """True when the device (or one of its partitions) is mounted at /: never a candidate data disk."""
    root = run(["findmnt", "-nro", "SOURCE", "/"]).stdout.strip()
    if not root.startswith("/dev/"):
        return False
    root = os.path.realpath(root)
    return root == device or (root.startswith(device) and root[len(device):].lstrip("p").isdigit())


# --- the format-or-not decision ----------------------------------------------------------------------------


@dataclass
class DiskEvidence:
    """What the probes saw on a device. None means the probe could not run: that is never evidence of empty."""

    blkid_rc: int | None
    blkid: dict[str, str] = field(default_factory=dict)
    file_output: str | None = None
    lsblk_fstype: str | None = None
    partitions: int = 0
    head_zero: bool | None = None


def gather_evidence(device: str, sys_root: str = "/sys") -> DiskEvidence:
    """Probe a block device (or an image file) with blkid -p, file -s, lsblk, sysfs and its first MiB."""
    probe = run(["blkid", "-p", "-o", "export", device])
    blkid_rc: int | None = None if probe.returncode == 127 else probe.returncode
    values = dict(line.split("=", 1) for line in probe.stdout.splitlines() if "=" in line)
    values.pop("DEVNAME", None)
    described = run(["file", "-b", "-s", "-L", device])
    file_output = described.stdout.strip() if described.returncode == 0 else None
    lsblk = run(["lsblk", "-dno", "FSTYPE", device])
    fstype = lsblk.stdout.strip() or None if lsblk.returncode == 0 else None
    name = os.path.basename(os.path.realpath(device))
    try:
        partitions = sum(1 for child in os.listdir(os.path.join(sys_root, "class", "block", name)) if child.startswith(name))
    except OSError:
        partitions = 0
    try:
        with open(device, "rb") as fh:
            head = fh.read(HEAD_BYTES)
        head_zero: bool | None = not head.strip(b"\0")
    except OSError:
        head_zero = None
    return DiskEvidence(blkid_rc, values, file_output, fstype, partitions, head_zero)


def format_decision(ev: DiskEvidence) -> tuple[bool, str]:
    """(format?, why). True only when every probe ran and all agree the device is blank."""
    if ev.blkid_rc is None:
        return False, "blkid is not installed: cannot prove the disk is empty"
    if ev.blkid_rc == 0 or ev.blkid:
        found = ", ".join(f"{k}={v}" for k, v in sorted(ev.blkid.items()) if k in ("TYPE", "PTTYPE", "LABEL", "UUID"))
        return False, f"blkid found a signature ({found or 'unnamed'})"
    if ev.blkid_rc != 2:
        return False, f"blkid exited {ev.blkid_rc} (2 means nothing found): ambiguous, not formatting"
    if ev.lsblk_fstype:
        return False, f"lsblk reports a {ev.lsblk_fstype} filesystem"
    if ev.partitions:
        return False, f"the disk has {ev.partitions} partition(s)"
    if ev.file_output is None:
        return False, "file is not installed: cannot prove the disk is empty"
    if ev.file_output != "data":
        return False, f"file recognises the content: {ev.file_output}"
    if ev.head_zero is None:
        return False, "the first MiB could not be read"
    if not ev.head_zero:
        return False, "the first MiB holds non-zero bytes no probe recognises"
    return True, "no filesystem or partition signature (blkid, lsblk, file) and the first MiB is all zeros"


# --- mounting ----------------------------------------------------------------------------------------------


def fstab_entry(uuid: str, mount_point: str, fstype: str) -> str:
    # nofail: a detached or slow disk must not drop the instance into emergency mode at boot.
    wait = bounds.systemd_seconds("fstab_device_timeout")
    return f"UUID={uuid} {mount_point} {fstype} defaults,nofail,x-systemd.device-timeout={wait}s 0 2 {FSTAB_MARK}"


def update_fstab(path: str, entry: str, mount_point: str) -> bool:
    """Put ``entry`` in fstab, replacing any line for the same mount point; True when the file changed."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except FileNotFoundError:
        lines = []
    kept = [line for line in lines if not _mounts_at(line, mount_point)]
    new = [*kept, entry]
    if new == lines:
        return False
    tmp = path + ".gpulease.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("\n".join(new) + "\n")
    os.replace(tmp, path)
    return True


def _mounts_at(line: str, mount_point: str) -> bool:
    fields = line.split()
    return len(fields) >= 2 and not fields[0].startswith("#") and fields[1].rstrip("/") == mount_point.rstrip("/")


def mounted_source(mount_point: str) -> str | None:
    out = run(["findmnt", "-nro", "SOURCE", "--mountpoint", mount_point])
    return out.stdout.strip() or None if out.returncode == 0 else None


def filesystem_device(device: str) -> tuple[str, str | None]:
    """The device to mount and its filesystem: the disk itself, or its only partition that holds one."""
    probe = run(["blkid", "-p", "-o", "export", device])
    values = dict(line.split("=", 1) for line in probe.stdout.splitlines() if "=" in line)
    if probe.returncode == 0 and values.get("TYPE"):
        return device, values["TYPE"]
    if values.get("PTTYPE"):
        parts = run(["lsblk", "-lnpo", "NAME,FSTYPE,TYPE", device]).stdout.splitlines()
        found = [p.split() for p in parts if p.split()[-1:] == ["part"] and len(p.split()) == 3]
        if len(found) == 1:
            return found[0][0], found[0][1]
    return device, None


def mount_data_disk(settings: dict[str, Any]) -> dict[str, Any]:
    """Mount the data disk; the result says what happened and why, for the ready marker."""
    mp = settings["mount_point"]
    result: dict[str, Any] = {"ok": False, "mount_point": mp, "disk_id": settings["data_disk_id"], "formatted": False}
    device = wait_for_device(settings)
    if device is None:
        result["error"] = (
            f"data disk {settings['data_disk_id']} did not appear within {settings['device_wait_seconds']} s "
            f"(looked for {', '.join(device_candidates(settings['cloud'], settings['data_disk_id'], settings['dev_root']))})"
        )
        return result
    result["device"] = device
    if holds_root(device):
        result["error"] = f"{device} holds the root filesystem; refusing to use it as the data disk"
        return result
    target, fstype = filesystem_device(device)
    if fstype is None:
        ev = gather_evidence(device, settings["sys_root"])
        fmt, why = format_decision(ev)
        result["format_decision"] = {"format": fmt, "reason": why, "evidence": asdict(ev)}
        log(f"format decision for {device}: {'format' if fmt else 'do not format'}: {why}")
        if not fmt:
            result["error"] = f"{device} is not mounted: it has no filesystem gpulease can mount and {why}"
            return result
        fstype = settings["new_filesystem"]
        made = run([f"mkfs.{fstype}", "-q", "-L", "gpulease-data", device], timeout=bounds.value("mkfs"))
        if made.returncode != 0:
            result["error"] = f"mkfs.{fstype} {device} failed: {made.stderr.strip()[-300:]}"
            return result
        run(["udevadm", "settle"], timeout=bounds.value("udev_settle"))
        result["formatted"] = True
        target = device
        log(f"created a {fstype} filesystem on the blank disk {device}")
    else:
        log(f"{target} already holds a {fstype} filesystem: mounting it, not formatting")
    result["device"], result["fstype"] = target, fstype
    uuid = run(["blkid", "-p", "-s", "UUID", "-o", "value", target]).stdout.strip()
    if not uuid:
        result["error"] = f"{target} has a {fstype} filesystem without a UUID; not adding it to fstab"
        return result
    result["uuid"] = uuid
    if update_fstab(settings["fstab_path"], fstab_entry(uuid, mp, fstype), mp):
        log(f"fstab: {mp} is UUID={uuid} ({fstype}, nofail)")
    os.makedirs(mp, exist_ok=True)
    current = mounted_source(mp)
    if current is None:
        mounted = run(["mount", "-t", fstype, target, mp], timeout=bounds.value("mount"))
        if mounted.returncode != 0:
            result["error"] = f"mount {target} {mp} failed: {mounted.stderr.strip()[-300:]}"
            return result
        log(f"mounted {target} at {mp}")
    elif os.path.realpath(current) != os.path.realpath(target):
        result["error"] = f"{mp} is already mounted from {current}, not from the data disk {target}"
        return result
    result["mounted"] = True
    prepare_directories(mp, settings["data_owner"])
    result["writable"], why = writable(mp)
    if not result["writable"]:
        result["error"] = why
        return result
    result["ok"] = True
    return result


def prepare_directories(mount_point: str, owner: str) -> None:
    try:
        user = pwd.getpwnam(owner)
    except KeyError:
        user = None
    for path in [mount_point, *(os.path.join(mount_point, d) for d in DATA_DIRS)]:
        os.makedirs(path, exist_ok=True)
        # Hand over only what root still owns: a reattached disk keeps the owners it had.
        if user is not None and os.stat(path).st_uid == 0:
            os.chown(path, user.pw_uid, user.pw_gid)


def writable(mount_point: str) -> tuple[bool, str]:
    probe = os.path.join(mount_point, "logs", ".gpulease-write-test")
    try:
        with open(probe, "wb") as fh:
            fh.write(b"ok")
            fh.flush()
            os.fsync(fh.fileno())
        os.remove(probe)
    except OSError as exc:
        return False, f"{mount_point} is not writable: {exc}"
    return True, ""


# --- the NVIDIA driver -------------------------------------------------------------------------------------

# apt without questions: no debconf prompt, keep changed config files, and needrestart (Ubuntu 22.04 runs it after
# every install) only lists what it would restart instead of asking (NEEDRESTART_MODE, its non-interactive mode).
APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "NEEDRESTART_MODE": "l"}
# apt waits this long for the dpkg lock itself (cloud-init and unattended-upgrades hold it at first boot) before it
# gives up; the bootstrap then tries again (``apt_lock_attempts``).
APT_LOCK_TIMEOUT = str(bounds.systemd_seconds("apt_lock"))
APT_OPTIONS = ["-q", "-o", f"DPkg::Lock::Timeout={APT_LOCK_TIMEOUT}"]
APT_INSTALL_OPTIONS = ["-y", "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold"]
LOCK_MESSAGES = ("could not get lock", "unable to acquire the dpkg frontend lock", "unable to lock")


def gpu_visible(nvidia_smi: str) -> tuple[bool, str]:
    """(nvidia-smi lists at least one GPU, what it said)."""
    probe = run([nvidia_smi, "-L"], bounds.value("nvidia_smi_setup"))
    said = (probe.stdout + probe.stderr).strip()
    return probe.returncode == 0 and "GPU " in probe.stdout, said[-300:]


def apt_get(settings: dict[str, Any], args: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``apt-get`` non-interactive, tried again while another apt or dpkg holds the lock; all attempts together
    within ``timeout`` seconds."""
    env = {**os.environ, **APT_ENV}
    end = time.monotonic() + timeout
    attempts = max(1, int(settings["apt_lock_attempts"]))
    for attempt in range(1, attempts + 1):
        done = run(["apt-get", *APT_OPTIONS, *args], max(1.0, end - time.monotonic()), env=env)
        said = (done.stdout + done.stderr).lower()
        pause = float(settings["apt_lock_wait_seconds"])
        locked = done.returncode != 0 and any(m in said for m in LOCK_MESSAGES)
        if not locked or attempt == attempts or time.monotonic() + pause >= end:
            return done
        verb = "update" if "update" in args else "install"
        log(f"apt-get {verb}: another package manager holds the lock; trying again ({attempt}/{attempts})")
        time.sleep(pause)
    return done  # pragma: no cover - the loop always returns


def _tail(done: subprocess.CompletedProcess) -> str:
    return " ".join((done.stderr or done.stdout).split())[-300:]


def ensure_driver(settings: dict[str, Any]) -> dict[str, Any]:
    """The driver check of readiness. Installs the pinned driver only on an image known to have none
    (``nvidia_driver = absent``) and only while nvidia-smi cannot see the GPU, so a reboot (or an image that has
    one after all) skips it. Returns {"ok": True | False | None (not this image's business), ...}."""
    fact, smi = settings["nvidia_driver"], settings["nvidia_smi"]
    seen, said = gpu_visible(smi)
    if seen:
        return {"ok": True, "image": fact, "installed": False, "detail": "nvidia-smi sees the GPU"}
    if fact != "absent":
        # A family with the driver, or a pinned image whose content gpulease does not know: installing a second
        # driver over one could break it; readiness reports the GPU it cannot see instead.
        return {"ok": None, "image": fact, "skipped": f"the image's NVIDIA driver is {fact}; gpulease installs one "
                "only on an image family known to have none"}
    packages = list(settings["driver_packages"])
    wanted = [f"linux-headers-{os.uname().release}", *packages]  # DKMS builds the module for the running kernel
    result: dict[str, Any] = {"ok": False, "image": fact, "installed": False, "packages": packages}
    log(f"the image has no NVIDIA driver (nvidia-smi: {said or 'not found'}); installing {' '.join(wanted)}")
    updated = apt_get(settings, ["update"], float(settings["apt_update_timeout_seconds"]))
    if updated.returncode != 0:
        log(f"apt-get update exited {updated.returncode} ({_tail(updated)}); installing from the lists there are")
    installed = apt_get(settings, [*APT_INSTALL_OPTIONS, "install", *wanted], float(settings["apt_install_timeout_seconds"]))
    if installed.returncode != 0:
        result["error"] = (f"installing the NVIDIA driver ({' '.join(packages)}) failed: apt-get install exited "
                           f"{installed.returncode}: {_tail(installed)}")
        return result
    result["installed"] = True
    loaded = run(["modprobe", "nvidia"], bounds.value("modprobe"))
    seen, said = gpu_visible(smi)
    if seen:
        result.update(ok=True, detail=f"installed {' '.join(packages)}; nvidia-smi sees the GPU")
        log(f"NVIDIA driver installed ({' '.join(packages)}) and loaded: {said.splitlines()[0] if said else ''}")
        return result
    why = f"modprobe nvidia exited {loaded.returncode}: {_tail(loaded)}; " if loaded.returncode != 0 else ""
    if re.search(r"^nouveau\s", _read_text(os.path.join(settings["proc_root"], "modules")), re.M):
        why += "the nouveau driver holds the GPU (a reboot loads the NVIDIA driver instead); "
    result["error"] = (f"the NVIDIA driver ({' '.join(packages)}) was installed but nvidia-smi still cannot see the "
                       f"GPU: {why}nvidia-smi: {said or 'no output'}")
    return result


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


# --- readiness ---------------------------------------------------------------------------------------------


def check_gpu(nvidia_smi: str) -> dict[str, Any]:
    """Every GPU nvidia-smi lists, with its name, memory and driver; a GPU instance where nvidia-smi is missing,
    fails, lists nothing or prints [N/A] is NOT ready (no driver, or a GPU the driver cannot read)."""
    query = run([nvidia_smi, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"], bounds.value("nvidia_smi_setup"))
    if query.returncode == 127:
        return {"ok": False, "error": f"nvidia-smi is not installed ({query.stderr.strip()[-200:]}): the image has no "
                "NVIDIA driver, so training would run without a GPU"}
    if query.returncode != 0:
        return {"ok": False, "error": f"nvidia-smi exited {query.returncode}: {(query.stderr or query.stdout).strip()[-300:]}"}
    gpus, unreadable = [], []
    for line in query.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3:
            gpus.append({"name": parts[0], "memory_mib": _number(parts[1]), "driver_version": parts[2]})
            if not parts[0] or any(p.startswith("[") for p in parts[:3]):  # [N/A], [Unknown Error], ...
                unreadable.append(line.strip())
    header = run([nvidia_smi], bounds.value("nvidia_smi_setup")).stdout
    cuda = re.search(r"CUDA Version:\s*([0-9.]+)", header)
    result = {"ok": bool(gpus) and not unreadable, "count": len(gpus), "gpus": gpus,
              "cuda_version": cuda.group(1) if cuda else None}
    if not gpus:
        result["error"] = "nvidia-smi listed no GPU"
    elif unreadable:
        result["error"] = f"nvidia-smi cannot read {len(unreadable)} GPU(s): {'; '.join(unreadable)[:300]}"
    return result


TORCH_PROBE = (
    "import importlib.util, json\n"
    "if importlib.util.find_spec('torch') is None:\n"
    "    print(json.dumps({'installed': False}))\n"
    "else:\n"
    "    import torch\n"
    "    print(json.dumps({'installed': True, 'version': torch.__version__, "
    "'cuda_available': torch.cuda.is_available(), 'device_count': torch.cuda.device_count()}))\n"
)


def check_torch(pythons: list[str]) -> dict[str, Any]:
    for python in pythons:
        if not shutil.which(python):
            continue
        out = run([python, "-c", TORCH_PROBE], timeout=bounds.value("torch_probe"))
        try:
            seen = json.loads(out.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            return {"ok": False, "python": python, "error": f"torch check failed: {out.stderr.strip()[-300:]}"}
        if seen.get("installed"):
            ok = bool(seen.get("cuda_available"))
            result = {"ok": ok, "python": python, **seen}
            if not ok:
                result["error"] = "torch is installed but torch.cuda.is_available() is False"
            return result
    return {"ok": None, "skipped": "torch is not installed"}


def _metadata(settings: dict[str, Any]) -> ca.Metadata:
    return ca.Metadata(settings["cloud"], settings["metadata_url"], float(settings["metadata_timeout_seconds"]))


def metadata_get(settings: dict[str, Any], path: str) -> str:
    """A metadata value ('' when unavailable), always through the token (hardened mode on both clouds)."""
    try:
        return _metadata(settings).value(path) or ""
    except ca.MetadataError:
        return ""


def storage_run(settings: dict[str, Any], template: list[str], values: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """A storage CLI call with the role's credentials passed explicitly (see ``cloud_access.storage_command``)."""
    metadata = _metadata(settings)
    try:
        call = ca.storage_command(template, values, cloud=settings["cloud"], region=settings["region"],
                                  metadata=metadata, credentials=ca.RoleCredentials(metadata))
    except (ca.CredentialsError, OSError) as exc:
        return subprocess.CompletedProcess(template, 126, "", f"no credentials for {template[0]}: {exc}")
    try:
        code, out = ca.run_bounded(call.argv, timeout, env=call.env)
    finally:
        call.close()
    return subprocess.CompletedProcess(call.argv, 124 if code is None else code, "", out)


def publish_marker(settings: dict[str, Any], marker_path: str) -> None:
    """Copy the ready marker to ``<control_uri>ready.json`` (outside the expiring prefix) for runners without SSH."""
    uri, template = settings.get("control_uri"), settings["ready_upload_command"]
    if not uri or not template:
        return
    out = storage_run(settings, list(template), {"file": marker_path, "dst": uri}, bounds.value("bucket_copy"))
    if out.returncode == 0:
        log(f"ready marker published to {uri}ready.json")
    else:
        log(f"publishing the ready marker failed ({out.returncode}): {(out.stderr or out.stdout).strip()[-300:]}")


def stage_data(settings: dict[str, Any], disk: dict[str, Any]) -> dict[str, Any] | None:
    """The ``data`` check: the sources staged onto the mounted disk (None: the stack names no source)."""
    if not settings.get("data_sources"):
        return None
    if not disk.get("ok"):
        return {"ok": False, "error": "the data disk is not mounted: no source was staged"}
    try:
        return staging.stage_sources(settings, log)
    except Exception as exc:  # reported in the marker, like the disk
        return {"ok": False, "error": f"staging failed: {type(exc).__name__}: {exc}"}


def publish_ready_record(settings: dict[str, Any], marker_path: str, instance_id: str | None) -> None:
    """The ready record a bake waits for (``<ready_record_uri><instance id>.json``, outside the expiring checkpoint
    prefix): written only when every check passed, named by the instance whose readiness it proves."""
    uri, template = settings.get("ready_record_uri"), settings.get("ready_record_command")
    if not uri or not template or not instance_id:
        return
    out = storage_run(settings, list(template), {"file": marker_path, "dst": uri, "instance": instance_id},
                      bounds.value("bucket_copy"))
    if out.returncode == 0:
        log(f"ready record published to {uri}{instance_id}.json")
    else:
        log(f"publishing the ready record failed ({out.returncode}): {(out.stderr or out.stdout).strip()[-300:]}")


def ensure_storage_cli(settings: dict[str, Any]) -> None:
    """Install the bucket CLI (ossutil on Alibaba Cloud images) when it is missing: before staging, whose bucket
    sources copy with it, and the bucket check (a no-op once it is there)."""
    tools = {t[0] for t in (settings.get("bucket_check_command"), *(settings.get("stage_commands") or {}).values())
             if t}
    missing = sorted(t for t in tools if not shutil.which(t))
    if not missing or not settings.get("cli_install_command"):
        return
    log(f"{', '.join(missing)} not installed; installing")
    installed = run(list(settings["cli_install_command"]), timeout=bounds.value("cli_install"))
    if installed.returncode != 0:
        log(f"installing {', '.join(missing)} failed: {installed.stderr.strip()[-300:]}")


def check_bucket(settings: dict[str, Any]) -> dict[str, Any]:
    uri, template = settings["checkpoint_uri"], settings["bucket_check_command"]
    if not uri:
        return {"ok": None, "skipped": "the experiment keeps no checkpoints"}
    if not template:
        return {"ok": False, "uri": uri, "error": "no bucket check command configured"}
    tool = template[0]
    ensure_storage_cli(settings)
    out = storage_run(settings, list(template), {"dst": uri}, bounds.value("bucket_check"))
    result: dict[str, Any] = {"ok": out.returncode == 0, "uri": uri}
    if out.returncode != 0:
        result["error"] = f"{tool} exited {out.returncode}: {(out.stderr or out.stdout).strip()[-300:]}"
    return result


NO_GPU = {"ok": None, "skipped": "preparation phase: a CPU instance, no GPU"}


def readiness(settings: dict[str, Any], disk: dict[str, Any], driver: dict[str, Any] | None = None,
              data: dict[str, Any] | None = None) -> dict[str, Any]:
    prep = settings.get("phase") == "prep"
    checks = {
        "driver": NO_GPU if prep else driver if driver is not None else {"ok": None, "skipped": "not checked"},
        "gpu": NO_GPU if prep else check_gpu(settings["nvidia_smi"]),
        "torch": NO_GPU if prep else check_torch(list(settings["torch_pythons"])),
        "disk": disk,
        "bucket": check_bucket(settings),
        "data": data if data is not None else {"ok": None, "skipped": "no data sources"},
    }
    if settings.get("cluster"):  # a cluster node: every peer reachable (instance/cluster.py)
        checks["peers"] = cl.check_peers(settings, settings.get("peer_wait_seconds"))
    failed = sorted(name for name, check in checks.items() if check.get("ok") is False)
    return {
        "ready": not failed,
        "failed": failed,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "experiment": settings.get("experiment"),
        "phase": settings.get("phase") or "train",
        "instanceId": metadata_get(settings, "/latest/meta-data/instance-id") or None,
        "checks": checks,
    }


def setup_cluster_node(settings: dict[str, Any]) -> None:
    """A cluster node: ``cluster.env`` and the ``gpulease-launch`` command, before readiness checks the peers."""
    try:
        cl.write_cluster_env(settings, settings.get("cluster_env_path") or cl.CLUSTER_ENV_PATH)
        cl.install_launcher(settings.get("install_dir") or os.path.dirname(os.path.abspath(__file__)),
                            settings.get("launcher_path") or cl.LAUNCHER_PATH)
        cluster = settings["cluster"]
        log(f"cluster node {cluster['rank']} of {cluster['nodes']}: cluster.env written, gpulease-launch installed; "
            f"rendezvous {cluster['addresses'][0]}:{cluster['rendezvous_port']}")
    except (OSError, ValueError, KeyError) as exc:
        log(f"cluster node setup failed: {type(exc).__name__}: {exc}")


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def write_json(path: str, value: dict[str, Any]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(value, fh, indent=2, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


def trusted_keys(settings: dict[str, Any]) -> list[str] | None:
    """The public keys this instance's metadata lists (the key pair it was started with): none when it lists none
    (the metadata service answers that the key is not there), None when the metadata could not be read."""
    try:
        text = _metadata(settings).value("/latest/meta-data/public-keys/0/openssh-key") or ""
    except ca.MetadataError:
        return None
    return [line for line in text.splitlines() if line.strip()]


def authorized_keys_path(settings: dict[str, Any]) -> str | None:
    if settings.get("authorized_keys_path"):
        return str(settings["authorized_keys_path"])
    try:
        return os.path.join(pwd.getpwnam(settings["data_owner"]).pw_dir, ".ssh", "authorized_keys")
    except KeyError:
        return None


def forget_old_keys(settings: dict[str, Any], previous: str | None) -> bool:
    """A new instance id on a system disk that was another instance's: the keys that instance trusted are not
    trusted here; only the key this instance was started with stays. True when that is done (or there is no file
    to rewrite); False when this instance's own keys could not be read or the file could not be rewritten: the
    file is left as it is (never emptied on a failed read: cloud-init adds the owner's key once per instance, so an
    emptied file would lock the owner out for good) and the next claim tries again."""
    path = authorized_keys_path(settings)
    if path is None:
        return True
    keys = trusted_keys(settings)
    if keys is None:
        log(f"{path}: not rewritten yet: this instance's own key could not be read from the metadata; "
            f"{previous or 'an unknown instance'}'s keys are still trusted until it can")
        return False
    try:
        if st.trust_only(path, keys):
            log(f"{path}: rewritten with this instance's own key(s) only (the state was {previous or 'unowned'}'s)")
    except OSError as exc:
        log(f"{path}: not rewritten: {exc}; {previous or 'an unknown instance'}'s keys may still be trusted")
        return False
    return True


def claim_state(settings: dict[str, Any]) -> st.Claim:
    """Claim the state for this instance; on a new instance id, forget the keys the old one trusted, also when the
    watchdog or the run unit claimed the state first (``keysPendingFrom``, cleared once done)."""
    claim = st.claim_for(settings, lambda: metadata_get(settings, "/latest/meta-data/instance-id") or None, time.time(),
                         warn=log)
    state_dir = settings.get("state_dir") or "/var/lib/gpulease"
    if claim.instance_id is not None:
        previous = st.keys_pending(state_dir, claim.instance_id, log)
        if previous is not None and forget_old_keys(settings, previous):
            st.keys_forgotten(state_dir, claim.instance_id, log)
    return claim


def claim_summary(claim: st.Claim) -> str:
    if claim.kind == "unknown-id":
        return "this instance's id cannot be read: the state is kept as it is"
    if claim.kind == "resumed":
        last = claim.interruptions[-1] if claim.interruptions else {}
        return (f"{claim.instance_id} booted again (stopped at {last.get('stoppedAt')} for {last.get('stoppedSeconds')} "
                "s): a resumption; the data disk is mounted as it is, the deadline and spend continue")
    if claim.kind == "first-boot" and claim.moved:
        return (f"new instance {claim.instance_id}: the state of {claim.previous_id or 'an unknown instance'} moved to "
                f"{st.PREVIOUS_DIR}/")
    return f"{claim.instance_id}, {claim.kind}"


def main() -> int:
    global _log_path
    path = os.environ.get("GPULEASE_SETTINGS", SETTINGS_PATH)
    try:
        settings = {**DEFAULTS, **ca.load_settings(path, required=("cloud", "data_disk_id"))}
    except ca.SettingsError as exc:
        print(f"gpulease-bootstrap: cannot read settings: {exc}", file=sys.stderr, flush=True)
        return 2
    state_dir = settings["state_dir"]
    os.makedirs(state_dir, exist_ok=True)
    # First: whose state is this? A new instance id (an image baked elsewhere) starts clean, before anything here
    # reads or writes it (instance_state).
    claim = claim_state(settings)
    _log_path = os.path.join(state_dir, "bootstrap.log")
    log(f"bootstrap for experiment {settings.get('experiment')} ({settings['cloud']} {settings['region']})")
    log(f"state: {claim_summary(claim)}")
    # The idle rule's wait for this bootstrap counts from here, and ends when this process is gone unreported.
    st.mark_progress(state_dir, claim.boot, "bootstrap_started", time.time(), bootstrap_pid=os.getpid())
    try:
        disk = mount_data_disk(settings)
    except Exception as exc:  # reported in the marker, not hidden in a traceback nobody reads
        disk = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    if not disk["ok"]:
        log(f"data disk NOT ready: {disk.get('error')}")
    try:
        driver = None if settings.get("phase") == "prep" else ensure_driver(settings)
    except Exception as exc:  # reported in the marker, like the disk
        driver = {"ok": False, "error": f"NVIDIA driver check failed: {type(exc).__name__}: {exc}"}
    if settings.get("cluster"):
        setup_cluster_node(settings)
    ensure_storage_cli(settings)  # what staging needs exists first
    data = stage_data(settings, disk)
    report = readiness(settings, disk, driver, data)
    report["boot"] = claim.boot
    marker = os.path.join(state_dir, "ready.json")
    write_json(marker, report)
    # The idle rule counts from here (and from the verification, when the stack has one).
    st.mark_progress(state_dir, claim.boot, "bootstrap", time.time())
    if disk.get("ok"):
        logs = os.path.join(settings["mount_point"], "logs")
        with open(os.path.join(logs, "bootstrap.log"), "a", encoding="utf-8") as fh:
            fh.write("\n".join(_log_lines) + "\n")
        _log_path = os.path.join(logs, "bootstrap.log")
        write_json(os.path.join(logs, "ready.json"), report)
    for name, check in report["checks"].items():
        state = "skipped" if check.get("ok") is None else ("ok" if check["ok"] else "FAILED")
        log(f"check {name}: {state}" + (f": {check.get('error') or check.get('skipped')}" if state != "ok" else ""))
    if report["checks"]["gpu"].get("ok") is False:
        # Loud on purpose: a GPU instance without a usable GPU bills for nothing.
        cause = report["checks"]["driver"].get("error")
        log(f"GPU NOT USABLE: {report['checks']['gpu'].get('error')}" + (f"; {cause}" if cause else ""))
    log("READY" if report["ready"] else f"NOT READY: {', '.join(report['failed'])} failed (see ready.json)")
    publish_marker(settings, marker)
    if report["ready"]:
        publish_ready_record(settings, marker, report.get("instanceId"))
    return 0 if report["ready"] else 1


if __name__ == "__main__":
    sys.exit(main())
