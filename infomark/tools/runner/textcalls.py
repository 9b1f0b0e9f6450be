"""Tool calls that a model wrote as text instead of structured ``tool_calls``.

Small local instruct models (Qwen2.5-Coder through llama.cpp's server, for one) often answer a
request that offered tools with the call written into the reply: a ```json fence, Hermes/Qwen
``<tool_call>…</tool_call>`` tags, or a bare JSON object. The runner would read that reply as
a final answer and the agent would stop before it acted. :func:`extract` finds such calls.

What counts as a call is narrow on purpose: a JSON object (or a list of them) whose ``name``
(or ``tool`` / ``function`` / ``function.name``) is one of the tools offered, with its
arguments under ``arguments``, ``parameters``, ``args`` or ``input`` (an object, or JSON text
of one). Anything else in a fence is the model's prose and stays prose. A ``<tool_call>`` tag
or a fenced object that names a tool but cannot be read is a *problem*: the runner tells the
model what is wrong (JSON's own message with line and column) instead of ending the run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass

__all__ = ["TextCall", "TextCalls", "extract", "text_call_help"]

_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "parameters", "args", "input")
_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_FENCE = "```"
#: a fence closes only where a line starts with it (after up to three spaces, as in
#: CommonMark): three backticks inside the JSON (in a string: ``{"```": 1}``) do not close it
_CLOSING = re.compile(r"^ {0,3}```", re.MULTILINE)
_FENCE_LANGS = frozenset({"", "json", "tool_call", "tool", "javascript", "js"})


@dataclass(frozen=True, slots=True)
class TextCall:
    """One call found in the text: the tool's name and its arguments as JSON text."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class TextCalls:
    """What :func:`extract` found: the calls, the text without them, and what it could not read."""

    calls: tuple[TextCall, ...]
    text: str
    problems: tuple[str, ...]


def _where(exc: json.JSONDecodeError) -> str:
    return f"line {exc.lineno}, column {exc.colno}: {exc.msg}"


def _as_call(obj: object, tools: Collection[str]) -> TextCall | str | None:
    """A call, a problem (it names a tool but is not a usable call), or None (not a call)."""
    if not isinstance(obj, dict):
        return None
    name: object = None
    for key in _NAME_KEYS:
        value = obj.get(key)
        if isinstance(value, dict):  # {"function": {"name": …, "arguments": …}}
            inner = _as_call(value, tools)
            if inner is not None:
                return inner
        elif isinstance(value, str):
            name = value
            break
    if not isinstance(name, str):
        return None
    if name not in tools:
        if any(k in obj for k in _ARG_KEYS):
            return f"unknown tool {name!r}; the tools are: {', '.join(sorted(tools))}"
        return None
    args: object = {}
    for key in _ARG_KEYS:
        if key in obj:
            args = obj[key]
            break
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            return f"the arguments of {name!r} are not JSON ({_where(exc)})"
    if not isinstance(args, dict):
        return f"the arguments of {name!r} must be a JSON object, not {type(args).__name__}"
    return TextCall(name, json.dumps(args, ensure_ascii=False))


def _calls_in(
    doc: str, tools: Collection[str], *, tagged: bool
) -> tuple[list[TextCall], list[str]]:
    """Calls in one JSON document (an object, or a list of objects)."""
    try:
        value = json.loads(doc)
    except json.JSONDecodeError as exc:
        if tagged or any(f'"{t}"' in doc for t in tools):
            return [], [f"a tool call could not be read as JSON ({_where(exc)})"]
        return [], []
    items = value if isinstance(value, list) else [value]
    calls: list[TextCall] = []
    problems: list[str] = []
    for item in items:
        got = _as_call(item, tools)
        if isinstance(got, TextCall):
            calls.append(got)
        elif isinstance(got, str):
            problems.append(got)
        elif tagged:
            problems.append('a <tool_call> must hold {"name": TOOL, "arguments": {…}}')
    return calls, problems


def _tags(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, body)`` of each ``<tool_call>`` span; an unclosed last tag runs to the end."""
    at = 0
    while (start := text.find(_OPEN, at)) != -1:
        body_at = start + len(_OPEN)
        end = _tag_end(text, body_at)
        stop = len(text) if end == -1 else end + len(_CLOSE)
        yield start, stop, text[body_at : len(text) if end == -1 else end]
        at = stop


def _tag_end(text: str, body_at: int) -> int:
    """Where the tag opened before ``body_at`` closes: the first ``</tool_call>`` before which
    the body is JSON (one inside a JSON string, ``{"command": "echo </tool_call>"}``, does not
    close it), else the first one; -1 when there is none."""
    first = end = text.find(_CLOSE, body_at)
    while end != -1:
        try:
            json.loads(text[body_at:end])
        except ValueError:
            end = text.find(_CLOSE, end + len(_CLOSE))
            continue
        return end
    return first


def _fences(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, body)`` of each fenced block whose language may hold JSON."""
    at = 0
    while (start := text.find(_FENCE, at)) != -1:
        line_end = text.find("\n", start)
        if line_end == -1:
            return
        lang = text[start + len(_FENCE) : line_end].strip().lower()
        closing = _CLOSING.search(text, line_end + 1)
        close = -1 if closing is None else closing.end() - len(_FENCE)
        stop = len(text) if close == -1 else close + len(_FENCE)
        if lang in _FENCE_LANGS:
            yield start, stop, text[line_end + 1 : len(text) if close == -1 else close]
        at = stop


def extract(text: str, tools: Collection[str]) -> TextCalls:
    """The tool calls written in ``text`` for the offered ``tools`` (see the module docstring).

    Fences are read first, then tags that do not overlap a fence that held a call (a
    ``<tool_call>`` written inside a fenced call's JSON is text of that call, and a tag
    wrapped around a fenced call is its wrapping); when neither holds a call, the whole reply
    may be one bare JSON call (then a tag that only its text held is no problem). Never
    raises: what cannot be read is reported in ``problems``.
    """
    calls: list[TextCall] = []
    problems: list[str] = []
    spans: list[tuple[int, int]] = []
    for reader, tagged in ((_fences, False), (_tags, True)):
        for start, stop, body in reader(text):
            if any(s < stop and start < e for s, e in spans):
                continue
            found, wrong = _calls_in(body.strip(), tools, tagged=tagged)
            if found or wrong:
                spans.append((start, stop))
            calls += found
            problems += wrong
    if not calls:  # the whole reply one JSON call: a tag seen inside it was text of the call
        stripped = text.strip()
        if stripped.startswith(("{", "[")):
            found, wrong = _calls_in(stripped, tools, tagged=False)
            if found:
                return TextCalls(tuple(found), "", tuple(wrong))
            if not problems:
                problems += wrong
    rest = text
    for start, stop in sorted(spans, reverse=True):
        rest = rest[:start] + rest[stop:]
    while "\n\n\n" in rest:  # a removed block leaves at most one blank line
        rest = rest.replace("\n\n\n", "\n\n")
    return TextCalls(tuple(calls), rest.strip(), tuple(problems))


def text_call_help(problems: Collection[str]) -> str:
    """What the runner tells a model whose tool call, written as text, could not be read."""
    lines = "\n".join(f"- {p}" for p in problems)
    return (
        "[infomark runner] your reply looked like a tool call, but nothing ran:\n"
        f"{lines}\n"
        "Call a tool through the tools API, or write exactly one JSON object in a ```json "
        'fence: {"name": "<tool>", "arguments": {…}}.'
    )
