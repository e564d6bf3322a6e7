"""The ready record the instance writes is the key the bake gate lists (``components.image_bake.ready_folder``):
the instance reads its destination from the settings the program renders, outside the expiring checkpoint prefix."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from components.image_bake import ready_folder
from components.spec.experiment import ExperimentSpec
from components.userdata.workflow import workflow_settings
from instance import instance_setup as setup
from tests.support.specs import experiment


@pytest.mark.parametrize("cloud,uri", [("aws", "s3://bkt/team/llama/"), ("alicloud", "oss://bkt/team/llama/")])
def test_the_instance_writes_the_record_the_gate_lists(monkeypatch, cloud: str, uri: str) -> None:
    fields = workflow_settings(ExperimentSpec.model_validate(experiment()), cloud, uri)
    calls: list[tuple[list[str], dict[str, str]]] = []

    def storage_run(settings: dict[str, Any], template: list[str], values: dict[str, str], timeout: float):
        calls.append((template, values))
        return subprocess.CompletedProcess(template, 0, "", "")

    monkeypatch.setattr(setup, "storage_run", storage_run)
    setup.publish_ready_record({"checkpoint_uri": uri, **fields}, "/state/ready.json", "i-0abc")
    (template, values), = calls
    written = next(part for part in template if "{instance}" in part).format(**values)
    scheme = uri.split("://")[0]
    assert written == f"{scheme}://bkt/{ready_folder('team/llama/')}i-0abc.json"
    assert not written.startswith(uri)  # never under the checkpoint prefix the lifecycle expires
