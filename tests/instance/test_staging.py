"""Data staging on the instance (``instance/staging.py``) against real servers on 127.0.0.1: a hub and its CDN
(Range, ETag, redirects, cut connections), moto's S3 and Secrets Manager behind the stand-in ``aws`` CLI, and the
whole bootstrap reporting the result in readiness."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from components.userdata.workflow import SECRET_COMMANDS, STAGE_COMMANDS
from instance import instance_setup as setup
from instance import staging
from tests.support.instance import MetadataServer, MetadataState, ext4_image, make_boot_rig
from tests.support.staging import AwsCli, CdnServer, HubRepo, HubServer

TOKEN = "hf_" + "q" * 34
WEIGHTS = os.urandom(300_000)
CONFIG = b'{"hidden_size": 4096}\n'
TOKENIZER = b"tokenizer " * 1000


@pytest.fixture
def hub() -> Iterator[HubServer]:
    cdn = CdnServer()
    server = HubServer(cdn)
    try:
        yield server
    finally:
        server.close()
        cdn.close()


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def settings_for(tmp_path: Path, hub: HubServer | None, sources: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    extra.setdefault("mount_point", str(tmp_path))
    return {
        "cloud": "aws", "region": "us-east-1", "data_sources": sources,
        "hub_endpoints": {"hf": hub.url, "modelscope": hub.url} if hub else {},
        "stage_commands": STAGE_COMMANDS["aws"], "metadata_url": "http://127.0.0.1:9",
        "staging_retry_seconds": 0.01, "staging_read_timeout_seconds": 10, **extra,
    }


class Log(list):
    def __call__(self, line: str) -> None:
        self.append(line)

    def text(self) -> str:
        return "\n".join(self)


def repo() -> HubRepo:
    return HubRepo({"model.safetensors": WEIGHTS, "config.json": CONFIG, "sub/tokenizer.txt": TOKENIZER},
                   lfs={"model.safetensors"})


def test_a_hub_repository_is_listed_page_by_page_downloaded_and_verified(tmp_path: Path, hub: HubServer) -> None:
    hub.add("meta/llama", repo())
    to = tmp_path / "models" / "llama"
    log = Log()
    check = staging.Stager(settings_for(tmp_path, hub, [{"uri": "hf://meta/llama", "to": str(to), "revision": "main"}]),
                           log).run()
    assert check["ok"] is True, check
    (result,) = check["sources"]
    assert (to / "model.safetensors").read_bytes() == WEIGHTS
    assert (to / "sub" / "tokenizer.txt").read_bytes() == TOKENIZER
    assert result["bytes"] == len(WEIGHTS) + len(CONFIG) + len(TOKENIZER) and result["files"] == 3
    files = sorted([("config.json", CONFIG), ("model.safetensors", WEIGHTS), ("sub/tokenizer.txt", TOKENIZER)])
    manifest = "".join(f"{p} {len(d)} {hashlib.sha256(d).hexdigest()}\n" for p, d in files)
    assert result["digest"] == hashlib.sha256(manifest.encode()).hexdigest()
    # The listing had two pages (Link: rel="next"), and every file was fetched through the resolve redirect.
    listed = [p for p, _ in hub.requests if "/tree/main" in p]
    assert len(listed) == 2 and "cursor=1" in listed[1]
    assert {p for p, _ in hub.requests if "/resolve/main/" in p} == {
        "/meta/llama/resolve/main/config.json", "/meta/llama/resolve/main/model.safetensors",
        "/meta/llama/resolve/main/sub/tokenizer.txt"}
    assert "staged hf://meta/llama: " in log.text() and result["digest"] in log.text()


def test_a_cut_connection_resumes_with_range_and_if_range(tmp_path: Path, hub: HubServer) -> None:
    url = hub.cdn.put("big.bin", WEIGHTS, cut_times=2)
    sha = hashlib.sha256(WEIGHTS).hexdigest()
    log = Log()
    check = staging.Stager(settings_for(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw"), "sha256": sha}]), log).run()
    assert check["ok"] is True, check
    assert (tmp_path / "raw" / "big.bin").read_bytes() == WEIGHTS
    gets = [headers for path, headers in hub.cdn.requests if path == "/files/big.bin"]
    assert len(gets) == 3
    assert "range" not in gets[0]
    half = len(WEIGHTS) // 2
    assert gets[1]["range"] == f"bytes={half}-" and gets[1]["if-range"] == hub.cdn.files["big.bin"].etag
    assert gets[2]["range"] == f"bytes={half + (len(WEIGHTS) - half) // 2}-"
    assert "resuming from" in log.text()
    assert not list((tmp_path / "raw").glob("*.part*"))


def test_a_digest_mismatch_fails_the_source_and_keeps_nothing(tmp_path: Path, hub: HubServer) -> None:
    url = hub.cdn.put("data.bin", WEIGHTS)
    check = staging.Stager(settings_for(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw"), "sha256": "ab" * 32}]),
                           Log()).run()
    assert check["ok"] is False
    assert check["sources"][0]["error"].startswith("digest mismatch: ")
    assert url in check["error"] and "ab" * 32 in check["error"]
    assert not (tmp_path / "raw" / "data.bin").exists() and not list((tmp_path / "raw").glob("*.part"))


def test_a_hub_file_whose_digest_differs_from_the_listing_fails(tmp_path: Path, hub: HubServer) -> None:
    bad = repo()
    bad.lie_about = "config.json"  # not in LFS: checked against its git blob id
    hub.add("meta/llama", bad)
    check = staging.Stager(settings_for(tmp_path, hub, [{"uri": "hf://meta/llama", "to": str(tmp_path / "m")}]), Log()).run()
    assert check["ok"] is False and "digest mismatch" in check["error"] and "config.json" in check["error"]


def test_a_staged_source_is_skipped_on_the_next_boot_and_a_missing_file_fetched_again(tmp_path: Path, hub: HubServer) -> None:
    hub.add("meta/llama", repo())
    settings = settings_for(tmp_path, hub, [{"uri": "hf://meta/llama", "to": str(tmp_path / "m"), "revision": "main"}])
    first = staging.Stager(settings, Log()).run()
    before = len(hub.requests)
    again = staging.Stager(settings, Log()).run()
    assert again["sources"][0]["skipped"] is True and again["sources"][0]["digest"] == first["sources"][0]["digest"]
    assert len(hub.requests) == before  # nothing asked of the hub
    (tmp_path / "m" / "config.json").unlink()
    cdn_before = len(hub.cdn.requests)
    third = staging.Stager(settings, Log()).run()
    assert third["ok"] is True and "skipped" not in third["sources"][0]
    assert [p for p, _ in hub.cdn.requests[cdn_before:]] == ["/files/meta/llama/config.json"]
    # Another revision is another source: staged again.
    settings["data_sources"][0]["revision"] = "v2"
    hub.repos["meta/llama"].files["config.json"] = CONFIG  # the hub serves v2 at the same paths
    assert "skipped" not in staging.Stager(settings, Log()).run()["sources"][0]


def test_modelscope_files_are_verified_against_their_sha256(tmp_path: Path, hub: HubServer) -> None:
    hub.add("LLM-Research/llama", repo())
    check = staging.Stager(settings_for(tmp_path, hub, [{"uri": "modelscope://LLM-Research/llama", "to": str(tmp_path / "m"),
                                                         "revision": "master"}]), Log()).run()
    assert check["ok"] is True, check
    assert (tmp_path / "m" / "sub" / "tokenizer.txt").read_bytes() == TOKENIZER
    assert any("FilePath=model.safetensors" in p and "Revision=master" in p for p, _ in hub.requests)


def test_a_listing_path_that_leaves_the_folder_is_refused(tmp_path: Path, hub: HubServer) -> None:
    hub.add("meta/evil", HubRepo({"../../etc/cron.d/x": b"* * * * * root sh\n"}))
    check = staging.Stager(settings_for(tmp_path, hub, [{"uri": "hf://meta/evil", "to": str(tmp_path / "m")}]), Log()).run()
    assert check["ok"] is False and "leaves" in check["error"]
    assert not (tmp_path.parent / "etc").exists()


# --- buckets and the hub token through moto, with the instance role's credentials ------------------------------


def test_a_bucket_prefix_is_synced_with_the_role_only(tmp_path: Path, moto: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = AwsCli(moto, bin_dir)
    cli.s3.create_bucket(Bucket="alice-datasets")
    cli.s3.put_object(Bucket="alice-datasets", Key="alpaca/train.json", Body=b'[{"q": 1}]')
    cli.s3.put_object(Bucket="alice-datasets", Key="alpaca/val/val.json", Body=b'[{"q": 2}]')
    cli.s3.put_object(Bucket="alice-datasets", Key="other/secret.txt", Body=b"not mine")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    try:
        with MetadataServer(MetadataState(cloud="aws")) as metadata:
            settings = settings_for(tmp_path, None, [{"uri": "s3://alice-datasets/alpaca/", "to": str(tmp_path / "raw")}],
                                    metadata_url=metadata.url)
            check = staging.Stager(settings, Log()).run()
    finally:
        cli.close()
    assert check["ok"] is True, check
    assert (tmp_path / "raw" / "train.json").read_bytes() == b'[{"q": 1}]'
    assert (tmp_path / "raw" / "val" / "val.json").exists() and not (tmp_path / "raw" / "secret.txt").exists()
    (call,) = cli.calls
    assert call["argv"][:4] == ["s3", "sync", "s3://alice-datasets/alpaca/", str(tmp_path / "raw") + "/"]
    assert call["argv"][call["argv"].index("--region") + 1] == "us-east-1"
    assert call["env"]["AWS_EC2_METADATA_SERVICE_ENDPOINT"] == metadata.url + "/"
    assert call["env"]["AWS_EC2_METADATA_V1_DISABLED"] == "true"
    assert not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"} & set(call["env"])


def test_a_private_hub_token_comes_from_secrets_manager_and_goes_nowhere_else(tmp_path: Path, hub: HubServer,
                                                                                moto: str) -> None:
    private = repo()
    private.token = TOKEN
    hub.add("meta/private", private)
    image = ext4_image(tmp_path / "disk.img", {})
    with MetadataServer(MetadataState(cloud="aws")) as metadata:
        rig = make_boot_rig(tmp_path, image, metadata_url=metadata.url)
        (rig.bin_dir / "aws").unlink()
        cli = AwsCli(moto, rig.bin_dir)
        cli.secrets.create_secret(Name="gpulease/hf-token", SecretString=TOKEN)
        to = Path(rig.settings["mount_point"]) / "models" / "private"
        rig.settings.update(settings_for(tmp_path, hub, [{"uri": "hf://meta/private", "to": str(to), "revision": "main"}],
                                         metadata_url=metadata.url, hub_token_secret="gpulease/hf-token",
                                         mount_point=rig.settings["mount_point"],
                                         secret_command=SECRET_COMMANDS["aws"]))
        rig.settings.update(bucket_check_command=None, checkpoint_uri=None)
        done = rig.run(Path(setup.__file__))
    cli.close()
    assert done.returncode == 0, done.stdout
    marker = rig.marker
    assert marker["ready"] is True and marker["checks"]["data"]["ok"] is True
    assert (to / "model.safetensors").read_bytes() == WEIGHTS
    secret_calls = [c for c in cli.calls if c["argv"][0] == "secretsmanager"]
    assert len(secret_calls) == 1 and "--secret-id" in secret_calls[0]["argv"]
    # The token went to the hub's host only: never to the CDN a resolve redirects to.
    assert all(h.get("authorization") == f"Bearer {TOKEN}" for _, h in hub.requests)
    assert hub.cdn.requests and not any("authorization" in h for _, h in hub.cdn.requests)
    # ... and is written nowhere: not the settings, the log, the marker, the state record.
    state_dir = Path(rig.settings["state_dir"])
    for path in [*state_dir.rglob("*"), *Path(rig.settings["mount_point"]).joinpath("logs").rglob("*"),
                 to / staging.STATE_NAME]:
        if path.is_file():
            assert TOKEN not in path.read_text(errors="replace"), path
    assert TOKEN not in done.stdout + done.stderr


def test_a_digest_mismatch_fails_readiness_naming_the_source(tmp_path: Path, hub: HubServer) -> None:
    url = hub.cdn.put("alpaca.tar", b"the wrong archive")
    image = ext4_image(tmp_path / "disk.img", {})
    rig = make_boot_rig(tmp_path, image)
    to = Path(rig.settings["mount_point"]) / "raw" / "alpaca"
    rig.settings.update(settings_for(tmp_path, hub, [{"uri": url, "to": str(to), "sha256": "cd" * 32}],
                                     mount_point=rig.settings["mount_point"]))
    rig.settings.update(bucket_check_command=None, checkpoint_uri=None)
    done = rig.run(Path(setup.__file__))
    assert done.returncode == 1
    marker = rig.marker
    assert marker["ready"] is False and marker["failed"] == ["data"]
    data = marker["checks"]["data"]
    assert data["sources"][0]["uri"] == url and data["sources"][0]["ok"] is False
    assert f"{url}: digest mismatch" in data["error"]
    assert f"check data: FAILED: {url}: digest mismatch" in done.stdout
    assert "NOT READY: data failed" in done.stdout


def test_a_preparation_instance_is_ready_without_a_gpu(tmp_path: Path) -> None:
    image = ext4_image(tmp_path / "disk.img", {})
    rig = make_boot_rig(tmp_path, image)
    rig.settings.update(phase="prep", nvidia_smi=str(tmp_path / "bin" / "no-nvidia-smi"), nvidia_driver="absent",
                        driver_packages=["nvidia-headless-580-server"])
    done = rig.run(Path(setup.__file__))
    assert done.returncode == 0, done.stdout
    marker = rig.marker
    assert marker["ready"] is True and marker["phase"] == "prep"
    for check in ("gpu", "driver", "torch"):
        assert marker["checks"][check] == {"ok": None, "skipped": "preparation phase: a CPU instance, no GPU"}
    assert "apt-get" not in json.dumps([e for e in (tmp_path / "events.jsonl").read_text().splitlines()])


# --- bucket sources: what the storage CLI would write through, and the single file's digest --------------------


@pytest.fixture
def bucket_world(tmp_path: Path, moto: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[AwsCli, str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = AwsCli(moto, bin_dir)
    cli.s3.create_bucket(Bucket="alice-datasets")
    cli.s3.put_object(Bucket="alice-datasets", Key="alpaca/train.json", Body=b'[{"q": 1}]')
    cli.s3.put_object(Bucket="alice-datasets", Key="alpaca/sub/val.json", Body=b'[{"q": 2}]')
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    try:
        with MetadataServer(MetadataState(cloud="aws")) as metadata:
            yield cli, metadata.url
    finally:
        cli.close()


@pytest.mark.parametrize("make", ["symlinked-subfolder", "fifo", "dev-zero"])
def test_a_bucket_sources_folder_with_a_link_fifo_or_device_fails_before_the_cli_runs(
        tmp_path: Path, bucket_world: tuple[AwsCli, str], make: str) -> None:
    cli, metadata_url = bucket_world
    to = tmp_path / "raw"
    to.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    where = to / {"symlinked-subfolder": "sub", "fifo": "pipe", "dev-zero": "zeros"}[make]
    {"symlinked-subfolder": lambda: where.symlink_to(outside), "fifo": lambda: os.mkfifo(where),
     "dev-zero": lambda: where.symlink_to("/dev/zero")}[make]()
    settings = settings_for(tmp_path, None, [{"uri": "s3://alice-datasets/alpaca/", "to": str(to)}],
                            metadata_url=metadata_url)
    check = staging.Stager(settings, Log()).run()
    found = {"symlinked-subfolder": "a symlink", "fifo": "a FIFO", "dev-zero": "a symlink"}[make]
    assert check["ok"] is False and f"{where} is {found}: refusing it" in check["error"]
    assert cli.calls == [] and list(outside.iterdir()) == []


def test_a_single_bucket_object_is_checked_against_its_sha256(tmp_path: Path, bucket_world: tuple[AwsCli, str]) -> None:
    _, metadata_url = bucket_world
    good = hashlib.sha256(b'[{"q": 1}]').hexdigest()
    src = {"uri": "s3://alice-datasets/alpaca/train.json", "to": str(tmp_path / "raw"), "sha256": "ab" * 32}
    check = staging.Stager(settings_for(tmp_path, None, [src], metadata_url=metadata_url), Log()).run()
    assert check["ok"] is False
    assert check["error"] == (f"s3://alice-datasets/alpaca/train.json: digest mismatch: train.json: SHA-256 {good} "
                              f"is not the expected {'ab' * 32}")
    src["sha256"] = good
    check = staging.Stager(settings_for(tmp_path, None, [src], metadata_url=metadata_url), Log()).run()
    assert check["ok"] is True and check["sources"][0]["files"] == 1


# --- the hub token as the secret's text or as JSON ------------------------------------------------------------


@pytest.mark.parametrize(("value", "token"), [
    (TOKEN, TOKEN), (f"{TOKEN}\n", TOKEN), (json.dumps({"token": TOKEN}), TOKEN),
    (json.dumps({"token": TOKEN, "note": "read-only"}), TOKEN), (json.dumps(TOKEN), TOKEN),
])
def test_the_hub_token_is_the_secrets_text_or_its_json_token(value: str, token: str) -> None:
    assert staging.token_from_secret(value, "gpulease/hf-token") == token


@pytest.mark.parametrize(("value", "message"), [
    (json.dumps({"hf_token": TOKEN}), 'the secret gpulease/hf-token is a JSON object with 1 key(s), missing: "token"; '
                                      'accepted: the token as the secret\'s text, or {"token": "hf_..."}'),
    (json.dumps({"token": 5}), 'a JSON object with 1 key(s), its "token" is not a non-empty text;'),
    (json.dumps([TOKEN]), "the secret gpulease/hf-token holds JSON list"),
    (f"token = {TOKEN}", "the secret gpulease/hf-token holds more than one word"),
])
def test_a_hub_token_secret_in_another_shape_is_refused_saying_what_is_accepted(value: str, message: str) -> None:
    with pytest.raises(staging.StagingError) as caught:
        staging.token_from_secret(value, "gpulease/hf-token")
    assert message in str(caught.value) and 'or {"token": "hf_..."}' in str(caught.value)
    assert TOKEN not in str(caught.value)


def test_a_json_secret_without_a_token_never_shows_its_keys() -> None:
    """A token pasted as a key (or a key with a newline or an escape sequence) must not reach the log."""
    value = json.dumps({TOKEN: "x", "line\nbreak": 1, "\x1b[2Jclear": 2})
    with pytest.raises(staging.StagingError) as caught:
        staging.token_from_secret(value, "gpulease/hf-token")
    message = str(caught.value)
    assert message == ('the secret gpulease/hf-token is a JSON object with 3 key(s), missing: "token"; accepted: the '
                       'token as the secret\'s text, or {"token": "hf_..."}')
    assert TOKEN[:6] not in message and "\n" not in message and "\x1b" not in message


def test_a_json_hub_token_secret_is_sent_as_its_token_to_the_hub_only(tmp_path: Path, hub: HubServer,
                                                                     bucket_world: tuple[AwsCli, str]) -> None:
    cli, metadata_url = bucket_world
    private = repo()
    private.token = TOKEN
    hub.add("meta/private", private)
    cli.secrets.create_secret(Name="gpulease/hf-json", SecretString=json.dumps({"token": TOKEN}))
    settings = settings_for(tmp_path, hub, [{"uri": "hf://meta/private", "to": str(tmp_path / "m")}],
                            metadata_url=metadata_url, hub_token_secret="gpulease/hf-json",
                            secret_command=SECRET_COMMANDS["aws"], staging_split_above_bytes=100_000,
                            staging_piece_bytes=64_000)
    check = staging.Stager(settings, Log()).run()
    assert check["ok"] is True, check
    assert hub.requests and all(h.get("authorization") == f"Bearer {TOKEN}" for _, h in hub.requests)
    # Every range of the large file went to the CDN, none with the token.
    assert len(hub.cdn.ranges("meta/private/model.safetensors")) == 5
    assert not any("authorization" in h for _, h in hub.cdn.requests)


@pytest.mark.parametrize("value", [json.dumps({"token": "hf_SECRETVALUE\nX-Evil: 1"}), json.dumps("hf_SECRET\x1b[2J"),
                                   "hf_SECRET\u200b", json.dumps({"token": "hf_\x00SECRET"})])
def test_a_hub_token_with_characters_a_header_cannot_carry_is_refused_without_showing_it(value: str) -> None:
    with pytest.raises(staging.StagingError) as caught:
        staging.token_from_secret(value, "gpulease/hf-token")
    assert "characters a bearer token cannot carry" in str(caught.value)
    assert "SECRET" not in str(caught.value)
