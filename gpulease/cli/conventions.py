"""The conventions every command follows, applied once to the whole parser tree (``apply``) so that a command
added later follows them too:

- ``--format text|json`` (plus ``markdown`` where a command has it), ``--json`` kept as its alias;
- one JSON envelope, ``{"report": "gpulease <command>", "ok": bool, "data": ..., "errors": [{"code", "message",
  "file"?, "field"?}]}``, keys in camelCase;
- the exit codes, in every ``--help``;
- a missing credential or a value a cloud SDK refuses before any call: one line, exit 2 (``sdk_input_problem``),
  with the SDK loggers that print their own tracebacks silenced meanwhile (``quiet_sdk_loggers``);
- a mistyped command or stack name gets the nearest one (``did_you_mean``).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import logging
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from gpulease.cli.help_format import HELP_MAX_WIDTH, HelpFormatter, help_width  # noqa: F401  (re-exported)
from gpulease.core.shown import capped_quotes, echo
from gpulease.core.terminal import PIPED_WIDTH, piped_width  # noqa: F401  (re-exported)
from gpulease.review.jsonkeys import camel_keys

__all__ = ["camel_keys"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_INTERRUPTED = 130

EXIT_CODES_EPILOG = """exit codes (every command):
  0    done (plan: clean; advisory findings allowed)
  1    the answer is no: a mandatory policy violation (plan), nothing fits (size), a call or the job failed
  2    bad input or missing credentials: one line on stderr naming what to fix; nothing was created or written
  3    incomplete: a stack reviewed only in part (plan), a teardown that failed (ephemeral: resources may remain)
       a pull that left out objects it could not write beside the others (named)
  130  interrupted (Ctrl-C)"""



FORMATS = ("text", "json")
FORMAT_ALIASES = {"table": "text"}
"""Old spellings accepted for one release: ``plan --format table`` is ``--format text``."""

SDK_LOGGERS = ("credentials", "alibabacloud_credentials", "alibabacloud_tea", "alibabacloud_tea_openapi", "Tea", "oss2",
               "alibabacloud_oss_v2", "aliyunsdkcore", "botocore.credentials")
"""Loggers of the cloud SDKs that print a traceback of their own before raising (the Alibaba credential chain
logs each provider it tried, to the logger named `credentials`, with a handler of its own): silenced while a command runs, the command says what failed in one line."""


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("gpulease")
    except PackageNotFoundError:
        return "unknown (not installed)"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``; did you mean 'plan'?`` for a near miss, else ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_command(word: str, commands: Iterable[str]) -> str:
    names = list(commands)
    return f"{echo(word)} is not a command{did_you_mean(word, names)} (commands: {', '.join(names)})"


ONE_LINE_QUOTE_MAX = 240
"""The longest quoted value a one-line refusal repeats whole: a path the user gave (a CI runner's temporary folder is
often longer than 80 characters) stays whole; a value of thousands of characters is capped. The values a message
quotes on purpose are capped at ``gpulease.core.shown.ECHO_MAX`` where it is written (``echo``)."""


def one_line(message: str, limit: int = ONE_LINE_QUOTE_MAX) -> str:
    """A message of several lines (a spec error lists its problems one per line, as ``- path: what``) as one line
    whose parts stay apart (``; `` between problems, ``. `` before a sentence), each quoted user
    value capped and every control character written out (``gpulease.core.shown.capped_quotes``)."""
    out = ""
    for raw in message.splitlines():
        part = raw.strip().removeprefix("- ").strip()
        if not part:
            continue
        if out:  # a sentence that starts is ended first; a problem after a problem gets "; "
            out += " " if out.endswith((":", ".", ";")) else ". " if part[:1].isupper() else "; "
        out += part
    return capped_quotes(out, limit)



JSON_ASKED = ("--json", "--format=json")


def json_asked(argv: Iterable[str]) -> bool:
    """Whether a command line asks for JSON (``--json``, ``--format json``, ``--format=json``)."""
    words = list(argv)
    return any(w in JSON_ASKED or (w == "--format" and words[i + 1:i + 2] == ["json"]) for i, w in enumerate(words))


class OneLineParser(argparse.ArgumentParser):
    """A usage mistake is one line too (the usage is one ``--help`` away: the command's own), exit 2; with
    ``--json`` on the command line, also the envelope on stdout. A flag is never taken from its first letters
    (``--e`` is not ``--execute``, ``--a --y`` not ``--all --yes``): a mistyped or shortened flag or subcommand gets
    the nearest one instead (``--lnies``: did you mean '--lines'?)."""

    argv: list[str] | None = None
    """The command line being parsed (set by ``gpulease.cli.main`` on the class, so that the parser of a
    subcommand sees it too): which command a stray flag was given to, and whether JSON was asked for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:
        command = self._command_parser()
        # argparse's own messages repeat the value given (``invalid choice: '...'``): capped as every echo is.
        line = one_line(f"{command.prog}: {capped_quotes(message)}{self._near_miss(message)}; see {command.prog} --help")
        if json_asked(self.argv or []):
            words = command.prog.split()
            report = " ".join(words[1:3]) if len(words) > 1 else "usage"
            sys.stdout.write(json_text(report, None, ok=False, errors=[error_entry(BAD_INPUT, line)]))
        self.exit(EXIT_BAD_INPUT, line + "\n")

    def _command_parser(self) -> argparse.ArgumentParser:
        """The (sub)command the command line names: its flags are the ones a stray flag was meant as."""
        parser: argparse.ArgumentParser = self
        for word in self.argv or []:
            children = next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
            if children is None or word not in children:
                if children is None:
                    break
                continue
            parser = children[word]
        return parser

    def _near_miss(self, message: str) -> str:
        unknown = message.partition("unrecognized arguments: ")[2].split()
        flags = [w.partition("=")[0] for w in unknown if w.startswith("-")]
        if flags:
            options = [o for o in self._command_parser()._option_string_actions if o.startswith("--")]
            return "".join(_flag_hint(flag, options) for flag in flags)
        bad = message.partition("invalid choice: ")[2]
        if bad and "(choose from" in bad:
            word = bad.split(" ", 1)[0].strip("'\"")
            choices = [c.strip("' ,") for c in bad.partition("(choose from")[2].rstrip(")").split(",")]
            return did_you_mean(word, choices)
        return ""


def _flag_hint(flag: str, options: list[str]) -> str:
    """``; --lnies: did you mean '--lines'?``: the one option the flag begins (``--e``: '--execute'), else the
    nearest by their names without the dashes (the shared ``--`` alone makes ``--bogus`` look like ``--org``)."""
    starting = [o for o in options if o.startswith(flag) and len(flag) > 2]
    if len(starting) == 1:
        return f"; {flag}: did you mean {starting[0]!r}?"
    names = {o.lstrip("-"): o for o in options}
    close = difflib.get_close_matches(flag.lstrip("-"), list(names), n=1, cutoff=FLAG_CUTOFF)
    return f"; {flag}: did you mean {names[close[0]]!r}?" if close else ""


FLAG_CUTOFF = 0.6
"""How alike a mistyped flag and an option must be (``difflib`` ratio of their names) to suggest it: ``lnies`` and
``lines`` are 0.8 alike, ``yse`` and ``yes`` 0.67, ``bogus`` and ``org`` 0.5."""


# --- the parser tree ------------------------------------------------------------------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield child
                yield from _subparsers(child)


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return parser._option_string_actions.get(flag)


def _format_type(choices: tuple[str, ...]) -> Any:
    def parse(text: str) -> str:
        value = FORMAT_ALIASES.get(text, text)
        if value not in choices:
            raise argparse.ArgumentTypeError(f"{text!r} is not a format; accepted: {', '.join(choices)}"
                                              + did_you_mean(text, choices))
        return value
    return parse


def apply(parser: argparse.ArgumentParser) -> None:
    """Give every command the shared options and the exit codes in its ``--help``."""
    parser.formatter_class = HelpFormatter
    for p in _subparsers(parser):
        p.formatter_class = HelpFormatter
        if p.epilog is None:
            p.epilog = EXIT_CODES_EPILOG
        if any(isinstance(a, argparse._SubParsersAction) for a in p._actions):
            continue  # a group of commands (``catalog``): its actions carry the options
        fmt, js = _option(p, "--format"), _option(p, "--json")
        if fmt is None and js is not None:
            added = p.add_argument("--format", type=_format_type(FORMATS), default="text", metavar="{text,json}",
                                   help="text (default) or json (the envelope); --json is the same as --format json")
            added.completion_choices = FORMATS  # type: ignore[attr-defined]
        elif fmt is not None:
            choices = tuple(FORMAT_ALIASES.get(c, c) for c in (fmt.choices or FORMATS))
            fmt.choices, fmt.type = None, _format_type(choices)
            fmt.default = FORMAT_ALIASES.get(fmt.default, fmt.default)
            fmt.metavar = "{" + ",".join(choices) + "}"
            fmt.completion_choices = choices  # type: ignore[attr-defined]
            if js is None:
                p.add_argument("--json", action="store_true", help="the same as --format json")
        for a, b in (("--region", "--regions"), ("--regions", "--region")):
            action = _option(p, a)
            if action is not None and _option(p, b) is None and isinstance(action, argparse._AppendAction):
                action.option_strings.append(b)
                p._option_string_actions[b] = action


def normalise(args: argparse.Namespace) -> None:
    """``--json`` and ``--format json`` mean the same: both attributes agree after this."""
    if getattr(args, "json", False):
        args.format = "json"
    if hasattr(args, "json") and getattr(args, "format", None) == "json":
        args.json = True


def completion_words(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Each command path (``""``, ``"plan"``, ``"catalog refresh"``) and the words that may follow it."""
    words: dict[str, list[str]] = {}

    def walk(p: argparse.ArgumentParser, path: str) -> None:
        here: list[str] = []
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    here.append(name)
                    walk(child, f"{path} {name}".strip())
            else:
                here += [s for s in action.option_strings if s.startswith("--")]
                choices = getattr(action, "completion_choices", None) or action.choices
                if action.option_strings and choices and not isinstance(choices, dict):
                    for flag in action.option_strings:
                        words[f"{path} {flag}".strip()] = [str(c) for c in choices]
                elif action.option_strings and action.nargs != 0:  # takes a value: none offered, files
                    for flag in action.option_strings:
                        words[f"{path} {flag}".strip()] = []
        words[path] = sorted(dict.fromkeys(here))

    walk(parser, "")
    return words


# --- JSON -----------------------------------------------------------------------------------------------------------

BAD_INPUT = "bad-input"
"""The error code of a user mistake (exit 2), in every command's envelope."""
PARTIAL = "partial"
ERROR_CODE = re.compile(r"^[a-z]+(-[a-z]+)*$")  # also the JSON schema's pattern: fullmatch here
"""Error codes are kebab-case words (``bad-input``, ``deploy-failed``, ``quota-failed``), one spelling everywhere."""


def check_code(code: str) -> str:
    """``code`` when it is kebab-case; a camelCase spelling is a programming mistake, refused at once."""
    if not ERROR_CODE.fullmatch(code):
        raise ValueError(f"error code {code!r} is not kebab-case (e.g. bad-input)")
    return code


def error_entry(code: str, message: str, file: str | None = None, field: str | None = None) -> dict[str, str]:
    entry = {"code": check_code(code), "message": message}
    if file:
        entry["file"] = file
    if field:
        entry["field"] = field
    return entry


ENVELOPE_KEYS = ("report", "ok", "data", "errors")
ENVELOPE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "gpulease --json envelope",
    "type": "object",
    "required": list(ENVELOPE_KEYS),
    "properties": {
        "report": {"type": "string", "pattern": "^gpulease [a-z]+( [a-z]+)?$"},
        "ok": {"type": "boolean"},
        "data": {},
        "errors": {"type": "array", "items": {
            "type": "object", "required": ["code", "message"], "additionalProperties": False,
            "properties": {"code": {"type": "string", "pattern": ERROR_CODE.pattern},
                           "message": {"type": "string", "minLength": 1},
                           "file": {"type": "string"}, "field": {"type": "string"}}}},
    },
    "if": {"properties": {"ok": {"const": True}}}, "then": {"properties": {"errors": {"maxItems": 0}}},
}
"""The shape every ``--json`` output has (the old top-level keys a command kept for one release aside)."""


SUBCOMMAND_DESTS = ("action", "ephemeral_command")
"""Where a group of commands (``catalog``, ``ephemeral``) keeps the one it runs."""


def command_name(args: argparse.Namespace) -> str:
    """``plan``, ``catalog refresh``, ``ephemeral run``: the command as the envelope's ``report`` names it."""
    words = [getattr(args, "command", None) or "gpulease"]
    words += [str(getattr(args, d)) for d in SUBCOMMAND_DESTS if isinstance(getattr(args, d, None), str)]
    return " ".join(words)


def envelope(command: str, data: Any, *, ok: bool, errors: list[dict[str, str]] | None = None,
             legacy: dict[str, Any] | None = None) -> dict[str, Any]:
    """The one JSON shape. ``legacy``: the command's document as it was before the envelope, whose keys stay at
    the top level too, in their old spelling, for one release (a key the envelope uses is not repeated)."""
    doc = {"report": f"gpulease {command}", "ok": ok, "data": data, "errors": errors or []}
    for key, value in (legacy or {}).items():
        doc.setdefault(key, value)
    return doc


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, default=str) + "\n"


