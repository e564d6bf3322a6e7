"""The listing's clients read EC2's timestamps (``...T02:37:08.000Z``) with the standard library, to the same
instants botocore's own parser gives, and leave every other form to botocore's parser."""

from __future__ import annotations

from datetime import datetime

import dateutil.parser
import pytest
from botocore.utils import parse_timestamp

from gpulease.inventory.aws import timestamp
from gpulease.inventory.collect import collect_region
from tests.support.inventory import REGION, launch, tags

FORMS = ["2026-12-02T02:37:08.000Z", "2026-12-02T02:37:08Z", "2026-12-02T02:37:08.123456Z",
         "2026-12-02T02:37:08.1234567Z", "2026-12-02T02:37:08+00:00", "2026-12-02T04:37:08+02:00",
         "Wed, 02 Dec 2026 02:37:08 GMT", 1796179028, "1796179028.5"]


@pytest.mark.parametrize("value", FORMS)
def test_every_form_reads_as_botocores_parser_reads_it(value: object) -> None:
    ours, theirs = timestamp(value), parse_timestamp(value)
    assert ours == theirs and ours.utcoffset() == theirs.utcoffset()


def test_the_form_ec2_answers_in_is_exact_and_utc() -> None:
    assert timestamp("2026-12-02T02:37:08.250Z").isoformat() == "2026-12-02T02:37:08.250000+00:00"
    with pytest.raises(ValueError, match="Invalid timestamp"):
        timestamp("2026-12-02T02:37:08.5+02:00Z")  # not a timestamp: botocore's parser says so, as before


def test_a_listing_reads_launch_times_without_dateutils_general_parser(aws, monkeypatch: pytest.MonkeyPatch) -> None:
    (instance,) = launch(aws.client("ec2"), tags())
    expected = aws.client("ec2").describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"][0]

    def refused(*args: object, **kwargs: object) -> datetime:
        raise AssertionError("dateutil's general parser for an ISO 8601 UTC timestamp")

    monkeypatch.setattr(dateutil.parser, "parse", refused)
    inv = collect_region(aws.clients(fresh=True), REGION)
    (listed,) = [i for i in inv.instances if i.id == instance]
    assert inv.errors == []
    assert listed.launch_time == expected["LaunchTime"]
