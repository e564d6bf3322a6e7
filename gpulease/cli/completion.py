"""``gpulease completion bash|zsh``: a shell completion script generated from the command line parser itself (every
command, option and fixed choice), so it never lags behind the commands; a STACK argument completes to the stack
names a bare name finds (``gpulease completion stacks`` lists them when the shell asks, so a stack written since is
there too); ``--region`` completes to the kit's own region names (``components/<cloud>/spec.py``) of the cloud a
``--cloud`` on the line names, else of both clouds; after ``init`` and ``size``, which price instance types, to the
regions the price catalog prices only (``PRICED_REGION_COMMANDS``).

    eval "$(gpulease completion bash)"       # in ~/.bashrc
    eval "$(gpulease completion zsh)"        # in ~/.zshrc (uses bashcompinit)
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys

DESCRIPTION = ("Print a shell completion script for bash or zsh, built from the commands. Load it with "
               "eval \"$(gpulease completion bash)\" in ~/.bashrc or eval \"$(gpulease completion zsh)\" in ~/.zshrc.")
SHELLS = ("bash", "zsh")
STACKS = "stacks"
STACK_ARGUMENTS = ("stack", "stacks")
"""The positional arguments that name a stack file (up's ``stack``, plan's ``stacks``): completed with stack names;
an argument that names something else under that name says so (``completion_stacks = False``)."""

PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")
"""A stack name completion offers: Pulumi's stack name characters (letters, digits, ``-``, ``_``, ``.``). A file
named otherwise (``Pulumi.$(touch x).yaml``) is never offered: a shell would take its name for code."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash or zsh) built from the commands",
                       description=DESCRIPTION)
    p.add_argument("shell", choices=(*SHELLS, STACKS),
                   help="bash or zsh: the script; stacks: the stack names a STACK argument completes to, one a line")
    p.set_defaults(func=run)


def stack_paths(parser: argparse.ArgumentParser, path: str = "") -> list[str]:
    """The command paths (``up``, ``plan``) whose positional argument is a stack."""
    found: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += stack_paths(child, f"{path} {name}".strip())
        elif (not action.option_strings and action.dest in STACK_ARGUMENTS
              and getattr(action, "completion_stacks", True)):
            found.append(path)
    return found


REGION_FLAGS = ("--region", "--regions")
CLOUD_FLAG = "--cloud"


PRICED_REGION_COMMANDS = ("init", "size")
"""Commands that accept only the regions the price catalog prices (``gpulease init`` picks an instance type there,
``gpulease size`` prices the types that fit): their ``--region`` completes to those, not every region the spec
knows, so TAB never offers a region the command refuses."""


def region_cases(regions: dict[str, tuple[str, ...]], priced: dict[str, tuple[str, ...]] | None = None) -> str:
    """The shell ``case`` arms on ``$regions:$cloud`` that pick the region words: the priced ones after an option of
    ``PRICED_REGION_COMMANDS`` (``priced:``), else the spec's, of the cloud found on the line (any other: all)."""
    arms = []
    for kind, table in (("priced", priced or {}), ("1", regions)):
        if not table:
            continue
        every = sorted({r for names in table.values() for r in names})
        arms += [f"            {kind}:{shlex.quote(cloud)}) words={shlex.quote(' '.join(names))} ;;"
                 for cloud, names in sorted(table.items())]
        arms.append(f"            {kind}:*) words={shlex.quote(' '.join(every))} ;;")
    return "\n".join(arms)


def _is_option(path: str) -> bool:
    """Whether a completion key (``logs -n``, ``plan --format``) ends in an option rather than a command."""
    return path.rpartition(" ")[2].startswith("-")


