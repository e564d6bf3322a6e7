"""``make mutate`` rows for the clouds' safety code: the cluster's Elastic IPs and deadline schedules, the bake, the
parked disk, the reaper's image rules and the documented preconditions (area "clouds")."""

from __future__ import annotations

from tools.mutation_row import Mutation

CLUSTER_TESTS = ("tests/components/test_cluster.py",)
PRECONDITION_TESTS = ("tests/review/test_replacement_preconditions.py",)
BAKE_TESTS = ("tests/integration/test_rehearsal_workflow.py",)
PARK_TESTS = ("tests/inventory/test_reap.py", "tests/inventory/test_alicloud_reap.py")
IMAGE_TESTS = ("tests/inventory/test_alicloud_images.py",)

MUTATIONS = [
    Mutation("clouds", "components/aws/cluster.py",
             "network_interface=inst.primary_network_interface_id,", "instance=inst.id,",
             CLUSTER_TESTS, "an EFA node's Elastic IP is associated through its primary network interface"),
    Mutation("clouds", "components/aws/cluster.py",
             "                node.public_ip = node_address(node).public_ip",
             "                node_address(node)",
             CLUSTER_TESTS, "an EFA node's publicIp/sshCommand come from its Elastic IP"),
    Mutation("clouds", "components/aws/lifetime.py",
             '"input": instance.id.apply(lambda iid: json.dumps({"InstanceIds": [iid]})),',
             '"input": pulumi.Output.all(*[i.id for i in instances]).apply(lambda ids: json.dumps({"InstanceIds": list(ids)})),',
             CLUSTER_TESTS, "one TerminateInstances target per node"),
    Mutation("clouds", "gpulease/review/preconditions.py",
             "        if len(ids) > 1:", "        if len(ids) > 4:",
             PRECONDITION_TESTS, "the precondition row: one id per TerminateInstances call"),
    Mutation("clouds", "gpulease/review/preconditions.py",
             "        if inst is not None and _interfaces(inst, r) > 1:", "        if inst is not None and False:",
             PRECONDITION_TESTS, "the precondition row: an Elastic IP on a multi-interface instance"),
    Mutation("clouds", "gpulease/review/preconditions.py",
             "        if waited is None or waited < needed:", "        if waited is None:",
             PRECONDITION_TESTS, "the precondition row: a snapshot's create timeout covers the disk"),
    Mutation("clouds", "components/image_bake.py",
             "    if instance_id in ready or ALREADY_BAKED in ready:", "    if instance_id in ready:",
             BAKE_TESTS, "bake once: a later update keeps the image without the readiness gate"),
    Mutation("clouds", "components/image_bake.py",
             "        return [ALREADY_BAKED] if spec.name in (baked_ids or []) else list(ready_now or [])",
             "        return [ALREADY_BAKED]",
             BAKE_TESTS, "the first bake still waits for readiness"),
    Mutation("clouds", "gpulease/inventory/decide.py",
             "    if isinstance(phase, str) and phase.strip().lower() == PHASE_PARKED:",
             "    if False:",
             PARK_TESTS, "the reaper never deletes a parked stack's disk"),
    Mutation("clouds", "gpulease/inventory/decide.py",
             '            return Decision(resource, KEEP, f"{TAG_RETAIN_UNTIL}={raw!r} is not an RFC 3339 time")',
             '            until, source = settings.now, "unreadable"',
             IMAGE_TESTS, "an unreadable retain-until keeps the baked image"),
    Mutation("clouds", "gpulease/inventory/alicloud_reaper.py",
             "ecs_models.DeleteImageRequest(region_id=region, image_id=r.id, force=False)",
             "ecs_models.DeleteImageRequest(region_id=region, image_id=r.id, force=True)",
             IMAGE_TESTS, "Alibaba DeleteImage without Force: an image in use is refused, never forced"),
]
MUTATIONS += [
    Mutation("clouds", "components/phase.py",
             '        return exp.model_copy(update={"data_disk": exp.data_disk.model_copy(update={"retain": True})})',
             "        return exp",
             ("tests/components/test_parked.py",), "a parked experiment's disk is retained on destroy"),
    Mutation("clouds", "components/phase.py",
             '    return {**tags, v.TAG_RETAIN: "true", v.TAG_PHASE: v.PHASE_PARKED}',
             "    return tags",
             ("tests/components/test_parked.py",), "a parked experiment's disk is tagged retained and parked"),
]
MUTATIONS += [
    Mutation("clouds", "components/aws/storage.py",
             "            tags=object_tags(exp.tags),", "            tags=exp.tags,",
             PRECONDITION_TESTS, "an S3 object the kit writes carries at most ten tags"),
]
