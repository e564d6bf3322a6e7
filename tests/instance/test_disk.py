"""The data disk: found by its stable id, formatted only when blank, mounted by UUID with nofail.

The format-or-not decision is tested on real image files everywhere. Where the machine allows loop devices
(root, /dev/loop-control), images are also attached and mounted for real."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from components.image_bake import control_folder
from instance import instance_setup as setup
from tests.support.instance import MetadataServer, MetadataState, blank_image, events, ext4_image, make_boot_rig

SCRIPT = Path(setup.__file__)


# --- the decision, on evidence -------------------------------------------------------------------------------


def blank_evidence(**changes) -> setup.DiskEvidence:
    ev = setup.DiskEvidence(blkid_rc=2, blkid={}, file_output="data", lsblk_fstype=None, partitions=0, head_zero=True)
    for key, value in changes.items():
        setattr(ev, key, value)
    return ev


def test_only_a_disk_every_probe_calls_blank_is_formatted() -> None:
    assert setup.format_decision(blank_evidence()) == (
        True,
        "no filesystem or partition signature (blkid, lsblk, file) and the first MiB is all zeros",
    )


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"blkid_rc": None}, "blkid is not installed"),
        ({"blkid_rc": 0, "blkid": {"TYPE": "xfs", "UUID": "u-1"}}, "blkid found a signature (TYPE=xfs, UUID=u-1)"),
        ({"blkid_rc": 0, "blkid": {"PTTYPE": "gpt"}}, "blkid found a signature (PTTYPE=gpt)"),
        ({"blkid_rc": 8}, "blkid exited 8"),
        ({"blkid_rc": 4}, "blkid exited 4"),
        ({"lsblk_fstype": "crypto_LUKS"}, "lsblk reports a crypto_LUKS filesystem"),
        ({"partitions": 2}, "the disk has 2 partition(s)"),
        ({"file_output": None}, "file is not installed"),
        ({"file_output": "DOS/MBR boot sector"}, "file recognises the content: DOS/MBR boot sector"),
        ({"head_zero": None}, "the first MiB could not be read"),
        ({"head_zero": False}, "the first MiB holds non-zero bytes"),
    ],
)
def test_any_sign_of_content_or_any_probe_that_could_not_run_means_no_format(changes: dict, why: str) -> None:
    fmt, reason = setup.format_decision(blank_evidence(**changes))
    assert fmt is False
    assert why in reason


# --- the decision, on real images ----------------------------------------------------------------------------


def _mbr(path: Path) -> Path:
    """A blank disk with a DOS partition table holding one Linux partition."""
    blank_image(path)
    with open(path, "r+b") as fh:
        entry = bytes([0x00, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (8192).to_bytes(4, "little")
        fh.seek(446)
        fh.write(entry)
        fh.seek(510)
        fh.write(b"\x55\xaa")
    return path


def _noise(path: Path) -> Path:
    blank_image(path)
    with open(path, "r+b") as fh:
        fh.seek(4096)
        fh.write(random.Random(7).randbytes(4096))
    return path


def _swap(path: Path) -> Path:
    blank_image(path)
    path.chmod(0o600)
    subprocess.run(["mkswap", str(path)], check=True, capture_output=True)
    return path


@pytest.mark.parametrize(
    ("make", "expect_format", "why"),
    [
        (blank_image, True, "first MiB is all zeros"),
        (lambda p: ext4_image(p, {"model.pt": "weights"}), False, "TYPE=ext4"),
        (_swap, False, "TYPE=swap"),
        (_mbr, False, "PTTYPE=dos"),
        (_noise, False, "non-zero bytes"),
    ],
    ids=["blank", "ext4", "swap", "partition-table", "unrecognised-bytes"],
)
def test_decision_on_image_files(tmp_path: Path, make, expect_format: bool, why: str) -> None:
    image = make(tmp_path / "disk.img")
    fmt, reason = setup.format_decision(setup.gather_evidence(str(image), str(tmp_path / "sys")))
    assert (fmt, why in reason) == (expect_format, True), reason


# --- the whole bootstrap on image files, mount and mkfs recorded ---------------------------------------------


def test_a_disk_with_a_filesystem_is_mounted_by_uuid_and_never_formatted(tmp_path: Path) -> None:
    image = ext4_image(tmp_path / "disk.img", {"model.pt": "weights"})
    uuid = subprocess.run(["blkid", "-p", "-s", "UUID", "-o", "value", str(image)], capture_output=True, text=True).stdout.strip()
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = make_boot_rig(tmp_path, image, metadata_url=server.url)
        done = rig.run(SCRIPT)
    assert done.returncode == 0, done.stdout + done.stderr
    names = [e["name"] for e in events(rig.events)]
    assert "mkfs" not in names
    mount = next(e for e in events(rig.events) if e["name"] == "mount")
    assert mount["argv"] == ["-t", "ext4", str(image), str(rig.mount_point)]
    fstab = (tmp_path / "fstab").read_text().splitlines()
    assert fstab[0].startswith("LABEL=cloudimg-rootfs / ")  # the root entry is left alone
    assert fstab[1] == f"UUID={uuid} {rig.mount_point} ext4 defaults,nofail,x-systemd.device-timeout=30s 0 2 {setup.FSTAB_MARK}"
    assert sorted(os.listdir(rig.mount_point)) == sorted(setup.DATA_DIRS)
    marker = rig.marker
    assert marker["ready"] is True and marker["failed"] == []
    assert marker["checks"]["disk"]["formatted"] is False
    assert marker["checks"]["disk"]["uuid"] == uuid
    assert marker["checks"]["gpu"] == {
        "ok": True,
        "count": 1,
        "gpus": [{"name": "NVIDIA A10G", "memory_mib": 23028.0, "driver_version": "550.127.05"}],
        "cuda_version": "12.4",
    }
    assert marker["checks"]["torch"] == {"ok": None, "skipped": "torch is not installed"}
    assert marker["checks"]["bucket"] == {"ok": True, "uri": "s3://bucket/ckpt/"}
    check, publish = (e for e in events(rig.events) if e["name"] == "aws")
    assert check["argv"] == ["s3", "ls", "s3://bucket/ckpt/", "--region", "us-east-1"]
    # The marker names the instance and is published for runners without SSH where `up` and `status` read it
    # (control_folder of the checkpoint prefix, at the bucket root: outside the prefix the lifecycle rule expires).
    assert marker["instanceId"] == "i-0123456789abcdef0"
    published = f"s3://bucket/{control_folder('ckpt/')}ready.json"
    assert not published.startswith("s3://bucket/ckpt/"), published
    assert publish["argv"] == ["s3", "cp", str(tmp_path / "state" / "ready.json"), published]
    assert publish["listing"]["marker"] == marker
    assert json.loads((rig.mount_point / "logs" / "ready.json").read_text()) == marker
    assert "mounting it, not formatting" in (rig.mount_point / "logs" / "bootstrap.log").read_text()


def test_a_blank_disk_is_formatted_once(tmp_path: Path) -> None:
    image = blank_image(tmp_path / "disk.img")
    rig = make_boot_rig(tmp_path, image, cloud="alicloud", disk_id="d-bp1abcdefghij1234567")
    rig.run(SCRIPT)
    mkfs = [e for e in events(rig.events) if e["name"] == "mkfs"]
    assert [e["argv"] for e in mkfs] == [["-q", "-L", "gpulease-data", str(image)]]
    decision = rig.marker["checks"]["disk"]["format_decision"]
    assert decision["format"] is True and decision["evidence"]["blkid_rc"] == 2


def test_a_disk_holding_unrecognised_bytes_is_left_alone_and_reported(tmp_path: Path) -> None:
    image = _noise(tmp_path / "disk.img")
    before = image.read_bytes()
    rig = make_boot_rig(tmp_path, image)
    done = rig.run(SCRIPT)
    assert done.returncode == 1
    assert [e["name"] for e in events(rig.events)] == ["aws", "aws"]  # bucket check and marker upload; no mkfs, no mount
    marker = rig.marker
    assert marker["ready"] is False and marker["failed"] == ["disk"]
    assert "non-zero bytes" in marker["checks"]["disk"]["error"]
    assert image.read_bytes() == before
    assert "NOT READY: disk failed" in done.stdout
    assert str(rig.mount_point) not in (tmp_path / "fstab").read_text()


def test_a_disk_that_never_appears_is_reported_not_hidden(tmp_path: Path) -> None:
    rig = make_boot_rig(tmp_path, tmp_path / "missing.img", disk_id="vol-0fedcba9876543210")
    rig.settings["device_wait_seconds"] = 0
    done = rig.run(SCRIPT)
    assert done.returncode == 1
    error = rig.marker["checks"]["disk"]["error"]
    assert "vol-0fedcba9876543210 did not appear within 0 s" in error
    assert "nvme-Amazon_Elastic_Block_Store_vol0fedcba9876543210" in error


def test_failed_gpu_and_bucket_checks_are_reported(tmp_path: Path) -> None:
    image = ext4_image(tmp_path / "disk.img", {})
    rig = make_boot_rig(tmp_path, image, bucket_ok=False)
    from tests.support.instance import set_gpus

    set_gpus(tmp_path / "gpu", fail=True)
    done = rig.run(SCRIPT)
    assert done.returncode == 1
    marker = rig.marker
    assert marker["failed"] == ["bucket", "gpu"]
    assert "nvidia-smi exited 9" in marker["checks"]["gpu"]["error"]
    assert marker["checks"]["bucket"]["error"].startswith("aws exited 255")


# --- lookup and fstab helpers --------------------------------------------------------------------------------


def test_stable_device_paths_for_both_clouds() -> None:
    assert setup.device_candidates("aws", "vol-0123456789abcdef0") == [
        "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_vol0123456789abcdef0",
        "/dev/sdf",
        "/dev/xvdf",
    ]
    assert setup.device_candidates("alicloud", "d-bp1abcdefghij1234567") == [
        "/dev/disk/by-id/virtio-bp1abcdefghij1234567",
        "/dev/disk/by-id/nvme-Alibaba_Cloud_Elastic_Block_Storage_bp1abcdefghij1234567",
    ]


def test_sysfs_serial_finds_a_disk_without_a_by_id_link(tmp_path: Path) -> None:
    for name, serial, rel in [("vda", "bp1root", "serial"), ("vdb", "bp1abcdefghij1234567", "serial"), ("nvme1n1", "vol0abc", "device/serial")]:
        path = tmp_path / "sys" / "block" / name / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(serial + "  \n")
    assert setup.device_by_serial("bp1abcdefghij1234567", str(tmp_path / "sys"), "/dev") == "/dev/vdb"
    assert setup.device_by_serial("vol0abc", str(tmp_path / "sys"), "/dev") == "/dev/nvme1n1"
    assert setup.device_by_serial("vol0missing", str(tmp_path / "sys"), "/dev") is None


def test_fstab_update_replaces_the_mount_points_line_and_is_idempotent(tmp_path: Path) -> None:
    fstab = tmp_path / "fstab"
    fstab.write_text("LABEL=root / ext4 defaults 0 1\n/dev/xvdf /data ext4 defaults 0 2\n# /data comment\n")
    entry = setup.fstab_entry("1234-abcd", "/data", "ext4")
    assert setup.update_fstab(str(fstab), entry, "/data") is True
    assert fstab.read_text().splitlines() == ["LABEL=root / ext4 defaults 0 1", "# /data comment", entry]
    assert setup.update_fstab(str(fstab), entry, "/data") is False
    assert "nofail" in entry.split()[3]


# --- real loop devices ---------------------------------------------------------------------------------------


def _loop_or_skip(image: Path) -> str:
    if os.geteuid() != 0 or not shutil.which("losetup"):
        pytest.skip("loop devices need root and losetup; the decision itself is covered on image files above")
    out = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"this machine gives no loop device ({out.stderr.strip()}); the decision is covered on image files")
    return out.stdout.strip()


def _cleanup(mount_point: Path, loop: str) -> None:
    subprocess.run(["umount", str(mount_point)], capture_output=True)
    subprocess.run(["losetup", "-d", loop], capture_output=True)


def test_loop_disk_with_data_is_mounted_not_formatted_and_survives_a_reboot_rerun(tmp_path: Path) -> None:
    image = ext4_image(tmp_path / "disk.img", {"model.pt": "weights from the last run"})
    loop = _loop_or_skip(image)
    try:
        rig = make_boot_rig(tmp_path, loop, fake_mount=False, fake_mkfs=False)
        first = rig.run(SCRIPT)
        assert first.returncode == 0, first.stdout + first.stderr
        source = subprocess.run(["findmnt", "-nro", "SOURCE", "--mountpoint", str(rig.mount_point)], capture_output=True, text=True)
        assert source.stdout.strip() == loop
        assert (rig.mount_point / "model.pt").read_text() == "weights from the last run"
        for name in setup.DATA_DIRS:
            assert (rig.mount_point / name).is_dir()
        assert rig.marker["checks"]["disk"]["formatted"] is False
        # A reboot runs the bootstrap again: nothing is formatted, fstab keeps one entry.
        second = rig.run(SCRIPT)
        assert second.returncode == 0, second.stdout + second.stderr
        assert (rig.mount_point / "model.pt").read_text() == "weights from the last run"
        assert sum(setup.FSTAB_MARK in line for line in (tmp_path / "fstab").read_text().splitlines()) == 1
        assert rig.marker["checks"]["disk"]["formatted"] is False
    finally:
        _cleanup(tmp_path / "data", loop)
    listing = subprocess.run(["debugfs", "-R", "cat /model.pt", str(image)], capture_output=True, text=True)
    if listing.returncode == 0:
        assert listing.stdout == "weights from the last run"


def test_loop_blank_disk_is_formatted_and_mounted(tmp_path: Path) -> None:
    image = blank_image(tmp_path / "disk.img")
    loop = _loop_or_skip(image)
    try:
        server = MetadataServer(MetadataState(cloud="alicloud")).__enter__()  # the bucket check needs the role
        rig = make_boot_rig(tmp_path, loop, cloud="alicloud", disk_id="d-bp1abcdefghij1234567", fake_mount=False,
                            fake_mkfs=False, metadata_url=server.url)
        done = rig.run(SCRIPT)
        assert done.returncode == 0, done.stdout + done.stderr
        assert rig.marker["checks"]["disk"]["formatted"] is True
        fstype = subprocess.run(["findmnt", "-nro", "FSTYPE", "--mountpoint", str(rig.mount_point)], capture_output=True, text=True)
        assert fstype.stdout.strip() == "ext4"
        (rig.mount_point / "checkpoints" / "step-1.pt").write_text("new")
        again = rig.run(SCRIPT)
        assert again.returncode == 0 and rig.marker["checks"]["disk"]["formatted"] is False
        assert (rig.mount_point / "checkpoints" / "step-1.pt").read_text() == "new"
        server.__exit__()
    finally:
        _cleanup(tmp_path / "data", loop)
