"""The `unsupervised-parsing` pipeline: sentences in, one parse per sentence out, for any model with `parse`.

The contract every hf_structure model answers: `model.parse(sentences, tokenizer, **options)` takes a batch of
word lists and returns one dict per sentence with `words` and what the model gives of `spans` (constituents,
0-based `[start, end)`), `heads` (1-based, 0 = root), `deprels` and `scores` (model-specific extras). A sentence
the model cannot parse raises `ValueError`. A model may also state `max_parse_words`, or answer
`parse_length_error(words, tokenizer)` (a message, or None), so that longer sentences are rejected before any batch
runs, and the error names the caller's item.

The model class declares, next to `parse`, what it takes and gives: `parse_options` (the keyword options of
`parse`, each with the values it takes) and `parse_outputs` (the keys a parse holds besides `words`). Every call is
checked against them before anything is parsed (`check_options`), and an option the model does not take, or a value
it does not know, is an `UnsupportedOptionError` naming the option, the model and what it takes.

What a model sees is its own business, stated by its config's `punctuation_policy`: `"reattach"` (the model was
trained without punctuation: punctuation tokens are removed before the model and put back afterwards, each
attached to the root word and lying inside the smallest constituent that contains both its neighbours) or
`"keep"` (the default: the model sees every word). This pipeline only applies that policy.

Raw text is cut into words as the model's training text was: its config's `word_convention` (`"ptb"`, the Penn
Treebank's words, where it states none; `"ud"`, UD English-EWT's), which a call may override.

The pipeline's file travels with a pushed model folder, so it imports only transformers and its sibling
`word_tokenization.py` (raw text is split into sentences and words with `re`, no nltk).
"""

# The modular source of unsupervised_parsing.py, the standalone file that scripts/modular_converter.py generates
# (hf_structure's definitions inlined): edit this file, then run the converter.

import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any

from transformers import Pipeline

from ..structs.trees import spans_to_bracketed
from ..threads import LoadMeasurement, check_num_threads, parsing_threads
from .batched_parsing import (
    Sentence,
    SentenceError,
    check_on_error,
    check_words,
    checked_sentence,
    lone_surrogate_error,
    parse_batch,
    parse_in_order,
    unparsable_sentence,
)
from .quantization import quantized
from .word_tokenization import WORD_CONVENTIONS, sentence_offsets, tokenize_with_offsets

# The structures a parse can hold, and the keys of a model's parse that carry each (the first always).
STRUCTURES = {"constituency": ("spans",), "dependency": ("heads", "deprels")}


class UnsupportedOptionError(ValueError):
    """An option a model does not take, or a value of it the model does not know; raised before anything is parsed,
    naming the option, the model and the options it takes. `options`: the names of the refused options."""

    def __init__(self, message: str, options: tuple[str, ...] = ()):
        super().__init__(message)
        self.options = options


def model_description(model) -> str:
    """How errors name a model: its class, model type and folder or Hub id."""
    return f"{type(model).__name__} (model type {model.config.model_type!r}, {model.name_or_path})"


def accepted_options(model) -> dict[str, tuple]:
    """Every option a call may give for `model`, with the values each takes: the pipeline's own options, as far as
    the model can honour them, then the keyword options of its `parse` (`model.parse_options`).

    `structures`: those the model's parses hold. `return_scores=True`: only a model whose parses hold `scores`.
    `keep_punctuation=False` drops the punctuation the pipeline took away and put back, so it needs
    `punctuation_policy="reattach"`; a model that sees every word attaches punctuation itself, and dropping it would
    leave words headed by nothing. An option at its default (`return_scores=False`, `keep_punctuation=True`) asks
    nothing and is always taken.
    """
    outputs = getattr(model, "parse_outputs", None)
    if outputs is None:
        raise TypeError(f"{type(model).__name__} declares no parse_outputs: it is not an hf_structure parsing model")
    reattaches = getattr(model.config, "punctuation_policy", "keep") == "reattach"
    return {
        "structures": tuple(name for name, keys in STRUCTURES.items() if keys[0] in outputs),
        "return_scores": (False, True) if "scores" in outputs else (False,),
        "keep_punctuation": (True, False) if reattaches else (True,),
        **getattr(model, "parse_options", {}),
    }


