"""Readiness as the bootstrap reports it: a GPU instance whose GPU cannot be seen is NOT ready, loudly; the bucket
check and the ready marker reach the bucket with the role's credentials read through the metadata token."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.userdata import BUCKET_CHECK_COMMANDS, READY_UPLOAD_COMMANDS
from instance import instance_setup as setup
from tests.support.instance import (
    ALI_CREDENTIALS,
    MetadataServer,
    MetadataState,
    events,
    ext4_image,
    make_boot_rig,
    recorder,
)

SCRIPT = Path(setup.__file__)


@pytest.mark.parametrize(
    ("problem", "error"),
    [
        ("missing", "nvidia-smi is not installed"),
        ("no-gpu", "nvidia-smi listed no GPU"),
        ("n/a", "nvidia-smi cannot read 1 GPU(s): NVIDIA A10G, [N/A], 550.127.05"),
        ("failing", "nvidia-smi exited 9"),
    ],
)
def test_a_gpu_instance_without_a_visible_gpu_is_not_ready_and_says_so(tmp_path: Path, problem: str, error: str) -> None:
    image = ext4_image(tmp_path / "disk.img", {"model.pt": "weights"})
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = make_boot_rig(tmp_path, image, metadata_url=server.url)
        gpu = tmp_path / "gpu"
        if problem == "missing":
            rig.settings["nvidia_smi"] = str(tmp_path / "bin" / "no-nvidia-smi")
        elif problem == "no-gpu":
            (gpu / "inventory.csv").write_text("")
        elif problem == "n/a":
            (gpu / "inventory.csv").write_text("NVIDIA A10G, [N/A], 550.127.05\n")
        else:
            (gpu / "fail").touch()
        done = rig.run(SCRIPT)
    assert done.returncode == 1
    marker = rig.marker
    assert marker["ready"] is False and marker["failed"] == ["gpu"]
    assert error in marker["checks"]["gpu"]["error"]
    assert f"GPU NOT USABLE: {marker['checks']['gpu']['error']}" in done.stdout
    assert "NOT READY: gpu failed" in done.stdout


def test_aws_bucket_check_uses_imdsv2_only_and_the_metadata_endpoint(tmp_path: Path) -> None:
    image = ext4_image(tmp_path / "disk.img", {"model.pt": "weights"})
    state = MetadataState(cloud="aws")
    with MetadataServer(state) as server:
        rig = make_boot_rig(tmp_path, image, metadata_url=server.url)
        done = rig.run(SCRIPT)
    assert done.returncode == 0, done.stdout
    check, publish = (e for e in events(rig.events) if e["name"] == "aws")
    for call in (check, publish):
        assert call["env"]["AWS_EC2_METADATA_V1_DISABLED"] == "true"
        assert call["env"]["AWS_EC2_METADATA_SERVICE_ENDPOINT"] == server.url + "/"
    assert state.refused == []  # the instance id for the marker was read with a token too
    assert rig.marker["instanceId"] == state.instance_id


def test_alicloud_bucket_check_and_marker_give_ossutil_sts_credentials_and_https(tmp_path: Path) -> None:
    image = ext4_image(tmp_path / "disk.img", {"model.pt": "weights"})
    state = MetadataState(cloud="alicloud")
    with MetadataServer(state) as server:
        rig = make_boot_rig(tmp_path, image, cloud="alicloud", disk_id="d-bp1abcdefghij1234567", metadata_url=server.url)
        ossutil = recorder(rig.bin_dir / "ossutil", "ossutil", rig.events)
        rig.settings.update(
            checkpoint_uri="oss://bucket/ckpt/", control_uri="oss://bucket/_gpulease/ckpt/control/",
            bucket_check_command=[str(ossutil), *BUCKET_CHECK_COMMANDS["alicloud"][1:]],
            ready_upload_command=[str(ossutil), *READY_UPLOAD_COMMANDS["alicloud"][1:]],
        )
        done = rig.run(SCRIPT)
    assert done.returncode == 0, done.stdout
    check, publish = (e for e in events(rig.events) if e["name"] == "ossutil")
    assert check["argv"][:2] == ["ls", "oss://bucket/ckpt/"]
    assert publish["argv"][:4] == ["cp", "-f", str(tmp_path / "state" / "ready.json"), "oss://bucket/_gpulease/ckpt/control/ready.json"]
    for call in (check, publish):
        argv = call["argv"]
        assert argv[argv.index("-e") + 1] == "https://oss-cn-hangzhou-internal.aliyuncs.com"
        assert argv[argv.index("--sign-version") + 1] == "v4" and argv[argv.index("--region") + 1] == "cn-hangzhou"
        assert call["config"]["mode"] == "0o600"
        assert f"accessKeySecret={ALI_CREDENTIALS['AccessKeySecret']}" in call["config"]["text"]
        assert "EcsRamRole" not in argv and ALI_CREDENTIALS["AccessKeySecret"] not in " ".join(argv)
    assert ALI_CREDENTIALS["AccessKeySecret"] not in done.stdout
    assert state.refused == []


def test_bad_settings_are_refused_with_one_clear_line(tmp_path: Path) -> None:
    rig = make_boot_rig(tmp_path, ext4_image(tmp_path / "disk.img", {}))
    path = tmp_path / "settings.json"
    import subprocess
    import sys

    path.write_text('{"cloud": "aws", "cloud": "alicloud", "data_disk_id": "vol-1"}')
    env = {"GPULEASE_SETTINGS": str(path), "PATH": str(rig.bin_dir)}
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=30)
    assert done.returncode == 2
    assert done.stderr.strip() == f"gpulease-bootstrap: cannot read settings: {path}: key 'cloud' is written twice"
