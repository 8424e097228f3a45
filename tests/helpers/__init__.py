"""What several tests share: tiny models and treebanks, plain references to check the code against, and paths."""
