"""The rule of issue #59, committed before its run: the kept weights (chosen by PTB valid LM loss alone) replace the
bundled `structformer-ptb` only if `hf-structure evaluate --treebank <PTB dev sample> --lm-text ptb-test` gives all of
these. Prints one JSON line: each figure, its bound, whether it holds, and the answer.

    python records/structformer-ptb-authors-schedule/rule.py eval.json
"""

import json
import sys

# figure in eval.json -> (the bound, whether a figure must be at least (True) or at most (False) it)
BOUNDS = {
    "sentence_f1": (54.0, True),  # the paper's WSJ-23 UF1
    "mlm_ppl_paper": (70.0, False),  # the paper's PTB test perplexity is 60.9
    "uas_argmax": (36.2, True),  # the paper's CoNLL-style UAS
}


def answer(evaluation: dict) -> dict:
    """Each bound's figure and whether it holds, and `replace`: whether all do."""
    checks = {}
    for name, (bound, at_least) in BOUNDS.items():
        figure = evaluation.get(name)
        holds = figure is not None and (figure >= bound if at_least else figure <= bound)
        checks[name] = {"figure": figure, "bound": f"{'>=' if at_least else '<='} {bound}", "holds": holds}
    return {**checks, "replace": all(check["holds"] for check in checks.values())}


if __name__ == "__main__":
    print(json.dumps(answer(json.loads(open(sys.argv[1]).read()))))
