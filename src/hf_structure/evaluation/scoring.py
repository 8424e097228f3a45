"""Scoring parsers (models or baselines) on a gold treebank.

A model is scored through the parsing contract only (`model.parse(words, tokenizer)`), on the gold sentences'
scored words (punctuation already removed, as the scoring conventions of the data README require).
"""

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data.conllu_format import read_conllu
from ..data.gold import GoldSentence, content_heads
from ..data.treebanks import EVALUATED_LABELS, read_treebank
from ..pipelines.parser import Parser, ParseResult, ParsingModel
from ..structs.trees import heads_are_tree
from .baselines import baseline_parses
from .metrics import attachment_scores, compound_pcfg_gold, label_recall, scored_spans, unlabelled_f1


def score_parses(gold: Sequence[GoldSentence], parses: Sequence[Mapping[str, Any]], suffix: str = "") -> dict:
    """The evaluation JSON of a parser: `sentences`; with predicted and gold constituents `sentence_f1`,
    `corpus_f1`, the same under the compound-PCFG scorer's convention (`sentence_f1_cpcfg`, `corpus_f1_cpcfg`; see
    `metrics.compound_pcfg_gold`), `recall_<LABEL>`; with predicted and gold heads `uas`, `uuas`, `valid_trees`
    (share of sentences whose heads form a tree with one root), and `las` when both sides have dependency labels.
    Percentages rounded to 2 decimals. `parses` are contract dicts (`spans`, `heads`, `deprels`, each optional);
    `suffix` is appended to every score's key (e.g. `_argmax`)."""
    if len(parses) != len(gold):
        raise ValueError(f"{len(parses)} parses for {len(gold)} gold sentences")
    scores = {}
    if any(g.spans for g in gold) and all("spans" in p for p in parses):
        predicted = [scored_spans(map(tuple, p["spans"]), len(g.words)) for p, g in zip(parses, gold)]
        scores.update(unlabelled_f1(predicted, [g.spans for g in gold]))
        compound = [compound_pcfg_gold(g.spans, len(g.words), g.repeated_whole_span) for g in gold]
        scores.update({f"{key}_cpcfg": value for key, value in unlabelled_f1(predicted, compound).items()})
        recall = label_recall(predicted, [g.labelled_spans for g in gold], EVALUATED_LABELS)
        scores.update({f"recall_{label}": value for label, value in recall.items()})
    gold_heads = [g.heads for g in gold if g.heads is not None]
    if len(gold_heads) == len(gold) and all("heads" in p for p in parses):
        gold_deprels = [g.deprels for g in gold if g.deprels is not None]
        labelled = len(gold_deprels) == len(gold) and all("deprels" in p for p in parses)
        scores.update(
            attachment_scores(
                [p["heads"] for p in parses],
                gold_heads,
                [p["deprels"] for p in parses] if labelled else None,
                gold_deprels if labelled else None,
            )
        )
        scores["valid_trees"] = sum(heads_are_tree(p["heads"]) for p in parses) / len(parses)
    return {"sentences": len(gold), **{f"{key}{suffix}": round(100 * value, 2) for key, value in scores.items()}}


def evaluate_baseline(treebank: str, name: str, seed: int = 0) -> dict:
    gold = read_treebank(treebank)
    trees = baseline_parses(name, [len(g.words) for g in gold], seed)
    parses = [{"spans": spans, "heads": heads} for spans, heads in trees]
    return {"parser": name, **score_parses(gold, parses)}


def sentence_names(gold: Sequence[GoldSentence]) -> list[str]:
    """How errors name the gold sentences: `sentence <k>` (from 1), with the file and line where known."""
    return [f"sentence {number}" + (f" ({g.source})" if g.source else "") for number, g in enumerate(gold, 1)]


def reported_options(model) -> dict[str, dict]:
    """The other decodings the model's evaluation reports, by the suffix of their scores -> the `parse` options that
    give them: its config's `reported_options` (e.g. StructFormer's `{"argmax": {"head_decoding": "argmax",
    "structures": ("dependency",)}}`, the paper's rule), none for a config without."""
    return dict(getattr(model.config, "reported_options", None) or {})


