"""What ``gpulease init`` asks, checked one answer at a time: each bad answer is one line naming the option, what
was wrong and what is accepted (the nearest valid value for a near miss).

The GPU comes from the workload (model size and method) the way ``gpulease size`` and the program's ``gpu.fit``
pick it: the cheapest catalog type in the region whose GPUs hold it with headroom
(``gpulease.core.sizing.find_offers``)."""

from __future__ import annotations

import argparse
import difflib
import ipaddress
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from components.spec.clouds import SPEC_RULES, all_key_types
from gpulease.core.catalog import load_catalog
from gpulease.core.errors import UserError
from gpulease.core.sizing import find_offers
from gpulease.core.sizing.offers import Offer
from gpulease.core.sizing.workload import FitSpec
from gpulease.lifecycle.answer_numbers import BUDGET, HOURS, MAX_HOURS

CLOUDS = ("aws", "alicloud")
MARKETS = ("spot", "on-demand")
DEFAULT_REGION = {"aws": "us-east-1", "alicloud": "cn-hangzhou"}
NO_PORT_MODE = {"aws": "ssm", "alicloud": "cloud-assistant"}
NAME = re.compile(r"^[a-z][a-z0-9-]{0,38}[a-z0-9]\Z")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+\Z")
DEFAULT_HOURS = 8.0
MIN_REASON_CHARS = 10
"""``onDemandReason``: the spec's own minimum (a sentence a reviewer can read)."""
DEFAULT_CHECKPOINT_SIGNAL = "USR1"
DEFAULT_CHECKPOINT_PROCESS = "train.py"
"""What a spot stack's watchdog signals before a spot notice's (or the deadline's) last sync: the pack's advisory
for spot without a checkpoint hook or signal names this pair (``gpulease.lifecycle.advice``)."""
NO_ANSWER = "none"

DEFAULT_PUBLIC_KEY = {"aws": "~/.ssh/id_ed25519.pub", "alicloud": "~/.ssh/id_rsa.pub"}
MAKE_KEY = {"aws": "ssh-keygen -t ed25519", "alicloud": "ssh-keygen -t rsa -b 4096"}
"""The key file ``init`` reads when none is named, per cloud: a type the cloud's key-pair import accepts. EC2
ImportKeyPair takes "an RSA or ED25519 key pair"
(https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ImportKeyPair.html); Alibaba Cloud's ECS ImportKeyPair
lists "rsa, dsa, ssh-rsa, ssh-dss, ecdsa" and not ed25519
(https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-importkeypair), so on Alibaba Cloud
the default is the RSA key (an ed25519 key would fail only at ``pulumi up``). The types each cloud accepts are its
spec rules' ``key_types``; a test holds these defaults to them."""


class AnswerError(UserError):
    """One answer of ``gpulease init`` is not accepted."""


