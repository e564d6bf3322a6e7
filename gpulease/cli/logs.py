"""``gpulease logs STACK [--follow] [--node N]``: the bootstrap, verify and job logs the instance left in the
bucket; ``--journal`` reads the systemd journal over SSH/SSM instead (``gpulease/live/logs.py``)."""

from __future__ import annotations

import argparse
import re
import sys

from gpulease.cli.conventions import EXIT_INTERRUPTED
from gpulease.cli.envelope import (
    EXIT_OK,
    add_parser,
    call_failed,
    envelope,
    guarded,
    minutes,
    print_json,
)
from gpulease.cli.printable import printable
from gpulease.cli.stack_arg import stack_type
from gpulease.core.flag_numbers import number

FOLLOW_MINUTES = 30.0
DEFAULT_LINES = 100
"""The last lines of each log shown by default: a screenful or two of where it ended."""
RECORD_TAGS = ("[bootstrap]", "[verify]")
"""The ready and verify records: a few lines each, always shown whole."""


_TAG = re.compile(r"^\[[^\]]*\]")
_UNREAD = re.compile(r"^(\[[^\]]*\]) \.\.\. \((\d+) earlier bytes not read\)\Z")


def log_tail(lines: list[str], count: int) -> list[str]:
    """The last ``count`` lines of each log (all with 0), the records whole. A log read from its end (its first
    line names the bytes not read) gets one note that says both what was not read and what was not shown, so
    ``--lines 0`` is never taken for the whole log."""
    from gpulease.live.logs import MAX_LOG_BYTES

    groups: list[tuple[str, list[str]]] = []
    for line in lines:
        found = _TAG.match(line)
        tag = found.group(0) if found else ""
        if groups and groups[-1][0] == tag:
            groups[-1][1].append(line)
        else:
            groups.append((tag, [line]))
    out: list[str] = []
    for tag, group in groups:
        unread = _UNREAD.match(group[0])
        if unread:
            group = group[1:]
        hidden = len(group) - count if count and tag not in RECORD_TAGS and len(group) > count else 0
        if unread:
            note = f"{tag} ... {unread.group(2)} earlier bytes not read (only the last {MAX_LOG_BYTES} bytes are read)"
            out.append(note + (f" and {hidden} earlier lines of those not shown (--lines 0 shows every line "
                               "read)" if hidden else ""))
        elif hidden:
            out.append(f"{tag} ... {hidden} earlier lines not shown (--lines 0 shows all)".strip())
        out += group[hidden:]
    return out


_count = number("a number of lines", 0, 1_000_000, whole=True, accepted="0 (all) to 1000000",
                example=str(DEFAULT_LINES))


def register(sub: argparse._SubParsersAction) -> None:
    from gpulease.cli.ssh import _rank

    p = add_parser(
        sub, "logs", help="the bootstrap, verify and job logs of a stack's instance, from the bucket (or the journal)",
        description="Print what the instance reported in the bucket: the bootstrap's checks (ready.json), the "
        "verification's checks (verify.json), the log files it uploaded and the chunks of its jobs. --follow prints "
        "what is new every few seconds (at most --minutes); --journal reads the systemd journal of the gpulease "
        "units over the stack's access mode (ssh, ssm or cloud-assistant), which only a running instance has.",
        codes=((EXIT_OK, "printed"),
               ("1-255", "with --journal: the remote journal command's own exit code, passed through as is")))
    p.add_argument("stack", type=stack_type())
    p.add_argument("--node", type=_rank, default=0, metavar="N", help="a cluster's node N (default 0)")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing what is new, until Ctrl-C or --minutes")
    p.add_argument("--minutes", type=minutes, default=FOLLOW_MINUTES,
                   help=f"with --follow, stop after this long (default {FOLLOW_MINUTES:g})")
    p.add_argument("--lines", "-n", type=_count, default=None, metavar="N",
                   help=f"the last N lines of each log (default {DEFAULT_LINES}; 0: all)")
    p.add_argument("--journal", action="store_true", help="the systemd journal over SSH/SSM (a running instance only)")
    p.add_argument("--print", dest="print_only", action="store_true", help="with --journal: show the command only")
    p.add_argument("--experiment", help="which run of a sweep")
    p.add_argument("--outputs", metavar="FILE", help="the stack's outputs as `pulumi stack output --json` prints them")
    p.add_argument("--region", help="the stack's region, when its stack file is not here")
    p.set_defaults(func=guarded(cmd_logs))


def cmd_logs(args: argparse.Namespace) -> int:
    from gpulease.live import clients, connect, logs, nodes, target

    found = target.find(args.stack, outputs_file=args.outputs, experiment=args.experiment, region=args.region)
    found = nodes.node_target(found, args.node)
    if args.journal:
        asked = {} if args.lines is None else {"lines": args.lines or 10_000}
        connection = connect.plan(found, logs.journal_command(**asked))
        if args.print_only:
            print("\n".join(connection.lines()))
            return EXIT_OK
        return connect.RUNNER(connection)
    count = DEFAULT_LINES if args.lines is None else args.lines
    if not found.region:
        raise target.LiveError(f"stack {args.stack!r}: no region (no stack file here); give --region")
    bucket, prefix = logs.control_prefix(found)
    reader = logs.LogReader(clients.CLIENTS(found.cloud, found.region).bucket, bucket, prefix, found.stack,
                            found.experiment, session=found.session)
    try:
        if args.follow and not args.json:
            try:
                logs.follow(reader, lambda line: (print(printable(line)), sys.stdout.flush()), args.minutes,
                            first=lambda lines: log_tail(lines, count))
            except KeyboardInterrupt:  # Ctrl-C ends a follow, nothing to clean up: 130, as every --help lists
                return EXIT_INTERRUPTED
            return EXIT_OK
        lines = log_tail(logs.read_all(reader), count)
    except logs.ReadFailedError as exc:
        return call_failed(args, "logs", exc.code, exc)
    if args.json:  # JSON carries every character escaped already
        print_json(envelope("logs", {"stack": args.stack, "node": args.node, "prefix": f"{bucket}/{prefix}", "lines": lines}))
    else:
        print("\n".join(printable(line) for line in lines))
    return EXIT_OK