def check_options(model, options: dict) -> None:
    """An `UnsupportedOptionError` when `options` (None: not given) hold an option `model` does not take or a value
    it does not know (for a list, such as `structures`, each of its values), before anything is parsed."""
    accepted = accepted_options(model)
    refused = {}
    for name, value in options.items():
        if value is None:
            continue
        given = tuple(value) if isinstance(value, (list, tuple)) else (value,)
        if name not in accepted:
            refused[name] = f"the option {name}"
        elif not given or any(item not in accepted[name] for item in given):
            refused[name] = f"{name}={value!r}"
    if refused:
        takes = ", ".join(f"{name}={'|'.join(map(repr, values))}" for name, values in accepted.items())
        raise UnsupportedOptionError(
            f"{model_description(model)} does not take {', '.join(refused.values())}; it takes {takes}",
            tuple(refused),
        )


def model_word_convention(model) -> str:
    """How raw text is cut into words for `model`: its config's `word_convention`, `"ptb"` where it states none."""
    return getattr(model.config, "word_convention", None) or "ptb"


def check_word_convention(word_convention: str) -> str:
    """`word_convention` as given, or a ValueError naming the values it takes."""
    if word_convention not in WORD_CONVENTIONS:
        raise ValueError(f"word_convention must be one of {WORD_CONVENTIONS}, got {word_convention!r}")
    return word_convention


def split_text(
    text, item: str = "the text", split_sentences: bool = True, word_convention: str = "ptb"
) -> list[tuple[list[str], list, str]]:
    """The sentences of raw text (`sentence_offsets`; the whole text as one with `split_sentences=False`), each as
    its words (`tokenize_with_offsets` in the `word_convention` given), their `[start, end]` character offsets in
    `text` and its own text (none for an empty or whitespace-only text); or a SentenceError naming the item."""
    if not isinstance(text, str):
        raise TypeError(f"{item}: expected a string, got {type(text).__name__}")
    if not text.strip():
        return []
    control = next((c for c in text if unicodedata.category(c) == "Cc" and not c.isspace()), None)
    if control is not None:
        raise SentenceError(f"{item}: the text contains the control character {control!r}")
    if surrogate := lone_surrogate_error(text):
        raise SentenceError(f"{item}: {surrogate}")
    if split_sentences:
        spans = sentence_offsets(text)
    else:
        spans = [(len(text) - len(text.lstrip()), len(text.rstrip()))]
    sentences = []
    for start, end in spans:
        words, offsets = tokenize_with_offsets(text[start:end], word_convention)
        sentences.append((words, [[start + first, start + last] for first, last in offsets], text[start:end]))
    return sentences


