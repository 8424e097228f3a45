"""Which words a model makes heads, against the gold dependencies of a treebank.

Prints, per model: UAS, the share of all words (the root included in the count) attached to a head on their left
(`words_with_head_on_left`; the training log's `parse_head_on_left`, `metrics.left_head_share`, counts attached
words only), the share of arcs predicted in the reverse direction of a gold arc, UAS by the dependent's gold POS
(two-letter prefix) and the POS of predicted heads. Heads by `--head-decoding` (default `argmax`, the paper's Eq. 18,
which the recorded figures use). Used to compare the head conventions that different training recipes settle on
(records/structformer-ptb-training/README.md, "Runs before the bundled one").

    python scripts/head_statistics.py structformer-ptb runs/other-model \
        --treebank ../shared/data/ptb-sample/dev --limit 600
"""

import argparse
from collections import Counter

from transformers import AutoModelForMaskedLM, AutoTokenizer

import hf_structure  # noqa: F401  (registers the models)
from hf_structure.bundled import resolve_model_path
from hf_structure.data.treebanks import read_treebank
from hf_structure.pipelines.parser import Parser


def head_statistics(gold, parses) -> dict:
    words = left = correct = reversed_arcs = 0
    by_tag: Counter[str] = Counter()
    correct_by_tag: Counter[str] = Counter()
    head_tags: Counter[str] = Counter()
    for sentence, parse in zip(gold, parses):
        for i, (head, gold_head) in enumerate(zip(parse["heads"], sentence.heads), start=1):
            tag = sentence.tags[i - 1][:2]
            words += 1
            left += 0 < head < i
            correct += head == gold_head
            reversed_arcs += head not in (0, gold_head) and sentence.heads[head - 1] == i
            by_tag[tag] += 1
            correct_by_tag[tag] += head == gold_head
            if head:
                head_tags[sentence.tags[head - 1][:2]] += 1

    def percent(count: int) -> float:
        return round(100 * count / words, 1)

    return {
        "uas": percent(correct),
        "words_with_head_on_left": percent(left),
        "reversed": percent(reversed_arcs),
        "uas_by_dependent_tag": {t: round(100 * correct_by_tag[t] / n, 1) for t, n in by_tag.most_common(8)},
        "predicted_head_tags": {t: percent(n) for t, n in head_tags.most_common(8)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+", help="bundled model names or saved model folders")
    parser.add_argument("--treebank", required=True, help="folder with mrg/ and dp/")
    parser.add_argument("--limit", type=int, help="first N sentences only")
    parser.add_argument("--head-decoding", default="argmax", choices=("argmax", "eisner", "chu-liu-edmonds"))
    args = parser.parse_args()
    gold = read_treebank(args.treebank)[: args.limit]
    if gold and gold[0].heads is None:
        parser.error(f"{args.treebank} has no dp/ folder: gold heads are needed")
    for name in args.models:
        path = resolve_model_path(name)
        model = AutoModelForMaskedLM.from_pretrained(path)
        tokenizer = AutoTokenizer.from_pretrained(path)
        parses = Parser(model, tokenizer).parse_words([g.words for g in gold], head_decoding=args.head_decoding)
        print(name, head_statistics(gold, parses))


if __name__ == "__main__":
    main()
