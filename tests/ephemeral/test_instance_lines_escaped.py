"""``ephemeral run`` once printed what the instance wrote to the bucket (the job's log lines, verify's
check details, a ready marker's instance id) raw through ``Progress.line``: an ESC sequence or U+202E in a log line
reaches the terminal (or the CI log) as is, where ``gpulease logs`` and ``plan`` write escapes."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import boto3
from moto import mock_aws

from gpulease.ephemeral.channel import BucketChannel
from gpulease.ephemeral.progress import PlainProgress

OUTPUTS = {"checkpointUri": "s3://bkt/ci/", "instanceId": "i-1"}
JOB = "ci/_gpulease/jobs/j1/"


def test_job_log_lines_are_escaped_when_printed() -> None:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="bkt")
        client.put_object(Bucket="bkt", Key=JOB + "log/000001", Body=b"step 1\t\x1b[2J\x1b[31mall good\xe2\x80\xae\n")
        client.put_object(Bucket="bkt", Key=JOB + "result.json", Body=json.dumps({"exitCode": 0}).encode())
        stream = io.StringIO()
        progress = PlainProgress(stream)
        channel = BucketChannel(client, poll_seconds=0, sleep=lambda s: None)
        # the request must not exist yet: run() writes it; the result is already there
        code = channel.run(OUTPUTS, "j1", "true", datetime.now(UTC) + timedelta(hours=1),
                           lambda line: progress.line("job", line))
    assert code == 0
    assert "\x1b" not in stream.getvalue() and "\u202e" not in stream.getvalue()
    assert "job: step 1\t\\x1b[2J\\x1b[31mall good\\u202e\n" in stream.getvalue()  # escaped, the tab kept


def test_rich_progress_escapes_lines_notes_and_step_details() -> None:
    from rich.console import Console

    from gpulease.ephemeral.progress import RichProgress

    console = Console(record=True, width=200, force_terminal=False)
    progress = RichProgress(console)
    progress.line("verify", "gpu \x1b[31mok\u202e")
    progress.note("ready: i-\u3164")
    try:
        with progress.step("collect artifacts") as record:
            record.detail = "[bold]x\x1b"
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    progress.close()
    shown = console.export_text()
    assert "\x1b" not in shown and "\u202e" not in shown and "\u3164" not in shown
    assert "verify: gpu \\x1b[31mok\\u202e" in shown and "ready: i-\\u3164" in shown
    assert ": [bold]x\\x1b" in shown  # the detail's markup is text, not a style