class UnsupervisedParsingPipeline(Pipeline):
    """Parse sentences with any hf_structure model.

    Inputs: a string, a list of strings, a list of words with `is_split_into_words=True`, a list of word lists,
    or a `datasets.Dataset` / generator (use `KeyDataset` for a column). A batch mixing strings and word lists is
    rejected. A string is raw text: split into sentences (`split_sentences=False`: the whole string is one) and
    words, cut as the model's training text was (`word_convention`: `"ptb"`, the Penn Treebank's words; `"ud"`, UD
    English-EWT's, which splits hyphens and slashes between words off; default: the model config's
    `word_convention`, "ptb" where it has none), it gives a LIST of parses, one per sentence, in order (a list of
    strings: a list of such lists); each also holds `offsets` (`[start, end]` of each word in the string) and
    `text` (the sentence's own text in the string): each word is the string's own characters. A word list gives
    one parse. Each parse is a dict with
    `words` (the input words, or the split of the text) and what the model gives: `tree` (bracketed,
    brackets in words escaped as `-LRB-`/`-RRB-`) and `spans` (0-based
    `[start, end)`, two or more words, whole sentence first) for constituents; `heads` (1-based, 0 = root) and
    `deprels` for dependencies. Options: `structures` (`"constituency"`,
    `"dependency"` or a list of them: only these in the output, and a model that can skip the work for the others
    skips it; default: all the model gives), `keep_punctuation=False` (drop
    re-attached punctuation from the output: models with `punctuation_policy="reattach"` only), `return_scores=True`
    (the model's extras under `scores`, where its parses have them), `num_threads` (torch's CPU threads for the
    model's parse, at construction or per call; the caller's `torch.get_num_threads()` is restored after; default:
    one per core that other processes leave free, at most the caller's count: see `default_num_threads`);
    at construction only, `quantize="int8"` (the encoder's linear layers on int8, on the CPU, for models that name
    their `int8_modules`: see `quantization.py`; the saved weights are not changed). Any other
    option is the model's and goes to its
    `parse`, e.g.
    `head_decoding` for models that decode heads from arc scores (`"argmax"`, `"eisner"`, `"chu-liu-edmonds"`;
    default: the model's config). An option the model does not take (see `accepted_options`), or a value it does not
    know, is an `UnsupportedOptionError` naming it, raised before anything is parsed. The results are data: CoNLL-U
    (which this file, travelling without the `conllu` library, does not write) is `hf_structure.data.conllu_format`'s
    `parses_to_conllu(results)` or `hf-structure parse --conllu`.
    """

    # transformers reads these as booleans (None: as the model folder has it) but annotates them as None.
    _load_processor = False  # type: ignore[assignment]
    _load_image_processor = False  # type: ignore[assignment]
    _load_feature_extractor = False  # type: ignore[assignment]
    _load_tokenizer = True  # type: ignore[assignment]

    def __init__(self, *args, quantize: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.model = quantized(self.model, self.tokenizer, quantize, self.device)
        self.load = LoadMeasurement()  # the machine's load, measured when a parse first needs a thread count

    def save_pretrained(self, *args, **kwargs):
        if getattr(self.model, "quantization", None):
            raise ValueError(
                f"this pipeline's model is quantized ({self.model.quantization}) for parsing only; save the model "
                "it was loaded from instead"
            )
        super().save_pretrained(*args, **kwargs)

    def _sanitize_parameters(
        self,
        is_split_into_words=None,
        split_sentences=None,
        word_convention=None,
        keep_punctuation=None,
        return_scores=None,
        structures=None,
        num_threads=None,
        on_error=None,
        **parse_options,
    ):
        check_options(
            self.model,
            {
                "structures": structures,
                "keep_punctuation": keep_punctuation,
                "return_scores": return_scores,
                **parse_options,
            },
        )
        if isinstance(structures, str):
            structures = (structures,)
        preprocess, forward, postprocess = {}, {}, {}
        if structures is not None:
            postprocess["structures"] = tuple(structures)
        if is_split_into_words is not None:
            preprocess["is_split_into_words"] = is_split_into_words
        if split_sentences is not None:
            if not isinstance(split_sentences, bool):
                raise TypeError(f"split_sentences must be True or False, got {split_sentences!r}")
            preprocess["split_sentences"] = split_sentences
        if word_convention is not None:
            preprocess["word_convention"] = check_word_convention(word_convention)
        if on_error is not None:  # a sentence refused before parsing (preprocess) or by the model (forward)
            preprocess["on_error"] = forward["on_error"] = check_on_error(on_error)
        # The model's own options (None: its default), and `structures` where its `parse` can skip the others' work.
        model_options = {"structures": structures, **parse_options}
        takes = getattr(self.model, "parse_options", {})
        forward.update((name, value) for name, value in model_options.items() if value is not None and name in takes)
        if num_threads is not None:
            forward["num_threads"] = check_num_threads(num_threads)
        if keep_punctuation is not None:
            postprocess["keep_punctuation"] = keep_punctuation
        if return_scores is not None:
            postprocess["return_scores"] = return_scores
        return preprocess, forward, postprocess

    def __call__(self, inputs, **kwargs):
        split = bool(kwargs.get("is_split_into_words"))
        split_sentences = kwargs.get("split_sentences")
        if split_sentences is None:  # the pipeline's own setting
            split_sentences = self._preprocess_params.get("split_sentences", True)
        on_error = check_on_error(kwargs.get("on_error") or self._preprocess_params.get("on_error", "raise"))
        word_convention = kwargs.get("word_convention") or self._preprocess_params.get("word_convention")
        if word_convention is not None:  # None: the model's (`sentences`)
            check_word_convention(word_convention)
        if isinstance(inputs, str):
            if split:
                check_words(inputs, "the sentence")  # the TypeError for a string given as words
            sentences = self.sentences(inputs, False, None, split_sentences, on_error, word_convention)
            return self.parse_sentences(sentences, kwargs)
        if inputs is None or isinstance(inputs, (int, float, bytes, dict)):
            raise TypeError(f"expected a string, a list of words or a batch of them, got {type(inputs).__name__}")
        if not isinstance(inputs, (list, tuple)):
            return super().__call__(inputs, **kwargs)  # a Dataset or generator: items are checked one by one
        if not inputs:
            raise SentenceError("empty word list" if split else "no sentence to parse: the input list is empty")
        # A list of words with is_split_into_words is one sentence, not a batch of one-word sentences.
        single = split and not any(isinstance(item, (list, tuple)) for item in inputs)
        batch = [inputs] if single else list(inputs)
        as_words = single or isinstance(batch[0], (list, tuple))
        kind = "sentence" if as_words else "item"
        groups = []
        for index, item in enumerate(batch):
            if isinstance(item, (list, tuple)) != as_words:
                first = "word lists" if as_words else "strings"
                raise TypeError(
                    f"{kind} {index + 1}: a batch must be all strings or all word lists; item 1 makes it "
                    f"{first}, item {index + 1} is a {type(item).__name__}"
                )
            # Checked (and split) once here; preprocess takes the result as it is. Items are counted from 1.
            name = "the sentence" if single else f"{kind} {index + 1}"
            groups.append(self.sentences(item, as_words, name, split_sentences, on_error, word_convention))
        # The sentences of every item are parsed together, in batches of similar lengths across items.
        parses = iter(self.parse_sentences([sentence for group in groups for sentence in group], kwargs))
        if as_words:
            outputs = [next(parses) for _ in groups]
            return outputs[0] if single else outputs
        return [[next(parses) for _ in group] for group in groups]

    def parse_sentences(self, sentences: list[Sentence], kwargs: dict) -> list[dict]:
        """One result per checked sentence, in order."""
        return [result for done in self.results_in_order(sentences, kwargs) for _, result in done]

    def results_in_order(
        self, sentences: Iterable[Sentence], kwargs: dict, window: int | None = None
    ) -> Iterator[list[tuple[Sentence, dict]]]:
        """The result of each checked sentence (`sentences`, as `sentences` gives them), parsed in batches of similar
        lengths by the batched-parsing core (`parse_in_order`: `window` sentences held at a time, None: all): after
        each batch, the sentences whose results are complete, in input order, each with its result. `kwargs`: the
        call's options, as `__call__` takes them."""
        batch_size = kwargs.get("batch_size") or self._batch_size or 1
        # As `Pipeline.__call__` fuses them: this call's parameters over those given at construction.
        call = {key: value for key, value in kwargs.items() if key not in ("batch_size", "num_workers")}
        _, forward, postprocess = self._sanitize_parameters(**call)
        forward = {**self._forward_params, **forward}
        postprocess = {**self._postprocess_params, **postprocess}
        on_error, num_threads = forward.pop("on_error", "raise"), forward.pop("num_threads", None)
        with self.device_placement(), self.get_inference_context()(), parsing_threads(num_threads, self.load):
            for done in parse_in_order(self.model, self.tokenizer, sentences, forward, batch_size, on_error, window):
                yield [(sentence, self.sentence_result(parse, sentence, **postprocess)) for sentence, parse in done]

    def sentences(
        self, item, is_split_into_words=False, name=None, split_sentences=True, on_error="raise", word_convention=None
    ) -> list[Sentence]:
        """The sentences of one input (a word list: one; a text: those of `split_text`, none for an empty text), each
        with the indices of the words the model sees (its punctuation policy applied: `checked_sentence`). A sentence
        the model cannot parse is a SentenceError (a ValueError) or TypeError naming the input (`name`; None: "the
        text" or "the sentence" of a single input) and, within a text, the sentence; with `on_error="record"` it is
        kept with the message as its `error` instead, and the others are parsed."""
        if is_split_into_words or isinstance(item, (list, tuple)):
            name = name or "the sentence"
            try:
                return [checked_sentence(self.model, self.tokenizer, check_words(item, name), name)]
            except (SentenceError, TypeError) as error:
                return [unparsable_sentence(item if isinstance(item, (list, tuple)) else [], name, error, on_error)]
        try:
            convention = word_convention or model_word_convention(self.model)
            sentences = split_text(item, name or "the text", split_sentences, convention)
        except (SentenceError, TypeError) as error:
            words = item.split() if isinstance(item, str) else []
            return [unparsable_sentence(words, name or "the text", error, on_error)]
        if split_sentences:  # a sentence is named by its place in the text's results, counted from 1
            names = [
                f"{name}, sentence {number}" if name else f"sentence {number}"
                for number in range(1, len(sentences) + 1)
            ]
        else:
            names = [name or "the text"]
        checked = []
        for sentence_name, (words, offsets, text) in zip(names, sentences):
            try:
                checked.append(checked_sentence(self.model, self.tokenizer, words, sentence_name, offsets, text))
            except SentenceError as error:
                checked.append(unparsable_sentence(words, sentence_name, error, on_error, offsets, text))
        return checked

    def preprocess(self, item, is_split_into_words=False, split_sentences=True, on_error="raise", word_convention=None):
        # A model input is the group of sentences of an item of a Dataset or generator (a list of results for a
        # text, one result for a word list), parsed in one batch; lists are parsed by `parse_sentences` instead.
        sentences = self.sentences(
            item,
            is_split_into_words,
            split_sentences=split_sentences,
            on_error=on_error,
            word_convention=word_convention,
        )
        as_list = not (is_split_into_words or isinstance(item, (list, tuple)))
        return {"group": {"sentences": [sentence._asdict() for sentence in sentences], "as_list": as_list}}

    def forward(self, model_inputs, num_threads=None, **forward_params):
        # Words in, plain Python parses out (the parsing contract): nothing moves between devices, so the base class's
        # walk over every list of every parse in search of tensors (a tenth of a batched call's time) is skipped.
        with self.device_placement(), self.get_inference_context()(), parsing_threads(num_threads, self.load):
            return self._forward(model_inputs, **forward_params)

    def _forward(self, model_inputs, on_error="raise", **parse_options):
        groups = model_inputs["group"]
        batched = isinstance(groups, list)
        groups = groups if batched else [groups]
        sentences = [Sentence(**sentence) for group in groups for sentence in group["sentences"]]
        parsed = iter(parse_batch(self.model, self.tokenizer, sentences, parse_options, on_error))
        parses, checked = [], []  # a sentence the model refused comes back with its error (`on_error="record"`)
        for group in groups:
            pairs = [next(parsed) for _ in group["sentences"]]
            parses.append([parse for _, parse in pairs])
            checked.append({**group, "sentences": [sentence._asdict() for sentence, _ in pairs]})
        if not batched:
            return {"parses": parses[0], "group": checked[0]}
        return {"parses": parses, "group": checked}

    def postprocess(self, model_outputs, keep_punctuation=True, return_scores=False, structures=None):
        group = model_outputs["group"]
        results = [
            self.sentence_result(parse, Sentence(**sentence), keep_punctuation, return_scores, structures)
            for parse, sentence in zip(model_outputs["parses"], group["sentences"])
        ]
        return results if group["as_list"] else results[0]

    def sentence_result(
        self, parse, sentence: Sentence, keep_punctuation=True, return_scores=False, structures=None
    ) -> dict:
        """One sentence's result: the model's parse over the words it saw, mapped back onto the sentence's words. An
        unparsable sentence recorded with `on_error="record"` gives its words and `error`. Punctuation alone, which
        a model trained without it never sees, is parsed as punctuation is re-attached: the first mark heads the
        others and the sentence is its one constituent."""
        result: dict[str, Any]
        if sentence.error is not None:
            result = {"words": sentence.words, "error": sentence.error}
            if sentence.offsets is not None:
                result.update(offsets=sentence.offsets, text=sentence.text)
            return result
        if parse is None:  # punctuation alone
            if not keep_punctuation:
                return {"words": [], **({"offsets": [], "text": sentence.text} if sentence.offsets else {})}
            count = len(sentence.words)
            others = count - 1
            parse = {"spans": [[0, count]], "heads": [0] + [1] * others, "deprels": ["root"] + ["punct"] * others}
            parse = {key: value for key, value in parse.items() if key in getattr(self.model, "parse_outputs", ())}
            sentence = sentence._replace(seen=list(range(count)))
        if structures is not None:  # each one the model gives (`check_options`)
            dropped = {key for name, keys in STRUCTURES.items() if name not in structures for key in keys}
            parse = {key: value for key, value in parse.items() if key not in dropped}
        if keep_punctuation:
            kept = list(range(len(sentence.words)))
            position = sentence.seen  # position[k]: index in words of the k-th seen
        else:
            kept, position = sentence.seen, list(range(len(sentence.seen)))
        words = [sentence.words[i] for i in kept]
        result = {"words": words}
        if sentence.offsets is not None:
            result["offsets"] = [sentence.offsets[i] for i in kept]
            result["text"] = sentence.text
        if "spans" in parse:
            # A constituent over seen words s..e-1 covers every word between its first and last; the root all.
            inner = {(position[s], position[e - 1] + 1) for s, e in parse["spans"] if e - s > 1}
            inner.discard((position[0], position[-1] + 1))
            spans = [[0, len(words)]] + sorted(map(list, inner), key=lambda span: (span[0], -span[1]))
            result["tree"] = spans_to_bracketed(words, spans)
            result["spans"] = spans
        if "heads" in parse:
            root = position[parse["heads"].index(0)] + 1
            heads = [root] * len(words)  # words the model did not see (punctuation) attach to the root word
            for seen_index, head in enumerate(parse["heads"]):
                heads[position[seen_index]] = 0 if head == 0 else position[head - 1] + 1
            result["heads"] = heads
            if "deprels" in parse:
                deprels = ["punct"] * len(words)
                for seen_index, deprel in enumerate(parse["deprels"]):
                    deprels[position[seen_index]] = deprel
                result["deprels"] = deprels
        if return_scores and "scores" in parse:
            result["scores"] = parse["scores"]
        return result
