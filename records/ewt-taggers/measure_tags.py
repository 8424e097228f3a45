"""Tag accuracy of a bundled model's taggers on an EWT split with gold words, through the path `parse` takes
(`tagging_states`, then `tag_ids`), without decoding trees: every word, punctuation included.

    python records/ewt-taggers/measure_tags.py MODEL SPLIT
"""

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from train_taggers import EWT, read_tagged  # noqa: E402

from hf_structure.bundled import load_model_and_tokenizer  # noqa: E402
from hf_structure.data.tokenization import encode_word_pieces  # noqa: E402


@torch.no_grad()
def main(name, split):
    torch.set_num_threads(2)
    model, tokenizer = load_model_and_tokenizer(name)
    sentences = read_tagged(EWT / f"en_ewt-ud-{split}.conllu")
    correct = {tag_set: 0 for tag_set in model.config.tag_labels}
    words = 0
    for start in range(0, len(sentences), 32):
        batch = sentences[start : start + 32]
        inputs = encode_word_pieces([s["words"] for s in batch], tokenizer, 512)
        ids = model.tag_ids(model.tagging_states(**inputs))
        for row, sentence in enumerate(batch):
            n = len(sentence["words"])
            words += n
            for tag_set, labels in model.config.tag_labels.items():
                predicted = [labels[i] for i in ids[tag_set][row][1 : n + 1]]
                correct[tag_set] += sum(p == g for p, g in zip(predicted, sentence[tag_set]))
    print(json.dumps({"model": name, "split": split, "words": words,
                      **{k: round(100 * v / words, 2) for k, v in correct.items()}}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
