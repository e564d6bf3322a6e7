"""yaml.v3 resolves a plain scalar starting with ``.`` with ``strconv.ParseFloat(in, 64)`` on the text as written
(resolve.go, hint '.'), and Go's ParseFloat takes underscores between digits (atof.go readFloat: ``case c == '_':
underscores = true``, then ``underscoreOK``): ``.5_0`` is the float 0.5 to the Pulumi CLI, text to the kit.
``._5`` stays text on both sides (an underscore must follow a digit)."""

from gpulease.core.yaml_scalars import resolve


def test_dot_float_with_underscores_is_a_float_as_in_go() -> None:
    assert resolve(".5_0") == ("float", 0.5)
    assert resolve(".2_5e1") == ("float", 2.5)
    assert resolve("._5")[0] == "str"