def _scored_words_evaluation(
    parser: Parser, gold: Sequence[GoldSentence], parsing: dict
) -> tuple[dict, list[ParseResult]]:
    """Scores over the gold treebank's scored words (punctuation removed) with the model's default decodings, plus
    `<score>_<name>` for each of its `reported_options`; a sentence the model cannot parse is named in `skipped`."""
    names = sentence_names(gold)
    gold, parses, skipped = parsed_sentences(
        gold, parser.parse_words([g.words for g in gold], names=names, on_error="record", **parsing)
    )
    scores = score_parses(gold, parses)
    for name, options in reported_options(parser.model).items():
        alternative = score_parses(gold, parser.parse_words([g.words for g in gold], **parsing, **options), f"_{name}")
        scores.update({key: value for key, value in alternative.items() if key != "sentences"})
    return ({**scores, "skipped": skipped} if skipped else scores), parses


def parsed_sentences(gold: Sequence, parses: Sequence[ParseResult]) -> tuple[list, list[ParseResult], list[str]]:
    """The gold sentences and their parses (`Parser.parse_words(..., on_error="record")`) without those it could not
    parse, and the errors naming those (`skipped`); a ValueError when no sentence is left to score."""
    skipped = [parse["error"] for parse in parses if "error" in parse]
    kept = [index for index, parse in enumerate(parses) if "error" not in parse]
    if not kept:
        raise ValueError(f"no sentence could be parsed ({len(skipped)} tried; the first: {skipped[0]})")
    return [gold[index] for index in kept], [parses[index] for index in kept], skipped


def score_all_words(gold: Sequence[dict], parses: Sequence[Mapping[str, Any]]) -> dict:
    """Attachment scores over every word, punctuation included, as the CoNLL 2018 shared task scores gold-tokenised
    input: `uas`, `las` (labels compared on their universal part, before `:`), `uuas`, `valid_trees`; percentages.
    `gold` are `read_conllu` sentences."""
    if len(parses) != len(gold):
        raise ValueError(f"{len(parses)} parses for {len(gold)} gold sentences")

    def universal(labels):
        return [label.split(":")[0] for label in labels]

    labelled = all("deprels" in p for p in parses)
    scores = attachment_scores(
        [p["heads"] for p in parses],
        [g["heads"] for g in gold],
        [universal(p["deprels"]) for p in parses] if labelled else None,
        [universal(g["deprels"]) for g in gold] if labelled else None,
    )
    scores["valid_trees"] = sum(heads_are_tree(p["heads"]) for p in parses) / len(parses)
    return {"sentences": len(gold), **{key: round(100 * value, 2) for key, value in scores.items()}}


def tag_accuracies(gold: Sequence[dict], parses: Sequence[Mapping[str, Any]]) -> dict:
    """The percentage of words whose tag is the gold one, for each tag set (`upos`, `xpos`, `feats`) that every parse
    holds (a model with taggers), over the words the gold tags in that set (`read_conllu` sentences)."""
    scores = {}
    for name in ("upos", "xpos", "feats"):
        if not parses or not all(name in p for p in parses):
            continue
        pairs = [(tag, gold_tag) for p, g in zip(parses, gold) for tag, gold_tag in zip(p[name], g[name]) if gold_tag]
        if pairs:
            scores[name] = round(100 * sum(tag == gold_tag for tag, gold_tag in pairs) / len(pairs), 2)
    return scores


ALL_WORDS_SCORING = (
    "uas/las/uuas: every word, punctuation included, labels compared on their universal part (the CoNLL 2018 "
    "convention); *_no_punct: PUNCT words removed and heads on them walked up (the unsupervised parsers' convention); "
    "upos/xpos/feats (a model with taggers): the words whose tag is the gold one"
)


