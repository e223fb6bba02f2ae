"""Property tests: any ``--config`` / ``--launch`` text gives configurations or one
:class:`~otelbench.errors.ConfigError` naming the option — never another exception type
(unbalanced quotes, empty labels, ``=`` anywhere)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench.errors import ConfigError
from otelbench.procedures.configurations import VLLM_CPU, parse_configurations

PROPS = settings(max_examples=200, deadline=None)

_PIECES = st.sampled_from(["a", "b", "=", " ", "'", '"', "\\", VLLM_CPU, "http://h:1", "--x"])
free = st.lists(_PIECES | st.text(max_size=4), max_size=8).map("".join)
texts = free | st.tuples(st.sampled_from(["a", "b", " c "]), free).map("=".join)


@PROPS
@given(configs=st.lists(texts, max_size=3), launches=st.lists(texts, max_size=2))
def test_any_option_text_is_configurations_or_a_config_error(
    configs: list[str], launches: list[str]
) -> None:
    try:
        parsed = parse_configurations(configs, launches)
    except ConfigError as err:
        message = str(err)
        assert message
        assert any(w in message for w in ("--config", "--launch", "label"))
        return
    assert len(parsed) == len(configs)
    assert len({c.label for c in parsed}) == len(parsed)


def test_unbalanced_quotes_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^--config 'a': "):
        parse_configurations([f"a={VLLM_CPU} --x 'unclosed"], [])
