"""Training through `Trainer`: the masked-LM trainer and the library side of `scripts/run_mlm.py`."""
