"""Prefix caching and KV offload against published measurements: ``python benchmarks/prefix_cache_check.py``
from the checkout.

Plans every record of ``benchmarks/validation/prefix-cache-points.json`` with and without its
prefix caching / CPU offload and prints the predicted speed-up (TTFT without / with, or throughput
with / without), the published one and the relative error, then the median and worst error over all
points and over the held-out ones (docs/calibration.md, "Prefix caching and KV offload").
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.validation.prefix_cache import main

if __name__ == "__main__":
    sys.exit(main())
