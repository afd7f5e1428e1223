"""Which parameters the quick suite (`pytest`) runs: one or two of each kind, the rest only
under `pytest -m slow` (CI runs both), so the quick suite stays within its five minutes."""
from __future__ import annotations

from typing import Any, Iterable

import pytest


def some_slow(names: Iterable[Any], quick: Iterable[Any]) -> list[Any]:
    """names as pytest parameters, those not in quick marked slow."""
    keep = set(quick)
    return [n if n in keep else pytest.param(n, marks=pytest.mark.slow) for n in names]
