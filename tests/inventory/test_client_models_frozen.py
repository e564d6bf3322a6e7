"""The command line's AWS clients are created with the collector paused and what they loaded frozen
(``AwsClients.freeze_models``): their service models, classes and hooks are left out of every collection the
listing's allocations start, which was about half of a ten-region listing's CPU time (bench/README.md)."""

from __future__ import annotations

import argparse
import gc
from collections.abc import Iterator

import pytest

from gpulease.inventory import options
from gpulease.inventory.aws import AwsClients


class RecordingSession:
    """Stands in for ``boto3.Session``: records whether the collector ran while each client was built."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.collector_on: list[bool] = []

    def client(self, service: str, **kwargs: object) -> object:
        self.collector_on.append(gc.isenabled())
        if self.fail:
            raise ValueError("no such service")
        return object()


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Each test starts and ends with nothing frozen and the collector on, as the rest of the suite expects."""
    gc.unfreeze()
    assert gc.isenabled()
    yield
    gc.unfreeze()
    gc.enable()


def test_a_command_line_client_is_built_with_the_collector_paused_then_frozen(unfrozen: None) -> None:
    session = RecordingSession()
    clients = AwsClients(session=session, freeze_models=True)
    ec2 = clients.ec2("us-east-1")
    assert session.collector_on == [False]
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0
    frozen = gc.get_freeze_count()
    # One client per service and region, built once: asking again builds nothing and freezes nothing more (frozen
    # objects are still freed by reference counting, so the count may fall).
    assert clients.ec2("us-east-1") is ec2
    assert session.collector_on == [False]
    assert gc.get_freeze_count() <= frozen
    clients.ec2("us-west-2")
    assert session.collector_on == [False, False]


def test_without_freeze_models_nothing_is_frozen(unfrozen: None) -> None:
    session = RecordingSession()
    AwsClients(session=session).ec2("us-east-1")
    assert session.collector_on == [True]
    assert gc.get_freeze_count() == 0


def test_a_client_that_cannot_be_built_leaves_the_collector_on(unfrozen: None) -> None:
    clients = AwsClients(session=RecordingSession(fail=True), freeze_models=True)
    with pytest.raises(ValueError):
        clients.ec2("us-east-1")
    assert gc.isenabled()


def test_a_collector_already_off_stays_off(unfrozen: None) -> None:
    gc.disable()
    AwsClients(session=RecordingSession(), freeze_models=True).ec2("us-east-1")
    assert not gc.isenabled()


def test_the_command_lines_clients_freeze_their_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    args = argparse.Namespace(cloud="aws", profile=None, retry_mode="standard", max_attempts=3, connect_timeout=5.0,
                              read_timeout=10.0, workers=0)
    monkeypatch.setattr(options, "check_common", lambda _args: None)
    clients = options.clients_from_args(args)
    assert isinstance(clients, AwsClients) and clients.freeze_models
