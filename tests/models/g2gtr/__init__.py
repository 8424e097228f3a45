"""The Graph-to-Graph Transformer's own tests."""

# The arguments of its forward that only add losses (the shared tests run it with and without them).
TRAINING_TARGETS = ("actions", "arc_labels")
# Its own options in the shared training runs (tests/training/test_run_parser.py): graph input in the top two of the
# tiny BERT's three layers only, and four oracle configurations of a sentence per example.
RUN_PARSER_OPTIONS = ("--graph_layers", "2", "--configurations_per_example", "4")
