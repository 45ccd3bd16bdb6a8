"""The reply contract of LLM agents: one JSON object, validated with pydantic.

A reply is either a code change (:class:`AgentReply`) or, where the parent declares tunable
parameters, a request for a tuning burst (:class:`TuneRequest`, ``{"tune": N}``).
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rlab_core.api import Edit


class AgentReply(BaseModel):
    """``{hypothesis, rationale, edits: [{file, anchor, replacement}]}``."""

    model_config = ConfigDict(extra="ignore")

    hypothesis: str = Field(min_length=3, description="One sentence.")
    rationale: str = ""
    edits: list[Edit] = Field(min_length=1)


#: The most trials one tuning burst may ask for.
MAX_BURST = 20

#: How a tuning request reads, for error messages.
TUNE_FORM = f'{{"tune": N}} with N a whole number from 1 to {MAX_BURST}'


class TuneRequest(BaseModel):
    """``{"tune": N}``: run a burst of N tuning trials on the parent's declared parameters."""

    model_config = ConfigDict(extra="ignore")

    tune: int = Field(strict=True, ge=1, le=MAX_BURST, description="Trials in the burst.")
    rationale: str = ""


class ReplyError(ValueError):
    """The reply is not one valid JSON object of the contract; the message says why."""


_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def _first_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text`` (string-aware), or None."""
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for index in range(start, len(text)):
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return text[start : index + 1]
        start = text.find("{", start + 1)
    return None


def parse_reply(text: str, *, allow_tune: bool = True) -> AgentReply | TuneRequest:
    """Parse a model's reply; tolerate code fences and prose around the object.

    An object with a ``tune`` key is a tuning request (refused with ``allow_tune=False``,
    as in a repair, which must change code).
    """
    if "{" not in text:
        raise ReplyError("no JSON object found in the reply")
    candidates = [text.strip()]
    fenced = _FENCE.search(text)
    if fenced:
        candidates.append(fenced.group(1))
    found = _first_object(text)
    if found:
        candidates.append(found)
    last_error = "no JSON object found in the reply"
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError as exc:
            last_error = f"invalid JSON: {exc}"
            continue
        if not isinstance(data, dict):
            last_error = "the reply must be a JSON object"
            continue
        if "tune" in data:
            return _tune_request(data, allow_tune)
        try:
            return AgentReply.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(reply)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ReplyError(f"the reply does not match the contract: {problems}") from None
    raise ReplyError(last_error)


def _tune_request(data: dict, allow_tune: bool) -> TuneRequest:
    if not allow_tune:
        raise ReplyError(
            'a tuning request ({"tune": N}) cannot repair a failed node; reply with edits '
            "that fix the error"
        )
    if "edits" in data:
        raise ReplyError(
            'a reply either asks for a tuning burst ({"tune": N}) or makes edits, not both'
        )
    try:
        return TuneRequest.model_validate(data)
    except ValidationError:
        raise ReplyError(
            f"the tuning request {json.dumps(data)[:200]} is invalid: write {TUNE_FORM}"
        ) from None
