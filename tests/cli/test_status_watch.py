"""``gpulease status --watch --json``: one envelope per refresh (``conventions.ENVELOPE_SCHEMA``), each on its own
line (JSON lines), so a reader takes each line as one whole status."""

from __future__ import annotations

import json

import jsonschema

from gpulease.cli import conventions
from gpulease.cli import status as status_cli
from gpulease.cli.main import main
from tests.live.test_nodes import CLUSTER


def test_each_refresh_is_one_envelope_on_one_line(cluster, capsys, monkeypatch):
    naps: list[float] = []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(status_cli, "SLEEP", nap)
    assert main(["status", CLUSTER, "--outputs", cluster["outputs"], "--watch", "10", "--json"]) == 130  # Ctrl-C
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    for line in lines:
        doc = json.loads(line)
        jsonschema.validate(doc, conventions.ENVELOPE_SCHEMA)
        assert (doc["report"], doc["ok"], doc["errors"]) == ("gpulease status", True, [])
        assert [n["rank"] for n in doc["data"]["nodes"]] == [0, 1, 2, 3]
        assert doc["nodes"] == doc["data"]["nodes"]  # the old top-level keys, for one release
