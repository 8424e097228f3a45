"""Where the benchmarks read the shared gold data: the folder in `HF_STRUCTURE_DATA`, else `../shared/data` beside the
checkout, as the tests do (tests/helpers/paths.py)."""

import os
from pathlib import Path

DATA_DIR = Path(os.environ.get("HF_STRUCTURE_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
