"""R2D2's own tests."""

# The arguments of its forwards that only add losses (the shared tests run them with and without them).
TRAINING_TARGETS = ("labels", "teacher_merge_order")
