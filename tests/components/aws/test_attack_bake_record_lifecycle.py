"""Attack (issue 24, item 7): the baked record that lets later updates skip the readiness gate lives under the
checkpoint prefix, which the bucket's lifecycle rule expires after checkpoints.lifecycle.keepDays (>= 1). Once it
expires, an update after an instance replacement runs the gate again and fails (NotReadyError)."""

from components.aws.storage import lifecycle_rules
from components.image_bake import BAKED_FOLDER, READY_FOLDER
from tests.components.spec.test_schema_fuzz import KEY, load_stack_file
from tests.support.paths import STACKS_DIR
from components.spec.load import load_stack_spec


def test_baked_record_is_not_expired_by_the_checkpoint_lifecycle() -> None:
    config = load_stack_file(STACKS_DIR / "Pulumi.aws-lora-7b.yaml")
    spec = load_stack_spec("atk", config).experiments[0]
    key = f"{spec.checkpoints.prefix}{BAKED_FOLDER}atk/{spec.name}.json"
    expiring = [r["id"] for r in lifecycle_rules(spec.checkpoints)
                if r.get("expiration", {}).get("days") and key.startswith(r["filter"]["prefix"])]
    assert not expiring, f"{key} expires after {spec.checkpoints.lifecycle.keep_days} days by rule(s) {expiring}"