def parse_passes(model) -> int:
    """How many times `evaluate` parses every sentence: once with the model's defaults, once per reported
    option."""
    return 1 + len(reported_options(model))


def _every_word_evaluation(parser: Parser, gold: "GoldTreebank", parsing: dict) -> tuple[dict, list[ParseResult]]:
    """A parser that sees every word scored on a CoNLL-U file: the whole sentences are parsed once, then scored both
    ways (see `ALL_WORDS_SCORING`), with the parsing speed; then parsed again with each of the model's
    `reported_options` (keys `uas_<name>`, `las_<name>` ...). A sentence the model cannot parse is named in
    `skipped`."""
    sentences = gold.sentences
    names = [f"sentence {number} ({gold.path}:{s['line']})" for number, s in enumerate(sentences, 1)]
    start = time.perf_counter()
    parses = parser.parse_words([s["words"] for s in sentences], names=names, on_error="record", **parsing)
    seconds = time.perf_counter() - start
    sentences, parses, skipped = parsed_sentences(sentences, parses)
    scores = score_all_words(sentences, parses)
    kept = [(s, p) for s, p in zip(sentences, parses) if any(tag != "PUNCT" for tag in s["upos"])]
    punctuation = frozenset({"PUNCT"})
    if kept:  # a treebank of punctuation alone has no word to score this way
        no_punct = attachment_scores(
            [content_heads(s["upos"], p["heads"], punctuation) for s, p in kept],
            [content_heads(s["upos"], s["heads"], punctuation) for s, _ in kept],
        )
        scores.update({f"{key}_no_punct": round(100 * value, 2) for key, value in no_punct.items()})
    scores["sentences_per_second"] = round(len(sentences) / seconds, 1)
    scores.update(tag_accuracies(sentences, parses))
    for name, options in reported_options(parser.model).items():
        alternative = score_all_words(
            sentences, parser.parse_words([s["words"] for s in sentences], **parsing, **options)
        )
        scores.update({f"{key}_{name}": value for key, value in alternative.items() if key != "sentences"})
    scores["scoring"] = ALL_WORDS_SCORING
    return ({**scores, "skipped": skipped} if skipped else scores), parses


@dataclass(frozen=True)
class GoldTreebank:
    """What a model is scored against: the treebank's `path`, whether every word is scored (`every_word`: a CoNLL-U
    file and a model that sees every word, the CoNLL 2018 convention) and its gold `sentences` (`read_conllu` dicts
    for every word, else `GoldSentence`s of the scored words, punctuation removed)."""

    path: str
    every_word: bool
    sentences: list


def scores_every_word(model: ParsingModel, treebank: str | Path) -> bool:
    """The every-word rule: a CoNLL-U file scored for a model that sees every word (`punctuation_policy="keep"`)
    is scored over every word; a PTB folder, or CoNLL-U for a model trained without punctuation, over the scored
    words."""
    return Path(treebank).suffix == ".conllu" and getattr(model.config, "punctuation_policy", "keep") == "keep"


def gold_treebank(model: ParsingModel, treebank: str | Path, max_sentences: int | None = None) -> GoldTreebank:
    """The gold sentences `model` is scored against in `treebank` (the first `max_sentences`; None: all), by the
    every-word rule (`scores_every_word`)."""
    every_word = scores_every_word(model, treebank)
    sentences = read_conllu(treebank) if every_word else read_treebank(treebank)
    return GoldTreebank(str(treebank), every_word, sentences[:max_sentences])


