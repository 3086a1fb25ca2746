"""The submit rate limit, one count per person across every web process.

A limit counted in each process's own memory multiplies with the number of processes
(two gunicorn workers let one annotator through twice). The count lives in the cache that
every process shares: Redis in a deployment (``CACHE_URL``), where one Lua script keeps a
sliding log per person — trim what is older than the period, count, add — atomically on
the server and on the server's clock, so requests spread over processes or machines are
counted as one stream. The embedded demo (one process, a local-memory cache) keeps the
same log in its cache under a lock.

The page's submit and the API's submit share the one limit (``SUBMIT_RATE``).
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

_SCRIPT = """
local now = redis.call('TIME')
local t = tonumber(now[1]) + tonumber(now[2]) / 1000000
local period = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t - period)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], t, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(period * 1000))
  return '-1'
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return tostring(tonumber(oldest[2]) + period - t)
"""

_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

_local_lock = threading.Lock()


def parse_rate(rate: str) -> tuple[int, int]:
    """``"120/minute"`` → (120, 60): requests allowed and the period in seconds."""
    count, _, unit = rate.partition("/")
    if not count.strip().isdigit() or not unit or unit.strip()[0] not in _PERIODS:
        raise ValueError(f"a rate is '<count>/<second|minute|hour|day>', not {rate!r}")
    return int(count), _PERIODS[unit.strip()[0]]


def submit_rate() -> tuple[int, int]:
    return parse_rate(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["submit"])


def _redis_client() -> Any | None:
    """The shared cache's Redis client, or None when the cache is not Redis."""
    backend = getattr(cache, "_cache", None)
    get_client = getattr(backend, "get_client", None)
    if get_client is None or "redis" not in type(cache).__module__:
        return None
    return get_client(write=True)


_registered: list[Any] = []


def _script(client: Any) -> Any:
    """The script registered with redis-py once per process: ``EVALSHA``, so the
    script's text is not sent and hashed per request (redis-py loads it again when the
    server has forgotten it, after a restart or ``SCRIPT FLUSH``)."""
    if not _registered:
        _registered.append(client.register_script(_SCRIPT))
    return _registered[0]


def take(key: str, *, limit: int, period: int) -> float | None:
    """Count one request against ``key``. None when it is allowed; otherwise the seconds
    until the oldest counted request leaves the window (the Retry-After)."""
    client = _redis_client()
    if client is not None:
        full_key = cache.make_key(f"rate:{key}")
        answer = _script(client)(
            keys=[full_key], args=[period, limit, uuid.uuid4().hex], client=client
        )
        wait = float(answer.decode() if isinstance(answer, bytes) else answer)
        return None if wait < 0 else max(wait, 0.0)
    now = time.time()
    with _local_lock:
        log = [moment for moment in cache.get(f"rate:{key}", []) if moment > now - period]
        if len(log) >= limit:
            return max(log[0] + period - now, 0.0)
        log.append(now)
        cache.set(f"rate:{key}", log, timeout=period)
        return None


def submit_wait(user_id: int) -> float | None:
    """One submission by ``user_id``: None when allowed, else seconds to wait."""
    limit, period = submit_rate()
    return take(f"submit:{user_id}", limit=limit, period=period)


class SubmitThrottle(BaseThrottle):
    """DRF's face of the shared submit limit (POST on the labels endpoint)."""

    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Any, view: Any) -> bool:
        if not request.user or not request.user.is_authenticated:
            return True  # authentication answers 401 first
        self._wait = submit_wait(request.user.pk)
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait
