"""A component library a team installs from a package index under a ``pulumi_<name>`` distribution name (the
usual naming of Pulumi component packages) is not a provider SDK: the ``Output.apply`` callbacks its functions make
and apply in their own module are its code, and one that registers a GPU instance for the value the output takes at
``pulumi up`` may register. The review must make such a program partial (exit 3) exactly as it does for the same
library installed under any other name, rather than read only what the callback closes over."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpulease.review import sdk_outputs
from gpulease.review.engine import review
from tests.review.test_skipped_applies_offline import GPU
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

LIBRARY = ("import pulumi, pulumi_aws as aws\n"
           "MD = {'http_tokens': 'required'}\n"
           "def gpu_workers(count, tags):\n"
           "    # one training node per requested worker, sized at deploy time from the infra stack's output\n"
           "    def make(n):\n"
           "        return [" + GPU.replace("'gpu'", "f'gpu-{i}'") + " for i in range(int(n))]\n"
           "    return count.apply(make)\n")


def _installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str) -> None:
    site = tmp_path / "site-packages"
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(sdk_outputs, "_PACKAGE_DIRS", (*sdk_outputs._PACKAGE_DIRS, str(site) + "/"))
    monkeypatch.setattr(sdk_outputs, "_SDK_FILES", {})
    from gpulease.review import invoke_sites
    monkeypatch.setattr(invoke_sites, "_LIBRARIES", (*invoke_sites._LIBRARIES, str(site) + "/"))
    monkeypatch.setattr(invoke_sites, "_PROGRAM_FILES", {})
    monkeypatch.delitem(sys.modules, package, raising=False)


def test_a_pulumi_named_component_library_registering_gpus_in_its_apply_is_partial(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(tmp_path, monkeypatch, "pulumi_acme_gpu")
    body = HEAD + "import pulumi_acme_gpu\naws.ec2.SecurityGroup('sg', tags=tags)\npulumi_acme_gpu.gpu_workers(U, tags)\n"
    [r] = review([str(_write(tmp_path, "acme", body))], now=FIXED_NOW)
    assert r.exit_code == 3 and "an apply on a value unknown offline was not run" in (r.rendering.error or ""), \
        (r.exit_code, r.status, r.rendering.error)