def json_text(command: str, data: Any, *, ok: bool, errors: list[dict[str, str]] | None = None,
              legacy: dict[str, Any] | None = None) -> str:
    return dumps(envelope(command, data, ok=ok, errors=errors, legacy=legacy))


def print_json(command: str, data: Any, *, ok: bool, errors: list[dict[str, str]] | None = None,
               legacy: dict[str, Any] | None = None) -> None:
    sys.stdout.write(json_text(command, data, ok=ok, errors=errors, legacy=legacy))


# --- SDK errors -----------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def quiet_sdk_loggers() -> Iterator[None]:
    loggers = [logging.getLogger(name) for name in SDK_LOGGERS]
    before = [(lg.disabled, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, (disabled, _) in zip(loggers, before, strict=True):
            lg.disabled = disabled


_CREDENTIAL_FIX = {
    "aws": "configure AWS credentials (aws configure, AWS_PROFILE or --profile, or the AWS_ACCESS_KEY_ID/"
           "AWS_SECRET_ACCESS_KEY environment variables)",
    "alicloud": "configure Alibaba Cloud credentials (aliyun configure, ALIBABA_CLOUD_ACCESS_KEY_ID/"
                "ALIBABA_CLOUD_ACCESS_KEY_SECRET, or --profile)",
}


def sdk_input_problem(exc: BaseException) -> str | None:
    """One line for an SDK error that is the user's to fix before any call (no credentials, a value the SDK's
    own validation refuses), or None for anything else. The SDK modules are only looked up, never imported."""
    botocore = sys.modules.get("botocore.exceptions")
    if botocore is not None:
        if isinstance(exc, botocore.NoCredentialsError | botocore.PartialCredentialsError
                      | botocore.CredentialRetrievalError):
            return f"no usable AWS credentials ({exc}); {_CREDENTIAL_FIX['aws']}"
        if isinstance(exc, botocore.ProfileNotFound):
            return f"{exc}; accepted: a profile of ~/.aws/config, or none for the default chain"
        if isinstance(exc, botocore.NoRegionError):
            return f"{exc}; accepted: --region or AWS_DEFAULT_REGION"
        if isinstance(exc, botocore.ParamValidationError):
            detail = " ".join(str(exc).split())
            return f"a value the AWS API refuses before any call: {detail}"
    alicred = sys.modules.get("alibabacloud_credentials.exceptions")
    if alicred is not None and isinstance(exc, alicred.CredentialException):
        return f"no usable Alibaba Cloud credentials ({' '.join(str(exc).split())}); {_CREDENTIAL_FIX['alicloud']}"
    return None
