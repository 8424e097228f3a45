"""Train word taggers (UPOS, XPOS, FEATS) on a bundled dependency model's frozen word vectors, and bundle them.

The model's parse is untouched: its encoder and scorers are frozen, the taggers read the word vectors its parse
already computes (`tagging_states`), and their tensors go to a second safetensors file beside the parser's (a
sharded checkpoint: the parser's file is renamed, never rewritten). Steps:

1. encode the treebank's train and dev sentences (gold words) once, caching each word's vector and gold tags under
   `--cache-dir` (float16);
2. for each hidden width of `--sizes`, train one MLP per tag set with Adam and input dropout, keeping each tag set's
   epoch of best dev accuracy; the width of best dev UPOS accuracy is chosen (test is never read here);
3. with `--bundle`, write the chosen taggers into the model's folder: `config.json` gains `tag_labels` and
   `tagger_size`, `model.safetensors` becomes `model-00001-of-00002.safetensors` (a rename), the taggers go to
   `model-00002-of-00002.safetensors`, and `model.safetensors.index.json` maps every tensor to its file.

    python scripts/train_taggers.py --model arc-hybrid-ewt --output records/arc-hybrid-ewt-tagger/dev.json
"""

import argparse
import json
import shutil
import time
from pathlib import Path

import torch
from torch import nn

TAG_SETS = ("upos", "xpos", "feats")
EWT = Path("../shared/data/ud-english-ewt")


def read_tagged(path: Path) -> list[dict]:
    """Sentences of a CoNLL-U file: `words` and each tag set's column (`_` where empty), word lines only."""
    from conllu import parse_incr

    from hf_structure.data.conllu_format import feats_string

    sentences = []
    with path.open(encoding="utf-8") as handle:
        for tokens in parse_incr(handle):
            words = [token for token in tokens if isinstance(token["id"], int)]
            sentence = {"words": [token["form"] for token in words]}
            sentence["upos"] = [token["upos"] or "_" for token in words]
            sentence["xpos"] = [token["xpos"] or "_" for token in words]
            sentence["feats"] = [feats_string(token["feats"]) for token in words]
            sentences.append(sentence)
    return sentences


@torch.no_grad()
def word_vectors(model, tokenizer, sentences: list[dict], batch_size: int = 32) -> torch.Tensor:
    """`(words, d)` float16: the vector each word of `sentences` gets from `model.tagging_states`, in order."""
    from hf_structure.data.tokenization import encode_word_pieces

    max_pieces = model.config.encoder_config.max_position_embeddings
    order = sorted(range(len(sentences)), key=lambda index: len(sentences[index]["words"]))
    vectors: list[torch.Tensor | None] = [None] * len(sentences)
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        inputs = encode_word_pieces([sentences[index]["words"] for index in batch], tokenizer, max_pieces)
        states = model.tagging_states(**inputs)
        for row, index in enumerate(batch):
            vectors[index] = states[row, 1 : len(sentences[index]["words"]) + 1].half()
    return torch.cat([vector for vector in vectors if vector is not None])


def cached_split(model, tokenizer, name: str, split: str, cache_dir: Path) -> tuple[torch.Tensor, list[dict]]:
    """The word vectors and sentences of EWT `split`, the vectors cached under `cache_dir`."""
    sentences = read_tagged(EWT / f"en_ewt-ud-{split}.conllu")
    cache = cache_dir / f"{name}-{split}.pt"
    if cache.exists():
        vectors = torch.load(cache)
    else:
        vectors = word_vectors(model, tokenizer, sentences)
        cache_dir.mkdir(parents=True, exist_ok=True)
        torch.save(vectors, cache)
    return vectors, sentences


def tag_ids(sentences: list[dict], tag_set: str, tags: list[str]) -> torch.Tensor:
    """Each word's gold tag id in `tags`, -1 for a tag that is not there (always an error)."""
    index = {tag: i for i, tag in enumerate(tags)}
    return torch.tensor([index.get(tag, -1) for sentence in sentences for tag in sentence[tag_set]])


