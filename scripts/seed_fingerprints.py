"""Fingerprint the five seed studies: run each one shortened (as tests/frontend/test_seed_examples.py
shortens them) and print, per study, the number of summary rows and a SHA-256 of summary.parquet's
content (rows sorted by run and flow, every column). Two trees that print the same lines produce
bit-identical summaries — the check a restructuring must pass.

Usage: python3 scripts/seed_fingerprints.py OUT_DIR   (prints one line per study on stdout)
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import ccarena
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CASES = [("000-tcp-vs-udp-linear.toml", 0.3, 1), ("001-lifo-fairness.toml", 0.02, 1),
         ("002-tcp-like-udp-loss-delay.toml", 0.5, 1), ("003-tahoe-reno-newreno-red.toml", 1.0, 2),
         ("004-tcp-flavors-matrix.toml", 0.3, 1)]
"""(study file, time factor, repeats at most)."""


def _shortener():
    # The seed tests import their sibling helper module (browser.py) by plain name.
    sys.path.insert(0, str(ROOT / "tests/frontend"))
    spec = importlib.util.spec_from_file_location("seed_tests", ROOT / "tests/frontend/test_seed_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.shortened


def main(out_dir: Path) -> None:
    shortened = _shortener()
    for name, factor, repeats in CASES:
        raw = shortened(name, factor=factor, repeats=repeats, keep=3)
        ccarena.run(raw, out=out_dir / raw["name"], jobs=2, force=True)
        df = pd.read_parquet(out_dir / raw["name"] / "summary.parquet")
        df = df.sort_values(["run_id", "flow"]).reset_index(drop=True)
        digest = hashlib.sha256(pd.util.hash_pandas_object(df, index=False).values.tobytes())
        print(f"{name}: rows={len(df)} columns={len(df.columns)} content={digest.hexdigest()[:16]}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(Path(sys.argv[1]))
