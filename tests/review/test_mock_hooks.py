"""Resource hooks under the review's mocks: registered by name, bound names captured, no callback server started."""

from __future__ import annotations

from pulumi.runtime import _callbacks

from tests.support.specs import experiment, render_experiment


def test_a_render_with_a_delete_hook_starts_no_callback_server() -> None:
    before = len(_callbacks._CallbackServicer._servicers)
    r = render_experiment(experiment())
    assert r.error is None, r.error
    assert r.hooks == ["gpulease-cancel-spot-request"]
    assert r.one("aws:ec2/instance:Instance").hooks == {"before_delete": ["gpulease-cancel-spot-request"]}
    # The SDK would serve the hook over gRPC on 127.0.0.1 for every render; nothing calls it under mocks.
    assert len(_callbacks._CallbackServicer._servicers) == before
