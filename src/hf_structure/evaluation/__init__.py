"""Scoring: metrics, trivial baselines, masked-LM perplexity, the treebank scorer and the training callback."""
