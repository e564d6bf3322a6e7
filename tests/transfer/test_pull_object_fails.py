"""One object whose download fails (gone after the listing, a 5xx after the SDK's retries) fails alone: the rest
of the pull arrives and the pull ends incomplete (exit 3), naming it."""

from __future__ import annotations

import json

from gpulease.cli import main
from gpulease.transfer import s3 as s3_transfer

STACK = "aws-prep-7b"


def test_an_object_gone_after_the_listing_fails_alone(aws, tmp_path, capsys, monkeypatch):
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="named-bucket")
    for key in ("final/a", "final/b", "final/c"):
        s3.put_object(Bucket="named-bucket", Key=key, Body=key.encode())
    real = s3_transfer.S3Store.download

    def flaky(self, key, target, progress):
        if key == "final/b":
            self.client.delete_object(Bucket=self.bucket, Key=key)
        return real(self, key, target, progress)

    monkeypatch.setattr(s3_transfer.S3Store, "download", flaky)
    dest = tmp_path / "out"
    code = main(["pull", STACK, "final/", "--bucket", "named-bucket", "--dest", str(dest), "--json"])
    captured = capsys.readouterr()
    assert code == 3, captured.err
    assert (dest / "final" / "c").read_bytes() == b"final/c" and not (dest / "final" / "b").exists()
    doc = json.loads(captured.out)
    assert doc["received"] == ["final/a", "final/c"] and [f["key"] for f in doc["failed"]] == ["final/b"]
    assert "'final/b'" in captured.err and "incomplete" in captured.err
