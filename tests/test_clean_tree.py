"""The check that the suite leaves the checkout as it found it ignores only the caches tools make."""

from tests.support.clean_tree import tool_cache


def test_tool_caches_are_left_out_and_anything_else_counts() -> None:
    for line in ("!! .hypothesis/", "!! .pytest_cache/", "!! gpulease/__pycache__/", "!! .venv/", "?? x/y.pyc"):
        assert tool_cache(line), line
    for line in ("?? artifacts/metrics.json", "!! artifacts/", " M README.md", "?? stacks/Pulumi.new.yaml"):
        assert not tool_cache(line), line
