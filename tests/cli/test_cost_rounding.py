"""The per-experiment table of ``gpulease cost`` says when its rows, each shown rounded to the cent, do not add up
to the stack's totals, and when a row's worst case is not what its lines above add up to (each total is the exact
sum, rounded once); figures that add up get no note."""

from __future__ import annotations

from types import SimpleNamespace

from gpulease.cli.cost_rounding import experiments_rounded
from tests.cli.test_cost_narrow_cli import gl


def _exp(name: str, expected: float, worst: float) -> SimpleNamespace:
    return SimpleNamespace(name=name, expected_usd=expected, worst_case_usd=worst, expected_reason=None,
                           worst_case_known=True)


def _cost(exps: list[SimpleNamespace], lines: list[tuple[str, float]], expected: float, worst: float):
    return SimpleNamespace(experiments=exps, expected_usd=expected, worst_case_usd=worst, expected_reason=None,
                           worst_case_known=True,
                           lines=[SimpleNamespace(experiment=e, worst_case_usd=w) for e, w in lines])


def test_rows_that_do_not_add_up_to_the_totals_or_their_lines_get_a_note() -> None:
    # $2.094 + $2.094 shows $2.09 + $2.09 = $4.18; the exact $4.188 shows $4.19. Lines $2.825 + $2.165 show
    # $2.83 + $2.17 = $5.00 against the row's exact $4.99.
    cost = _cost([_exp("a", 2.094, 4.99), _exp("b", 2.094, 1.0)], [("a", 2.825), ("a", 2.165), ("b", 1.0)],
                 4.188, 5.99)
    assert experiments_rounded(cost) == [  # type: ignore[arg-type]
        "the expected column, each row rounded, adds up to $4.18; the total $4.19 is the exact sum, rounded once",
        "a: its lines' worst cases, each rounded, add up to $5.00; its row's $4.99 is the exact sum, rounded once"]


def test_rows_that_add_up_get_no_note() -> None:
    cost = _cost([_exp("a", 2.0, 3.0), _exp("b", 1.0, 1.0)], [("a", 1.5), ("a", 1.5), ("b", 1.0)], 3.0, 4.0)
    assert experiments_rounded(cost) == []  # type: ignore[arg-type]


def test_the_sweep_s_per_experiment_table_says_how_its_rows_add_up() -> None:
    out = " ".join(gl("cost", "aws-sweep-lora", columns=200).stdout.split())
    table = out.split("per experiment", 1)[1]
    assert ("note: the expected column, each row rounded, adds up to $11.17; the total $11.18 is the exact sum, "
            "rounded once") in table, out
    assert ("note: lora-rank-r16: its lines' worst cases, each rounded, add up to $5.00; its row's $4.99 is the "
            "exact sum, rounded once") in table, out


def test_a_folded_column_names_each_line_once_at_60_columns() -> None:
    import re

    out = " ".join(gl("cost", "aws-sweep-lora", columns=60).stdout.split())
    said = out.split("cap per hour, each line: ", 1)[1].split(" per hour, each line: ", 1)[0]
    entries = re.findall(r"(.+?) (\$[0-9.]+/h)(?:, |$)", said)
    labels = [label for label, _ in entries]
    assert len(entries) == 13 and len(set(labels)) == len(labels), said
    assert "r16-instance (g6.xlarge spot) $0.805/h" in said and "r16-instance (root disk gp3 100 GB) $0.011/h" in said


def _node_cost(worsts: dict[int, list[float]]):
    lines = [SimpleNamespace(experiment="c", resource=f"c-node{rank}-part{i}", worst_case_usd=w)
             for rank, ws in worsts.items() for i, w in enumerate(ws)]
    return SimpleNamespace(lines=lines)


def test_the_cluster_summary_says_when_a_nodes_lines_do_not_add_up_to_its_worst_case() -> None:
    from gpulease.cli.cost_rounding import node_rounded

    # $2.825 + $2.165 show $2.83 + $2.17 = $5.00 against the node's exact $4.99
    cost = _node_cost({0: [2.825, 2.165], 1: [2.825, 2.165]})
    assert node_rounded(cost, "c", 4.99) == "; its lines, each rounded, add up to $5.00"  # type: ignore[arg-type]
    assert node_rounded(_node_cost({0: [1.5, 1.5], 1: [1.5, 1.5]}), "c", 3.0) == ""  # type: ignore[arg-type]


def test_the_cluster_stacks_summary_says_its_node_lines_add_up_to_a_cent_more() -> None:
    # aws-cluster-4x8: one node's worst case is $531.30 exactly summed, its lines as shown add up to $531.31
    out = " ".join(gl("cost", "aws-cluster-4x8", columns=200).stdout.split())
    assert "(worst case $531.30 per node; its lines, each rounded, add up to $531.31)" in out, out
