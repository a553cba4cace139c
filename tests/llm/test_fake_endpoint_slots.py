"""The fake endpoint's batch model (bench/bench_throughput.py rests on it): N slots, queueing, seeded jitter."""

from __future__ import annotations

import http.client
import json
import math
import threading
import time
from urllib.parse import urlsplit

import pytest

from amemgym.testing.fake_endpoint import FakeEndpoint


def _post_all(ep: FakeEndpoint, n: int) -> None:
    """``n`` chat requests at once, each on its own connection."""
    url = urlsplit(ep.base_url)
    body = json.dumps({"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]})

    def one() -> None:
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        assert conn.getresponse().status == 200
        conn.close()

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _spans(ep: FakeEndpoint, n: int) -> list[tuple[float, float, float]]:
    """The timeline once all ``n`` spans are in: a span lands as its handler frees the slot, just after the
    client has its reply."""
    for _ in range(500):
        spans = ep.timeline()
        if len(spans) >= n:
            return spans
        time.sleep(0.01)
    return ep.timeline()


def test_slots_cap_the_requests_served_at_once_and_queue_the_rest() -> None:
    with FakeEndpoint(latency=0.05, slots=2) as ep:
        _post_all(ep, 8)
        stats = ep.stats()
    assert stats["served"] == 8
    assert stats["max_serving"] == 2  # never more than the slots, and the queue did fill them
    assert stats["max_in_flight"] > 2  # the others were held in the queue, not refused
    assert stats["service_seconds"] == pytest.approx(8 * 0.05)


def test_the_timeline_places_every_slotted_request() -> None:
    """bench_throughput.py splits wall time by these spans: each request's arrival, slot and end."""
    with FakeEndpoint(latency=0.05, slots=2) as ep:
        _post_all(ep, 6)
        spans = _spans(ep, 6)
    assert len(spans) == 6
    assert all(arrived <= started and ended - started >= 0.05 for arrived, started, ended in spans)
    # At no moment were more than the 2 slots held, and the queue made some requests wait for one.
    events = sorted([(s, 1) for _, s, _ in spans] + [(e, -1) for _, _, e in spans], key=lambda x: (x[0], x[1]))
    held = 0
    for _, d in events:
        held += d
        assert held <= 2
    assert max(started - arrived for arrived, started, _ in spans) >= 0.05


def test_the_endpoints_own_work_happens_inside_the_slot() -> None:
    """The slot (and the latency) starts before the body is decoded and answered, not after: the endpoint's
    Python work is part of the drawn latency instead of coming on top of it."""
    answered: list[float] = []

    def responder(body: dict[str, object]) -> str:
        answered.append(time.perf_counter())
        return "ok"

    with FakeEndpoint(latency=0.01, slots=4, responder=responder) as ep:
        _post_all(ep, 1)
        spans = _spans(ep, 1)
    (arrived, started, ended), = spans
    assert arrived <= started <= answered[0] <= ended


def test_jittered_latency_is_seeded_and_lognormal_around_its_median() -> None:
    draws = []
    for _ in range(2):
        ep = FakeEndpoint(latency=0.1, latency_sigma=0.5, seed=3)
        draws.append([ep._service_time() for _ in range(2000)])
    assert draws[0] == draws[1]
    logs = sorted(math.log(d / 0.1) for d in draws[0])
    assert abs(logs[len(logs) // 2]) < 0.05  # median 0.1 s
    spread = math.sqrt(sum(x * x for x in logs) / len(logs))
    assert spread == pytest.approx(0.5, rel=0.1)
    assert FakeEndpoint(latency=0.1, latency_sigma=0.5, seed=4)._service_time() != draws[0][0]


def test_slots_must_be_positive() -> None:
    with pytest.raises(ValueError, match="slots"):
        FakeEndpoint(slots=0)
