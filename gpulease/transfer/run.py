"""The push and pull loops shared by both clouds: locate the bucket, pick the store, move files with a bar."""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console

from components.spec.text import hidden_character
from gpulease.core.errors import UserError
from gpulease.core.printable import printable
from gpulease.core.same_file import input_problem, stack_file_problem
from gpulease.review.organization import check_name
from gpulease.transfer.bounded import PullBounds, PullDeadlineError
from gpulease.transfer.files import (
    DEFAULT_CHECKPOINT_PREFIX,
    KEY_MAX_BYTES,
    SHOWN_SKIPPED,
    AppearedMeanwhileError,
    FileOrFolder,
    LocalFile,
    confined_target,
    key_prefix,
    local_files,
    local_target,
    name_problem,
    progress_bar,
    put_in_place,
)
from gpulease.transfer.locate import DEFAULT_ORGANIZATION, StackBucket, locate
from gpulease.transfer.noreplace import ObjectFetchError
from gpulease.transfer.pulled import Listed, PullRecord, file_digest, local_digest, local_stat, md5_of_tag

DEFAULT_PULL_PREFIXES = ("final/", "logs/")


def add_location_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bucket", type=_bucket_name, help="the bucket's name (skips the lookup)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--pulumi", dest="use_pulumi", action="store_true", default=None,
                     help="read the bucket from `pulumi stack output` (default when the Pulumi CLI is installed)")
    how.add_argument("--offline", dest="use_pulumi", action="store_false",
                     help="derive the bucket's name from the stack file and the naming rules")
    p.add_argument("--org", type=_org_name, metavar="NAME",
                   help="the Pulumi organization of the stack, for --offline (default: from the configured backend, "
                   f"{DEFAULT_ORGANIZATION!r} on a self-managed one; the same as `gpulease plan` finds)")
    p.add_argument("--profile", help="the AWS profile or Alibaba Cloud CLI profile for the credentials")


BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
"""What S3 (general purpose buckets) and OSS both accept: 3-63 lowercase letters, digits, dots and hyphens,
starting and ending with a letter or digit (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html,
https://www.alibabacloud.com/help/en/oss/user-guide/bucket-naming-conventions)."""


def _bucket_name(text: str) -> str:
    if not BUCKET_NAME.match(text) or ".." in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a bucket name; accepted: 3-63 lowercase letters, digits, "
                                         "'.' and '-', starting and ending with a letter or digit")
    return text


