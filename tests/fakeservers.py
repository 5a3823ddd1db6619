"""A fake LLM server on 127.0.0.1 that speaks four wire protocols, for tests and the benchmark.

One aiohttp app answers:
- OpenAI chat completions: ``POST /v1/chat/completions``
- Anthropic messages: ``POST /v1/messages``
- Gemini generateContent: ``POST /{version}/models/{model}:generateContent``
- the GLM API (zai-sdk): ``POST /api/paas/v4/chat/completions``

Tests queue *actions* (an error status, a malformed body, a delay, a dropped connection) that the next
requests consume in order; with the queue empty every request gets a normal reply after ``latency``
seconds. Every request is recorded with its arrival time, path, query string, headers and JSON body, and the server
tracks the most requests it ever had in flight, so tests can check limits from the server's side.

``python tests/fakeservers.py --latency 0.1`` runs it standalone (prints ``PORT <n>``) for the benchmark;
``--thinking`` makes it the stand-in reasoning model of the tutorial (``ThinkingServer``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Action:
    """What to do with one request. ``kind``: ok | status | raw | drop."""

    kind: str = "ok"
    status: int = 200
    body: Any = None  # status: JSON error body (None: the protocol's usual one); raw: bytes or str
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    text: str | None = None  # ok: the reply text (None: the server's reply function)
    content_type: str = "application/json"
    cut: bool = False  # ok: the reply stopped at the token limit (each protocol's own finish reason)


def ok(text: str | None = None, delay: float = 0.0, cut: bool = False) -> Action:
    return Action("ok", text=text, delay=delay, cut=cut)


def status(code: int, headers: dict[str, str] | None = None, body: Any = None, delay: float = 0.0) -> Action:
    return Action("status", status=code, headers=headers or {}, body=body, delay=delay)


def raw(body: bytes | str, content_type: str = "application/json", code: int = 200) -> Action:
    return Action("raw", status=code, body=body, content_type=content_type)


def drop() -> Action:
    return Action("drop")


@dataclass
class Seen:
    """One request as the server saw it."""

    t: float
    protocol: str
    path: str
    headers: dict[str, str]
    body: Any
    query: str = ""  # the query string exactly as sent (``api-version=2024-06-01``)


def _words(s: str) -> int:
    return len(s.split())


def default_reply(protocol: str, body: Any) -> str:
    return '{"answer": 7}'


class FakeLLMServer:
    """The aiohttp app plus its scripted behaviour. Start it in a thread or run it as a process."""

    def __init__(self, latency: float = 0.0, reply: Callable[[str, Any], str] = default_reply,
                 record: bool = True) -> None:
        self.latency = latency
        self.reply = reply
        self.record = record
        self.actions: deque[Action] = deque()
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.port = 0
        self._epoch = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------------------------
    def script(self, *actions: Action) -> None:
        with self._lock:
            self.actions.extend(actions)

    def reset(self) -> None:
        with self._lock:
            self.actions.clear()
            self.seen.clear()
            self.in_flight = 0
            self.max_in_flight = 0
            self._epoch += 1
        self.latency = 0.0
        self.reply = default_reply

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def count(self, protocol: str | None = None) -> int:
        return sum(1 for s in self.seen if protocol is None or s.protocol == protocol)

    # -- protocol bodies ---------------------------------------------------------------------------
    @staticmethod
    def _prompt_tokens(protocol: str, body: Any) -> int:
        try:
            if protocol == "anthropic":
                sys = body.get("system") or ""
                sys = sys if isinstance(sys, str) else " ".join(b.get("text", "") for b in sys)
                msgs = body["messages"]
                return _words(sys) + sum(
                    _words(m["content"] if isinstance(m["content"], str)
                           else " ".join(b.get("text", "") for b in m["content"])) for m in msgs)
            if protocol == "google":
                parts = [p for c in body.get("contents", []) for p in c.get("parts", [])]
                sys = body.get("systemInstruction", {}).get("parts", [])
                return sum(_words(p.get("text", "")) for p in parts + sys)
            return sum(_words(m.get("content") or "") for m in body["messages"])
        except (KeyError, TypeError, AttributeError):
            return 0

    def _ok_body(self, protocol: str, body: Any, text: str, model: str, cut: bool = False) -> dict[str, Any]:
        p, c = self._prompt_tokens(protocol, body), _words(text)
        if protocol == "anthropic":
            return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": text}], "stop_reason": "max_tokens" if cut else "end_turn",
                    "stop_sequence": None, "usage": {"input_tokens": p, "output_tokens": c}}
        if protocol == "google":
            return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                    "finishReason": "MAX_TOKENS" if cut else "STOP", "index": 0}],
                    "usageMetadata": {"promptTokenCount": p, "candidatesTokenCount": c,
                                      "totalTokenCount": p + c},
                    "modelVersion": model}
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "length" if cut else "stop"}],
                "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}}

    @staticmethod
    def _error_body(protocol: str, code: int) -> dict[str, Any]:
        msg = f"fake error {code}"
        if protocol == "anthropic":
            kind = {429: "rate_limit_error", 401: "authentication_error", 400: "invalid_request_error",
                    529: "overloaded_error"}.get(code, "api_error")
            return {"type": "error", "error": {"type": kind, "message": msg}}
        if protocol == "google":
            st = {429: "RESOURCE_EXHAUSTED", 400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED",
                  500: "INTERNAL", 503: "UNAVAILABLE"}.get(code, "UNKNOWN")
            return {"error": {"code": code, "message": msg, "status": st}}
        if protocol == "zhipuai":
            return {"error": {"code": str(1000 + code), "message": msg}}
        return {"error": {"message": msg, "type": "fake", "param": None, "code": str(code)}}

    # -- the handler -------------------------------------------------------------------------------
    async def _handle(self, request: web.Request, protocol: str, model: str | None = None) -> web.StreamResponse:
        t = time.monotonic()
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        with self._lock:
            if self.record:
                self.seen.append(Seen(t, protocol, request.path, dict(request.headers), body,
                                      request.query_string))
            action = self.actions.popleft() if self.actions else Action()
            epoch = self._epoch
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            delay = action.delay or (self.latency if action.kind == "ok" else 0.0)
            if delay:
                await asyncio.sleep(delay)
            if action.kind == "drop":
                assert request.transport is not None
                request.transport.close()
                return web.Response(status=500)
            if action.kind == "raw":
                data = action.body.encode() if isinstance(action.body, str) else action.body
                return web.Response(status=action.status, body=data, content_type=action.content_type)
            if action.kind == "status":
                err = action.body if action.body is not None else self._error_body(protocol, action.status)
                if callable(err):
                    err = err(request)
                return web.json_response(err, status=action.status, headers=action.headers)
            text = action.text if action.text is not None else self.reply(protocol, body)
            mdl = model or (body or {}).get("model") or "fake-model"
            return web.json_response(self._ok_body(protocol, body or {}, text, mdl, action.cut))
        finally:
            with self._lock:
                if epoch == self._epoch:  # a slow handler left over from before reset() does not count
                    self.in_flight -= 1

    def app(self) -> web.Application:
        async def openai_h(r: web.Request) -> web.StreamResponse:
            return await self._handle(r, "openai")

        async def anthropic_h(r: web.Request) -> web.StreamResponse:
            return await self._handle(r, "anthropic")

        async def zhipu_h(r: web.Request) -> web.StreamResponse:
            return await self._handle(r, "zhipuai")

        async def google_h(r: web.Request) -> web.StreamResponse:
            model, _, method = r.match_info["rest"].partition(":")
            if method != "generateContent":
                return web.json_response({"error": {"code": 404, "message": "no such method"}}, status=404)
            return await self._handle(r, "google", model)

        app = web.Application()
        app.router.add_post("/v1/chat/completions", openai_h)
        app.router.add_post("/v1/messages", anthropic_h)
        app.router.add_post("/api/paas/v4/chat/completions", zhipu_h)
        app.router.add_post("/{version}/models/{rest}", google_h)
        return app

    # -- running -----------------------------------------------------------------------------------
    async def start_async(self, port: int = 0) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None, handler_cancellation=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, backlog=1024)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def start(self) -> FakeLLMServer:
        """Serve from a daemon thread with its own event loop (tests)."""
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            loop.run_until_complete(self.start_async())
            ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="fake-llm-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake server did not start")
        return self

    async def _close(self) -> None:
        """Cancel what is still in flight (a scripted delay may outlast its test; left pending, it is
        destroyed with the loop and warns), then close the server."""
        me = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not me]
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        assert self._runner is not None
        await self._runner.cleanup()

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return
        if self._runner is not None:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._close(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        self._loop = None


# A stand-in reasoning model's play per reasoning effort: (reasoning words, the answer it centres on). The
# harder it thinks, the closer its beauty-contest choice lies to the equilibrium (0): the answer to "does more
# effort bring a model closer to the equilibrium?" is yes by construction, so a study can be checked end to end.
THINKING = {"none": (0, 70), "minimal": (5, 60), "low": (10, 50), "medium": (30, 30), "high": (90, 10),
            "xhigh": (150, 5), "max": (200, 2)}


def _jitter(body: Any, spread: int) -> int:
    """A whole number in [-spread, spread] fixed by the prompt (the same prompt, the same number, in every
    process: sha256, not Python's salted hash), so replies vary from session to session and stay reproducible."""
    if not spread:
        return 0
    text = json.dumps((body or {}).get("messages"), sort_keys=True, ensure_ascii=False)
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16) % (2 * spread + 1) - spread


