"""A minimal client of `kbrl serve` (stdlib only: urllib, json; Python >= 3.9).

It implements the client side of the HTTP API in docs/serve.md (machine-readable form:
serve/openapi.json, also served at GET /v1/openapi.json): POST /v1/evaluate with retries on
retryable errors (honouring Retry-After) and on refused connections; large batches as async jobs
(POST /v1/evaluate?async=1, then GET /v1/jobs/{id} until done, DELETE when the client gives up), so
no request waits longer than a proxy or the server allows; and GET /v1/tasks/{id}/prompt. The other
examples (tinker_env.py, verifiers_rubric.py, trl_reward.py, verl_compute_score.py) score with it.
The server is $KBRL_SERVE_URL (default http://127.0.0.1:8750); the bearer token, when the server
wants one, is $KBRL_SERVE_TOKEN. Install it with `pip install ./examples` from the repository
(one module, no dependencies), or put this file beside your trainer.

    python3 kbrl_client.py 19 < answer.txt    # prints the outcome and reward of one text
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
import urllib.error
import urllib.request

DEFAULT_URL = "http://127.0.0.1:8750"
MAX_ITEMS = 1024  # items one request may hold
SERVER_WAIT = 3600.0  # seconds kbrl serve lets a synchronous evaluate wait (--request-timeout's default)
ASYNC_FROM = 64  # batches of at least this many items go as async jobs (a GPU's batch at the server's default)


class KbrlError(Exception):
    """An error answer of the server: {"error": {"code", "message", "field", "retryable"}}."""

    def __init__(self, status: int, code: str, message: str, field: str = "", retryable: bool = False):
        super().__init__(f"HTTP {status} {code}: {message}" + (f" ({field})" if field else ""))
        self.status, self.code, self.field, self.retryable = status, code, field, retryable


def _http_error(e: urllib.error.HTTPError) -> KbrlError:
    try:
        err = json.loads(e.read().decode("utf-8"))["error"]
        return KbrlError(e.code, err.get("code", ""), err.get("message", ""), err.get("field", ""),
                         bool(err.get("retryable", False)))
    except (ValueError, KeyError, TypeError):  # not the server's JSON (a proxy's page, say)
        return KbrlError(e.code, "http_error", str(e.reason), "", e.code in (429, 502, 503, 504))


def _call(method: str, path: str, body=None, url=None, token=None, timeout=600.0, retries=8):
    """One API call; retries retryable errors and refused or dropped connections."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    headers = {"Accept": "application/json", **({} if data is None else {"Content-Type": "application/json"})}
    token = token if token is not None else os.environ.get("KBRL_SERVE_TOKEN")
    if token:
        headers["Authorization"] = "Bearer " + token
    delay = 1.0
    for attempt in range(retries + 1):
        base = (url or os.environ.get("KBRL_SERVE_URL") or DEFAULT_URL).rstrip("/")
        request = urllib.request.Request(base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return json.loads(answer.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            error = _http_error(e)
            if not error.retryable or attempt == retries:
                raise error from None
            wait = e.headers.get("Retry-After")
            wait = float(wait) if wait and wait.strip().isdigit() else delay
        except (urllib.error.URLError, ConnectionError) as e:  # refused, reset, dropped
            reason = getattr(e, "reason", e)
            if not isinstance(reason, ConnectionError) or attempt == retries:
                raise  # a timeout, a bad host name: retrying would not help
            wait = delay
        time.sleep(wait)
        delay = min(2 * delay, 30.0)
    raise AssertionError("unreachable")


def evaluate(items: list[dict], url: str | None = None, token: str | None = None,
             timeout: float = SERVER_WAIT + 60, retries: int = 8, use_async: bool | None = None,
             poll: float = 1.0) -> list[dict]:
    """Evaluates items ({"task_id": 19, "text": "..."} or "candidate" or "config", optionally "mode",
    "tolerance", "inputs", "reward"): one EvalRecord per item, in order; an item the server could not
    read (an unknown task, a bad value) is {"error": {"code", "message", "field"}} in its place
    (reward_of gives it the default), the others evaluated. Requests of more than 1,024
    items are split. A batch of ASYNC_FROM items or more (or any, with use_async=True) goes as an
    async job polled every `poll` seconds (growing to 10); `timeout` bounds the whole wait, after
    which the job is deleted (its items not yet on a GPU dropped) and TimeoutError raised. A
    synchronous request waits up to `timeout` too: a minute more than the server itself waits."""
    records: list[dict] = []
    deadline = time.monotonic() + timeout
    for start in range(0, len(items), MAX_ITEMS):
        chunk = items[start:start + MAX_ITEMS]
        if use_async if use_async is not None else len(chunk) >= ASYNC_FROM:
            got = _evaluate_async(chunk, url, token, deadline, retries, poll)
        else:
            left = max(1.0, deadline - time.monotonic())
            got = _call("POST", "/v1/evaluate", {"items": chunk}, url, token, left, retries).get("records", [])
        if len(got) != len(chunk):
            raise KbrlError(200, "bad_answer", f"{len(chunk)} items but {len(got)} records")
        records.extend(got)
    return records


def _evaluate_async(items: list[dict], url, token, deadline: float, retries: int, poll: float) -> list[dict]:
    accepted = _call("POST", "/v1/evaluate?async=1", {"items": items}, url, token, 60.0, retries)
    path = accepted["status_url"]
    job: dict = {}
    try:
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {accepted['job']}: {job.get('done', 0)} of {len(items)} items done when the "
                                   "client's timeout ran out (deleted: the items not yet on a GPU are dropped)")
            job = _call("GET", path, None, url, token, 60.0, retries)
            if job["status"] == "done":
                return job.get("records", [])
            if job["status"] == "failed":
                err = job.get("error", {})
                raise KbrlError(200, err.get("code", "failed"), err.get("message", "the job failed"),
                                err.get("field", ""), bool(err.get("retryable", False)))
            time.sleep(max(0.0, min(poll, deadline - time.monotonic())))
            poll = min(poll * 1.5, 10.0)
    except BaseException:  # a timeout, an interrupt: the server need not evaluate what no one awaits
        try:
            _call("DELETE", path, None, url, token, 10.0, 0)
        except Exception:  # noqa: BLE001 - the job may be gone already; the first error matters
            pass
        raise


def reward_of(record: dict, default: float = 0.0) -> float:
    """The record's reward as a float; `default` when it is missing or not finite ("nan", "inf"), or
    the item's answer is an error."""
    try:
        value = float(record.get("reward", default))
    except (TypeError, ValueError):
        return default
    return value if math.isfinite(value) else default


def outcome_metrics(record: dict, prefix: str = "kbrl_") -> dict:
    """A record's outcome as the metrics the examples log: {prefix + "ok", prefix + "compiled",
    prefix + "format_error"}, each 1.0 or 0.0 (an item the server could not read: all 0.0)."""
    outcome = record.get("outcome")
    return {prefix + "ok": float(outcome == "ok"),
            prefix + "compiled": float(bool(record.get("compile", {}).get("ok"))),
            prefix + "format_error": float(outcome == "format_error")}


def prompt(task_id: int, url: str | None = None, style: str = "body", token: str | None = None,
           timeout: float = 60.0) -> dict:
    """GET /v1/tasks/{id}/prompt: {"task_id", "version", "system", "user"}."""
    return _call("GET", f"/v1/tasks/{int(task_id)}/prompt?style={style}", None, url, token, timeout)


def tasks(url: str | None = None, token: str | None = None, split: str | None = None,
          timeout: float = 60.0) -> list[dict]:
    """GET /v1/tasks: [{"id", "name", "family", "splits"}], those of `split` ("train", "eval", ...) only
    when given."""
    listed = _call("GET", "/v1/tasks", None, url, token, timeout).get("tasks", [])
    return [t for t in listed if split is None or split in t.get("splits", [])]


def prompt_messages(p: dict) -> list[dict]:
    """A prompt as chat messages (no system message when its system part is empty)."""
    messages = [{"role": "system", "content": p["system"]}] if p.get("system") else []
    return messages + [{"role": "user", "content": p["user"]}]


def completion_text(completion) -> str:
    """The text of a completion: a string, or chat messages (the last assistant message's content;
    a content given as parts is joined from its text parts)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    replies = [m for m in completion if m.get("role", "assistant") == "assistant"] or list(completion)
    content = replies[-1].get("content", "") if replies else ""
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: kbrl_client.py TASK_ID < text")
    [record] = evaluate([{"task_id": int(sys.argv[1]), "text": sys.stdin.read()}])
    print(json.dumps({"outcome": record["outcome"], "detail": record.get("outcome_detail", ""),
                      "reward": reward_of(record), "speedup": record.get("speedup")}))
