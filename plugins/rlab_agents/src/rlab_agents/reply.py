"""The reply contract of LLM agents: one JSON object, validated with pydantic."""

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


def parse_reply(text: str) -> AgentReply:
    """Parse a model's reply; tolerate code fences and prose around the object."""
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
        try:
            return AgentReply.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(reply)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ReplyError(f"the reply does not match the contract: {problems}") from None
    raise ReplyError(last_error)
