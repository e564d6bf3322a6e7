"""``gpulease ssh STACK [-- cmd]``: connect to the instance in its access mode with keep-alives, forward the
``ssh.forward`` ports and attach to the job's tmux session; ``--print`` shows the commands (``gpulease/live``)."""

from __future__ import annotations

import argparse

from gpulease.cli.conventions import OneLineParser, normalise, print_json
from gpulease.cli.envelope import exit_epilog
from gpulease.cli.stack_arg import stack_type
from gpulease.core.flag_numbers import number


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--experiment", help="which run of a sweep")
    p.add_argument("--outputs", metavar="FILE", help="the stack's outputs as `pulumi stack output --json` prints them")
    p.add_argument("--region", help="the stack's region, when its stack file is not here")
    p.add_argument("-i", "--identity", metavar="FILE", help="the private key ssh uses (ssh mode)")
    p.add_argument("--print", dest="print_only", action="store_true", help="show the commands instead of running them")
    p.add_argument("--node", type=_rank, default=0, metavar="N",
                   help="a cluster's node N (default 0); in ssh mode through rank 0 as a jump host")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="json: print the target and the commands in the JSON envelope instead of running them")
    p.add_argument("--json", action="store_true", help="the same as --format json")


_rank = number("a node rank", 0, 1023, whole=True, accepted="0, 1, 2, ... up to 1023", example="1")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ssh", help="connect to a stack's instance (keep-alives, port forwards, the job's tmux session)",
                       usage="gpulease ssh STACK [--print | --json] [options] [-- COMMAND ...]",
                       epilog=exit_epilog((0, "connected and the session ended well (--print, --json: shown)"),
                                          ("1-255", "the remote session's (or -- COMMAND's) own exit code, passed "
                                           "through as is")))
    p.add_argument("stack", type=stack_type())
    _options(p)
    # Everything after STACK: options first, then `--` and the command (argparse alone cannot tell a command's own
    # options from ours once subcommands are involved).
    p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_ssh)


def split_rest(args: argparse.Namespace) -> list[str]:
    """Apply the options given after STACK to ``args``; the command after ``--`` (empty when none)."""
    rest = list(args.rest)
    cut = rest.index("--") if "--" in rest else len(rest)
    if rest[:cut]:
        later = OneLineParser(prog="gpulease ssh", add_help=False)  # a mistake here is one line too (the envelope)
        _options(later)
        later.parse_args(rest[:cut], namespace=args)
    normalise(args)  # --json given after STACK
    return rest[cut + 1:]


def cmd_ssh(args: argparse.Namespace) -> int:
    from gpulease.live import connect, nodes, target

    remote = split_rest(args)
    found = target.find(args.stack, outputs_file=args.outputs, experiment=args.experiment, region=args.region)
    found = nodes.node_target(found, args.node)
    connection = connect.plan(found, remote or None, identity=args.identity)
    if args.json:
        print_json("ssh", {"stack": found.stack, "experiment": found.experiment, "node": args.node,
                           "mode": found.mode, "region": found.region, "instanceId": found.instance_id,
                           "command": connection.interactive, "background": connection.background,
                           "hint": connection.hint, "lines": connection.lines()}, ok=True)
        return 0
    if args.print_only:
        print("\n".join(connection.lines()))
        return 0
    return connect.RUNNER(connection)
