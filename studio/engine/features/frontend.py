"""The API servers in front of the engine (vLLM ``--api-server-count``): each request costs an
API-server process ``s`` ms of CPU (tokenising, detokenising, streaming;
``presets/engines/effects.json`` ``frontend``), and the ``N`` processes serve every DP rank of the
server.

At a request rate ``λ`` (req/s for the whole server) the front end is busy ``ρ = λ·s / N``; a request
waits ``s·ρ / (2(1 − ρ))`` for a process (the mean wait of an M/D/1 queue, Poisson arrivals and a
fixed service time), which TTFT and the request latency include; at ``ρ ≥ 1`` the front end caps the
rate at ``N / s``.
"""

from __future__ import annotations

from studio.engine.features.data import figure


def request_ms(engine: str) -> float | None:
    """API-server CPU time per request (ms) of ``engine``, None where no public figure exists."""
    table = figure("frontend")
    if engine not in table:
        return None
    return float(figure("frontend", engine, "request_ms"))


def wait_ms(rate_per_s: float, servers: int, per_request_ms: float) -> float:
    """Mean wait (ms) for an API-server process at ``rate_per_s`` (inf at or above capacity)."""
    rho = rate_per_s * per_request_ms / 1e3 / max(servers, 1)
    if rho >= 1.0:
        return float("inf")
    return per_request_ms * rho / (2.0 * (1.0 - rho))


def capacity_per_s(servers: int, per_request_ms: float) -> float:
    """Requests per second ``servers`` API-server processes can take."""
    return max(servers, 1) * 1e3 / per_request_ms


def project_frontend(engine: str, servers: int | None) -> tuple[int, float] | None:
    """(API servers, ms per request) when the project sets its API servers and ``engine`` has a
    public per-request figure; None otherwise (the front end then adds only ``request_overhead_ms``)."""
    if servers is None:
        return None
    per = request_ms(engine)
    return None if per is None else (int(servers), per)


def with_frontend(figures: tuple[float, float, float, float], rate_per_s: float, users: float | None,
                  frontend: tuple[int, float]) -> tuple[tuple[float, float, float, float], float, str]:
    """(TTFT, TPOT, E2E, tok/s per replica) and the request rate with the API servers' wait; a note
    when they cap the rate. ``users``: the closed loop's users (None for an open loop), which then
    wait at the front end so that users / E2E meets the cap (Little's law)."""
    servers, per = frontend
    ttft, tpot, e2e, tps = figures
    cap = capacity_per_s(servers, per)
    if rate_per_s < cap:
        w = wait_ms(rate_per_s, servers, per)
        return (ttft + w, tpot, e2e + w, tps), rate_per_s, ""
    note = (f"the {servers} API server{'s' if servers > 1 else ''} take at most {cap:.3g} req/s "
            f"({per:g} ms of CPU each): the front end, not the GPUs, sets the rate")
    scale = cap / rate_per_s
    extra = (users / cap * 1e3 - e2e) if users is not None else 0.0
    return (ttft + max(extra, 0.0), tpot, e2e + max(extra, 0.0), tps * scale), cap, note
