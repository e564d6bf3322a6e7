"""The run manifest: what ran, written when a job starts (standard library only, Python 3.10).

``run_job.py`` (the spec's ``job.command``) and ``job_agent.py`` (a CI job) call ``write`` just before they start
the job. ``manifest.json`` goes to ``<mount>/logs/manifest.json`` and, outside the expiring checkpoint prefix, to
``<control_uri>manifest.json``. It records:

- the stack, the experiment, the cloud and region, the job (its session or CI job id) and its command;
- the instance: id, type and image id (the metadata service), the image family the stack chose, the OS;
- the software readiness saw: NVIDIA driver, CUDA (nvidia-smi) and PyTorch versions (``ready.json``);
- the data sources the settings declare (``data.sources`` / ``data_sources``) with their revisions and digests,
  and what the bootstrap staged, when it reports it;
- the training code's git commit, branch, remote and whether the work tree was clean, when the job runs in a
  git work tree (its working directory, or the directory a leading ``cd DIR &&`` of the command enters);
- the hyperparameters / seed file ``job.params_file`` names: its path, SHA-256 and content (up to 64 KiB);
- the deadline and the verification's result, when there was one.

Nothing secret goes in: no environment variable is read into it; every text that comes from the user (the
command, the params file, URIs, the git remote) passes ``redact``, which removes the credentials in URLs
(``scheme://user:secret@host``), the values of keys and flags named like secrets (token, secret, password,
passwd, api key, access key, credential, auth, signature; also after ``is``), a URL's credential query parameters
(presigned S3 and OSS URLs, ``sig``, ``token``) and strings shaped like well-known tokens (AWS access keys,
Hugging Face, GitHub, OpenAI-style ``sk-`` keys, Slack, JWTs).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from typing import Any

try:
    from instance import bounds, control
    from instance import cloud_access as ca
    from instance import instance_state as st
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import control  # type: ignore[no-redef]
    import instance_state as st  # type: ignore[no-redef]

MANIFEST_FILE = "manifest.json"
PARAMS_MAX_BYTES = 64 * 1024
REDACTED = "<redacted>"
_SECRET_WORD = r"(?:token|secret|password|passwd|passphrase|(?<![a-z0-9])pass\b|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?|auth|signature)"
# key=value, key: value, "key": "value", --key value / --key=value, "password is: value": the value goes, the key
# stays readable. A key starts where a word does (the lookbehind): one try per word, not per character, so a long
# line (a progress bar's thousands of updates between two line feeds) takes linear time, not quadratic. A terminal's
# colour code (``\x1b[1m``, ``\x1b[0m``) before the key or between the key and its ``=`` does not hide it.
_ANSI = r"(?:\x1b\[[0-9;]{0,8}m)*"
_SECRET_ASSIGNMENT = re.compile(
    r"""(?ix)
    (?:(?<![\w.-])|(?<=\x1b\[\dm)|(?<=\x1b\[\d\dm)|(?<=\x1b\[\d;\d\dm)|(?<=\x1b\[\d;\dm))
    (?P<key>["']?[\w.-]*""" + _SECRET_WORD + r"""[\w.-]*["']?)
    (?P<sep>""" + _ANSI + r"""[^\S\n]*[:=][^\S\n]*|[^\S\n]+(?:(?:is|was|are)\b[^\S\n]*[:=]?[^\S\n]*)?)
    (?P<value>"[^"\n]*"|'[^'\n]*'|[^\s,;}\]]+)
    """
)
# A URL's query parameters that carry a credential: a presigned URL's X-Amz-Signature, X-Amz-Credential and
# X-Amz-Security-Token (S3), Signature and OSSAccessKeyId (OSS), sig (an Azure SAS), token, key-named ones. Each
# value goes up to the next "&", the rest of the URL stays readable.
_QUERY_SECRET = re.compile(r"(?i)([?&;](?:[\w.-]*" + _SECRET_WORD + r"[\w.-]*|sig)=)(?!<redacted>)[^&#\s\"'<>]+")
# The userinfo of a URL goes up to the LAST "@" before the host ("postgres://user:pa@ss@host/db": all of
# "user:pa@ss"); a "user:" userinfo takes a "/" too when an "@" follows in the same run ("mysql://root:p@ss/w0rd@db":
# all of "root:p@ss/w0rd"), each part at most 256 characters so that a run of "a://" stays linear.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(?:[^/\s?#@:]{0,256}:[^\s?#]{0,256}@|[^/\s?#]*@)")
# An Authorization header (or a bare "Bearer <token>"): the scheme stays readable, the credential goes.
_AUTH_HEADER = re.compile(
    r"""(?ix)\b((?:proxy-)?authorization[^\S\n]*[:=][^\S\n]*)(?:(bearer|basic|token|digest|negotiate|aws4-hmac-sha256)[^\S\n]+)?
    ("[^"\n]*"|'[^'\n]*'|[^\s"',;]+)"""
)
_BEARER = re.compile(r"(?i)\b(bearer|token)([^\S\n]*[:=][^\S\n]*|[^\S\n]+)(?!<redacted>)([A-Za-z0-9._~+/=-]{8,})")

TOKEN_SHAPES: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    # (what, the prefixes it starts with, its shape, where the vendor describes it)
    ("AWS access key id", ("AKIA", "ASIA"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
     "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-unique-ids"),
    ("Alibaba Cloud AccessKey id", ("LTAI",), r"\bLTAI[A-Za-z0-9]{12,}\b",
     "the prefix of the AccessKey ids RAM issues (https://www.alibabacloud.com/help/en/ram/user-guide/"
     "create-an-accesskey-pair shows them by example, not as a format)"),
    ("Hugging Face token", ("hf_",), r"\bhf_[A-Za-z0-9]{20,}\b", "https://huggingface.co/docs/hub/security-tokens"),
    ("GitHub token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     r"\bgh[pousr]_[A-Za-z0-9]{20,}\b|\bgithub_pat_[A-Za-z0-9_]{20,}\b",
     "https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/about-authentication-to-github"
     "#githubs-token-formats"),
    ("GitLab personal access token", ("glpat-",), r"\bglpat-[A-Za-z0-9_-]{20,}",
     "https://docs.gitlab.com/ee/security/tokens/#token-prefixes"),
    ("Stripe secret or restricted key", ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
     r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{10,}", "https://docs.stripe.com/keys"),
    ("npm access token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b",
     "https://github.blog/changelog/2021-09-23-npm-has-a-new-access-token-format/"),
    ("Google API key", ("AIza",), r"\bAIza[0-9A-Za-z_-]{35}",
     "the shape of the keys Google Cloud issues (https://cloud.google.com/docs/authentication/api-keys shows them "
     "by example)"),
    ("OpenAI-style key", ("sk-",), r"\bsk-[A-Za-z0-9_-]{16,}", "https://platform.openai.com/docs/api-reference/authentication"),
    ("Slack token", ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"), r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
     "https://api.slack.com/authentication/token-types"),
    ("JSON Web Token", ("eyJ",), r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
     "a JOSE header ('{\"' in base64url), RFC 7519 https://www.rfc-editor.org/rfc/rfc7519"),
)
"""Strings shaped like a vendor's token, wherever they stand (case-sensitive, as issued)."""
_TOKEN_SHAPES = re.compile("|".join(f"(?:{shape})" for _, _, shape, _ in TOKEN_SHAPES))
# ``wandb login KEY`` (https://docs.wandb.ai/ref/cli/wandb-login): the key after the command and its flags goes.
_WANDB_LOGIN = re.compile(r"(?i)(\bwandb[^\S\n]+login(?:[^\S\n]+--?[\w-]+)*[^\S\n]+)(?!<redacted>)(?!-)[^\s\"']{20,}")
# A PEM private key, from its BEGIN line to its END line, across lines: the whole block goes.
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----")
PEM_REDACTED = f"{REDACTED} (a private key)"


# The credential options of the commands jobs call: curl's `-u/--user name:password`, a password glued to `-p`
# (mysql `-phunter2`) or after it (docker login, sshpass `-p hunter2`), and a cookie header's value.
_USER_OPTION = re.compile(r"(?<![\w-])(-u|--user)([^\S\n]+|=)([^\s:]+):(\S+)")
_PASSWORD_OPTION = re.compile(r"(?<![\w-])(-p)([^\S\n]*)(?!<redacted>)(?!\d+(?:\s|$))([^\s-]\S*)")  # not a port: -p 2222
_COOKIE_HEADER = re.compile(r"(?i)\b((?:set-)?cookie[^\S\n]*:[^\S\n]*)([^\"'\n]+)")


# What each pattern cannot match without (in the case-folded text, or as written for the case-sensitive token
# shapes): a pattern whose every trigger is absent is not run. Each pass is linear, but Python's regex engine costs
# about a microsecond per character and pattern on a loaded machine: a 4 MiB log of one hostile form (``a@`` runs,
# ``Bearer `` runs, ``token=`` runs) runs only the one or two patterns its form can start, not all nine.
_SECRET_TRIGGERS = ("token", "secret", "passw", "passphrase", "pass", "pwd", "api", "access", "private", "credential",
                    "auth", "signature")
_FOLDED_TRIGGERS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (_URL_USERINFO, ("@",)), (_QUERY_SECRET, ("=",)), (_USER_OPTION, ("-u", "--user")), (_PASSWORD_OPTION, ("-p",)),
    (_COOKIE_HEADER, ("cookie",)), (_AUTH_HEADER, ("authorization",)), (_BEARER, ("bearer", "token")),
    (_WANDB_LOGIN, ("wandb",)),
)
_SHAPE_TRIGGERS = tuple(prefix for _, prefixes, _, _ in TOKEN_SHAPES for prefix in prefixes)


_FORMS = ("://", "-u", "--user", "-p", "cookie", "authorization", "bearer", "wandb", "private key-----",
          *_SECRET_TRIGGERS)
MAX_FORMS = 4096
"""A text holding more credential-like forms than this (``-u``, ``Bearer``, ``token``, ``://`` ...) is not read
form by form: it is replaced whole (fail closed), so one hostile line costs a count, not a million matches."""


def _runs(pattern: re.Pattern[str], folded: str) -> bool:
    return any(t in folded for t in dict(_FOLDED_TRIGGERS)[pattern])


def redact_pem(text: str) -> str:
    """``text`` with every PEM private key block replaced whole, BEGIN to END across lines; a block without its END
    (cut at the end) goes to the end, an END without its BEGIN (a tail that starts inside a block) from the start
    of ``text`` or the previous block's end. One pass: each marker is searched for once."""
    if "PRIVATE KEY-----" not in text:
        return text
    out, pos = [], 0
    begin, end = _PEM_BEGIN.search(text), _PEM_END.search(text)
    while begin or end:
        if end and (begin is None or end.start() < begin.start()):
            out.append(PEM_REDACTED)  # an END without its BEGIN: from where the text (or the last block) ends
            pos = end.end()
        else:
            assert begin is not None
            out.append(text[pos:begin.start()])
            end = end and (end if end.start() >= begin.end() else _PEM_END.search(text, begin.end()))
            out.append(PEM_REDACTED)
            pos = end.end() if end else len(text)
        # A marker not found once is not searched for again (a run of ENDs alone stays linear).
        begin = begin and (begin if begin.start() >= pos else _PEM_BEGIN.search(text, pos))
        end = end and (end if end.start() >= pos else _PEM_END.search(text, pos))
    out.append(text[pos:])
    return "".join(out)


def redact(text: str) -> str:
    """``text`` without the credentials it may hold (see the module docstring)."""
    folded = text.casefold()
    forms = sum(folded.count(t) for t in _FORMS) + sum(text.count(t) for t in _SHAPE_TRIGGERS)
    if forms > MAX_FORMS:
        return f"{REDACTED} (a text of {len(text)} characters holding {forms} credential-like forms)"
    text = redact_pem(text)
    if _runs(_URL_USERINFO, folded) and "://" in folded:
        text = _URL_USERINFO.sub(rf"\1{REDACTED}@", text)
    if _runs(_QUERY_SECRET, folded) and any(t in folded for t in ("?", "&", ";")):
        text = _QUERY_SECRET.sub(rf"\1{REDACTED}", text)
    if _runs(_USER_OPTION, folded) and ":" in folded:
        text = _USER_OPTION.sub(rf"\1\2\3:{REDACTED}", text)
    if _runs(_PASSWORD_OPTION, folded):
        text = _PASSWORD_OPTION.sub(rf"\1\2{REDACTED}", text)
    if _runs(_COOKIE_HEADER, folded):
        text = _COOKIE_HEADER.sub(rf"\1{REDACTED}", text)
    if _runs(_AUTH_HEADER, folded):
        text = _AUTH_HEADER.sub(lambda m: m.group(1) + (f"{m.group(2)} " if m.group(2) else "") + REDACTED, text)
    if _runs(_BEARER, folded):
        text = _BEARER.sub(rf"\1\2{REDACTED}", text)
    if _runs(_WANDB_LOGIN, folded):
        text = _WANDB_LOGIN.sub(rf"\1{REDACTED}", text)
    if any(t in text for t in _SHAPE_TRIGGERS):
        text = _TOKEN_SHAPES.sub(REDACTED, text)
    if not any(t in folded for t in _SECRET_TRIGGERS):
        return text

    def keep_key(match: re.Match[str]) -> str:
        if REDACTED in match.group("value") or match.group("value").lower() in ("bearer", "basic", "token"):
            return match.group(0)  # already redacted above (an Authorization header's scheme and credential)
        return f"{match.group('key')}{match.group('sep')}{REDACTED}"

    return _SECRET_ASSIGNMENT.sub(keep_key, text)


BLOCK = 64 * 1024
"""``redact_lines`` reads a text in blocks of whole lines of about this size (the patterns never cross a line feed,
so a block reads as its lines would one by one; ``MAX_FORMS`` is counted per block)."""


def redact_lines(text: str) -> str:
    """``redact`` of each line of ``text`` (lines end at a line feed), read in blocks of whole lines: linear in the
    text, with the cost of a pattern's pass paid per block, not per line. A block holding more than ``MAX_FORMS``
    credential-like forms is replaced whole, one line saying so."""
    text = redact_pem(text)  # a key block may cross a block's end
    out, pos = [], 0
    while pos < len(text):
        end = text.find("\n", pos + BLOCK)
        end = len(text) if end < 0 else end + 1
        block = text[pos:end]
        out.append(redact(block[:-1]) + "\n" if block.endswith("\n") else redact(block))
        pos = end
    return "".join(out)


def redact_value(value: Any) -> Any:
    """A parsed document without secrets: values under secret-named keys go, strings are ``redact``ed."""
    if isinstance(value, dict):
        return {k: REDACTED if re.search(_SECRET_WORD, str(k), re.I) else redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    return redact(value) if isinstance(value, str) else value


def _run(argv: list[str], timeout: float = bounds.value("manifest_probe")) -> str | None:
    """A command's stdout, bounded; None when it fails or is missing."""
    code, out, _ = ca.run_bounded_split(argv, timeout)
    return out.strip() if code == 0 else None


def work_dir(command: str, cwd: str) -> str:
    """Where the job's code is: the directory a leading ``cd DIR &&`` (or ``;``) enters, else ``cwd``."""
    try:
        words = shlex.split(command)
    except ValueError:
        return cwd
    if len(words) >= 3 and words[0] == "cd" and words[2] in ("&&", ";"):
        return os.path.normpath(os.path.join(cwd, os.path.expanduser(words[1])))
    if len(words) >= 2 and words[0] == "cd" and words[1].endswith(";"):
        return os.path.normpath(os.path.join(cwd, words[1][:-1]))
    return cwd


def git_state(directory: str) -> dict[str, Any] | None:
    """The commit, branch, remote and cleanliness of the git work tree holding ``directory``; None outside one.

    ``safe.directory=*`` on the command line: the tool runs as root over a tree the login user owns, which git
    otherwise refuses ("detected dubious ownership"); command-line config is honoured for it (git-config(1))."""
    git = ["git", "-c", "safe.directory=*", "-C", directory]

    def ask(*args: str) -> str | None:
        return _run([*git, *args])

    commit = ask("rev-parse", "HEAD")
    if not commit:
        return None
    status = ask("status", "--porcelain", "--untracked-files=no")
    remote = ask("config", "--get", "remote.origin.url")
    return {
        "workTree": ask("rev-parse", "--show-toplevel"),
        "commit": commit,
        "branch": ask("rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": None if status is None else bool(status),
        "remote": redact(remote) if remote else None,
    }


def params(path: str | None, mount: str) -> dict[str, Any] | None:
    """The params file's path, SHA-256 and content (parsed when JSON, else text), secrets redacted."""
    if not path:
        return None
    full = path if path.startswith("/") else os.path.join(mount, path)
    try:
        with open(full, "rb") as fh:
            raw = fh.read(PARAMS_MAX_BYTES + 1)
    except OSError as exc:
        return {"path": full, "error": f"cannot read it: {exc.strerror or exc}"}
    found: dict[str, Any] = {"path": full, "sha256": hashlib.sha256(raw[:PARAMS_MAX_BYTES]).hexdigest()}
    if len(raw) > PARAMS_MAX_BYTES:
        found["truncated"] = True
    text = raw[:PARAMS_MAX_BYTES].decode("utf-8", "replace")
    try:
        found["content"] = redact_value(json.loads(text))
    except ValueError:
        found["content"] = redact(text)
    return found


def data_sources(settings: dict[str, Any], ready: dict[str, Any]) -> list[dict[str, Any]]:
    """The declared data sources (``data.sources`` or ``data_sources`` in the settings) with what readiness
    reports of their staging, when it does; URIs without credentials."""
    declared = settings.get("data_sources")
    if declared is None and isinstance(settings.get("data"), dict):
        declared = settings["data"].get("sources")
    staged = ((ready.get("checks") or {}).get("data") or {}).get("sources")
    staged_by_to = {s.get("to"): s for s in staged if isinstance(s, dict)} if isinstance(staged, list) else {}
    out = []
    for source in declared if isinstance(declared, list) else []:
        if not isinstance(source, dict):
            continue
        item = {k: redact(str(source[k])) for k in ("uri", "to", "revision", "sha256") if source.get(k) is not None}
        result = staged_by_to.get(source.get("to"))
        if result:
            # staging.py's result: the digest of what landed on the disk (its files' manifest), its size.
            item["staged"] = redact_value({k: result[k] for k in ("ok", "bytes", "digest", "files", "skipped")
                                           if k in result})
        out.append(item)
    return out


def software(settings: dict[str, Any], ready: dict[str, Any]) -> dict[str, Any]:
    """Driver, CUDA and PyTorch as readiness saw them (nvidia-smi when there is no readiness report)."""
    checks = ready.get("checks") or {}
    gpu, torch = checks.get("gpu") or {}, checks.get("torch") or {}
    gpus = gpu.get("gpus") or []
    found = {
        "nvidiaDriver": gpus[0].get("driver_version") if gpus and isinstance(gpus[0], dict) else None,
        "cuda": gpu.get("cuda_version"),
        "torch": torch.get("version"),
        "gpus": [g.get("name") for g in gpus if isinstance(g, dict)],
    }
    if not found["nvidiaDriver"]:
        smi = settings.get("nvidia_smi", "nvidia-smi")
        line = _run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"])
        if line:
            rows = [[p.strip() for p in r.split(",")] for r in line.splitlines()]
            found["gpus"] = [r[0] for r in rows]
            found["nvidiaDriver"] = rows[0][1] if len(rows[0]) > 1 else None
        header = _run([smi]) or ""
        cuda = re.search(r"CUDA Version:\s*([0-9.]+)", header)
        found["cuda"] = found["cuda"] or (cuda.group(1) if cuda else None)
    return found


def os_name(path: str = "/etc/os-release") -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        return None
    return None


def build(settings: dict[str, Any], *, command: str, cwd: str, job: str, params_file: str | None = None) -> dict[str, Any]:
    """The manifest document of one job start (``job``: the tmux session or the CI job id)."""
    state_dir = settings.get("state_dir", "/var/lib/gpulease")
    ready = control.read_json(os.path.join(state_dir, "ready.json"))
    verified = control.read_json(os.path.join(state_dir, "verify.json"))
    watchdog_state = ca.saved_state(state_dir)
    facts = control.instance_facts(settings)
    deadline = watchdog_state.get("deadline")
    return {
        "schema": 1,
        "time": control.now_stamp(),
        "stack": settings.get("stack"),
        "experiment": settings.get("experiment"),
        "cloud": settings.get("cloud"),
        "region": settings.get("region"),
        "job": job,
        "command": redact(command),
        "instance": {**facts, "market": settings.get("market"), "imageFamily": settings.get("image_family"),
                     "os": os_name(settings.get("os_release", "/etc/os-release"))},
        "software": software(settings, ready),
        "data": {"sources": data_sources(settings, ready)},
        "code": git_state(work_dir(command, cwd)),
        "params": params(params_file, settings.get("mount_point", "/data")),
        "maxRuntimeHours": settings.get("max_runtime_hours"),
        "deadline": ca.utc_stamp(deadline) if isinstance(deadline, (int, float)) else None,
        "checkpointUri": settings.get("checkpoint_uri"),
        "verify": {k: verified[k] for k in ("passed", "failed", "time", "stepResumed") if k in verified} or None,
        # Each stop of this instance and its start again (instance_state): when, how long, the step resumed from.
        "interruptions": interruptions(state_dir),
    }


INTERRUPTION_KEYS = ("kind", "stoppedAt", "resumedAt", "stoppedSeconds", "resumedFromStep", "previousInstance")
"""``kind``: ``spot-reclaim`` (the same instance stopped after a spot notice and started again) or ``new-instance``
(another instance on this experiment's data disk, ``previousInstance``; when that one stopped is not known)."""


def interruptions(state_dir: str) -> list[dict[str, Any]]:
    identity = st.read_or_empty(os.path.join(state_dir, st.IDENTITY_FILE))
    found = identity.get("interruptions") if isinstance(identity.get("interruptions"), list) else []
    return [{k: item.get(k) for k in INTERRUPTION_KEYS} for item in found if isinstance(item, dict)]


def write(settings: dict[str, Any], *, command: str, cwd: str, job: str, params_file: str | None = None,
          say: Any = print) -> dict[str, Any]:
    """Build the manifest, write it under ``<mount>/logs`` and copy it to the control area. Never raises: a
    manifest that cannot be made must not keep the job from starting; the reason is logged."""
    try:
        manifest = build(settings, command=command, cwd=cwd, job=job, params_file=params_file)
        local = os.path.join(settings.get("mount_point", "/data"), "logs", MANIFEST_FILE)
        control.write_json(local, manifest)
    except Exception as exc:  # reported, never fatal to the job
        say(f"run manifest not written: {type(exc).__name__}: {exc}")
        return {}
    _, what = control.publish(settings, local, MANIFEST_FILE)
    say(f"run manifest {local}: {what}")
    return manifest


def record(settings: dict[str, Any], key: str, value: Any, *, say: Any = print, timeout: float = bounds.value("manifest_update")) -> bool:
    """Add ``key`` to the run manifest written at the job's start (``<mount>/logs/manifest.json``) and copy it to
    the bucket again, bounded by ``timeout``; without a manifest (no job started) there is nothing to add to, and
    the caller keeps the value in its own state. Never raises; True when the local manifest holds it."""
    local = os.path.join(settings.get("mount_point", "/data"), "logs", MANIFEST_FILE)
    try:
        found = st.read_state_file(local, max_bytes=4 * 1024 * 1024)
    except st.StateFileError as exc:
        say(f"run manifest not updated with {key}: {exc}")
        return False
    if not found:
        say(f"no run manifest at {local} (no job started): {key} is kept in the watchdog's state only")
        return False
    try:
        control.write_json(local, {**found, key: value})
    except OSError as exc:
        say(f"run manifest not updated with {key}: {exc}")
        return False
    _, what = control.publish(settings, local, MANIFEST_FILE, timeout=timeout)
    say(f"run manifest {local} records {key}: {what}")
    return True
