"""Rules on the compute forms besides the instance, resource by resource: user-data of groups' templates and
node pools, metadata options of node pools, templates that leave a group spot or not."""

from __future__ import annotations

import base64

from tests.support.policy import analyze, found, res, tags

ESS_CONFIG = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
NODE_POOL = "alicloud:cs/nodePool:NodePool"
SPOT_FLEET = "aws:ec2/spotFleetRequest:SpotFleetRequest"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
KEY = "AKIA" + "ABCDEFGHIJKLMNOP"


def test_secrets_in_the_user_data_of_every_form_that_carries_one():
    script = f"#!/bin/bash\nexport AWS_ACCESS_KEY_ID={KEY}\n"
    b64 = base64.b64encode(script.encode()).decode()
    result = analyze(
        res(ESS_CONFIG, "cfg", {"instanceType": "ecs.gn7i-c8g1.2xlarge", "userData": script}),
        res(NODE_POOL, "pool", {"instanceTypes": ["ecs.gn7i-c8g1.2xlarge"], "preUserData": b64}),
        res(LT, "lt", {"instanceType": "g5.xlarge", "userData": b64}),
        res(SPOT_FLEET, "fleet", {"launchSpecifications": [{"instanceType": "g5.xlarge"},
                                                           {"instanceType": "g5.xlarge", "userData": script}]}),
    )
    assert sorted((h[2], h[3].split(";")[0]) for h in found(result, "no-secrets-in-user-data")) == [
        ("cfg", "ScalingConfiguration 'cfg': userData holds an AWS access key id on line 2"),
        ("fleet", "SpotFleetRequest 'fleet': userData [1] holds an AWS access key id on line 2"),
        ("lt", "LaunchTemplate 'lt': userData holds an AWS access key id on line 2"),
        ("pool", "NodePool 'pool': preUserData holds an AWS access key id on line 2"),
    ]


def test_node_pool_metadata_tokens():
    def imds(options):
        inputs = {"instanceTypes": ["ecs.gn6i-c4g1.xlarge"], "tags": tags()}
        if options is not None:
            inputs["instanceMetadataOptions"] = options
        return [h[3] for h in found(analyze(res(NODE_POOL, "pool", inputs)), "imdsv2-required")]

    assert imds({"httpTokens": "required"}) == []
    assert imds({"httpTokens": "optional"}) == [
        "NodePool 'pool' allows metadata access without a token (instanceMetadataOptions.httpTokens=optional); "
        "accepted: instance_metadata_options={'http_tokens': 'required'}"]
    (unset,) = imds(None)
    assert unset.startswith("NodePool 'pool' leaves instanceMetadataOptions.httpTokens unset: its default is optional")
