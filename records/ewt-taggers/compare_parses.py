"""Compare `hf-structure parse --conllu` of a CoNLL-U file before and after the taggers were bundled, and score the
tags against the gold file: every column but UPOS, XPOS and FEATS must be byte-identical (HEAD and DEPREL above all);
the tag columns after are scored against gold (every word, punctuation included).

    python records/ewt-taggers/compare_parses.py BEFORE.conllu AFTER.conllu GOLD.conllu
"""

import json
import sys

TAG_COLUMNS = {3: "upos", 4: "xpos", 5: "feats"}
SCORED = {3: "upos", 4: "xpos"}  # FEATS: no tagger was trained for it, the column is the input's


def word_rows(path):
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            columns = line.rstrip("\n").split("\t")
            if len(columns) == 10 and columns[0].isdigit():
                yield columns


def main(before_path, after_path, gold_path):
    before, after, gold = (list(word_rows(path)) for path in (before_path, after_path, gold_path))
    assert len(before) == len(after) == len(gold), (len(before), len(after), len(gold))
    other_columns = [i for i in range(10) if i not in TAG_COLUMNS]
    heads_deprels = sum(b[6:8] != a[6:8] for b, a in zip(before, after))
    names = ["ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC"]
    report = {
        "words": len(after),
        "words_differing_in_head_or_deprel": heads_deprels,
        "words_differing_by_other_column": {
            names[i]: sum(b[i] != a[i] for b, a in zip(before, after)) for i in other_columns
        },
    }
    for column, name in SCORED.items():
        pairs = [(a[column], g[column]) for a, g in zip(after, gold)]
        report[name] = round(100 * sum(x == y for x, y in pairs) / len(pairs), 2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:4])
