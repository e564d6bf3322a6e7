"""The wrapper takes time in proportion to the text: a long word made of a quoted part followed by many escaped
double quotes (``'a'"\\"\\"\\"...``, as a JSON or shell-escaped value echoed in a message looks) is wrapped about as
fast as ``textwrap`` wraps it, and kept whole."""

from __future__ import annotations

import textwrap
import time

from gpulease.cli.wrap import wrapped


def test_a_long_word_of_escaped_double_quotes_is_wrapped_in_linear_time():
    word = "'a'" + '"\\' * 20000  # 40 KB, one shell word
    text = f"value: {word} end"
    started = time.perf_counter()
    textwrap.wrap(text, 80, break_long_words=False)
    reference = time.perf_counter() - started
    started = time.perf_counter()
    out = wrapped(text, 80)
    took = time.perf_counter() - started
    assert word in [line.strip() for line in out.splitlines()], "the word is kept whole on its own line"
    assert took < max(1.0, 50 * reference), f"wrapping 40 KB took {took:.1f} s (textwrap: {reference * 1000:.1f} ms)"
