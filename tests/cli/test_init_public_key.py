"""``init --public-key`` naming something that is not a regular file says what it is (never opened: a FIFO would
block, /dev/zero never ends), one line, exit 2, nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpulease.cli.main import main
from tests.cli.test_init import _flags, reviewed  # noqa: F401  (the fixture)


@pytest.mark.parametrize(("make", "what"), [
    (lambda tmp: Path(os.devnull), "a device"),
    (lambda tmp: tmp, "a folder"),
    (lambda tmp: (os.mkfifo(tmp / "key.pub"), tmp / "key.pub")[1], "a named pipe (FIFO)"),
    (lambda tmp: ((tmp / "link.pub").symlink_to("/dev/zero"), tmp / "link.pub")[1], "a device"),
])
def test_a_public_key_that_is_not_a_regular_file_is_named_for_what_it_is(tmp_path, reviewed, capsys,  # noqa: F811
                                                                         make, what) -> None:
    key = make(tmp_path)
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    assert main(_flags(out, key)) == 2
    assert capsys.readouterr().err == (f"gpulease: --public-key {key}: is {what}, not a regular file; accepted: an "
                                       "OpenSSH .pub file, e.g. ~/.ssh/id_ed25519.pub (or --key-name, or --no-port)\n")
    assert not out.exists()
