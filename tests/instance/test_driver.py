"""The NVIDIA driver on images without one (Alibaba Cloud's Ubuntu 22.04 family, AWS's ``ubuntu-22.04``): the
bootstrap installs the pinned packages from the Ubuntu archive with apt, non-interactive and bounded, retried while
another package manager holds the lock, loads the module and checks that nvidia-smi sees the GPU. It does so only
where the image is known to have no driver and only while nvidia-smi cannot see the GPU; a failed install makes
readiness fail, naming the driver. The example stacks carry each family's fact in their settings.

apt-get, modprobe and nvidia-smi are stand-ins on PATH: apt-get records its argv and environment and, on a
successful install, puts nvidia-smi in place, as the real packages do."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import userdata
from gpulease.review.render import render_stack_file
from instance import instance_setup as setup
from tests.support.alicloud import user_data_text
from tests.support.clock import FIXED_NOW
from tests.support.instance import (
    BootRig,
    MetadataServer,
    MetadataState,
    events,
    executable,
    ext4_image,
    make_boot_rig,
)
from tests.support.paths import STACKS_DIR
from tests.support.specs import experiment, render_experiment

SCRIPT = Path(setup.__file__)
PACKAGES = ["nvidia-headless-580-server", "nvidia-utils-580-server"]
HEADERS = f"linux-headers-{os.uname().release}"
LOCKED = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 1234 (unattended-upgr)"


def _fakes(rig: BootRig, install: list[dict[str, Any]], modprobe_exit: int = 0, sleep: float = 0.0) -> None:
    """apt-get answers its install calls from ``install`` in turn ({"exit": n, "say": text}); a successful install
    puts nvidia-smi on PATH. modprobe exits ``modprobe_exit``."""
    stash = rig.root / "driver" / "nvidia-smi"
    stash.parent.mkdir()
    shutil.move(rig.bin_dir / "nvidia-smi", stash)  # the image has no driver: no nvidia-smi until apt installs it
    plan = rig.root / "apt-plan.json"
    plan.write_text(json.dumps(install))
    executable(
        rig.bin_dir / "apt-get",
        f"""import json, os, shutil, sys, time
args = sys.argv[1:]
with open({str(rig.events)!r}, "a") as fh:
    fh.write(json.dumps({{"name": "apt-get", "argv": args, "env": {{k: os.environ.get(k) for k in
                         ("DEBIAN_FRONTEND", "NEEDRESTART_MODE")}}}}) + "\\n")
if "install" not in args:
    sys.exit(0)
time.sleep({sleep})
plan = json.load(open({str(plan)!r}))
step = plan.pop(0) if plan else {{"exit": 0}}
json.dump(plan, open({str(plan)!r}, "w"))
print(step.get("say", ""), file=sys.stderr)
if step["exit"] == 0:
    shutil.copy({str(stash)!r}, {str(rig.bin_dir / "nvidia-smi")!r})
sys.exit(step["exit"])
""",
    )
    executable(
        rig.bin_dir / "modprobe",
        f"""import json, sys
with open({str(rig.events)!r}, "a") as fh:
    fh.write(json.dumps({{"name": "modprobe", "argv": sys.argv[1:]}}) + "\\n")
