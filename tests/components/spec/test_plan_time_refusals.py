"""Values the spec used to accept that then fail on the paid instance (or switch a guard off): each is refused at
plan, naming the stack file, the field, what was wrong and what is accepted."""

from __future__ import annotations

import pytest

from components.spec.load import SpecError, load_stack_spec
from tests.support.specs import experiment

EXP = "gpulease:experiment"
SOURCE = "stacks/Pulumi.dev.yaml"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA+hBi33bSLRNsgbKP5NSFs+fQAUzBEl3aSwo5F2Lh5+ alice@laptop"


def source(uri: str, to: str = "/data/raw/x", **extra) -> dict:
    return {"data": {"sources": [{"uri": uri, "to": to, **extra}]}}


def cidr(*cidrs: str) -> dict:
    return {"ssh": {"allowedCidrs": list(cidrs), "publicKey": KEY}}


def verify(**fields) -> dict:
    return {"verify": {"command": "python train.py --steps 5", "maxMinutes": 20, **fields}}


REFUSED: list[tuple[str, dict, dict, str, str]] = [
    # (case, spec overrides, other config, field path, a phrase of the message)
    ("to with NUL", source("https://h/f", "/data/raw\0x"), {}, "data.sources[0].to", "NUL"),
    ("to with CR", source("https://h/f", "/data/raw\rx"), {}, "data.sources[0].to", "CR"),
    ("to with ESC", source("https://h/f", "/data/raw\x1bx"), {}, "data.sources[0].to", "ESC"),
    ("to with a tab", source("https://h/f", "/data/raw\tx"), {}, "data.sources[0].to", "a tab"),
    ("to 5000 characters", source("https://h/f", "/data/" + "a/" * 2500 + "b"), {}, "data.sources[0].to", "at most 512"),
    ("to inside .gpulease", source("https://h/f", "/data/.gpulease/x"), {}, "data.sources[0].to", "/data/.gpulease"),
    ("to inside checkpoints", source("https://h/f", "/data/checkpoints/x"), {}, "data.sources[0].to", "/data/checkpoints"),
    ("to overlapping", {"data": {"sources": [{"uri": "https://h/f", "to": "/data/raw"},
                                              {"uri": "https://h/g", "to": "/data/raw/sub"}]}}, {},
     "data.sources[1].to", "overlaps data.sources[0].to"),
    ("port not a number", source("https://host:abc/f"), {}, "data.sources[0].uri", "port 1-65535"),
    ("port out of range", source("https://localhost:99999/f"), {}, "data.sources[0].uri", "port 1-65535"),
    ("bad IPv6 host", source("https://[::1/f"), {}, "data.sources[0].uri", "host or port cannot be read"),
    ("percent-encoded ..", source("https://h/a/%2e%2e/f"), {}, "data.sources[0].uri", ". or .. part"),
    ("dot segment", source("https://h/a/./f"), {}, "data.sources[0].uri", ". or .. part"),
    ("percent NUL", source("https://h/a%00b"), {}, "data.sources[0].uri", "control character"),
    ("percent not an escape", source("https://h/a%ZZ"), {}, "data.sources[0].uri", "not a %XX escape"),
    ("escape not UTF-8", source("https://h/model%FF.bin"), {}, "data.sources[0].uri",
     "'https://h/model%FF.bin': the path's %XX escapes are not UTF-8 (as %FF)"),
    ("lone lead byte", source("https://h/caf%C3.txt"), {}, "data.sources[0].uri", "escapes are not UTF-8"),
    ("percent line feed", source("https://h/a%0ab"), {}, "data.sources[0].uri", "control character"),
    ("s3 on Alibaba", {"cloud": "alicloud", "gpu": {"instanceType": "ecs.gn7i-c8g1.2xlarge"},
                       **source("s3://bucket-a/x/")}, {}, "data.sources[0].uri", "accepted on this stack's cloud: oss://"),
    ("oss on AWS", source("oss://bucket-a/x/"), {}, "data.sources[0].uri", "accepted on this stack's cloud: s3://"),
    ("user in URI", source("https://alice@h/f"), {}, "data.sources[0].uri", "user name or password"),
    ("a fragment", source("https://h/f#part-2"), {}, "data.sources[0].uri", "is never sent to the server"),
    ("token in fragment", source("https://h/f#token=abc"), {}, "data.sources[0].uri", "fragment"),
    ("bearer in query", source("https://h/f?auth=Bearer%20abc"), {}, "data.sources[0].uri", "signature or a token"),
    ("signed URL", source("https://h/f?X-Amz-Signature=abc"), {}, "data.sources[0].uri", "signature or a token"),
    ("auth in query", source("https://h/f?auth=abc123"), {}, "data.sources[0].uri", "signature or a token"),
    ("user in bucket URI", source("s3://alice@bucket-a/x/"), {}, "data.sources[0].uri", "user name or password"),
    ("prefix climbing", {"checkpoints": {"prefix": "../../etc"}}, {}, "checkpoints.prefix", "clean key prefix"),
    ("prefix empty part", {"checkpoints": {"prefix": "a//b/"}}, {}, "checkpoints.prefix", "clean key prefix"),
    ("prefix dot", {"checkpoints": {"prefix": "./a/"}}, {}, "checkpoints.prefix", "clean key prefix"),
    ("params file is /data", {"job": {"command": "python train.py", "paramsFile": "/data"}}, {}, "job.paramsFile",
     "not a folder"),
    ("params file a folder", {"job": {"command": "python train.py", "paramsFile": "/data/code/"}}, {},
     "job.paramsFile", "not a folder"),
    ("empty resume command", verify(resumeCommand=""), {}, "verify.resumeCommand", "omit the field"),
    ("blank verify command", {"verify": {"command": "   ", "maxMinutes": 20}}, {}, "verify.command", "blank"),
    ("NUL in job command", {"job": {"command": "python\0 train.py"}}, {}, "job.command", "NUL"),
    ("NUL in hook", {"checkpoints": {"hook": "kill\0 1"}}, {}, "checkpoints.hook", "NUL"),
    ("ESC in warn hook", {"watchdog": {"warnHook": "echo \x1b[2J"}}, {}, "watchdog.warnHook", "ESC"),
    ("NUL in busy marker", {"watchdog": {"busyMarker": "/data/bu\0sy"}}, {}, "watchdog.busyMarker", "NUL"),
    ("prep runtime tiny", {"prep": {"maxRuntimeHours": 0.001}}, {}, "prep.maxRuntimeHours", "accepted on aws: 0.25"),
    ("budget 1e308", {"budgetUsd": 1e308}, {}, "budgetUsd", "less than or equal to 1000000"),
    ("image from own stack", {"image": {"fromStack": "dev"}}, {}, "image.fromStack", "is this stack"),
    ("STANDARD_IA after a day", {"checkpoints": {"lifecycle": {"transitions": [{"days": 1, "storageClass": "STANDARD_IA"}]}}},
     {}, "checkpoints.lifecycle.transitions[0].days", "before 30 days"),
    ("ONEZONE_IA after 29 days", {"checkpoints": {"lifecycle": {"keepDays": 60, "transitions": [
        {"days": 29, "storageClass": "ONEZONE_IA"}]}}}, {}, "checkpoints.lifecycle.transitions[0].days", "30 or more"),
    ("multicast CIDR", cidr("224.0.0.0/16"), {}, "ssh.allowedCidrs", "multicast"),
    ("this-network CIDR", cidr("0.0.0.0/16"), {}, "ssh.allowedCidrs", "'this network'"),
    ("loopback CIDR", cidr("127.0.0.1/32"), {}, "ssh.allowedCidrs", "loopback"),
    ("reserved CIDR", cidr("240.0.0.0/16"), {}, "ssh.allowedCidrs", "reserved"),
    ("link-local CIDR", cidr("169.254.169.254/32"), {}, "ssh.allowedCidrs", "link-local"),
    ("IPv6 multicast", cidr("ff02::1/128"), {}, "ssh.allowedCidrs", "multicast"),
    ("threshold true", {"budgetAlerts": {"thresholds": [True]}}, {}, "budgetAlerts.thresholds[0]", "accepted: a number"),
    ("forward true", {"ssh": {"allowedCidrs": ["203.0.113.7/32"], "publicKey": KEY, "forward": [True]}}, {},
     "ssh.forward[0]", "a boolean"),
    ("nodes true", {"nodes": True}, {}, "nodes", "accepted: a whole number"),
    ("bake 'yes'", {"image": {"bake": "yes"}}, {}, "image.bake", "accepted: true or false"),
    ("gpu count true", {"gpu": {"gpuMemoryGb": 24, "count": True}}, {}, "gpu.count", "accepted: a whole number"),
    ("runtime as text", {"maxRuntimeHours": "8"}, {}, "maxRuntimeHours", "accepted: a number"),
    ("runtime 1:00", {"maxRuntimeHours": "1:00"}, {}, "maxRuntimeHours", "accepted: a number"),
    ("retain as text", {"dataDisk": {"retain": "false"}}, {}, "dataDisk.retain", "accepted: true or false"),
    ("duplicate alert e-mails", {"budgetAlerts": {"emails": ["a@example.com", "A@example.com"]}}, {},
     "budgetAlerts.emails", "twice"),
    ("https named as the skip record", source("https://h/.gpulease-source.json"), {}, "data.sources[0].uri",
     "staging gives its own records"),
    ("https named as a resume file", source("https://h/x.part"), {}, "data.sources[0].uri", "'x.part'"),
    ("https named as a resume record", source("https://h/x.part.json"), {}, "data.sources[0].uri", "'x.part.json'"),
    ("https named as a temporary file", source("https://h/a.tmp"), {}, "data.sources[0].uri", "'a.tmp'"),
    ("s3 key named as the skip record", source("s3://bucket-a/dir/.gpulease-source.json"), {}, "data.sources[0].uri",
     "'.gpulease-source.json'"),
    ("s3 key named as a resume file", source("s3://bucket-a/x.part"), {}, "data.sources[0].uri", "'x.part'"),
    ("oss key named as a resume record", {"cloud": "alicloud", "gpu": {"instanceType": "ecs.gn7i-c8g1.2xlarge"},
                                          **source("oss://bucket-a/k.part.json")}, {}, "data.sources[0].uri",
     "'k.part.json'"),
    ("s3 key with a wildcard", source("s3://bucket-a/data/*.jsonl"), {}, "data.sources[0].uri", "holds a *"),
    ("oss prefix with a wildcard", {"cloud": "alicloud", "gpu": {"instanceType": "ecs.gn7i-c8g1.2xlarge"},
                                    **source("oss://bucket-a/run*/")}, {}, "data.sources[0].uri", "wildcard"),
    ("parked without retain", {"phase": "parked", "dataDisk": {"retain": False}}, {}, "dataDisk.retain", "phase: parked"),
]


