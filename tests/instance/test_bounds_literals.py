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


def _number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def literal_bounds(source: str) -> list[str]:
    """Each timeout written as a number in ``source``, as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            found += [f"{node.lineno}: {name}({kw.arg}={kw.value.value})" for kw in node.keywords  # type: ignore[attr-defined]
                      if kw.arg and "timeout" in kw.arg and _number(kw.value)]
            at = BOUND_ARGUMENT.get(name)
            if at is not None and len(node.args) > at and _number(node.args[at]):
                found.append(f"{node.lineno}: {name}(... {node.args[at].value})")  # type: ignore[attr-defined]
            for before, after in zip(node.args, node.args[1:], strict=False):
                if isinstance(before, ast.Constant) and isinstance(before.value, str) and re.search(
                        r"timeout|deadline", before.value) and _number(after):
                    found.append(f"{node.lineno}: {name}({before.value!r}, {after.value})")  # type: ignore[attr-defined]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True))
            pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
            found += [f"{node.lineno}: def {node.name}({arg.arg}={d.value})" for arg, d in pairs  # type: ignore[attr-defined]
                      if "timeout" in arg.arg and _number(d)]
    return sorted(found, key=lambda f: int(f.split(":", 1)[0]))


def test_the_scan_sees_each_form_of_a_literal_bound() -> None:
    source = ("run(['mkfs'], timeout=1800)\nrun(['udevadm'], 60)\nca.run_bounded(argv, self.clock.real(15))\n"
              "def f(timeout: float = 30): pass\n_number(s, 'staging_read_timeout_seconds', 60)\n"
              "run(['ok'], timeout=bounds.value('mkfs'))\n")
    assert literal_bounds(source) == ["1: run(timeout=1800)", "2: run(... 60)", "3: real(... 15)",
                                      "4: def f(timeout=30)", "5: _number('staging_read_timeout_seconds', 60)"]


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
