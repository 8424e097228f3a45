"""`python -m hf_structure.cli`: the `hf-structure` command."""

from . import main

main()