def train_tagger(train_x, train_y, dev_x, dev_y, tags: int, size: int, args) -> tuple[nn.Sequential, float, int]:
    """An MLP (the models' tagger: Linear, LeakyReLU, Linear) trained with Adam and input dropout; the state of the
    epoch of best dev accuracy, that accuracy (%) and the epoch."""
    torch.manual_seed(args.seed)
    tagger = nn.Sequential(nn.Linear(train_x.size(1), size), nn.LeakyReLU(0.1), nn.Linear(size, tags))
    optimizer = torch.optim.Adam(tagger.parameters(), lr=args.lr)
    steps = args.epochs * ((len(train_x) + args.batch_size - 1) // args.batch_size)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=steps)
    dropout = nn.Dropout(args.dropout)
    best = (-1.0, 0, {key: value.clone() for key, value in tagger.state_dict().items()})
    for epoch in range(1, args.epochs + 1):
        tagger.train()
        for batch in torch.randperm(len(train_x)).split(args.batch_size):
            loss = nn.functional.cross_entropy(tagger(dropout(train_x[batch].float())), train_y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
        tagger.eval()
        with torch.no_grad():
            accuracy = 100 * (tagger(dev_x.float()).argmax(-1) == dev_y).float().mean().item()
        if accuracy > best[0]:
            best = (accuracy, epoch, {key: value.clone() for key, value in tagger.state_dict().items()})
    tagger.load_state_dict(best[2])
    return tagger, best[0], best[1]


def bundle(folder: Path, taggers: dict[str, nn.Sequential], tag_labels: dict[str, list[str]], size: int) -> None:
    """Write the taggers into a model folder as a second shard, renaming (never rewriting) the parser's weights."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    parser_file, tagger_file = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    if (folder / "model.safetensors").exists():
        shutil.move(folder / "model.safetensors", folder / parser_file)
    with safe_open(folder / parser_file, framework="pt") as handle:
        parser_keys = list(handle.keys())
    tensors = {
        f"taggers.{name}.{key}": value.contiguous()
        for name, tagger in taggers.items()
        for key, value in tagger.state_dict().items()
    }
    save_file(tensors, folder / tagger_file, metadata={"format": "pt"})
    total = sum(value.numel() * value.element_size() for value in tensors.values())
    total += (folder / parser_file).stat().st_size
    weight_map = {key: parser_file for key in parser_keys} | {key: tagger_file for key in tensors}
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    config["tag_labels"], config["tagger_size"] = tag_labels, size
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a bundled dependency model (arc-hybrid-ewt, g2gtr-ewt ...)")
    parser.add_argument("--output", type=Path, required=True, help="where the dev figures go (JSON)")
    parser.add_argument("--cache-dir", type=Path, default=Path("runs/tagger-vectors"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[256])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--dropout", type=float, default=0.3)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tag-sets", nargs="+", choices=TAG_SETS, default=list(TAG_SETS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bundle", action="store_true", help="write the chosen taggers into the model's folder")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from hf_structure.bundled import load_model_and_tokenizer, resolve_model_path

    started = time.time()
    model, tokenizer = load_model_and_tokenizer(args.model)
    train_x, train = cached_split(model, tokenizer, args.model, "train", args.cache_dir)
    dev_x, dev = cached_split(model, tokenizer, args.model, "dev", args.cache_dir)
    encoded = time.time()
    # Tags in order of first appearance in train: a tag only dev or test has is never predicted.
    tag_labels = {name: list(dict.fromkeys(tag for s in train for tag in s[name])) for name in args.tag_sets}
    runs = {}
    for size in args.sizes:
        trained = {}
        for name in args.tag_sets:
            tags = tag_labels[name]
            tagger, accuracy, epoch = train_tagger(
                train_x, tag_ids(train, name, tags), dev_x, tag_ids(dev, name, tags), len(tags), size, args
            )
            trained[name] = (tagger, accuracy, epoch)
            print(f"size {size} {name}: dev {accuracy:.2f} (epoch {epoch})", flush=True)
        runs[size] = trained
    chosen = max(runs, key=lambda size: runs[size]["upos"][1])
    report = {
        "model": args.model,
        "settings": {key: str(value) if isinstance(value, Path) else value for key, value in vars(args).items()},
        "dev": {
            str(size): {name: {"accuracy": round(a, 2), "epoch": e} for name, (_, a, e) in t.items()}
            for size, t in runs.items()
        },
        "chosen_size": chosen,
        "encode_seconds": round(encoded - started),
        "train_seconds": round(time.time() - encoded),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    if args.bundle:
        taggers = {name: tagger for name, (tagger, _, _) in runs[chosen].items()}
        bundle(Path(resolve_model_path(args.model)), taggers, tag_labels, chosen)


if __name__ == "__main__":
    main()
