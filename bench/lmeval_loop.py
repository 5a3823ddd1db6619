"""lm-evaluation-harness's own request loop against our fake server, for ``bench_llm_cost.py --lm-eval``.

Run by an interpreter that has ``lm-eval`` installed (a throwaway venv: it is no dependency of ours):
``PYTHON bench/lmeval_loop.py PORT``. Its ``LocalChatCompletion`` model sends chat requests with its
aiohttp loop (``get_batched_requests``: one session, 64 at once, tenacity retries); the same warm-up and
the same two batch sizes as our margin worker, printed as ``MARGIN [[cpu, wall], [cpu, wall]]``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time

N = (500, 2500)


def main() -> None:
    from lm_eval.models.api_models import JsonChatStr
    from lm_eval.models.openai_completions import LocalChatCompletion

    logging.disable(logging.WARNING)
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
    port = int(sys.argv[1])
    lm = LocalChatCompletion(base_url=f"http://127.0.0.1:{port}/v1/chat/completions", model="fake-model",
                             num_concurrent=64, max_retries=1, tokenized_requests=False, tokenizer_backend=None)
    out = []
    for i, n in enumerate((200, *N)):
        reqs = [JsonChatStr(json.dumps([{"role": "user", "content": f"Pick a number, decision {k}."}]))
                for k in range(n)]
        cpu, start = time.process_time(), time.perf_counter()
        got = asyncio.run(lm.get_batched_requests(reqs, [None] * n, generate=True,
                                                  gen_kwargs={"max_gen_toks": 50, "until": []}))
        if len(got) != n or not all(got):
            raise RuntimeError("lm-eval's loop lost replies")
        if i:
            out.append([time.process_time() - cpu, time.perf_counter() - start])
    print("MARGIN " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
