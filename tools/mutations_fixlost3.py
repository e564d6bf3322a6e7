"""``make mutate`` rows for the composed bounds counted from the bootstrap's code, the redaction's forms and the
final log copy's bound: each edit removes one check, and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

MUTATIONS: list[Mutation] = [
    Mutation("fixlost3", "instance/bounds.py", '        40260, "gpulease-bootstrap.service', '        39000, "gpulease-bootstrap.service',
             ("tests/instance/test_bounds.py",), "the bootstrap unit covers what runs inside it, counted"),
    Mutation("fixlost3", "instance/bounds.py", '("setup_command", 8), ', '("setup_command", 7), ',
             ("tests/instance/test_bounds.py",), "every bootstrap command without a bound of its own is counted"),
    Mutation("fixlost3", "instance/instance_setup.py", '    probe = run(["blkid", "-p", "-o", "export", device])\n    blkid_rc',
             '    run(["sync"])\n    probe = run(["blkid", "-p", "-o", "export", device])\n    blkid_rc',
             ("tests/instance/test_bounds.py",), "a command added to the bootstrap is one the unit must count"),
    Mutation("fixlost3", "instance/manifest.py", "    text = redact_pem(text)  # a key block may cross a block's end\n", "",
             ("tests/instance/test_manifest.py",), "a private key block crossing redact_lines' blocks goes whole"),
    Mutation("fixlost3", "instance/manifest.py", '(?:[^/\\s?#@:]{0,256}:[^\\s?#]{0,256}@|', '(?:',
             ("tests/instance/test_manifest.py",), "userinfo with a / goes up to the last @"),
    Mutation("fixlost3", "instance/manifest.py", '|(?<![a-z0-9])pass\\b|', '|',
             ("tests/instance/test_manifest.py",), "a bare pass key is secret-named"),
    Mutation("fixlost3", "instance/manifest.py", '(?P<sep>""" + _ANSI + r"""', '(?P<sep>""" + r"""',
             ("tests/instance/test_manifest.py",), "a colour code between a key and its = does not hide it"),
    Mutation("fixlost3", "instance/log_upload.py", "                    tried.add(name)  # nor starts another", "                    pass  # nor starts another",
             ("tests/instance/test_log_upload.py",), "the final copy never restarts a redaction it gave up on"),
    Mutation("fixlost3", "gpulease/core/flag_numbers.py", 'else f"from {_figure(low)} to {_figure(high)}")', 'else "")',
             ("tests/cli/test_numeric_flags.py", "tests/inventory/test_reap_cli_errors.py"),
             "a numeric flag's refusal names its range"),
]
