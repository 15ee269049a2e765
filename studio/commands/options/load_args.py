"""Turn the load flags of :func:`studio.commands.options.project_flags.add_load_args` into the workload's
:class:`~studio.core.workload.Load`, and the speculative-decoding flags (:func:`add_spec_args`)
into the serving config's :class:`~studio.core.workload.SpeculativeConfig`.

Precedence follows the other flags: the PROJECT file's load, with each flag given overriding its
value. ``--rate``, ``--concurrency`` and ``--offline`` choose the mode; the other flags keep it.
"""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from studio.core.errors import StudioError
from studio.core.workload import MAX_REQUESTS, LengthDistribution, Load, SpeculativeConfig, Workload

#: Load field -> the flag that sets it (for messages).
FLAGS = {
    "rate_per_s": "--rate",
    "concurrency": "--concurrency",
    "num_requests": "--num-requests",
    "seed": "--seed",
    "arrival": "--arrival",
    "isl_dist": "--isl-spread/--isl-histogram",
    "osl_dist": "--osl-spread/--osl-histogram",
}


def _lengths(args: argparse.Namespace, which: str, current: LengthDistribution) -> LengthDistribution:
    spread = getattr(args, f"{which}_spread", None)
    path = getattr(args, f"{which}_histogram", None)
    if path is not None:
        from studio.io.importers.lengths import load_histogram

        try:
            return load_histogram(path)
        except StudioError as exc:
            raise StudioError(f"--{which}-histogram {exc}") from None
    if spread is not None:
        if spread >= 1.0:
            raise StudioError(f"--{which}-spread must be in [0, 1) (a relative half-width), got {spread:g}")
        return LengthDistribution(kind="uniform", spread=spread) if spread > 0 else LengthDistribution()
    return current


def load_from_args(args: argparse.Namespace, base: Load) -> Load:
    """``base`` with every load flag in ``args`` applied.

    Raises
    ------
    StudioError
        A value out of range or a flag that does not fit the mode, naming the flag.
    """
    changes: dict = {}
    if getattr(args, "rate", None) is not None:
        changes.update(mode="rate", rate_per_s=args.rate)
    elif getattr(args, "concurrency", None) is not None:
        changes.update(mode="concurrency", concurrency=args.concurrency)
    elif getattr(args, "offline", None):
        changes["mode"] = "offline"
    arrival = getattr(args, "arrival", None)
    if arrival is not None:
        if changes.get("mode", base.mode) != "rate":
            raise StudioError("--arrival applies to a request rate; add --rate R (requests per second)")
        changes["arrival"] = arrival
    n = getattr(args, "num_requests", None)
    if n is not None:
        if n > MAX_REQUESTS:
            raise StudioError(f"--num-requests must be 1..{MAX_REQUESTS:,}, got {n:,}")
        changes["num_requests"] = n
    seed = getattr(args, "seed", None)
    if seed is not None:
        if not 0 <= seed <= 2**31 - 1:
            raise StudioError(f"--seed must be 0..2147483647, got {seed}")
        changes["seed"] = seed
    for which in ("isl", "osl"):
        dist = _lengths(args, which, getattr(base, f"{which}_dist"))
        if dist is not getattr(base, f"{which}_dist"):
            changes[f"{which}_dist"] = dist
    if not changes:
        return base
    try:
        return base.replace(**changes)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err.get("loc") else ""
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        raise StudioError(f"{FLAGS.get(field, 'load')}: {msg}") from None


def apply_load_args(args: argparse.Namespace, workload: Workload) -> Workload:
    """``workload`` with its load replaced by :func:`load_from_args` (the same object if no flag)."""
    load = load_from_args(args, workload.load)
    return workload if load is workload.load else workload.replace(load=load)


# ----------------------------------------------------------------------------- speculative decoding
#: SpeculativeConfig field -> the flag that sets it (for messages).
SPEC_FLAGS = {
    "method": "--spec",
    "num_tokens": "--spec-tokens",
    "acceptance": "--spec-acceptance",
    "acceptance_by_position": "--spec-acceptance-by-position",
    "accepted_length": "--spec-accepted-length",
    "draft_model": "--draft-model",
    "draft": "--draft-model",
    "draft_checkpoint": "--draft-checkpoint",
    "ngram_max": "--spec-ngram-max",
    "ngram_min": "--spec-ngram-min",
}


#: Allowed values of the numeric speculative fields, for messages.
_ALLOWED = {
    "num_tokens": "a whole number 1..16",
    "acceptance": "a rate in (0, 1]",
    "ngram_max": "a whole number 1..64",
    "ngram_min": "a whole number 1..64",
}