@pytest.mark.parametrize(("case", "overrides", "config", "field", "phrase"), REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_at_plan_naming_file_field_and_what_is_accepted(case, overrides, config, field, phrase) -> None:
    with pytest.raises(SpecError) as err:
        load_stack_spec("dev", {EXP: experiment(**overrides), **config}, source=SOURCE)
    message = str(err.value)
    assert SOURCE in message
    lines = [line for line in message.splitlines() if line.startswith(f"  - {EXP}.{field}:")]
    assert lines, message
    assert phrase in lines[0] and "accepted" in lines[0], lines[0]


ACCEPTED: list[tuple[str, dict]] = [
    ("a port", source("https://h:8443/f.bin")),
    ("escapes of UTF-8 text", source("https://h/caf%C3%A9-%E2%82%AC.txt")),
    ("a query without a token", source("https://h/f.bin?download=1")),
    ("STANDARD_IA at 30 days", {"checkpoints": {"lifecycle": {"keepDays": 60, "transitions": [
        {"days": 30, "storageClass": "STANDARD_IA"}]}}}),
    ("GLACIER_IR after a day", {"checkpoints": {"lifecycle": {"transitions": [{"days": 1, "storageClass": "GLACIER_IR"}]}}}),
    ("a private CIDR", cidr("10.1.2.0/24")),
    ("a nested prefix", {"checkpoints": {"prefix": "team/llama-7b/"}}),
    ("a multi-line hook", {"checkpoints": {"hook": "sync\n\tkill -USR1 1"}}),
    ("image of another stack", {"image": {"fromStack": "bake-dev"}}),
    ("parked with the disk retained", {"phase": "parked"}),
    ("params file relative", {"job": {"command": "python train.py", "paramsFile": "code/params.yaml"}}),
    ("a file whose name only contains .part", source("https://h/x.partial.bin")),
    ("a prefix source", source("s3://bucket-a/x.part/")),
    ("a budget of a million", {"budgetUsd": 1_000_000}),
]


@pytest.mark.parametrize(("case", "overrides"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_the_legitimate_neighbours_stay_accepted(case, overrides) -> None:
    load_stack_spec("dev", {EXP: experiment(**overrides)}, source=SOURCE)


def test_own_stack_by_project_and_name_is_refused_when_the_project_is_known() -> None:
    spec = experiment(image={"fromStack": "gpulease/dev"})
    load_stack_spec("dev", {EXP: spec})  # the project is not known: another project's dev is legitimate
    with pytest.raises(SpecError, match="is this stack"):
        load_stack_spec("dev", {EXP: spec, "pulumi:project": "gpulease"})


def test_a_token_in_a_fragment_is_named_as_a_credential() -> None:
    # The policy pack reads the same function on any program's URIs, which need not pass parse_source.
    from gpulease.core.datasources import credential_problem

    assert credential_problem("https://h/f#token=abc") == "its fragment (#...) looks like a token"
    assert credential_problem("https://h/f#access_token=abc&x=1") == "its fragment (#...) looks like a token"
    assert credential_problem("https://h/f#section-2") is None


def test_the_reserved_names_at_plan_are_the_ones_the_instance_refuses() -> None:
    from gpulease.core import datasources
    from instance import staging

    assert datasources.STAGING_STATE_NAME == staging.STATE_NAME
    assert datasources.STAGING_RESERVED_SUFFIXES == staging.SKIPPED_NAMES
