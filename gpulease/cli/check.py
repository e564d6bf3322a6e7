"""``gpulease check [STACK]``: the Pulumi CLI, the backend and organization, the cloud's credentials and the GPU
quota for the stack's instance family, each with its fix; read-only (``gpulease/lifecycle/readiness.py``)."""

from __future__ import annotations

import argparse

from gpulease.cli.envelope import EXIT_FAILED, EXIT_OK, add_parser, envelope, error, guarded, print_json
from gpulease.cli.stack_arg import CHECK_ACCEPTED, stack_type


def register(sub: argparse._SubParsersAction) -> None:
    p = add_parser(
        sub, "check", help="is this machine and account ready: Pulumi CLI, backend, credentials, GPU quota (read-only)",
        description="Check, without changing anything: the Pulumi CLI and its version, the backend and organization "
        "it is logged in to, the credentials for the stack's cloud (STS GetCallerIdentity) and the account's GPU "
        "quota for the stack's instance family and market, against the vCPUs the stack runs. Each failed line says "
        "how to fix it.",
        codes=((EXIT_OK, "every check passed (or could not be told)"), (EXIT_FAILED, "a check failed: see its fix")))
    p.add_argument("stack", nargs="?", type=stack_type(CHECK_ACCEPTED),
                   help="the stack whose cloud, credentials and quota are checked")
    p.set_defaults(func=guarded(cmd_check))


MARK = {True: "ok  ", False: "FAIL", None: "?   "}


def cmd_check(args: argparse.Namespace) -> int:
    from gpulease.lifecycle.readiness import check

    doc = check(args.stack)
    code = EXIT_OK if doc["ready"] else EXIT_FAILED
    if args.json:
        failed = [error(f"{r['check']}-failed", r["detail"]) for r in doc["checks"] if r["ok"] is False]
        print_json(envelope("check", doc, failed))
        return code
    from gpulease.cli.wrap import say

    for r in doc["checks"]:  # wrapped under the detail column (18)
        say(f"{MARK[r['ok']]} {r['check']:<12} {r['detail']}", hang=18)
        if r.get("fix") and r["ok"] is not True:
            say(f"     {'':<12} fix: {r['fix']}", hang=23)
    print("ready for gpulease up" if doc["ready"] else "not ready: fix the FAIL lines, then run gpulease check again")
    return code
