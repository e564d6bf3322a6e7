"""The storage CLI's own credential source, run against the hardened metadata service: the AWS CLI (botocore's
credential chain, as the real CLI runs it) finds the role through IMDSv2 at the endpoint the watchdog names, with
the tokenless fallback disabled; nothing anywhere reads metadata without a token."""

from __future__ import annotations

from pathlib import Path

from tests.support.instance import (
    AWS_CREDENTIALS,
    DEADLINE_EPOCH,
    MetadataServer,
    MetadataState,
    events,
    make_rig,
    recorder,
    run_in_process,
)

# What the AWS CLI does before any S3 call: resolve credentials through botocore's chain. No key in the
# environment or in files, so the chain ends at the instance metadata provider.
# Without an endpoint on the loopback it stops there: a test never sends a request off this machine.
BOTOCORE_CHAIN = """import botocore.session
for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
    os.environ.pop(k, None)
os.environ["AWS_CONFIG_FILE"] = os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
# botocore's default is one attempt with a 1 s timeout: generous here, for a loaded test machine.
os.environ["AWS_METADATA_SERVICE_TIMEOUT"], os.environ["AWS_METADATA_SERVICE_NUM_ATTEMPTS"] = "10", "3"
if os.environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT", "").startswith("http://127.0.0.1:"):
    found = botocore.session.Session().get_credentials()
    listing["credentials"] = found.get_frozen_credentials().access_key if found else None
else:
    listing["credentials"] = "no metadata endpoint given: the CLI would use 169.254.169.254 as it pleases"
"""


def test_the_aws_cli_reads_the_role_through_imdsv2_at_the_endpoint_it_is_given(tmp_path: Path, monkeypatch) -> None:
    # Whatever the service's environment says, the CLI is pointed at the instance role and nothing else.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFROMTHEENVIRONMENT")
    state = MetadataState(cloud="aws")
    with MetadataServer(state) as server:
        rig = make_rig(tmp_path, metadata_url=server.url)
        (tmp_path / "bin").mkdir(exist_ok=True)
        aws = recorder(tmp_path / "bin" / "aws-with-botocore", "sync", rig.events, extra=BOTOCORE_CHAIN)
        rig.settings["sync_command"] = [str(aws), "s3", "sync", "{src}", "{dst}"]
        dog, _ = run_in_process(rig, start=DEADLINE_EPOCH - 5 * 60, max_ticks=3)
    assert dog.done
    sync = next(e for e in events(rig.events) if e["name"] == "sync")
    assert sync["listing"]["credentials"] == AWS_CREDENTIALS["AccessKeyId"]
    assert sync["env"]["AWS_EC2_METADATA_V1_DISABLED"] == "true"
    assert sync["env"]["AWS_EC2_METADATA_SERVICE_ENDPOINT"] == server.url + "/"
    assert "AWS_EC2_METADATA_DISABLED" not in sync["env"] and "AWS_ACCESS_KEY_ID" not in sync["env"]
    assert "/latest/meta-data/iam/security-credentials/gpulease-exp1-role" in [p for _, p, _ in state.requests]
    assert state.refused == []  # neither the watchdog nor the CLI ever asked without a token