def _org_name(text: str) -> str:
    try:
        return check_name(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--org {text!r}: ")) from None


def located(args: argparse.Namespace) -> StackBucket:
    return locate(args.stack, bucket=args.bucket, use_pulumi=args.use_pulumi, organization=args.org)


def store_for(where: StackBucket, profile: str | None = None) -> Any:
    if where.cloud == "aws":
        import boto3

        from gpulease.transfer.s3 import S3Store

        session = boto3.Session(profile_name=profile, region_name=where.region)
        if session.get_credentials() is None:  # before the bar starts: the refusal stays one line
            raise UserError("no AWS credentials found; configure them (aws configure, AWS_PROFILE or --profile, or "
                            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)")
        from gpulease.transfer.s3 import client_config

        return S3Store(session.client("s3", config=client_config()), where.bucket)
    from gpulease.inventory.alicloud_clients import AlicloudClients
    from gpulease.transfer.oss import OssStore

    clients = AlicloudClients(profile=profile)
    clients.check_credentials()  # before the bar starts: the refusal stays one line
    return OssStore(clients.oss(where.region), where.bucket)


def push(where: StackBucket, store: Any, path: Path, to: str, console: Console, bar: bool = True,
         reserved: tuple[str, ...] = (DEFAULT_CHECKPOINT_PREFIX,)) -> dict[str, Any]:
    left_out: list[str] = []
    files = local_files(path, key_prefix(to, reserved), left_out)
    if left_out:
        shown = ", ".join(printable(name) for name in left_out[:SHOWN_SKIPPED]) + (" ..." if len(left_out) > SHOWN_SKIPPED else "")
        console.print(f"push: left out {len(left_out)} entr{'y' if len(left_out) == 1 else 'ies'} that "
                      f"{'is' if len(left_out) == 1 else 'are'} not a regular file or folder inside it: {shown}",
                      markup=False, highlight=False)
    unreadable = _name_refusal(files, path)
    if unreadable:
        raise UserError(unreadable)
    longest = KEY_MAX_BYTES.get(where.cloud, min(KEY_MAX_BYTES.values()))
    too_long = [f.key for f in files if len(f.key.encode()) > longest]
    if too_long:
        raise UserError(f"push: {len(too_long)} key(s) longer than the {longest} bytes an object key may have, e.g. "
                        f"{too_long[0][:60]!r}... ({len(too_long[0].encode())} bytes); nothing sent; accepted: a "
                        "shorter --to or shorter file names")
    sent, skipped = [], []
    with progress_bar(console, bar) as progress:
        for f in files:
            if store.already_there(f):
                skipped.append(f.key)
                continue
            task = progress.add_task(f.key, total=f.size)
            store.upload(f, lambda n, task=task: progress.advance(task, n))
            sent.append(f.key)
    scheme = "s3" if where.cloud == "aws" else "oss"
    return {"stack": where.stack, "bucket": where.bucket, "foundBy": where.found_by,
            "uri": f"{scheme}://{where.bucket}/{key_prefix(to, reserved)}", "sent": sent, "skipped": skipped,
            "leftOut": left_out[:SHOWN_SKIPPED], "leftOutCount": len(left_out)}


def _name_refusal(files: list[LocalFile], path: Path) -> str | None:
    """The one line refusing a push (before anything is sent) when a file's name is not UTF-8 or holds a character
    that does not read as itself (ESC, U+202E, U+3164): ``pull`` and the instance's staging refuse such keys."""
    bad = [(f, hidden_character(f.key)) for f in files]  # the key's prefix (--to) is checked already
    bad = [(f, why) for f, why in bad if why]
    if not bad:
        return None
    f, why = bad[0]
    name = os.fspath(f.path)
    utf8 = not any("\udc80" <= c <= "\udcff" for c in f.key)
    shown = printable(name) if utf8 else printable(repr(os.fsencode(name))[2:-1])
    what = why if utf8 else "is not UTF-8 (an object key is UTF-8)"
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    return (f"push: {shown}: the file name {what}{more}; pull and the instance refuse such a key; nothing sent; "
            f"accepted: file names of printable UTF-8 characters (rename it)")


def _destination_folder(dest: Path) -> None:
    """``--dest`` made if absent; an existing name that is not a folder (a file, FIFO, device) is refused."""
    accepted = "accepted: a folder, or a name not yet taken"
    if os.path.lexists(dest) and not dest.is_dir():
        raise UserError(f"--dest {os.fspath(dest)!r}: exists and is not a folder; {accepted}")
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--dest {os.fspath(dest)!r}: cannot make the folder ({exc.strerror or exc}); "
                        f"{accepted}") from None


@contextmanager
def _deadline_first(limits: PullBounds) -> Iterator[None]:
    """Past the deadline, whatever a cut read raised (the SDK's errors, urllib3's) is the deadline's one line."""
    try:
        yield
    except PullDeadlineError:
        raise
    except Exception:
        if limits.past():
            limits.check("reading from the bucket")
        raise