def script(words: dict[str, list[str]], shell: str, stack_commands: list[str] | None = None,
           regions: dict[str, tuple[str, ...]] | None = None,
           priced: dict[str, tuple[str, ...]] | None = None) -> str:
    """The script: the command path typed so far (``catalog refresh``) picks the words; after an option with fixed
    choices (``--format``), those choices; after ``--region`` (with ``regions``, cloud to names), region names (those of
    ``priced`` after a command of ``PRICED_REGION_COMMANDS``)."""
    regions = regions or {}
    # Every word starting with ``-`` is an option (``-n``, ``--region``), never a command path: its key names the
    # option's value (the words after it), and the walk below steps over it and over the value it takes.
    paths = sorted(p for p in words if p and not _is_option(p))
    known = "|".join(shlex.quote(p) for p in paths)
    valued = "|".join(shlex.quote(p) for p in sorted(words) if _is_option(p)) or "''"
    cases = "\n".join(f"        {shlex.quote(p)}) words={shlex.quote(' '.join(words[p]))} ;;" for p in paths)
    def after(p: str, c: list[str]) -> str:
        if regions and not c and p.rpartition(" ")[2] in REGION_FLAGS:
            kind = "priced" if priced and p.split(" ", 1)[0] in PRICED_REGION_COMMANDS else "1"
            return f"        {shlex.quote(p)}) regions={kind}; stacks=\"\"; files=\"\" ;;"
        return f"        {shlex.quote(p)}) words={shlex.quote(' '.join(c))}; stacks=\"\"; files={'' if c else 1} ;;"

    choices = "\n".join(after(p, c) for p, c in sorted(words.items()) if _is_option(p))
    head = "autoload -U +X bashcompinit && bashcompinit\n" if shell == "zsh" else ""
    taking = "|".join(shlex.quote(p) for p in sorted(stack_commands or [])) or "''"
    # No variable of the function is named ``path``: zsh ties ``path`` to ``PATH``, so a local ``path`` would hide
    # every command (``gpulease completion stacks`` among them) from the function.
    return f"""{head}# gpulease shell completion (generated by `gpulease completion {shell}`)
_gpulease() {{
    local cur prev typed="" next w i words name stacks="" files="" regions="" cloud="" ended=""
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    # bash splits --region=us- at '=' (COMP_WORDBREAKS): the option is the word before the '='
    if [[ "$cur" == = ]]; then cur=""
    elif [[ "$prev" == = && COMP_CWORD -ge 2 ]]; then prev="${{COMP_WORDS[COMP_CWORD-2]}}"; fi
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${{COMP_WORDS[i]}}"
        # ``--`` ends the options: every word after it is an argument (``down -- -ab``), never an option or command
        if [[ "$w" == -- ]]; then ended=1; break; fi
        if [[ "$w" == -* ]]; then  # an option: its value (--region us, -n 5, --region = us) is no command either
            case "${{typed:+$typed }}$w" in {valued}) ((i++)); [[ "${{COMP_WORDS[i]}}" == = ]] && ((i++)) ;; esac
            continue
        fi
        next="${{typed:+$typed }}$w"
        case "$next" in {known}) typed="$next" ;; esac
    done
    words={shlex.quote(' '.join(words.get('', [])))}
    case "$typed" in
{cases}
    esac
    [[ -n "$ended" ]] && words=""
    case "$typed" in
        {taking}) [[ -z "$ended" && "$cur" == -* ]] || stacks=1 ;;
    esac
    [[ -n "$ended" ]] || case "${{typed:+$typed }}$prev" in
{choices}
    esac
    if [[ -n "$regions" ]]; then  # the cloud a --cloud on the line names (--cloud aws, --cloud=aws), else both
        for ((i = 2; i < COMP_CWORD; i++)); do
            w="${{COMP_WORDS[i]}}"
            [[ "${{COMP_WORDS[i-1]}}" == {CLOUD_FLAG} && "$w" != = ]] && cloud="$w"
            [[ "${{COMP_WORDS[i-1]}}" == = && "${{COMP_WORDS[i-2]}}" == {CLOUD_FLAG} ]] && cloud="$w"
            [[ "$w" == {CLOUD_FLAG}=?* ]] && cloud="${{w#{CLOUD_FLAG}=}}"
        done
        cloud="$(printf '%s' "$cloud" | tr -d "\\"'")"  # --cloud "aws": the word as typed keeps its quotes
        case "$regions:$cloud" in
{region_cases(regions, priced)}
        esac
    fi
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
    # --regions us-east-1,us-w: the last comma part completes, the parts before it kept
    [[ -n "$regions" && "$cur" == *,* ]] && COMPREPLY=($(compgen -P "${{cur%,*}}," -W "$words" -- "${{cur##*,}}"))
    # An option that takes a value (--config, --output, --catalog) is followed by a value, never an option.
    [[ -n "$files" ]] && COMPREPLY=($(compgen -f -- "$cur"))
    # Stack names never pass through compgen -W or word splitting (either would expand a $(...) in a file name):
    # one a line, compared as text.
    if [[ -n "$stacks" ]]; then
        while IFS= read -r name; do
            [[ "$name" == "$cur"* ]] && COMPREPLY+=("$name")
        done < <(if command -v timeout >/dev/null 2>&1; then command timeout 2 gpulease completion {STACKS}
                 else command gpulease completion {STACKS}; fi 2>/dev/null)
    fi
}}
complete -o default -F _gpulease gpulease
"""


def run(args: argparse.Namespace) -> int:
    if args.shell == STACKS:
        from gpulease.core.errors import UserError
        from gpulease.review import stacks

        try:
            names = stacks.known_names()
            here = stacks.enclosing_project()
            if (here is not None and here.resolve() != stacks.PROJECT_ROOT.resolve()
                    and stacks.kit_project_here() is None):
                names = []  # a Pulumi project whose program is not the kit's: a bare kit stack name is refused here
        except UserError:  # a folder the lookup cannot read: nothing to offer, never an error in the shell
            names = []
        sys.stdout.write("".join(f"{name}\n" for name in names if PLAIN_NAME.match(name)))
        return 0
    from components.spec.clouds import SPEC_RULES
    from gpulease.cli.conventions import completion_words
    from gpulease.cli.main import build_parser

    parser = build_parser()
    regions = {name: tuple(rules.regions) for name, rules in SPEC_RULES.items()}
    priced = _priced_regions(tuple(regions))
    sys.stdout.write(script(completion_words(parser), args.shell, stack_paths(parser), regions, priced))
    return 0


def _priced_regions(clouds: tuple[str, ...]) -> dict[str, tuple[str, ...]] | None:
    """The regions the price catalog prices, per cloud (what ``init --region`` accepts); None when the catalog
    cannot be read (``init`` then refuses every region, and completion offers the spec's)."""
    from gpulease.core.catalog import load_catalog
    from gpulease.core.errors import UserError

    try:
        catalog = load_catalog()
    except UserError:
        return None
    return {cloud: tuple(catalog.regions_of(cloud)) for cloud in clouds}
