#!/usr/bin/env python
"""Save a trained model with its weights in half precision (all, or all but `--keep-float32` prefixes), and count
the gold-treebank parses that rounding every weight to half precision, and the stored rounding, change.

The config keeps float32, so the saved model loads and runs in float32: only the stored weights are rounded. Each
count compares the float32 model with a copy whose weights were rounded to float16 and back, on the same device:

    python scripts/export_half.py --model runs/sf-paper --treebank ../shared/data/ptb-sample/dev --output runs/sf-half \
        --keep-float32 structformer.embed_tokens. structformer.parser. structformer.log_scales

(for StructFormer, those three prefixes are everything a parse depends on, so the stored rounding changes no parse,
and the all-half count says whether the rest could be rounded too). Prints one JSON line: sentences, then for
`all_half` and `as_stored` the parses whose spans or heads differ, and of those the spans and the heads. The run's
records (`hf_structure_training.json`, `trainer_state.json`, `train_results.json`) are copied beside the weights.
"""

import argparse
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

import hf_structure  # noqa: F401  (registers the models)
from hf_structure.bundled import load_model_and_tokenizer
from hf_structure.data.treebanks import read_treebank
from hf_structure.hub import TRAINING_RECORD
from hf_structure.pipelines.parser import Parser, ParseResult

RECORDS = (TRAINING_RECORD, "trainer_state.json", "train_results.json")


def changed_parses(reference: list[ParseResult], parses: list[ParseResult]) -> dict:
    """How many parses differ from the reference in their structures (the raw scores change with any rounding)."""

    def changed(*keys):
        return sum(any(a.get(key) != b.get(key) for key in keys) for a, b in zip(reference, parses))

    return {"parses": changed("spans", "heads"), "spans": changed("spans"), "heads": changed("heads")}


def rounded_parses(model, tokenizer, words, batch_size, in_half) -> list[ParseResult]:
    """Parses of `model` with the parameters `in_half` selects rounded to float16 (restored afterwards)."""
    saved = {name: p.detach().clone() for name, p in model.named_parameters() if in_half(name)}
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name in saved:
                parameter.copy_(parameter.half().float())
        parses = Parser(model, tokenizer).parse_words(words, batch_size=batch_size)
        for name, parameter in model.named_parameters():
            if name in saved:
                parameter.copy_(saved[name])
    return parses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="trained model folder")
    parser.add_argument("--treebank", required=True, help="gold treebank (mrg/ and dp/, or a .conllu file)")
    parser.add_argument("--output", required=True, help="folder for the half-precision copy")
    parser.add_argument(
        "--keep-float32",
        nargs="*",
        default=[],
        metavar="PREFIX",
        help="parameters whose names start with one of these are stored in float32",
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    keep = tuple(args.keep_float32)

    def stored_in_half(name: str) -> bool:
        return not name.startswith(keep) if keep else True

    model, tokenizer = load_model_and_tokenizer(args.model)
    model.to(args.device)
    words = [sentence.words for sentence in read_treebank(args.treebank)]
    full = Parser(model, tokenizer).parse_words(words, batch_size=args.batch_size)
    report = {"sentences": len(words), "device": args.device, "float32_prefixes": list(keep)}
    report["all_half"] = changed_parses(full, rounded_parses(model, tokenizer, words, args.batch_size, lambda _: True))
    if keep:
        report["as_stored"] = changed_parses(
            full, rounded_parses(model, tokenizer, words, args.batch_size, stored_in_half)
        )

    output = Path(args.output)
    if output.exists():
        shutil.rmtree(output)
    model.to("cpu").save_pretrained(output)
    tokenizer.save_pretrained(output)
    weights = output / "model.safetensors"
    save_file(
        {name: tensor.half() if stored_in_half(name) else tensor for name, tensor in load_file(weights).items()},
        weights,
        metadata={"format": "pt"},
    )
    for name in RECORDS:
        if (Path(args.model) / name).exists():
            shutil.copy(Path(args.model) / name, output / name)
    (output / "half_precision_check.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