def pull(where: StackBucket, store: Any, prefixes: list[str], dest: Path, console: Console,
         bar: bool = True, limits: PullBounds | None = None) -> dict[str, Any]:
    """Every object under ``prefixes`` into ``dest``, within ``limits`` (an overall deadline and a page cap). A local
    file is skipped only when it is known to hold the object's bytes (``pulled``); one that differs is kept, named,
    and never replaced unasked."""
    limits = limits or PullBounds()
    got, skipped, refused, kept = [], [], [], []
    failed: list[dict[str, str]] = []  # objects that cannot land beside others of this pull (the rest goes on)
    chosen: dict[str, str] = {}  # local file -> the key that goes there
    shapes = FileOrFolder()
    suffixes = getattr(store, "temp_suffixes", ())
    _destination_folder(dest)
    record = PullRecord(dest, where.bucket)
    # Downloads land in a private folder of this pull first (0700, made by mkdtemp) and are renamed into place by
    # directory descriptor (files.put_in_place): the SDKs open paths, which would follow a link swapped in later.
    if hasattr(store, "bound_by"):
        store.bound_by(limits)
    with progress_bar(console, bar) as progress, tempfile.TemporaryDirectory(dir=dest, prefix=".gpulease-pull-") as own, \
            limits.armed(), _deadline_first(limits):
        try:
            for prefix in prefixes:
                listing = limits.listing(f"{where.bucket}/{prefix}", lambda token, p=prefix: store.page(p, token))
                for row in listing:
                    listed = Listed.of(row)
                    key = listed.key
                    limits.check(f"starting {key!r}")
                    problem = name_problem(dest, key, prefix, chosen, suffixes)  # never a name that reads otherwise
                    if problem is None and (read := input_problem(local_target(dest, key, prefix), where.reads)):
                        problem = f"lands on {read}, a file this command reads"
                    if problem is None:
                        problem = stack_file_problem(local_target(dest, key, prefix), where.reads)
                    if problem:
                        refused.append(f"{key!r} ({problem})")
                        continue
                    if clash := shapes.conflict(key):
                        failed.append({"key": key, "reason": clash})
                        continue
                    _, have = confined_target(dest, key, prefix, suffixes)
                    held = local_stat(dest, key) if have is not None else None
                    if held is not None and _known_same(dest, listed, held, record, limits):
                        skipped.append(key)
                        continue
                    task = progress.add_task(key, total=listed.size)
                    landed = os.path.join(own, f"{len(got) + len(kept) + len(skipped)}.download")
                    try:
                        store.download(key, landed, limits.progress(key, lambda n, task=task: progress.advance(task, n)))
                    except ObjectFetchError as exc:  # this object only (the SDK retried it): the rest go on
                        if limits.past():
                            limits.check(f"downloading {key!r}")
                        failed.append({"key": key, "reason": printable(str(exc))[:300]})
                        continue
                    if held is not None and not record.vouches_local(key, held):
                        check = lambda key=key: limits.check(f"comparing {key!r}")  # noqa: E731
                        if file_digest(landed, "sha256", check) == local_digest(dest, key, "sha256", check):
                            os.unlink(landed)
                            record.note(listed, local_stat(dest, key))
                            skipped.append(key)
                        else:  # not the pull's own copy, and not the object's bytes: never replaced unasked
                            os.unlink(landed)
                            kept.append(key)
                        continue
                    try:
                        put_in_place(dest, key, prefix, landed, own=held)
                    except AppearedMeanwhileError:
                        kept.append(key)
                        continue
                    record.note(listed, local_stat(dest, key))
                    got.append(key)
        finally:
            record.save(own)
    if refused or kept:
        found = []
        if refused:
            found.append(f"refused {len(refused)} object(s) whose names cannot be written as they read: "
                         f"{', '.join(refused[:5])}{' ...' if len(refused) > 5 else ''}")
        if kept:
            found.append(f"kept {len(kept)} local file(s) that differ from the bucket's object and were not written "
                         f"by an earlier pull: {', '.join(repr(k) for k in kept[:5])}{' ...' if len(kept) > 5 else ''}")
        if failed:
            found.append(f"failed {len(failed)} object(s): {_failures(failed)}")
        fixes = [*(["rename them in the bucket to pull them"] if refused or failed else []),
                 *(["move the kept files away to pull the bucket's version"] if kept else [])]
        raise UserError(f"pull: {'; '.join(found)}; the other {len(got) + len(skipped)} are in {os.fspath(dest)}; "
                        f"{' and '.join(fixes)}")
    if not got and not skipped and not failed:
        raise UserError(f"stack {where.stack}: nothing under {', '.join(prefixes)} in {where.bucket}")
    return {"stack": where.stack, "bucket": where.bucket, "foundBy": where.found_by, "dest": os.fspath(dest),
            "received": got, "skipped": skipped, "failed": failed, "bounds": limits.report()}


def _failures(failed: list[dict[str, str]]) -> str:
    return ", ".join(f"{f['key']!r} ({f['reason']})" for f in failed[:5]) + (" ..." if len(failed) > 5 else "")


def incomplete_line(result: dict[str, Any]) -> str:
    """The one line a pull with failed objects ends with (exit 3): which failed and why, what arrived."""
    failed = result["failed"]
    return (f"pull: incomplete: {len(failed)} object(s) failed: {_failures(failed)}; the other "
            f"{len(result['received']) + len(result['skipped'])} are in {result['dest']}; run the same pull again for "
            "a failed download, and rename conflicting objects in the bucket (one name cannot be both a file and a "
            "folder) to pull them")


def _known_same(dest: Path, listed: Listed, held: os.stat_result, record: PullRecord, limits: PullBounds) -> bool:
    """The local file holds the object's bytes without fetching it: the record vouches for both sides, or the
    object's single-part ETag is the local file's MD5 (then recorded)."""
    if record.vouches_local(listed.key, held):
        return record.vouches_object(listed)
    md5 = md5_of_tag(listed.tag)
    if md5 is None or held.st_size != listed.size:
        return False
    same = local_digest(dest, listed.key, "md5", lambda: limits.check(f"comparing {listed.key!r}")) == md5
    if same:
        record.note(listed, held)
    return same
