"""Per-model prices in USD per million tokens, and the cost of one call.

The built-in table is a snapshot of list prices for common models; users override or add
models with the agent option ``prices: {MODEL: {input: .., output: .., cached_input: ..}}``.
A model is looked up by exact name first, then by the longest table entry its name starts
with (so dated snapshots such as ``gpt-4o-2024-08-06`` find ``gpt-4o``). An unknown model
costs 0 and is warned about once per process, so a budget in USD never silently passes.
"""

from __future__ import annotations

import logging

from pydantic import BaseModel, ConfigDict, Field

from rlab_core.api import Usage

log = logging.getLogger(__name__)


class ModelPrice(BaseModel):
    """Prices of one model in USD per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0, description="USD per 1M uncached input tokens.")
    output: float = Field(ge=0, description="USD per 1M output tokens (reasoning included).")
    cached_input: float | None = Field(
        default=None, ge=0, description="USD per 1M cached input tokens; default: the input price."
    )
    cache_write: float | None = Field(
        default=None,
        ge=0,
        description="USD per 1M input tokens written to a prompt cache; default: the input price.",
    )


def _p(input_: float, output: float, cached: float, cache_write: float | None = None) -> ModelPrice:
    return ModelPrice(input=input_, output=output, cached_input=cached, cache_write=cache_write)


#: List prices (USD per 1M tokens) of common models; a snapshot, override with ``prices``.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    # OpenAI
    "gpt-5": _p(1.25, 10.00, 0.125),
    "gpt-5-mini": _p(0.25, 2.00, 0.025),
    "gpt-5-nano": _p(0.05, 0.40, 0.005),
    "gpt-4.1": _p(2.00, 8.00, 0.50),
    "gpt-4.1-mini": _p(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _p(0.10, 0.40, 0.025),
    "gpt-4o": _p(2.50, 10.00, 1.25),
    "gpt-4o-mini": _p(0.15, 0.60, 0.075),
    "o3": _p(2.00, 8.00, 0.50),
    "o3-pro": _p(20.00, 80.00, 20.00),
    "o3-mini": _p(1.10, 4.40, 0.55),
    "o4-mini": _p(1.10, 4.40, 0.275),
    # Anthropic (cache writes of the 5-minute cache cost 1.25x the input price)
    "claude-opus-4-5": _p(5.00, 25.00, 0.50, 6.25),
    "claude-opus-4-1": _p(15.00, 75.00, 1.50, 18.75),
    "claude-opus-4": _p(15.00, 75.00, 1.50, 18.75),
    "claude-sonnet-4-5": _p(3.00, 15.00, 0.30, 3.75),
    "claude-sonnet-4": _p(3.00, 15.00, 0.30, 3.75),
    "claude-3-7-sonnet": _p(3.00, 15.00, 0.30, 3.75),
    "claude-haiku-4-5": _p(1.00, 5.00, 0.10, 1.25),
    "claude-3-5-haiku": _p(0.80, 4.00, 0.08, 1.00),
}

_warned: set[str] = set()


class PriceTable:
    """The built-in prices with the user's overrides on top."""

    def __init__(self, overrides: dict[str, ModelPrice] | None = None) -> None:
        self.prices = {**DEFAULT_PRICES, **(overrides or {})}

    def lookup(self, model: str) -> ModelPrice | None:
        """The price of ``model``: exact name, else the longest known prefix, else None."""
        if model in self.prices:
            return self.prices[model]
        # providers prefix names (``openai/gpt-4o``, ``models/...``); look at the last part too
        names = {model, model.rsplit("/", 1)[-1]}
        best = ""
        for known in self.prices:
            if any(name.startswith(known) for name in names) and len(known) > len(best):
                best = known
        return self.prices[best] if best else None

    def cost(self, model: str, usage: Usage, *, cache_write_tokens: int = 0) -> float:
        """USD for one call; ``usage.input_tokens`` counts every input token, cached or not."""
        price = self.lookup(model)
        if price is None:
            if model not in _warned:
                _warned.add(model)
                log.warning(
                    "No price is known for model '%s'; its cost counts as $0 (add it with the "
                    "agent option prices: {%s: {input: .., output: .., cached_input: ..}}).",
                    model,
                    model,
                )
            return 0.0
        cached_price = price.input if price.cached_input is None else price.cached_input
        write_price = price.input if price.cache_write is None else price.cache_write
        cached = min(usage.cached_tokens, usage.input_tokens)
        written = min(cache_write_tokens, usage.input_tokens - cached)
        uncached = usage.input_tokens - cached - written
        total = (
            uncached * price.input
            + cached * cached_price
            + written * write_price
            + usage.output_tokens * price.output
        )
        return total / 1_000_000
