"""``gpulease ssh``: the commands that reach a stack's instance in its access mode, forward its ports and attach to
the job's tmux session.

- ``ssh`` mode (a cluster node other than rank 0: through rank 0, ``-J user@<rank 0>``): one ``ssh`` with keep-alives (``ServerAliveInterval 30``, ``ServerAliveCountMax 10``: a silent
  connection is given up after five minutes, and a NAT that drops idle flows sees traffic every 30 s; ssh_config(5)),
  ``-L local:localhost:remote`` per ``ssh.forward`` entry, and with a job ``-t`` plus ``tmux attach -t <session>``
  (a login shell when there is no session); ``-- cmd`` runs that instead.
- ``ssm`` mode (AWS Systems Manager): ``aws ssm start-session``; one ``AWS-StartPortForwardingSession`` per forwarded
  port (``portNumber``, ``localPortNumber``), run in the background; the job's session through
  ``AWS-StartInteractiveCommand`` (``command``) as the login user, or ``-- cmd`` the same way
  (https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-working-with-sessions-start.html).
  Session Manager keeps its own idle timeout (an account preference, 20 minutes by default), not ssh's keep-alives.
- ``cloud-assistant`` mode (Alibaba Cloud): ``ali-instance-cli session --instance <id>``, one
  ``ali-instance-cli portforward --instance <id> --local-port L --remote-port R`` per forwarded port in the
  background (https://www.alibabacloud.com/help/en/ecs/user-guide/perform-port-forwarding-by-using-ali-instance-cli).
  Its session takes no command: the tmux line to type is printed, and ``-- cmd`` is refused.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from components.spec.sections import forward_ports
from gpulease.live.target import LiveError, Target

KEEPALIVE = ["-o", "ServerAliveInterval=30", "-o", "ServerAliveCountMax=10"]


@dataclass
class Connection:
    """The commands of one connection: ``background`` ones (port forwards) first, then the interactive one."""

    interactive: list[str]
    background: list[list[str]] = field(default_factory=list)
    hint: str | None = None

    def lines(self) -> list[str]:
        out = [shlex.join(argv) + " &" for argv in self.background] + [shlex.join(self.interactive)]
        return out + ([f"# {self.hint}"] if self.hint else [])


def attach_line(session: str, user: str | None = None) -> str:
    """Attach to the job's tmux session, or open a login shell when it is not there (the job never started or the
    instance rebooted)."""
    attach = f"tmux attach -t {shlex.quote(session)} || exec bash -l"
    return f"sudo -iu {user} bash -lc {shlex.quote(attach)}" if user else attach


def plan(target: Target, command: list[str] | None = None, identity: str | None = None) -> Connection:
    mode, session, user = target.mode, target.session, target.user
    forwards = [forward_ports(item) for item in target.forward]
    remote = shlex.join(command) if command else None
    instance = target.instance_id
    if mode == "ssh":
        # A cluster node other than rank 0 (gpulease/live/nodes.py): its private address through rank 0 (ssh -J).
        jump, private = target.outputs.get("jumpHost"), target.outputs.get("privateIp")
        address = target.outputs.get("publicIp") or (private if jump else None)
        if not address:
            raise LiveError(f"stack {target.stack!r}: no publicIp output for {target.experiment!r} (not running?)")
        argv = ["ssh", *KEEPALIVE, *(["-i", identity] if identity else [])]
        if jump and not target.outputs.get("publicIp"):
            # -J does not hand -i to the jump connection; with a key file the hop is a ProxyCommand with the same key
            # (ssh_config(5): ProxyJump, ProxyCommand with ssh -W %h:%p).
            argv += (["-o", f"ProxyCommand=ssh {' '.join(KEEPALIVE)} -i {shlex.quote(identity)} -W %h:%p {user}@{jump}"]
                     if identity else ["-J", f"{user}@{jump}"])
        for local, port in forwards:
            argv += ["-L", f"{local}:localhost:{port}"]
        host = f"{user}@{address}"
        if remote:
            return Connection([*argv, host, remote])
        if session:
            return Connection([*argv, "-t", host, attach_line(session)])
        return Connection([*argv, host])
    if not instance:
        raise LiveError(f"stack {target.stack!r}: no instanceId output for {target.experiment!r} (not running?)")
    if mode == "ssm":
        region = ["--region", target.region] if target.region else []
        base = ["aws", "ssm", "start-session", "--target", instance, *region]
        background = [[*base, "--document-name", "AWS-StartPortForwardingSession", "--parameters",
                       json.dumps({"portNumber": [str(port)], "localPortNumber": [str(local)]})]
                      for local, port in forwards]
        line = f"sudo -iu {user} bash -lc {shlex.quote(remote)}" if remote else (
            attach_line(session, user) if session else None)
        if line is None:
            return Connection(base, background)
        return Connection([*base, "--document-name", "AWS-StartInteractiveCommand", "--parameters",
                           json.dumps({"command": [line]})], background)
    if remote:
        raise LiveError(f"stack {target.stack!r}: in cloud-assistant mode `ali-instance-cli session` runs no "
                        "command; open the session and type it, or run it as a Cloud Assistant command")
    region = ["--region", target.region] if target.region else []
    background = [["ali-instance-cli", "portforward", "--instance", instance, "--local-port", str(local),
                   "--remote-port", str(port), *region] for local, port in forwards]
    hint = f"in the session: {attach_line(session, user)}" if session else None
    return Connection(["ali-instance-cli", "session", "--instance", instance, *region], background, hint)


def run(connection: Connection) -> int:
    """Start the port forwards in the background, run the interactive command in the foreground, then stop them."""
    started = []
    try:
        for argv in connection.background:
            try:
                started.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL))
            except OSError as exc:
                raise LiveError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
        if connection.hint:
            print(connection.hint, file=sys.stderr)
        try:
            return subprocess.call(connection.interactive)
        except OSError as exc:
            raise LiveError(f"cannot run {connection.interactive[0]}: {exc.strerror or exc}") from None
    finally:
        for proc in started:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


RUNNER: Callable[[Connection], int] = run
"""How a connection is run (a test records it instead)."""
