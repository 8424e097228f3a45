"""Where the tests find the repository, their fixture files and the read-only evaluation data.

The data folder is `../shared/data` from the repository root (see its README); set `HF_STRUCTURE_DATA` to point
elsewhere. `require_data` skips the calling test with a reason naming the missing path, so the suite passes on a
fresh machine.
"""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
DATA_DIR = Path(os.environ.get("HF_STRUCTURE_DATA") or ROOT.parent / "shared" / "data")


def require_data(*parts: str) -> Path:
    """`DATA_DIR / parts`, or skip the calling test with a reason naming the missing path."""
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"evaluation data not found at {path} (set HF_STRUCTURE_DATA to the shared data folder)")
    return path
