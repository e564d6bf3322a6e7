"""``gpulease logs`` with more job-log objects than one read keeps: the listing pages through the bucket (a bucket
lists in key order only) and keeps the last ones, the newest chunks, saying in one line how many older objects it
left out; a listing past its own bound says where it stopped."""

from __future__ import annotations

from gpulease.cli.main import main
from gpulease.live import logs
from tests.live.test_logs import BUCKET, STACK

CONTROL = "llama7b-lora/_gpulease/"


def _chunks(s3, count: int) -> None:
    s3.delete_object(Bucket=BUCKET, Key=f"{CONTROL}jobs/ci-1/log/00000000.txt")
    for i in range(count):
        s3.put_object(Bucket=BUCKET, Key=f"{CONTROL}jobs/train/log/{i:08d}.txt", Body=f"chunk {i}\n".encode())


def test_more_objects_than_kept_reads_the_newest_and_names_the_older_once(bucket, monkeypatch, capsys):
    monkeypatch.setattr(logs, "MAX_LISTED", 4)
    monkeypatch.setattr(logs, "LIST_PAGE", 3)  # several pages, the kept window spanning two of them
    _chunks(bucket["s3"], 11)
    reader = logs.LogReader(bucket["s3"], BUCKET, CONTROL, STACK, "llama7b-lora")
    assert reader.jobs() == [
        f"[jobs] ... 7 older objects under {CONTROL}jobs/ not listed: only the last 4 in key order (the newest "
        "chunks) are read",
        *(f"[job train] chunk {i}" for i in range(7, 11)),
    ]
    bucket["s3"].put_object(Bucket=BUCKET, Key=f"{CONTROL}jobs/train/log/00000011.txt", Body=b"chunk 11\n")
    assert reader.jobs() == ["[job train] chunk 11"]  # the next round of --follow: what is new, the note not again


def test_a_listing_past_its_bound_says_where_it_stopped(bucket, monkeypatch):
    monkeypatch.setattr(logs, "MAX_LISTED", 2)
    monkeypatch.setattr(logs, "MAX_SCANNED", 5)
    monkeypatch.setattr(logs, "LIST_PAGE", 2)
    _chunks(bucket["s3"], 8)
    reader = logs.LogReader(bucket["s3"], BUCKET, CONTROL, STACK, "llama7b-lora")
    assert reader.jobs() == [
        f"[jobs] ... more than 5 objects under {CONTROL}jobs/: the listing stopped there; of those the last 2 in "
        "key order are read, the ones after them are not shown",
        "[job train] chunk 3", "[job train] chunk 4",
    ]


def test_the_command_prints_the_newest_chunks_and_the_one_line(bucket, monkeypatch, capsys):
    monkeypatch.setattr(logs, "MAX_LISTED", 2)
    monkeypatch.setattr(logs, "LIST_PAGE", 2)
    _chunks(bucket["s3"], 5)
    assert main(["logs", STACK, "--outputs", bucket["outputs"]]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == [f"[jobs] ... 3 older objects under {CONTROL}jobs/ not listed: only the last 2 in key order "
                        "(the newest chunks) are read", "[job train] chunk 3", "[job train] chunk 4"]
