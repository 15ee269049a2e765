"""Words for a load: the one-line description of a :class:`~studio.core.workload.Load` and the
plan's :class:`~studio.engine.plan.results.LoadSummary` (``plan``'s table, ``simulate``'s header)."""

from __future__ import annotations

from dataclasses import fields

from studio.core.workload import LengthDistribution, Load


def describe_lengths(dist: LengthDistribution, nominal: int) -> str:
    """``fixed 1,024``, ``uniform 1,024 ± 20 %`` or ``histogram of 37 lengths, mean 812``."""
    if dist.kind == "uniform":
        return f"uniform {nominal:,} ± {dist.spread * 100:g} %"
    if dist.kind == "histogram" and dist.histogram:
        return f"histogram of {len(dist.histogram):,} lengths, mean {dist.mean(nominal):,.0f}"
    return f"fixed {nominal:,}"


def describe_load(load: Load, users: float | None = None) -> str:
    """The load in words: ``rate 4 req/s (poisson)``, ``concurrency 64 users``, ``offline, 1,000
    requests at t = 0``. ``users`` is the closed loop's count when the load leaves it to the batch."""
    if load.mode == "rate":
        return f"rate {load.rate_per_s:g} req/s ({load.arrival} arrivals)"
    if load.mode == "offline":
        return f"offline, {load.num_requests:,} requests queued at t = 0"
    if load.concurrency is not None:
        return f"concurrency {load.concurrency:,} users"
    shown = f"{users:,.0f}" if users is not None else "the batch"
    return f"concurrency {shown} users (the plan's batch on every replica)"


def load_line(load: Load, summary, dp: int) -> str:
    """The ``load`` line of ``plan``: mode, rate or users, saturation rate (all replicas)."""
    users = summary.users * dp if summary is not None else None
    text = describe_load(load, users)
    if summary is None:
        return text
    if load.mode != "rate":
        text += f"; serves {summary.request_rate_per_s:.3g} req/s"
    text += f"; saturation {summary.saturation_rate_per_s:.3g} req/s"
    if summary.saturated:
        text += " — SATURATED"
    return text


def summary_json(summary, load: Load) -> dict:
    """The ``load`` object of ``plan --json``: the summary plus the load as asked."""
    # the fields one by one: asdict's deep copy of each plain value costs more than the rest here
    data = {f.name: getattr(summary, f.name) for f in fields(summary)} if summary is not None else {}
    data["asked"] = load.model_dump(mode="json")
    return data


def sweep_load_section(result, rows: list[int], label) -> str | None:
    """For ``sweep`` under a request rate: each shown layout's figures at that rate (the table ranks
    capacity at each batch), or SATURATED where the rate has no steady state. None for other loads.

    ``label(cols, row)`` names a row's layout."""
    load = result.project.workload.load
    if load.mode != "rate":
        return None
    lines = [f"At the load: {describe_load(load)} (closed form; percentiles: `layout-studio simulate`)"]
    seen: set[str] = set()
    for r in rows:
        name = label(result.columns, r)
        if name in seen or not bool(result.columns["fits"][r]):
            continue
        seen.add(name)
        plan = result.plan(r, details=False)  # figures only
        s = plan.load
        if s is None:
            continue
        if s.saturated:
            lines.append(f"  {name:<16} SATURATED: saturation {s.saturation_rate_per_s:.3g} req/s is below the rate")
        else:
            lines.append(f"  {name:<16} saturation {s.saturation_rate_per_s:.3g} req/s, TTFT {plan.ttft_ms:,.0f} ms, "
                         f"TPOT {plan.tpot_ms:,.1f} ms, {plan.output_tokens_per_s_per_gpu:,.0f} tok/s per GPU")
    return "\n".join(lines)