class ThinkingServer(FakeLLMServer):
    """A stand-in reasoning model that plays differently by effort. A chat completion that asks for a
    ``reasoning_effort`` is answered from :data:`THINKING` (the answer plus a jitter of up to ``spread`` fixed
    by the prompt), with its reasoning as a reasoning parser gives it: ``reasoning_content`` beside the answer
    (ending in a draft ``{"answer": answer + 40}`` that must never be taken for the move), counted in
    ``completion_tokens_details.reasoning_tokens`` (one token per word). A request without an effort gets the
    plain server's reply, so the server can stand behind every other example too."""

    def __init__(self, *, spread: int = 0, efforts: dict[str, tuple[int, int]] | None = None,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.spread = spread
        self.efforts = THINKING if efforts is None else efforts

    def _ok_body(self, protocol: str, body: Any, text: str, model: str, cut: bool = False) -> dict[str, Any]:
        out = super()._ok_body(protocol, body, text, model, cut)
        effort = body.get("reasoning_effort") if protocol == "openai" and isinstance(body, dict) else None
        if effort not in self.efforts:
            return out
        words, centre = self.efforts[effort]
        answer = min(100, max(0, centre + _jitter(body, self.spread)))
        message = out["choices"][0]["message"]
        message["content"] = json.dumps({"answer": answer})
        if words:  # effort "none": thinking off, no reasoning at all
            message["reasoning_content"] = " ".join(["hmm"] * (words - 1) + [f'{{"answer": {answer + 40}}}'])
        out["usage"]["completion_tokens"] = words + 3
        out["usage"]["completion_tokens_details"] = {"reasoning_tokens": words}
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description="fake LLM server for benchmarks")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--thinking", action="store_true",
                    help="a stand-in reasoning model that plays closer to the equilibrium the harder it thinks "
                         "(reasoning_effort), as in the tutorial docs/tutorial/reasoning-effort.md")
    args = ap.parse_args()
    server = (ThinkingServer(spread=10, latency=args.latency, record=False) if args.thinking
              else FakeLLMServer(latency=args.latency, record=False))

    async def serve() -> None:
        await server.start_async(args.port)
        print(f"PORT {server.port}", flush=True)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
