"""The four prompt variants of 000 App. C.3 differ only in their strategy sentence."""

from __future__ import annotations

import pytest

from tasks.dagmap.prompts import (
    ENVIRONMENT,
    HARNESS,
    REPLY_FORMAT,
    STRATEGIES,
    VARIANTS,
    system_prompt,
)


def test_variants_share_description_and_format():
    assert VARIANTS == ("base", "exploration", "exploitation", "balance")
    for variant in VARIANTS:
        prompt = system_prompt(variant)
        assert prompt.startswith(ENVIRONMENT) and prompt.endswith(REPLY_FORMAT)
        assert prompt == " ".join(p for p in (ENVIRONMENT, STRATEGIES[variant], REPLY_FORMAT) if p)
    assert system_prompt("base") == f"{ENVIRONMENT} {REPLY_FORMAT}"


def test_harness_announces_the_summary():
    assert system_prompt("balance", harness=True) == " ".join(
        (ENVIRONMENT, HARNESS, STRATEGIES["balance"], REPLY_FORMAT)
    )


def test_unknown_variant():
    with pytest.raises(ValueError, match="unknown prompt variant 'greedy'; expected one of base"):
        system_prompt("greedy")
