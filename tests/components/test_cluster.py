"""A cluster (``nodes: 4``) rendered on both clouds: placement, fabric interfaces, the group's own-member rules, the
node tag on every node's resources, one deadline for every node, and what each node is told in its settings."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest
import yaml

from components import userdata
from components.cluster_plan import node_addresses
from components.plan import PlacementError
from gpulease.core import vocabulary as v
from gpulease.review.render import CapturedResource, Rendering
from gpulease.review.replacement import REPLACE_TRIGGERS
from tests.support.alicloud import ali_experiment, render_ali, user_data_text
from tests.support.specs import experiment, render_experiment
from tests.support.userdata import decode

AWS_INSTANCE = "aws:ec2/instance:Instance"
ALI_INSTANCE = "alicloud:ecs/instance:Instance"
SUBNET_CIDR = "172.31.0.0/20"  # what the mocks' subnet lookup answers
NODE_TAGGED = {"aws:ec2/instance:Instance", "aws:ebs/volume:Volume", "aws:iam/role:Role", "aws:ec2/eip:Eip",
               "aws:ec2/launchTemplate:LaunchTemplate", "alicloud:ecs/instance:Instance", "alicloud:ecs/ecsDisk:EcsDisk"}


def settings_of(instance: CapturedResource) -> dict[str, Any]:
    text = user_data_text(instance) if "userData" in instance.inputs else decode(instance.inputs["userDataBase64"])
    written = {f["path"]: f for f in yaml.safe_load(text)["write_files"]}
    return json.loads(written[userdata.SETTINGS_PATH]["content"])


def nodes(r: Rendering, type_: str) -> list[CapturedResource]:
    return sorted(r.of_type(type_), key=lambda x: x.name)


@pytest.fixture(scope="module")
def aws4() -> Rendering:
    r = render_experiment(experiment(name="pre", gpu={"instanceType": "p4d.24xlarge"}, nodes=4, budgetUsd=5000))
    assert r.error is None, r.error
    return r


@pytest.fixture(scope="module")
def ali4() -> Rendering:
    spec = ali_experiment(name="pre", gpu={"instanceType": "ecs.gn8is-4x.16xlarge"}, nodes=4, budgetUsd=5000,
                          market="on-demand", onDemandReason="the deployment set takes no spot instances")
    r = render_ali(spec)
    assert r.error is None, r.error
    return r


# --- AWS ---------------------------------------------------------------------------------------------------------


def test_aws_nodes_share_one_zone_one_placement_group_and_fixed_consecutive_addresses(aws4: Rendering) -> None:
    insts = nodes(aws4, AWS_INSTANCE)
    assert [i.name for i in insts] == [f"pre-node{r}-instance" for r in range(4)]
    (group,) = aws4.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert group.inputs["strategy"] == "cluster"
    assert {i.inputs["placementGroup"] for i in insts} == {group.outputs["name"]}
    templates = {t.name: t for t in aws4.of_type("aws:ec2/launchTemplate:LaunchTemplate")}
    addresses, subnets = [], set()
    for rank, inst in enumerate(insts):
        # EFA interfaces come from the node's launch template (they cannot be attached to a running instance).
        assert "subnetId" not in inst.inputs and "vpcSecurityGroupIds" not in inst.inputs
        template = templates[f"pre-node{rank}-efa"]
        assert inst.inputs["launchTemplate"]["id"] == template.id
        primary = template.inputs["networkInterfaces"][0]
        addresses.append(primary["privateIpAddress"])
        subnets |= {ni["subnetId"] for ni in template.inputs["networkInterfaces"]}
    assert len(subnets) == 1, "every node in one subnet"
    network = ipaddress.ip_network(SUBNET_CIDR)
    ips = [ipaddress.ip_address(a) for a in addresses]
    assert all(ip in network for ip in ips)
    assert [int(ip) - int(ips[0]) for ip in ips] == [0, 1, 2, 3]
    assert int(ips[0]) - int(network.network_address) >= 4 and int(network.broadcast_address) - int(ips[-1]) >= 1


def test_aws_efa_interfaces_one_per_network_card_in_the_stack_group(aws4: Rendering) -> None:
    (sg,) = aws4.of_type("aws:ec2/securityGroup:SecurityGroup")
    for template in aws4.of_type("aws:ec2/launchTemplate:LaunchTemplate"):
        interfaces = template.inputs["networkInterfaces"]
        # p4d.24xlarge takes 4 EFA interfaces (fabric.yaml): card 0 carries IP (efa), the rest are EFA-only.
        assert [(ni["networkCardIndex"], ni["deviceIndex"], ni["interfaceType"]) for ni in interfaces] == [
            (0, 0, "efa"), (1, 0, "efa-only"), (2, 0, "efa-only"), (3, 0, "efa-only")]
        assert all(ni["securityGroups"] == [sg.id] for ni in interfaces)
        assert [("privateIpAddress" in ni) for ni in interfaces] == [True, False, False, False]
        assert template.inputs["metadataOptions"]["httpTokens"] == "required"


def test_aws_rules_between_nodes_are_the_group_itself_and_nothing_else_is_opened(aws4: Rendering) -> None:
    (sg,) = aws4.of_type("aws:ec2/securityGroup:SecurityGroup")
    ingress = aws4.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    egress = aws4.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    own_in = [x for x in ingress if x.inputs.get("referencedSecurityGroupId") == sg.id]
    own_out = [x for x in egress if x.inputs.get("referencedSecurityGroupId") == sg.id]
    assert [(x.inputs["ipProtocol"], x.inputs["securityGroupId"]) for x in own_in + own_out] == [("-1", sg.id)] * 2
    # Every other inbound rule is SSH from the named addresses, as for one instance.
    others = [x for x in ingress if x not in own_in]
    assert {(x.inputs["ipProtocol"], x.inputs["fromPort"], x.inputs.get("cidrIpv4") or x.inputs.get("cidrIpv6"))
            for x in others} == {("tcp", 22, "203.0.113.7/32"), ("tcp", 22, "2001:db8:1234::/48")}


def test_aws_one_schedule_per_node_terminates_that_node_with_a_role_for_those_nodes_only(aws4: Rendering) -> None:
    # One TerminateInstances call with every id fails as a whole when one id is gone (a node reclaimed earlier):
    # each node has its own schedule calling it with its own id.
    insts = nodes(aws4, AWS_INSTANCE)
    schedules = {s.name: s for s in aws4.of_type("aws:scheduler/schedule:Schedule")}
    assert sorted(schedules) == [f"pre-node{r}-deadline" for r in range(4)]
    role = aws4.by_name("pre-deadline-role")
    for rank, inst in enumerate(insts):
        target = schedules[f"pre-node{rank}-deadline"].inputs["target"]
        assert json.loads(target["input"]) == {"InstanceIds": [inst.id]}
        assert target["roleArn"] == role.outputs["arn"]
    policy = next(p for p in aws4.of_type("aws:iam/rolePolicy:RolePolicy") if p.name == "pre-deadline-terminate")
    (statement,) = json.loads(policy.inputs["policy"])["Statement"]
    assert statement["Action"] == "ec2:TerminateInstances"
    assert statement["Resource"] == [i.outputs["arn"] for i in insts]
    deadline = aws4.outputs["experiments"]["pre"]["deadline"]
    assert {i.inputs["tags"][v.TAG_EXPIRES_AT] for i in insts} == {deadline}


def test_aws_every_node_has_its_disk_elastic_ip_identity_and_node_tag_one_bucket(aws4: Rendering) -> None:
    assert [x.name for x in nodes(aws4, "aws:ebs/volume:Volume")] == [f"pre-node{r}-data" for r in range(4)]
    assert len(aws4.of_type("aws:s3/bucket:Bucket")) == 1
    assert len(aws4.of_type("aws:s3/bucketObjectv2:BucketObjectv2")) == 1, "one tools object for the cluster"
    eips = {e.name: e for e in aws4.of_type("aws:ec2/eip:Eip")}
    out = aws4.outputs["experiments"]["pre"]
    for rank, inst in enumerate(nodes(aws4, AWS_INSTANCE)):
        eip = eips[f"pre-node{rank}-ip"]
        # Through the primary interface: AssociateAddress with an instance id needs exactly one interface.
        assert "instance" not in eip.inputs
        assert eip.inputs["networkInterface"] == inst.outputs["primaryNetworkInterfaceId"]
        assert eip.inputs["domain"] == "vpc"
        # The node's public address is its Elastic IP (an instance with several interfaces gets none of its own).
        assert inst.outputs["publicIp"] == ""
        assert out["nodes"][rank]["publicIp"] == eip.outputs["publicIp"]
        assert inst.inputs["iamInstanceProfile"] == aws4.by_name(f"pre-node{rank}-instance-profile").outputs["name"]
    assert out["publicIp"] == eips["pre-node0-ip"].outputs["publicIp"]
    assert out["sshCommand"] == f"ssh ubuntu@{eips['pre-node0-ip'].outputs['publicIp']}"
    tagged = [x for x in aws4.resources if x.type in NODE_TAGGED and "-node" in x.name]
    assert len(tagged) == 4 * 5  # per node: instance, data volume, role, Elastic IP, launch template
    for resource in tagged:
        rank = resource.name.split("-node")[1].split("-")[0]
        assert resource.inputs["tags"][v.TAG_NODE] == f"{rank}/4", resource.name
    assert all(v.TAG_NODE not in (x.inputs.get("tags") or {}) for x in aws4.of_type("aws:s3/bucket:Bucket"))


def test_aws_each_node_is_told_its_rank_peers_rendezvous_and_fabric(aws4: Rendering) -> None:
    insts = nodes(aws4, AWS_INSTANCE)
    settings = [settings_of(i) for i in insts]
    addresses = settings[0]["cluster"]["addresses"]
    for rank, s in enumerate(settings):
        c = s["cluster"]
        assert (c["rank"], c["nodes"], c["gpus_per_node"], c["addresses"]) == (rank, 4, 8, addresses)
        assert (c["rendezvous_port"], c["notice_port"], c["fabric"]) == (29500, 29400, "efa")
        assert c["fabric_env"]["FI_PROVIDER"] == "efa" and c["fabric_env"]["FI_EFA_USE_DEVICE_RDMA"] == "1"
        assert c["fabric_env"]["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1"
        assert c["cluster_id"] == "test.pre"
        bucket_uri = aws4.outputs["experiments"]["pre"]["checkpointUri"]
        # Rank 0 syncs to the shared checkpoint; the others below it, never over it.
        assert s["checkpoint_uri"] == (bucket_uri if rank == 0 else f"{bucket_uri}nodes/{rank}/")
        assert c["notice_uri"] == f"{bucket_uri}_gpulease/cluster/"
    templates = {t.name: t for t in aws4.of_type("aws:ec2/launchTemplate:LaunchTemplate")}
    assert addresses == [templates[f"pre-node{r}-efa"].inputs["networkInterfaces"][0]["privateIpAddress"]
                         for r in range(4)]
    out = aws4.outputs["experiments"]["pre"]
    assert out["rendezvous"] == addresses[0] and [n["privateIp"] for n in out["nodes"]] == addresses


def test_aws_each_node_may_write_its_own_sync_path_and_the_notice_marker(aws4: Rendering) -> None:
    for rank, inst in enumerate(nodes(aws4, AWS_INSTANCE)):
        s = settings_of(inst)
        policy = json.loads(aws4.by_name(f"pre-node{rank}-checkpoint-access").inputs["policy"])
        (rw,) = [x for x in policy["Statement"] if x["Sid"] == "ReadWriteCheckpoints"]
        assert {"s3:GetObject", "s3:PutObject"} <= set(rw["Action"])
        allowed = rw["Resource"].removeprefix("arn:aws:s3:::").removesuffix("*")
        for uri in (s["checkpoint_uri"], s["cluster"]["notice_uri"] + "notice.json"):
            assert uri.removeprefix("s3://").startswith(allowed), (rank, uri, allowed)


def test_aws_a_type_without_efa_gets_plain_tcp_and_its_fixed_address_on_the_instance() -> None:
    r = render_experiment(experiment(name="small", gpu={"instanceType": "p3.16xlarge"}, nodes=2, budgetUsd=5000,
                                     cluster={"fabric": "tcp"}))
    assert r.error is None, r.error
    insts = nodes(r, AWS_INSTANCE)
    assert not r.of_type("aws:ec2/launchTemplate:LaunchTemplate") and not r.of_type("aws:ec2/eip:Eip")
    assert [i.inputs["associatePublicIpAddress"] for i in insts] == [True, True]
    assert all(ipaddress.ip_address(i.inputs["privateIp"]) in ipaddress.ip_network(SUBNET_CIDR) for i in insts)
    assert len({i.inputs["subnetId"] for i in insts}) == 1
    assert all(i.inputs["placementGroup"] for i in insts)  # p3.16xlarge takes a cluster placement group
    assert settings_of(insts[1])["cluster"]["fabric"] == "tcp"
    assert settings_of(insts[1])["cluster"]["fabric_env"]["NCCL_IB_DISABLE"] == "1"


def test_a_single_node_gets_no_cluster_piece() -> None:
    r = render_experiment(experiment())
    assert r.error is None
    (inst,) = r.of_type(AWS_INSTANCE)
    assert inst.name == "exp1-instance" and "cluster" not in settings_of(inst)
    assert "placementGroup" not in inst.inputs and "privateIp" not in inst.inputs
    assert not any(x.inputs.get("referencedSecurityGroupId") for x in r.resources)
    assert all(v.TAG_NODE not in (x.inputs.get("tags") or {}) for x in r.resources)


# --- Alibaba Cloud -----------------------------------------------------------------------------------------------


def test_alicloud_nodes_in_one_vswitch_a_low_latency_deployment_set_and_an_eri_each(ali4: Rendering) -> None:
    insts = nodes(ali4, ALI_INSTANCE)
    assert [i.name for i in insts] == [f"pre-node{r}-instance" for r in range(4)]
    (dset,) = ali4.of_type("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet")
    assert dset.inputs["strategy"] == "LowLatency"
    (vsw,) = ali4.of_type("alicloud:vpc/switch:Switch")
    assert {i.inputs["deploymentSetId"] for i in insts} == {dset.id}
    assert {i.inputs["vswitchId"] for i in insts} == {vsw.id}
    (sg,) = ali4.of_type("alicloud:ecs/securityGroup:SecurityGroup")
    for inst in insts:
        assert inst.inputs["networkInterfaces"] == {"networkInterfaceTrafficMode": "HighPerformance",
                                                    "vswitchId": vsw.id, "securityGroupIds": [sg.id]}
    ips = [ipaddress.ip_address(i.inputs["privateIp"]) for i in insts]
    cidr = ipaddress.ip_network(vsw.inputs["cidrBlock"])
    assert all(ip in cidr for ip in ips) and [int(ip) - int(ips[0]) for ip in ips] == [0, 1, 2, 3]
    assert int(cidr.broadcast_address) - int(ips[-1]) >= 3 and int(ips[0]) - int(cidr.network_address) >= 1


def test_alicloud_one_release_time_on_every_node_and_the_group_admits_its_members(ali4: Rendering) -> None:
    insts = nodes(ali4, ALI_INSTANCE)
    assert len({i.inputs["autoReleaseTime"] for i in insts}) == 1
    (sg,) = ali4.of_type("alicloud:ecs/securityGroup:SecurityGroup")
    own = [x for x in ali4.of_type("alicloud:ecs/securityGroupRule:SecurityGroupRule")
           if x.inputs.get("sourceSecurityGroupId") == sg.id]
    assert [(x.inputs["type"], x.inputs["ipProtocol"], x.inputs["portRange"], x.inputs["policy"]) for x in own] == [
        ("ingress", "all", "-1/-1", "accept")]
    assert [x.name for x in nodes(ali4, "alicloud:ecs/ecsDisk:EcsDisk")] == [f"pre-node{r}-data" for r in range(4)]
    for resource in ali4.resources:
        if resource.type in NODE_TAGGED:
            rank = resource.name.split("-node")[1].split("-")[0]
            assert resource.inputs["tags"][v.TAG_NODE] == f"{rank}/4", resource.name
    assert settings_of(insts[2])["cluster"]["fabric"] == "erdma"
    assert settings_of(insts[2])["cluster"]["fabric_env"]["NCCL_SOCKET_IFNAME"] == "eth0"


def test_alicloud_a_spot_cluster_has_no_deployment_set() -> None:
    r = render_ali(ali_experiment(name="pre", gpu={"instanceType": "ecs.gn8is-4x.16xlarge"}, nodes=2, budgetUsd=5000))
    assert r.error is None, r.error
    assert not r.of_type("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet")
    assert all("deploymentSetId" not in i.inputs for i in r.of_type(ALI_INSTANCE))
    assert all(i.inputs["spotStrategy"] == "SpotAsPriceGo" for i in r.of_type(ALI_INSTANCE))


# --- what a cluster refuses ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("overrides", "field", "words"), [
    ({"dataDisk": {"existingVolumeId": "vol-0123456789abcdef0"}}, "dataDisk.existingVolumeId", "one disk attaches"),
    ({"cluster": {"noticePort": 29500}}, "cluster.noticePort", "rendezvous port"),
    ({"cluster": {"rendezvousPort": 22}}, "cluster.rendezvousPort", "greater than or equal to 1024"),
    ({"nodes": 21}, "nodes", "less than or equal to 20"),
    ({"checkpoints": {"enabled": False}}, "checkpoints.enabled", "accepted: true (checkpoints) for spot"),
    ({"phase": "parked"}, "phase", "accepted: phase: train, or nodes: 1"),
    ({"image": {"bake": True}}, "image.bake", "name that stack in image.fromStack"),
])
def test_a_cluster_refuses_with_the_field_named(overrides: dict, field: str, words: str) -> None:
    r = render_experiment(experiment(**{"nodes": 2, **overrides}))
    assert r.error is not None and f"gpulease:experiment.{field}" in r.error and words in r.error
    assert r.resources == [], "nothing is registered"


def test_node_addresses_skip_the_reserved_ones_and_refuse_a_subnet_too_small() -> None:
    assert node_addresses("10.0.0.0/29", 3, "s/e", reserved_head=4, reserved_tail=1) == ("10.0.0.4", "10.0.0.5", "10.0.0.6")
    with pytest.raises(PlacementError, match="3 usable addresses"):
        node_addresses("10.0.0.0/29", 4, "s/e", reserved_head=4, reserved_tail=1)
    picks = {node_addresses("10.1.0.0/16", 4, f"stack{i}/e", reserved_head=4, reserved_tail=1)[0] for i in range(20)}
    assert len(picks) == 20, "different stacks rarely share addresses"


def test_every_cluster_type_has_a_replace_trigger_entry(aws4: Rendering, ali4: Rendering) -> None:
    assert {x.type for x in aws4.resources + ali4.resources} - {"pulumi:pulumi:Stack"} <= set(REPLACE_TRIGGERS) | {
        "gpulease:aws:GpuExperiment", "gpulease:alicloud:GpuExperiment"}


def test_every_node_starts_from_the_image_another_stack_baked() -> None:
    from gpulease.review.mocks import CloudMocks
    from gpulease.review.mocks_images import baked_image
    from gpulease.review.render import render
    from tests.support.clock import FIXED_NOW

    mocks = CloudMocks(region="us-east-1", now=FIXED_NOW)
    spec = experiment(name="pre", gpu={"instanceType": "p3.16xlarge"}, nodes=3, budgetUsd=5000,
                      image={"fromStack": "org/llm/base-image"})
    r = render({"aws:region": "us-east-1", "gpulease:experiment": spec}, stack="test", now=FIXED_NOW, mocks=mocks)
    assert r.error is None, r.error
    expected = baked_image("org/llm/base-image", mocks)["id"]
    assert [i.inputs["ami"] for i in nodes(r, AWS_INSTANCE)] == [expected] * 3
    assert r.outputs["experiments"]["pre"]["imageFrom"].startswith(f"{expected} from stack base-image")


def test_every_node_carries_the_whole_clusters_hourly_price_for_the_spend_estimate(aws4: Rendering) -> None:
    single = render_experiment(experiment(name="pre", gpu={"instanceType": "p4d.24xlarge"}, budgetUsd=5000))
    assert single.error is None, single.error
    one = float(single.one(AWS_INSTANCE).inputs["tags"][v.TAG_MAX_HOURLY_USD])
    prices = [float(i.inputs["tags"][v.TAG_MAX_HOURLY_USD]) for i in nodes(aws4, AWS_INSTANCE)]
    assert prices == [pytest.approx(4 * one, rel=1e-3)] * 4  # each node measures the experiment's spend, not its share


def _puts(policy: dict[str, Any], action: str) -> list[str]:
    def listed(x: str | list[str]) -> list[str]:
        return [x] if isinstance(x, str) else x
    return [r for s in policy["Statement"] for r in listed(s["Resource"]) if action in listed(s["Action"])]


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_each_node_may_write_its_reports_where_its_settings_send_them(cloud: str, aws4: Rendering,
                                                                      ali4: Rendering) -> None:
    """A node's ready.json, heartbeat, verify and manifest go to its own control folder (outside the expiring prefix):
    its role must allow exactly that put, or rank N > 0 reports nothing and status shows it as never ready."""
    r, type_, field, action = ((aws4, AWS_INSTANCE, "policy", "s3:PutObject") if cloud == "aws" else
                               (ali4, ALI_INSTANCE, "policyDocument", "oss:PutObject"))
    for rank, inst in enumerate(nodes(r, type_)):
        s = settings_of(inst)
        bucket, _, key = s["control_uri"].partition("://")[2].partition("/")
        prefix = s["checkpoint_uri"].partition("://")[2].partition("/")[2]
        assert not key.startswith(prefix), (rank, key)
        grants = [g.split(f"{bucket}/", 1)[1].removesuffix("*")
                  for g in _puts(json.loads(r.by_name(f"pre-node{rank}-checkpoint-access").inputs[field]), action)]
        assert any(f"{key}heartbeat.json".startswith(g) for g in grants), (rank, key, grants)