def evaluate(
    parser: Parser,
    gold: GoldTreebank,
    batch_size: int = 64,
    num_threads: int | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> tuple[dict, list[ParseResult]]:
    """The evaluation of a parsing model, as `hf-structure evaluate` reports it and the training-time evaluation
    logs it: scores by the gold treebank's convention (every word, or the scored words), with the model's default
    decodings, then with each of its `reported_options` (`uas_argmax`, `sentence_f1_chart` ...). A sentence the
    model cannot parse is left out of every score and named in `skipped`; a ValueError when none is left. Returns
    the scores and the default decoding's parses of the sentences scored. `on_batch(k)`: after each batch, with the
    k sentences it completed (`parse_passes` passes over the sentences in all)."""
    parsing = {"batch_size": batch_size, "num_threads": num_threads, "on_batch": on_batch}
    if gold.every_word:
        return _every_word_evaluation(parser, gold, parsing)
    return _scored_words_evaluation(parser, gold.sentences, parsing)


def member_parses_of_file(path, gold: Sequence[GoldSentence], names: Sequence[str]) -> list[dict]:
    """A trees file's parses of the gold sentences, matched by their words (`read_trees_file`), a sentence it has
    no tree for recorded as an error naming the file. Raises TreesFileError for a file that cannot be read."""
    from ..data.trees_files import read_trees_file

    table = read_trees_file(path)
    return [
        {"spans": table[tuple(g.words)]}
        if tuple(g.words) in table
        else {"words": g.words, "error": f"{name}: {path} has no tree of these words"}
        for g, name in zip(gold, names)
    ]


def evaluate_ensemble(
    members: Sequence[tuple[str, Any]],
    gold: Sequence[GoldSentence],
    tie_break: str = "right",
    seed: int = 0,
    batch_size: int = 64,
    num_threads: int | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> dict:
    """An ensemble of constituency parsers scored on gold sentences: each member's trees (`members`: `(name,
    Parser)` for a model, which parses the gold words, or `(name, path)` for a trees file), averaged by
    `average_trees` with `tie_break` (the ensemble's scores), and again with ties at random (`*_random`, `seed`),
    beside each member's own `sentence_f1` and `corpus_f1` (`members`). A sentence that a member cannot parse, or
    that a trees file lacks, is left out of every score and named in `skipped`. `on_batch`: as `evaluate` (each
    model parses every sentence once)."""
    from ..structs.decoding import average_trees

    names = sentence_names(gold)
    words = [g.words for g in gold]
    member_parses: list[Sequence[Mapping[str, Any]]] = []
    for name, member in members:
        if isinstance(member, Parser):
            options = {"structures": ("constituency",)} if "structures" in member.model.parse_options else {}
            parses = member.parse_words(
                words,
                names=names,
                on_error="record",
                batch_size=batch_size,
                num_threads=num_threads,
                on_batch=on_batch,
                **options,
            )
            member_parses.append([{**p, "error": f"{name}: {p['error']}"} if "error" in p else p for p in parses])
        else:
            member_parses.append(member_parses_of_file(member, gold, names))
    errors = [next((m[i]["error"] for m in member_parses if "error" in m[i]), None) for i in range(len(gold))]
    kept = [i for i, error in enumerate(errors) if error is None]
    if not kept:
        raise ValueError(f"no sentence could be parsed by every member ({len(gold)} tried; the first: {errors[0]})")
    kept_gold = [gold[i] for i in kept]
    trees = [[[(start, end) for start, end in member[i]["spans"]] for i in kept] for member in member_parses]
    lengths = [len(g.words) for g in kept_gold]
    scores: dict[str, Any] = {"tie_break": tie_break}
    scores.update(score_parses(kept_gold, [{"spans": t} for t in average_trees(trees, lengths, tie_break, seed)]))
    if tie_break != "random":
        at_random = score_parses(kept_gold, [{"spans": t} for t in average_trees(trees, lengths, "random", seed)])
        scores.update({f"{key}_random": value for key, value in at_random.items() if key.endswith("f1")})
    scores["members"] = [
        {
            "parser": name,
            **{
                key: value
                for key, value in score_parses(kept_gold, [{"spans": t} for t in member]).items()
                if key in ("sentence_f1", "corpus_f1")
            },
        }
        for (name, _), member in zip(members, trees)
    ]
    skipped = [error for error in errors if error is not None]
    return {**scores, "skipped": skipped} if skipped else scores
