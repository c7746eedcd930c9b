"""Strategies: the engine's registry of ways to choose the next runs, as clients name them."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import KeyFirstRoute
from app.api.schemas.common import KEYED_RESPONSES
from app.api.schemas.suggestions import StrategyOut
from experiments.suggest import LOOP_STRATEGY_NAMES, SUMMARIES

router = APIRouter(tags=["suggestions"], responses=KEYED_RESPONSES, route_class=KeyFirstRoute)


@router.get("/strategies")
async def list_strategies() -> list[StrategyOut]:
    """Every strategy's name, what it does and whether it can close a loop by itself."""
    return [
        StrategyOut(name=name, summary=summary, closes_loop=name in LOOP_STRATEGY_NAMES)
        for name, summary in SUMMARIES.items()
    ]