def _rates(text: str) -> tuple[float, ...]:
    """argparse type: comma-separated acceptance rates, each in (0, 1]."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated rates in (0, 1], e.g. 0.8,0.6,0.45; got {text!r}") from None
    if not values or any(not (0.0 < v <= 1.0) for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated rates in (0, 1], e.g. 0.8,0.6,0.45; got {text!r}")
    return values


def add_spec_args(parser: argparse.ArgumentParser) -> None:
    """Add the speculative-decoding flags (every command that builds a project: ``plan``,
    ``sweep``, ``simulate``, ``export``, ``report``). Applied by :func:`apply_spec_args`."""
    from studio.core.workload import SPEC_METHODS

    g = parser.add_argument_group("speculative decoding (see docs/engine.md)")
    g.add_argument("--spec", choices=("off", *SPEC_METHODS),
                   help="draft kind: a draft model, an EAGLE-1/2 or EAGLE-3 head, the model's MTP layers, n-gram lookup; off = none")
    g.add_argument("--spec-tokens", type=int, metavar="K", help="tokens proposed per step (1..16, default 3)")
    acc = g.add_mutually_exclusive_group()
    acc.add_argument("--spec-acceptance", type=float, metavar="A",
                     help="per-token acceptance rate in (0, 1] (default: the method's published figure)")
    acc.add_argument("--spec-accepted-length", type=float, metavar="L",
                     help="mean tokens per verification step, bonus token included (as vLLM/SGLang report it)")
    acc.add_argument("--spec-acceptance-by-position", type=_rates, metavar="A1,A2,...",
                     help="acceptance of each draft position (vLLM 'acceptance at token i')")
    g.add_argument("--draft-model", metavar="ID", help="model preset id of the draft model (implies --spec draft)")
    g.add_argument("--draft-checkpoint", metavar="REPO", help="Hugging Face id or path of the draft weights / EAGLE head, for exports")
    g.add_argument("--spec-ngram-max", type=int, metavar="N", help="longest n-gram matched in the prompt (--spec ngram, default 4)")
    g.add_argument("--spec-ngram-min", type=int, metavar="N", help="shortest n-gram matched (--spec ngram, default 1)")


def apply_spec_args(args: argparse.Namespace, current: SpeculativeConfig | None) -> SpeculativeConfig | None:
    """The serving config's speculative setting with every speculative flag in ``args`` applied.

    Raises
    ------
    StudioError
        A value out of range, an unknown draft model, or a flag without a method; names the flag.
    """
    method = getattr(args, "spec", None)
    draft_id = getattr(args, "draft_model", None)
    if method == "off":
        return None
    changes: dict = {}
    if method is None and draft_id is not None:
        method = "draft"
    if method is not None and (current is None or method != current.method):
        changes["method"] = method
        if current is not None and method != "draft":
            changes.update(draft_model=None, draft=None)
    values = {
        "num_tokens": getattr(args, "spec_tokens", None),
        "acceptance": getattr(args, "spec_acceptance", None),
        "accepted_length": getattr(args, "spec_accepted_length", None),
        "acceptance_by_position": getattr(args, "spec_acceptance_by_position", None),
        "draft_checkpoint": getattr(args, "draft_checkpoint", None),
        "ngram_max": getattr(args, "spec_ngram_max", None),
        "ngram_min": getattr(args, "spec_ngram_min", None),
    }
    if values["draft_checkpoint"] is not None:  # the same checks as export --model-path
        from studio.io.export.checks.safety import check_model_argument

        check_model_argument(values["draft_checkpoint"], "the draft checkpoint", field="draft_checkpoint")
    changes.update({k: v for k, v in values.items() if v is not None})
    acc_keys = ("acceptance", "accepted_length", "acceptance_by_position")
    if any(values[k] is not None for k in acc_keys):  # a new acceptance replaces the stored one
        changes.update({k: values[k] for k in acc_keys})
    if draft_id is not None:
        method = changes.get("method", current.method if current else None)
        if method != "draft":
            raise StudioError(f"--draft-model applies to --spec draft (the method is '{method}')")
        from studio.io.presets import load_catalog

        try:
            arch = load_catalog().model(draft_id).architecture
        except StudioError as exc:
            raise StudioError(f"--draft-model: {exc}") from None
        changes.update(draft_model=draft_id, draft=arch)
    if not changes:
        return current
    if current is None and "method" not in changes:
        used = next(SPEC_FLAGS[k] for k in changes if k in SPEC_FLAGS)
        raise StudioError(f"{used} needs a speculative method: add --spec draft|eagle|eagle3|mtp|ngram")
    try:
        if current is None:
            return SpeculativeConfig(**changes)
        data = {name: getattr(current, name) for name in type(current).model_fields}
        data.update(changes)
        return SpeculativeConfig(**data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err.get("loc") else ""
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        if field in _ALLOWED:
            msg = f"must be {_ALLOWED[field]}, got {err.get('input')}"
        elif "needs the draft model" in msg:
            raise StudioError("--spec draft needs --draft-model ID (a model preset id sharing the model's tokenizer)") from None
        raise StudioError(f"{SPEC_FLAGS.get(field, 'speculative decoding')}: {msg}") from None
