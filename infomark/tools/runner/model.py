"""A client for OpenAI-compatible Chat Completions with tool calling, on httpx.

Works with vLLM, llama.cpp's server, Ollama (``/v1``) and hosted APIs. Retries transport
errors, timeouts, 429 and 5xx with exponential backoff; every failure names the URL, the
attempts and what went wrong (HTTP status and a body excerpt, or the timeout that fired).
The API key goes only into the ``Authorization`` header: it is redacted from every error.
No streaming: one JSON response per call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from infomark.kernel.errors import InfomarkError
from infomark.tools.runner.textcalls import extract

__all__ = ["ChatResult", "ModelClient", "ModelError", "RawToolCall", "completions_url"]

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_EXCERPT = 300


class ModelError(InfomarkError):
    """The model endpoint failed (after retries) or answered something unusable."""

    code = "model_error"
    exit_code = 2


@dataclass(frozen=True, slots=True)
class RawToolCall:
    id: str
    name: str
    arguments: str  # JSON text as the model wrote it


@dataclass(frozen=True, slots=True)
class ChatResult:
    content: str
    tool_calls: tuple[RawToolCall, ...]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = ""
    attempts: int = 1
    duration_ms: float = 0.0
    raw_message: Mapping[str, Any] = field(default_factory=dict)
    # What a reply that tried to write a tool call as text got wrong (see textcalls.py).
    text_problems: tuple[str, ...] = ()

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def completions_url(url: str) -> str:
    """``…/v1`` → ``…/v1/chat/completions``; a full endpoint URL is kept."""
    url = url.rstrip("/")
    return url if url.endswith("/chat/completions") else url + "/chat/completions"


def _tool_names(tools: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    names = set()
    for tool in tools:
        fn = tool.get("function")
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            names.add(fn["name"])
    return frozenset(names)


def _with_text_calls(result: ChatResult, tools: Sequence[Mapping[str, Any]]) -> ChatResult:
    """A reply with no structured calls may hold calls written as text (textcalls.py)."""
    if result.tool_calls or not tools or not result.content.strip():
        return result
    found = extract(result.content, _tool_names(tools))
    if not found.calls and not found.problems:
        return result
    calls = tuple(
        RawToolCall(f"text_call_{i}", c.name, c.arguments) for i, c in enumerate(found.calls)
    )
    return replace(
        result,
        content=found.text if calls else result.content,
        tool_calls=calls,
        text_problems=() if calls else found.problems,
    )


def _redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "[redacted]") if secret else text


def _parse(data: Any, url: str) -> ChatResult:
    try:
        choice = data["choices"][0]
        msg = choice["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ModelError(
            f"model response from {url} has no choices[0].message (not a Chat Completions "
            f"answer): {json.dumps(data)[:_EXCERPT]}"
        ) from exc
    if not isinstance(msg, dict):
        raise ModelError(f"model response from {url}: choices[0].message is not an object")
    calls = []
    for i, tc in enumerate(msg.get("tool_calls") or []):
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ModelError(f"model response from {url}: tool_calls[{i}] has no function.name")
        args = fn.get("arguments", "{}")
        if not isinstance(args, str):
            args = json.dumps(args)
        calls.append(RawToolCall(str(tc.get("id") or f"call_{i}"), fn["name"], args))
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    content = msg.get("content")
    return ChatResult(
        content=content if isinstance(content, str) else "",
        tool_calls=tuple(calls),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=str(choice.get("finish_reason") or ""),
        raw_message=msg,
    )


class ModelClient:
    """One endpoint and model; ``chat(messages, tools)`` returns a :class:`ChatResult`."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        retries: int = 2,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not url:
            raise ModelError(
                "no model endpoint: pass --model URL (e.g. http://127.0.0.1:8000/v1) or set "
                "[model] url in the agent file"
            )
        if not url.startswith(("http://", "https://")):
            raise ModelError(f"model URL {url!r} must start with http:// or https://")
        self.url = completions_url(url)
        self.model = model or "default"
        self._key = api_key
        self.timeout = timeout
        self.retries = retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._sleep = sleep
        h = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            h["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(timeout=timeout, headers=h, transport=transport)

    def close(self) -> None:
        self._http.close()

    def chat(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
    ) -> ChatResult:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
            body["tool_choice"] = "auto"
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        attempts = self.retries + 1
        last = ""
        started = time.perf_counter()
        for attempt in range(1, attempts + 1):
            retry_after = 0.0
            try:
                resp = self._http.post(self.url, json=body)
            except httpx.TimeoutException as exc:
                last = f"timed out ({type(exc).__name__}, timeout {self.timeout:g}s)"
            except httpx.TransportError as exc:
                last = f"could not reach the server ({type(exc).__name__}: {exc})"
            else:
                if resp.status_code == 200:
                    try:
                        data = resp.json()
                    except ValueError as exc:
                        raise ModelError(
                            f"model call to {self.url} returned HTTP 200 with a body that is "
                            f"not JSON: {_redact(resp.text[:_EXCERPT], self._key)!r}"
                        ) from exc
                    result = _with_text_calls(_parse(data, self.url), tools)
                    return replace(
                        result,
                        attempts=attempt,
                        duration_ms=(time.perf_counter() - started) * 1000,
                    )
                excerpt = _redact(resp.text[:_EXCERPT], self._key)
                last = f"HTTP {resp.status_code}: {excerpt!r}"
                if resp.status_code not in _RETRY_STATUS:
                    hint = {
                        401: " (check the key in the variable named by api_key_env)",
                        403: " (the key may lack access to this model)",
                        404: " (check --model URL: it should end in /v1, and --model-name)",
                    }.get(resp.status_code, "")
                    raise ModelError(f"model call to {self.url} failed: {last}{hint}")
                try:
                    retry_after = min(float(resp.headers.get("retry-after", "0")), 30.0)
                except ValueError:
                    retry_after = 0.0
            if attempt < attempts:
                self._sleep(max(retry_after, 0.5 * 2 ** (attempt - 1)))
        last = _redact(last, self._key)
        raise ModelError(f"model call to {self.url} failed after {attempts} attempt(s): {last}")
