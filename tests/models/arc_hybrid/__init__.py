"""The arc-hybrid parser's own tests."""

# The arguments of its forward that only add losses (the shared tests run it with and without them).
TRAINING_TARGETS = ("heads", "labels", "steps", "matchings")
