"""The test suite, a package: pytest imports each test as `tests.<folder>.<module>` (so basenames may repeat across
folders) and puts the repository root on `sys.path`, which makes the shared helpers importable as `tests.helpers`."""