print("modprobe: ERROR: could not insert 'nvidia': No such device" if {modprobe_exit} else "", file=sys.stderr)
sys.exit({modprobe_exit})
""",
    )


def _rig(tmp_path: Path, server: MetadataServer, image_driver: str) -> BootRig:
    rig = make_boot_rig(tmp_path, ext4_image(tmp_path / "disk.img", {"model.pt": "weights"}), metadata_url=server.url)
    rig.settings.update(nvidia_driver=image_driver, driver_packages=PACKAGES, apt_lock_wait_seconds=0,
                        proc_root=str(tmp_path / "proc"))
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "modules").write_text("ext4 1040384 1 - Live 0x0000000000000000\n")
    return rig


def _calls(rig: BootRig, name: str) -> list[dict[str, Any]]:
    return [e for e in events(rig.events) if e["name"] == name]


def test_an_image_without_a_driver_gets_the_pinned_packages_then_the_gpu_is_seen(tmp_path: Path) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = _rig(tmp_path, server, "absent")
        _fakes(rig, install=[{"exit": 0}])
        done = rig.run(SCRIPT)
    assert done.returncode == 0, done.stdout
    update, install = _calls(rig, "apt-get")
    lock = ["-q", "-o", "DPkg::Lock::Timeout=300"]
    assert update["argv"] == [*lock, "update"]
    assert install["argv"] == [
        *lock, "-y", "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold",
        "install", HEADERS, *PACKAGES,
    ]
    for call in (update, install):  # never a question on a machine nobody is looking at
        assert call["env"] == {"DEBIAN_FRONTEND": "noninteractive", "NEEDRESTART_MODE": "l"}
    assert [e["argv"] for e in _calls(rig, "modprobe")] == [["nvidia"]]
    marker = rig.marker
    assert marker["ready"] is True
    assert marker["checks"]["driver"] == {
        "ok": True, "image": "absent", "installed": True, "packages": PACKAGES,
        "detail": "installed nvidia-headless-580-server nvidia-utils-580-server; nvidia-smi sees the GPU",
    }
    assert marker["checks"]["gpu"]["ok"] is True and marker["checks"]["gpu"]["count"] == 1
    assert "NVIDIA driver installed (nvidia-headless-580-server nvidia-utils-580-server) and loaded" in done.stdout


def test_the_install_is_skipped_when_nvidia_smi_already_sees_the_gpu(tmp_path: Path) -> None:
    """A reboot after the install (or an image that has a driver after all) installs nothing."""
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = _rig(tmp_path, server, "absent")
        _fakes(rig, install=[{"exit": 0}])
        first = rig.run(SCRIPT)
        again = rig.run(SCRIPT)
    assert first.returncode == again.returncode == 0, again.stdout
    assert [c["argv"][-1] for c in _calls(rig, "apt-get")] == ["update", PACKAGES[-1]]  # the first boot's only
    assert rig.marker["checks"]["driver"] == {"ok": True, "image": "absent", "installed": False,
                                              "detail": "nvidia-smi sees the GPU"}


@pytest.mark.parametrize("image_driver", ["preinstalled", "unknown"])
def test_no_driver_is_installed_on_an_image_not_known_to_lack_one(tmp_path: Path, image_driver: str) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = _rig(tmp_path, server, image_driver)
        _fakes(rig, install=[{"exit": 0}])
        done = rig.run(SCRIPT)
    assert _calls(rig, "apt-get") == [] and _calls(rig, "modprobe") == []
    assert done.returncode == 1
    marker = rig.marker
    assert marker["failed"] == ["gpu"]
    assert marker["checks"]["driver"]["ok"] is None
    assert f"the image's NVIDIA driver is {image_driver}" in marker["checks"]["driver"]["skipped"]
    assert "GPU NOT USABLE: nvidia-smi is not installed" in done.stdout


def test_a_failed_install_makes_readiness_fail_naming_the_driver(tmp_path: Path) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = _rig(tmp_path, server, "absent")
        _fakes(rig, install=[{"exit": 100, "say": "E: Unable to locate package nvidia-headless-580-server"}])
        done = rig.run(SCRIPT)
    assert done.returncode == 1
    marker = rig.marker
    assert marker["ready"] is False and marker["failed"] == ["driver", "gpu"]
    error = marker["checks"]["driver"]["error"]
    assert error == ("installing the NVIDIA driver (nvidia-headless-580-server nvidia-utils-580-server) failed: "
                     "apt-get install exited 100: E: Unable to locate package nvidia-headless-580-server")
    assert _calls(rig, "modprobe") == []
    assert f"GPU NOT USABLE: {marker['checks']['gpu']['error']}; {error}" in done.stdout
    assert "NOT READY: driver, gpu failed" in done.stdout


def test_apt_is_tried_again_while_another_package_manager_holds_the_lock(tmp_path: Path) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = _rig(tmp_path, server, "absent")
        _fakes(rig, install=[{"exit": 100, "say": LOCKED}, {"exit": 100, "say": LOCKED}, {"exit": 0}])
        done = rig.run(SCRIPT)
    assert done.returncode == 0, done.stdout
    assert [c["argv"][-1] for c in _calls(rig, "apt-get")] == ["update", *[PACKAGES[-1]] * 3]
    assert "apt-get install: another package manager holds the lock; trying again (1/4)" in done.stdout
    assert rig.marker["checks"]["driver"]["installed"] is True


def test_any_other_apt_failure_is_not_retried(tmp_path: Path) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = _rig(tmp_path, server, "absent")
        _fakes(rig, install=[{"exit": 100, "say": "E: Sub-process /usr/bin/dpkg returned an error code (1)"},
                             {"exit": 0}])
        rig.run(SCRIPT)
    assert [c["argv"][-1] for c in _calls(rig, "apt-get")] == ["update", PACKAGES[-1]]
    assert rig.marker["checks"]["driver"]["ok"] is False


def test_a_hanging_install_is_cut_at_its_bound(tmp_path: Path) -> None:
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = _rig(tmp_path, server, "absent")
        rig.settings["apt_install_timeout_seconds"] = 1
        _fakes(rig, install=[{"exit": 0}], sleep=60)
        started = time.monotonic()
        done = rig.run(SCRIPT, timeout=50)
    assert time.monotonic() - started < 40
    assert done.returncode == 1
    assert "apt-get install exited 124: timed out after 1 s" in rig.marker["checks"]["driver"]["error"]


def test_a_module_that_will_not_load_is_reported_with_the_reason(tmp_path: Path) -> None:
    """Installed, but the open-source nouveau driver holds the GPU: the report says a reboot is needed."""
    with MetadataServer(MetadataState(cloud="aws")) as server:
        rig = _rig(tmp_path, server, "absent")
        (tmp_path / "proc" / "modules").write_text("nouveau 2433024 0 - Live 0x0000000000000000\n")
        _fakes(rig, install=[{"exit": 0}], modprobe_exit=1)
        (tmp_path / "gpu" / "fail").touch()  # installed, but nvidia-smi cannot reach a driver
        done = rig.run(SCRIPT)
    assert done.returncode == 1
    error = rig.marker["checks"]["driver"]["error"]
    assert error.startswith("the NVIDIA driver (nvidia-headless-580-server nvidia-utils-580-server) was installed but "
                            "nvidia-smi still cannot see the GPU: modprobe nvidia exited 1: modprobe: ERROR: could "
                            "not insert 'nvidia': No such device; the nouveau driver holds the GPU (a reboot loads the "
                            "NVIDIA driver instead); nvidia-smi: NVIDIA-SMI has failed")
    assert rig.marker["checks"]["driver"]["installed"] is True


# --- the fact, per image family, in every example stack's settings ------------------------------------------

# Which families bring the driver (their documentation, in components/<cloud>/instance.py), by stack.
EXPECTED_DRIVER = {
    "ali-cluster-2x8": "absent",  # image.family: ubuntu-22.04
    "ali-debug-t4": "absent",  # default family: Alibaba Cloud's public Ubuntu 22.04
    "ali-full-7b": "absent",  # image.family: ubuntu-22.04
    "ali-lora-7b": "absent",
    "ali-prep-7b": "absent",  # the preparation phase's CPU instance: the same family, no GPU checks there
    "aws-cluster-4x8": "preinstalled",  # image.family: dlami-pytorch-ubuntu22
    "aws-debug-t4": "preinstalled",  # default family: Deep Learning Base OSS Nvidia Driver AMI
    "aws-full-7b": "preinstalled",  # image.family: dlami-pytorch-ubuntu22
    "aws-lora-7b": "preinstalled",
    "aws-prep-7b": "preinstalled",
    "aws-sweep-lora": "preinstalled",
}


def _settings(resource: Any) -> dict[str, Any]:
    text = user_data_text(resource) if "userData" in resource.inputs else userdata.decode_user_data(
        resource.inputs["userDataBase64"])
    written = {f["path"]: f for f in yaml.safe_load(text)["write_files"]}
    return json.loads(written[userdata.SETTINGS_PATH]["content"])


@pytest.mark.parametrize("path", sorted(STACKS_DIR.glob("Pulumi.*.yaml")), ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_every_example_stack_carries_its_image_familys_driver_fact(path: Path) -> None:
    stack = path.stem.removeprefix("Pulumi.")
    r = render_stack_file(path, now=FIXED_NOW)
    assert r.error is None, r.error
    found = [x for x in r.resources if x.type in ("aws:ec2/instance:Instance", "alicloud:ecs/instance:Instance")]
    assert found and set(EXPECTED_DRIVER) == {p.stem.removeprefix("Pulumi.") for p in STACKS_DIR.glob("Pulumi.*.yaml")}
    for resource in found:
        settings = _settings(resource)
        assert settings["nvidia_driver"] == EXPECTED_DRIVER[stack], resource.name
        assert settings["driver_packages"] == PACKAGES


def test_aws_ubuntu_family_gets_the_same_install() -> None:
    r = render_experiment(experiment(image={"family": "ubuntu-22.04"}))
    assert r.error is None, r.error
    (resource,) = [x for x in r.resources if x.type == "aws:ec2/instance:Instance"]
    settings = _settings(resource)
    assert (settings["nvidia_driver"], settings["driver_packages"]) == ("absent", PACKAGES)
    pinned = render_experiment(experiment(image={"id": "ami-0123456789abcdef0"}))
    (resource,) = [x for x in pinned.resources if x.type == "aws:ec2/instance:Instance"]
    assert _settings(resource)["nvidia_driver"] == "unknown"
