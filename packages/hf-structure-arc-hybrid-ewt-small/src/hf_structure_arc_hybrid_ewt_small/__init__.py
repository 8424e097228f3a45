"""The `arc-hybrid-ewt-small` checkpoint folder, registered with hf_structure as a short name through an entry
point."""

from pathlib import Path

CHECKPOINT = Path(__file__).parent / "arc-hybrid-ewt-small"
