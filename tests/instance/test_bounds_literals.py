"""Every bounded call on the instance takes its bound from the one table (instance/bounds.py): a scan of
instance/*.py for timeouts written as numbers (a ``timeout=`` keyword, the bound argument of the run helpers, a
``timeout`` parameter's default, a ``*_timeout_*`` setting's fallback), and of the bootstrap's unit texts and fstab
line for seconds written into them. ``fetch_tools.py`` runs before the table is on the instance: its numbers are
checked against the table's rows instead."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from components.userdata import cloudinit
from instance import bounds, instance_setup

INSTANCE = Path(instance_setup.__file__).parent
USERDATA = Path(cloudinit.__file__).parent
BOUND_ARGUMENT = {"run": 1, "run_bounded": 1, "run_bounded_split": 1, "storage_run": 3, "http_request": 3, "real": 0,
                  "sync_once": 1, "publish": 3, "_as_user": 3, "_run": 1, "_open": 1}
"""The helpers that take a bound, and the position of the bound among their arguments."""
STANDALONE = {"fetch_tools.py": {"tools_read": 10, "tools_download": 60}}
"""Files that run before the table exists on the instance, with the rows their literals must equal."""


WAITS = {"wait": 0, "join": 0, "sleep": 0, "settimeout": 0, "create_connection": 1}
"""Methods whose argument at this position is a bound (a ``str.join`` or ``os.path.join`` is not)."""
BOUND_NAME = re.compile(r"(_SECONDS|_TIMEOUT\w*|_ATTEMPTS)$")
"""Module constants whose value is a bound or a count of tries: taken from the table, never written."""
SHELL_BOUND = re.compile(r"\btimeout(?:\s+--?[\w-]+(?:[= ]\d+\w*)?)*\s+\d+|Lock::Timeout=\d+|Timeout\w*Sec=\d+|--wait\s+\d+")
"""Seconds written into a command line or a unit text: ``timeout 30 cmd``, ``-o DPkg::Lock::Timeout=300``."""


def _number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _numbers(expr: ast.AST) -> list[str]:
    """The numbers written in a bound's expression, arithmetic included (``min(10, x)``, ``t + 1.0``), other than 0
    and the floors of a ``max()`` (``max(0.1, end - now)`` keeps a wait from being negative, it bounds nothing)."""
    floors = {id(a) for n in ast.walk(expr) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "max"
              for a in n.args if _number(a)}
    return [ast.unparse(n) for n in ast.walk(expr) if _number(n) and n.value != 0  # type: ignore[attr-defined]
            and id(n) not in floors]


def _is_numeric_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"\s*[\d.]+\s*",
                                                                                         node.value) is not None


def _constants(tree: ast.Module) -> list[str]:
    found = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        value = getattr(node, "value", None)
        for target in targets:
            if isinstance(target, ast.Name) and BOUND_NAME.search(target.id) and value is not None and (
                    _numbers(value) or _is_numeric_text(value)):
                found.append(f"{node.lineno}: {target.id} = {ast.unparse(value)}")
    return found


def _calls(node: ast.Call) -> list[str]:
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    found = [f"{node.lineno}: {name}({kw.arg}={ast.unparse(kw.value)})" for kw in node.keywords
             if kw.arg and "timeout" in kw.arg and _numbers(kw.value)]
    at = BOUND_ARGUMENT.get(name)
    if at is None and isinstance(f, ast.Attribute) and not isinstance(f.value, ast.Constant) and not (
            isinstance(f.value, ast.Attribute) and f.value.attr == "path"):
        at = WAITS.get(name)
    if at is not None and len(node.args) > at and _numbers(node.args[at]):
        found.append(f"{node.lineno}: {name}(... {ast.unparse(node.args[at])})")
    for before, after in zip(node.args, node.args[1:], strict=False):
        if isinstance(before, ast.Constant) and isinstance(before.value, str) and re.search(
                r"timeout|deadline", before.value) and _number(after):
            found.append(f"{node.lineno}: {name}({before.value!r}, {after.value})")  # type: ignore[attr-defined]
    return found


def literal_bounds(source: str) -> list[str]:
    """Each timeout written as a number in ``source``, as ``line: what``: a ``timeout=`` keyword, the bound
    argument of the run helpers, a ``wait``/``join``/``sleep``/``settimeout`` argument (arithmetic included), a
    ``timeout`` parameter's default, a ``*_timeout_*`` setting's fallback, a module constant named ``*_SECONDS``,
    ``*_TIMEOUT*`` or ``*_ATTEMPTS`` that is not taken from the table, and seconds in a command's or unit's text."""
    tree = ast.parse(source)
    found = _constants(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found += _calls(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [f"{node.lineno}: {m.group(0)!r}" for m in SHELL_BOUND.finditer(node.value)]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True))
            pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
            found += [f"{node.lineno}: def {node.name}({arg.arg}={ast.unparse(d)})" for arg, d in pairs
                      if "timeout" in arg.arg and _numbers(d)]
    return sorted(set(found), key=lambda f: (int(f.split(":", 1)[0]), f))


def test_the_scan_sees_each_form_of_a_literal_bound() -> None:
    source = ("run(['mkfs'], timeout=1800)\nrun(['udevadm'], 60)\nca.run_bounded(argv, self.clock.real(15))\n"
              "def f(timeout: float = 30): pass\n_number(s, 'staging_read_timeout_seconds', 60)\n"
              "run(['ok'], timeout=bounds.value('mkfs'))\n")
    assert literal_bounds(source) == ["1: run(timeout=1800)", "2: run(... 60)", "3: real(... 15)",
                                      "3: run_bounded(... self.clock.real(15))",
                                      "4: def f(timeout=30)", "5: _number('staging_read_timeout_seconds', 60)"]


def test_the_scan_sees_arithmetic_positional_waits_constants_and_shell_text() -> None:
    source = ("p.wait(timeout=min(10, self.s['kill_grace_seconds']))\nPEER_WAIT_SECONDS = 300.0\n"
              "NOTICE_CONNECT_SECONDS: float = 2.0\nNOTICE_ATTEMPTS = 3\nAPT_LOCK_TIMEOUT = '300'\n"
              "t.join(max(0.0, end - now) + 1.0)\ntime.sleep(2)\nconn.settimeout(5)\n"
              "ARGV = ['apt-get', '-o', 'DPkg::Lock::Timeout=300']\nCMD = 'timeout -k 5 30 nvidia-smi'\n"
              "def broadcast(attempts: int = 3, timeout: float = 2.0): pass\n"
              "x = ', '.join(['a', 'b'])\nos.path.join('a', 'b')\nt.join(max(0.0, end - now))\n"
              "LIMIT_SECONDS = bounds.value('peer_wait')\ncond.wait(min(left, bounds.value('staging_poll')))\n")
    assert literal_bounds(source) == [
        "1: wait(timeout=min(10, self.s['kill_grace_seconds']))", "2: PEER_WAIT_SECONDS = 300.0",
        "3: NOTICE_CONNECT_SECONDS = 2.0", "4: NOTICE_ATTEMPTS = 3", "5: APT_LOCK_TIMEOUT = '300'",
        "6: join(... max(0.0, end - now) + 1.0)", "7: sleep(... 2)", "8: settimeout(... 5)",
        "9: 'Lock::Timeout=300'", "10: 'timeout -k 5 30'", "11: def broadcast(timeout=2.0)"]


def test_the_known_slips_take_their_bounds_from_the_table() -> None:
    from instance import cluster
    assert (cluster.PEER_WAIT_SECONDS, cluster.NOTICE_CONNECT_SECONDS, cluster.NOTICE_ATTEMPTS) == (
        bounds.value("peer_wait"), bounds.value("notice_connect"), bounds.NOTICE_ATTEMPTS) == (300, 2, 3)
    assert instance_setup.APT_LOCK_TIMEOUT == "300" == str(int(bounds.value("apt_lock")))
    assert instance_setup.APT_OPTIONS[-1] == "DPkg::Lock::Timeout=300"
    assert bounds.value("job_stop_wait") == 10


@pytest.mark.parametrize("path", sorted(p.name for p in INSTANCE.glob("*.py") if p.name not in ("bounds.py",
                                                                                                 *STANDALONE)))
def test_no_bound_on_the_instance_is_written_as_a_number(path: str) -> None:
    assert literal_bounds((INSTANCE / path).read_text()) == []


def test_the_standalone_fetcher_waits_what_the_table_says() -> None:
    found = literal_bounds((INSTANCE / "fetch_tools.py").read_text())
    values = sorted({float(re.findall(r"[\d.]+\)?$", f)[0].rstrip(")")) for f in found})
    for name, seconds in STANDALONE["fetch_tools.py"].items():
        assert bounds.value(name) == seconds
    assert values == sorted(float(v) for v in set(STANDALONE["fetch_tools.py"].values()))


def test_the_unit_texts_and_the_fstab_line_take_their_seconds_from_the_table() -> None:
    source = "\n".join(p.read_text() for p in sorted(USERDATA.glob("*.py")))
    written = re.findall(r"(Timeout\w*Sec=\d+|--wait \d+|_fetch_line\(\d+\))", source)
    assert written == []
    assert [f"{p.name}: {m.group(0)}" for p in sorted(USERDATA.glob("*.py"))
            for m in SHELL_BOUND.finditer(p.read_text())] == []
    assert "device-timeout=30s" not in (INSTANCE / "instance_setup.py").read_text()
    line = instance_setup.fstab_entry("1234", "/data", "ext4")
    assert "defaults,nofail,x-systemd.device-timeout=30s 0 2" in line and bounds.value("fstab_device_timeout") == 30


def test_the_bootstrap_unit_covers_the_cli_install_the_secret_read_and_a_probe_per_python() -> None:
    base = bounds.value("bootstrap_unit", {"torch_pythons": []})
    assert bounds.value("bootstrap_unit", {"torch_pythons": ["a", "b", "c", "d"]}) == base + 4 * 300
    assert bounds.value("torch_probes") == 3 * 300 == len(instance_setup.DEFAULTS["torch_pythons"]) * 300
    inner = bounds.TABLE["bootstrap_unit"].inner
    assert {"cli_install", "secret_read", "nvidia_smi_setup", "torch_probes"} <= set(inner)
    assert bounds.value("cli_install") == 900 and bounds.value("secret_read") == 120


def test_the_rendered_scripts_and_units_wait_what_the_table_says() -> None:
    from components.userdata import decode_user_data
    from tests.support.specs import experiment, render_experiment

    r = render_experiment(experiment(verify={"command": "python t.py", "maxMinutes": 45},
                                     job={"command": "python train.py"}))
    assert r.error is None, r.error
    text = decode_user_data(r.one("aws:ec2/instance:Instance").inputs["userDataBase64"])
    written = [int(re.findall(r"\d+", m.group(0))[-1]) for m in SHELL_BOUND.finditer(text)]
    table = {bounds.systemd_seconds(name, {"verify": {"max_minutes": 45}}) for name in bounds.TABLE}
    assert written and [w for w in written if w not in table] == []