def nearest(value: str, accepted: list[str] | tuple[str, ...]) -> str:
    """`` (did you mean X?)`` for a near miss, else nothing."""
    close = difflib.get_close_matches(value, list(accepted), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


@dataclass(frozen=True)
class Source:
    uri: str
    to: str


@dataclass
class Answers:
    """Everything the stack file is written from (already checked)."""

    name: str
    owner: str
    cloud: str
    region: str
    params: str
    method: str
    budget_usd: float
    ssh_from: list[str] = field(default_factory=list)
    no_port: bool = False
    public_key: str | None = None
    key_name: str | None = None
    sources: list[Source] = field(default_factory=list)
    market: str = "spot"
    on_demand_reason: str | None = None
    checkpoint_process: str | None = None
    hours: float = DEFAULT_HOURS
    project: str | None = None
    cost_center: str = "unassigned"

    @property
    def ssh_mode(self) -> str:
        return NO_PORT_MODE[self.cloud] if self.no_port else "ssh"


def check_name(name: str) -> str:
    if not NAME.match(name):
        raise AnswerError(f"--name {name!r}: not a stack name; accepted: 2-40 lowercase letters, digits and hyphens, "
                          "starting with a letter, e.g. llama8b-lora")
    return name


def check_cloud(cloud: str) -> str:
    if cloud not in CLOUDS:
        raise AnswerError(f"--cloud {cloud!r}: unknown cloud{nearest(cloud, CLOUDS)}; accepted: {', '.join(CLOUDS)}")
    return cloud


def check_region(cloud: str, region: str) -> str:
    regions = load_catalog().regions_of(cloud)
    if region not in regions:
        raise AnswerError(f"--region {region!r}: not a region of {cloud} the catalog prices{nearest(region, regions)}; "
                          f"accepted: {', '.join(regions)}")
    return region


def check_owner(owner: str) -> str:
    if not EMAIL.match(owner):
        raise AnswerError(f"--owner {owner!r}: not an e-mail address; accepted: you@example.org (every resource is "
                          "tagged with it)")
    return owner


def check_budget(text: str | float) -> float:
    return _number("--budget", BUDGET, text)


def check_hours(text: str | float, cloud: str | None = None) -> float:
    """The hours until the deadline; with ``cloud``, at least that cloud's shortest runtime (the stack file's own
    check), so a too-short deadline is refused (and asked again) at once, not after every other answer."""
    hours = _number("--hours", HOURS, text)
    if cloud is not None:
        least = min_runtime_hours(cloud)
        if hours < least:
            raise AnswerError(f"--hours {hours:g} is under the {least:g} h an {cloud} stack runs at least; accepted: a number "
                              f"from {least:g} to {MAX_HOURS:g}, e.g. {DEFAULT_HOURS:g}")
    return hours


def min_runtime_hours(cloud: str) -> float:
    """The shortest ``maxRuntimeHours`` the stack file of ``cloud`` accepts (its spec's ``min_runtime_minutes``)."""
    from components.spec.clouds import SPEC_RULES

    return SPEC_RULES[cloud].min_runtime_minutes / 60


def _number(flag: str, parse: Callable[[str], float], text: str | float) -> float:
    if isinstance(text, float):
        return text  # parsed already (the flag's own type)
    try:
        return parse(text)
    except argparse.ArgumentTypeError as exc:
        raise AnswerError(f"{flag} {exc}") from None


def check_market(text: str) -> str:
    if text not in MARKETS:
        raise AnswerError(f"--market {text!r}: not a market{nearest(text, MARKETS)}; accepted: {', '.join(MARKETS)}")
    return text


def check_reason(text: str) -> str:
    if len(text.strip()) < MIN_REASON_CHARS:
        raise AnswerError(f"--on-demand-reason {text!r}: too short to review (the pack accepts an on-demand GPU only "
                          f"with a reason); accepted: a sentence of at least {MIN_REASON_CHARS} characters, e.g. "
                          "'interactive debugging - cannot be interrupted'")
    return text.strip()


def check_process(text: str) -> str | None:
    """The part of the training process's command line the spot notice signals; ``none``: no signal."""
    text = text.strip()
    if text.lower() == NO_ANSWER:
        return None
    if not text or not text.isprintable() or len(text) > 200:
        raise AnswerError(f"--checkpoint-process {text!r}: not a part of a command line; accepted: your training "
                          f"script's name, e.g. {DEFAULT_CHECKPOINT_PROCESS}, or {NO_ANSWER} (no signal)")
    return text


def check_cidr(text: str) -> str:
    try:
        net = ipaddress.ip_network(text.strip(), strict=True)
    except ValueError as exc:
        raise AnswerError(f"--ssh-from {text!r}: not a CIDR ({exc}); accepted: your address, e.g. 203.0.113.7/32") from None
    return str(net)


def parse_source(text: str) -> Source:
    """``URI`` or ``URI:/folder`` (the folder on the data disk); without one, ``/data/models/<name>`` for a hub
    model and ``/data/datasets/<name>`` for anything else."""
    uri, to = text, ""
    head, sep, tail = text.rpartition(":")
    if sep and tail.startswith("/") and "://" in head:
        uri, to = head, tail
    if "://" not in uri:
        raise AnswerError(f"--source {text!r}: not a URI; accepted: hf://org/repo, hf://datasets/org/repo, "
                          "s3://bucket/prefix/, oss://bucket/prefix/ or https://host/file, optionally :/data/folder")
    if not to:
        last = uri.rstrip("/").rsplit("/", 1)[-1] or "source"
        kind = "datasets" if "datasets/" in uri or not uri.startswith(("hf://", "modelscope://")) else "models"
        to = f"/data/{kind}/{last}"
    if not to.startswith("/data/") or ".." in to.split("/"):
        raise AnswerError(f"--source {text!r}: the folder {to!r} is not on the data disk; accepted: a folder under "
                          "/data/, e.g. :/data/models/llama")
    return Source(uri=uri, to=to)


def read_public_key(path: str, cloud: str = "aws") -> str:
    """The key line of ``path``, of a type ``cloud``'s key-pair import accepts (the spec checks the rest)."""
    file = Path(path).expanduser()
    accepted = (f"accepted: an OpenSSH .pub file, e.g. {DEFAULT_PUBLIC_KEY[cloud]} (`{MAKE_KEY[cloud]}` makes one), "
                "or --key-name, or --no-port")
    try:
        try:
            mode = file.stat().st_mode  # follows a link: what it points at is what would be read
        except FileNotFoundError:
            raise AnswerError(f"--public-key {path}: no such file; {accepted}") from None
        if not stat.S_ISREG(mode):
            # Never opened: a FIFO would block the read, /dev/zero would never end it.
            what = ("a folder" if stat.S_ISDIR(mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
            raise AnswerError(f"--public-key {path}: is {what}, not a regular file; {accepted}")
        text = file.read_text(encoding="utf-8", errors="replace")[:16384].strip()
    except OSError as exc:
        raise AnswerError(f"--public-key {path}: cannot be read ({exc.strerror or exc})") from None
    if "PRIVATE KEY" in text:
        raise AnswerError(f"--public-key {path}: holds a private key; accepted: the .pub file beside it")
    declared = text.split(None, 1)[0] if text else ""
    if declared in all_key_types() and (problem := SPEC_RULES[cloud].key_problem(declared)) is not None:
        raise AnswerError(f"--public-key {path}: {problem}; `{MAKE_KEY[cloud]}` makes one")
    return text


def gpu_offers(answers: Answers) -> list[Offer]:
    """The catalog's types that hold the workload in the region, cheapest first (what ``gpu.fit`` resolves to)."""
    fit = FitSpec.model_validate({"params": answers.params, "method": answers.method})
    return find_offers(fit.workload(), load_catalog(), answers.cloud, answers.region, headroom=fit.headroom)


def check_workload(params: str, method: str) -> tuple[str, str]:
    from pydantic import ValidationError

    if not params.isascii() or not params.isprintable():
        shown = params.encode("ascii", "backslashreplace").decode("ascii")
        raise AnswerError(f"--params {shown!r}: not written in ASCII; accepted: a preset (1B 3B 7B 8B 13B 14B 32B "
                          "34B 70B 405B) or a count such as 7e9 (ASCII digits)")
    try:
        fit = FitSpec.model_validate({"params": params, "method": method})
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = "--method" if problem.get("loc", ("",))[0] == "method" else "--params"
        given = method if where == "--method" else params
        why = str(problem.get("msg", "not accepted")).removeprefix("Value error, ").split("; accepted:")[0]
        accepted = ("full, lora or qlora" if where == "--method" else "a preset (1B 3B 7B 8B 13B 14B 32B 34B 70B 405B) "
                    "or a count such as 7e9 (ASCII digits)")
        raise AnswerError(f"{where} {given!r}: {why}; accepted: {accepted}") from None
    return str(fit.params), fit.method
