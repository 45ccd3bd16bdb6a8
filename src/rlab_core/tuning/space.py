"""A candidate's tunable parameters: declared in its source, one line each.

A parameter is declared on the line that sets it, with a trailing ``# tune:`` comment::

    LEARNING_RATE = 0.05  # tune: float 0.005..0.3 log
    num_leaves=31,  # tune: int 8..255 log          (a keyword inside a call: dict(...))
    "dropout": 0.1,  # tune: float 0.0..0.5          (an entry of a dict literal)
    AGG = "sum"  # tune: choice "sum"|"mean"|"max"

The declaration lives in the code the agents edit, so a structural move may add, drop or
re-range parameters, and a tuning trial's diff shows exactly the values it sets. The
value is a Python literal; the spec is ``float LOW..HIGH [log]``, ``int LOW..HIGH [log]``
or ``choice A|B|...``. Names are unique within a candidate.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rlab_core.errors import RlabUserError
from rlab_core.records import Edit, Record

__all__ = [
    "TunableParam",
    "TunableSpecError",
    "declared_params",
    "format_value",
    "seed_setting",
    "setting_edits",
]

_MARK = "# tune:"
# NAME = VALUE | name=VALUE, | "name": VALUE,   then the tune comment
_LINE = re.compile(
    r"""^(?P<indent>\s*)
        (?:(?P<assign>[A-Za-z_]\w*)\s*=(?!=)\s*
          |(?P<quote>["'])(?P<key>[A-Za-z_]\w*)(?P=quote)\s*:\s*)
        (?P<value>.*?)(?P<comma>,?)\s*\#\s*tune:\s*(?P<spec>.*?)\s*$""",
    re.VERBOSE,
)
_RANGE = re.compile(
    r"^(?P<kind>float|int)\s+(?P<low>\S+?)\s*\.\.\s*(?P<high>\S+?)(?:\s+(?P<log>log))?$"
)


class TunableSpecError(RlabUserError):
    """A ``# tune:`` declaration that cannot be read; names the file, the line and why."""


class TunableParam(Record):
    """One declared parameter: where it is set, its range and its value now."""

    name: str
    file: str
    line: str = Field(description="The whole source line that sets it (unique in its file).")
    kind: Literal["float", "int", "choice"]
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: list[Any] | None = None
    current: Any = Field(description="The value the source sets now.")

    def describe(self) -> str:
        """The range in words: ``float 0.005..0.3 log``, ``choice 'sum'|'mean'``."""
        if self.kind == "choice":
            return "choice " + "|".join(repr(c) for c in self.choices or [])
        return f"{self.kind} {self.low:g}..{self.high:g}" + (" log" if self.log else "")


def _literal(text: str, where: str) -> Any:
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError) as exc:
        raise TunableSpecError(
            f"{where}: {text.strip()!r} is not a Python literal; a tunable parameter's value "
            "and choices must be numbers, strings, True, False or None"
        ) from exc
    if not isinstance(value, int | float | str | bool | type(None)):
        raise TunableSpecError(f"{where}: {text.strip()!r} is not a number, string or bool")
    return value


def _parse_line(file: str, number: int, line: str) -> TunableParam | None:
    if _MARK not in line or line.lstrip().startswith("#"):
        return None  # a comment line that merely mentions the marker declares nothing
    where = f"{file}:{number}"
    match = _LINE.match(line)
    if match is None:
        raise TunableSpecError(
            f"{where}: a '# tune:' comment must follow 'NAME = value', 'name=value,' or "
            "'\"name\": value,' on one line"
        )
    name = match["assign"] or match["key"]
    current = _literal(match["value"], where)
    spec = match["spec"]
    if spec.startswith("choice"):
        choices = [_literal(c, where) for c in spec.removeprefix("choice").split("|")]
        if len(choices) < 2 or current not in choices:
            raise TunableSpecError(
                f"{where}: {name} = {current!r} must be one of at least two choices ({spec})"
            )
        return TunableParam(
            name=name, file=file, line=line, kind="choice", choices=choices, current=current
        )
    found = _RANGE.match(spec)
    if found is None:
        raise TunableSpecError(
            f"{where}: cannot read '# tune: {spec}'; write 'float LOW..HIGH [log]', "
            "'int LOW..HIGH [log]' or 'choice A|B|C'"
        )
    kind, log = found["kind"], found["log"] is not None
    low, high = float(_literal(found["low"], where)), float(_literal(found["high"], where))
    if isinstance(current, bool) or not isinstance(current, int | float):
        raise TunableSpecError(f"{where}: {name} = {current!r} is not a number ({spec})")
    if kind == "int" and (not isinstance(current, int) or low != int(low) or high != int(high)):
        raise TunableSpecError(f"{where}: an int parameter needs an int value and int bounds")
    if not (low < high) or (log and low <= 0) or not (low <= current <= high):
        raise TunableSpecError(
            f"{where}: {name} = {current!r} needs LOW < HIGH, LOW <= value <= HIGH "
            f"and LOW > 0 on a log scale ({spec})"
        )
    return TunableParam(
        name=name, file=file, line=line, kind=kind, low=low, high=high, log=log, current=current
    )


def declared_params(source: dict[str, str]) -> list[TunableParam]:
    """The parameters declared in ``source`` (relative path -> text), in file and line order.

    Raises :class:`TunableSpecError` for a declaration that cannot be read, a name declared
    twice or a declaring line that occurs twice in its file (its edit would be ambiguous).
    """
    params: list[TunableParam] = []
    seen: dict[str, str] = {}
    for file in sorted(source):
        if not file.endswith(".py") or _MARK not in source[file]:
            continue
        lines = source[file].splitlines()
        for number, line in enumerate(lines, start=1):
            param = _parse_line(file, number, line)
            if param is None:
                continue
            if param.name in seen:
                raise TunableSpecError(
                    f"{file}:{number}: the tunable parameter {param.name} is declared twice "
                    f"(also at {seen[param.name]}); rename one"
                )
            # its edit's anchor is the whole line: it must not occur again, even inside
            # a longer line (``LR = 0.1`` inside ``OLD_LR = 0.1``)
            if source[file].count(line) > 1:
                raise TunableSpecError(
                    f"{file}:{number}: the line declaring {param.name} occurs twice in the "
                    "file (perhaps inside a longer line); make it unique"
                )
            seen[param.name] = f"{file}:{number}"
            params.append(param)
    return params


def format_value(param: TunableParam, value: Any) -> str:
    """``value`` as the source literal a trial writes: floats to 4 significant digits."""
    if param.kind == "int":
        return str(round(float(value)))
    if param.kind == "float":
        value = float(value)
        if value == 0 or not math.isfinite(value):
            return repr(value)
        text = f"{value:.4g}"
        # rounding must not leave the range: a bound with more digits is written as is
        if param.low is not None and float(text) < param.low:
            return repr(float(param.low))
        if param.high is not None and float(text) > param.high:
            return repr(float(param.high))
        return text if any(c in text for c in ".e") else text + ".0"
    return repr(value)


def setting_edits(params: list[TunableParam], values: dict[str, Any]) -> list[Edit]:
    """The edits that set ``values`` (name -> value): one per parameter whose value changes.

    Each edit replaces the parameter's whole declaring line, keeping its name, its comma and
    its ``# tune:`` range, so a later trial can set it again.
    """
    edits: list[Edit] = []
    for param in params:
        if param.name not in values:
            continue
        new = format_value(param, values[param.name])
        if ast.literal_eval(new) == param.current and type(ast.literal_eval(new)) is type(
            param.current
        ):
            continue  # the value the source already sets: no edit
        match = _LINE.match(param.line)
        assert match is not None  # it was parsed from this line
        start, end = match.span("value")
        edits.append(
            Edit(
                file=param.file,
                anchor=param.line,
                replacement=param.line[:start] + new + param.line[end:],
            )
        )
    return edits


def seed_setting(seed_dir: Path, values: dict[str, Any]) -> list[Edit]:
    """The edits that move a seed folder's declared parameters to ``values``, for a playbook.

    A playbook move that sets a tunable value must rewrite its declaration line, as a
    tuning trial does: then it applies only while the line holds the seed's value and never
    overrides a tuned one. Raises ``ValueError`` for a name the seed does not declare or a
    value it already has (a move that would change nothing).
    """
    source = {p.name: p.read_text() for p in sorted(Path(seed_dir).glob("*.py"))}
    edits = setting_edits(declared_params(source), values)
    if len(edits) != len(values):
        raise ValueError(f"the seed in {seed_dir} cannot be moved to {values}")
    return edits
