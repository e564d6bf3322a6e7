"""What the partial line says of Kubernetes manifests handed over as text or files (gpulease.review.manifest_text)."""

from gpulease.review.manifest_text import MAX_TEXT, gpu_note

GPU_POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - name: c\n      resources:\n" \
          "        limits: {nvidia.com/gpu: 1}\n"


def test_gpu_requests_in_literal_text_are_named_with_their_object():
    note = gpu_note({"yaml": "kind: ConfigMap\nmetadata: {name: x}\n---\n" + GPU_POD})
    assert "hold GPU compute" in note and "Pod 'p'" in note and "nvidia.com/gpu=1" in note


def test_objects_given_as_objs_are_scanned_too():
    assert "hold GPU compute" in gpu_note({"objs": [{"kind": "Pod", "spec": {"nodeSelector": {
        "node.kubernetes.io/instance-type": "p5.48xlarge"}}}]})


def test_manifests_without_gpus_add_nothing():
    assert gpu_note({"yaml": "kind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n"}) == ""


def test_what_cannot_be_read_says_gpus_may_be_inside_never_none():
    for inputs in ({"files": ["manifests/*.yaml"]}, {"yaml": "a: [unclosed"}, {"yaml": "x" * (MAX_TEXT + 1)},
                   {"yaml": "---\n" * 2000}):
        assert "GPU compute may be among its manifests" in gpu_note(inputs), inputs


def _laughs(levels: int = 9) -> str:
    lines = ["a0: &a0 [lol]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    return "kind: ConfigMap\ndata:\n" + "\n".join("  " + line for line in lines) + "\n"


def test_hostile_manifests_end_at_once_as_unreadable():
    import time

    cycle: dict = {"kind": "Pod"}
    cycle["self"] = cycle
    deep: dict = {"nodeSelector": {"node.kubernetes.io/instance-type": "p4d.24xlarge"}}
    for _ in range(900):
        deep = {"x": deep}
    started = time.monotonic()
    for inputs in ({"yaml": _laughs()}, {"yaml": "a: " + "[" * 3000 + "]" * 3000}, {"objs": [cycle]},
                   {"objs": [deep]}):
        assert "GPU compute may be among its manifests" in gpu_note(inputs), list(inputs)
    assert time.monotonic() - started < 10
