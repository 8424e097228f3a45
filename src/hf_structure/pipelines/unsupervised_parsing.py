"""The `unsupervised-parsing` pipeline: text in, constituency tree and dependency heads out.

Self-contained (imports only torch and transformers; nltk lazily, for raw-text tokenisation and `return_tree`),
so that it travels with a pushed model folder and runs where `hf_structure` is not installed.

Punctuation: the models were trained on text without punctuation, so punctuation tokens (those made only of
`. , ; : ! ? ' " `` ( ) [ ] { } - $ #` and similar, or PTB bracket escapes like `-LRB-`) are removed before the
model sees the sentence and put back afterwards by one rule: a punctuation token attaches to the root word in
the dependency tree, and lies inside the smallest constituent that contains both of its neighbouring words (at the
sentence edges, the whole sentence). `keep_punctuation=False` drops them from the output instead.
"""

import re

from transformers import Pipeline

PUNCTUATION = re.compile(r"^(?:[.,;:!?'\"`()\[\]{}\-\u2013\u2014\u2026$#]+|-[LR][RCS]B-)$")


def is_punctuation(token: str) -> bool:
    return bool(PUNCTUATION.match(token))


def bracketed(words, spans) -> str:
    """Unlabelled bracketed string of nested spans (0-based, end exclusive) over `words`; brackets that are words
    are written -LRB- / -RRB- as in the PTB."""
    words = [{"(": "-LRB-", ")": "-RRB-"}.get(w, w) for w in words]
    opens, closes = {}, {}
    for start, end in set(map(tuple, spans)):
        if end - start > 1 and (start, end) != (0, len(words)):
            opens[start] = opens.get(start, 0) + 1
            closes[end - 1] = closes.get(end - 1, 0) + 1
    return "(" + " ".join("(" * opens.get(i, 0) + w + ")" * closes.get(i, 0) for i, w in enumerate(words)) + ")"


def word_tokenize(text: str) -> list[str]:
    """PTB-style word tokenisation (nltk's Treebank tokenizer; no download needed)."""
    try:
        from nltk.tokenize import TreebankWordTokenizer
    except ImportError as error:
        raise ImportError("raw-text input needs nltk (pip install nltk); or pass pre-tokenized words") from error
    return TreebankWordTokenizer().tokenize(text)


class UnsupervisedParsingPipeline(Pipeline):
    """Parse sentences with any `hf_structure` model that has a `parse` method.

    Inputs: a string, a list of strings, a list of words with `is_split_into_words=True`, a list of word lists,
    or a `datasets.Dataset` / generator (use `KeyDataset` for a column). Each output is a dict with `words`,
    `tree` (bracketed), `spans` (0-based `[start, end)`, two or more words, whole sentence included) and `heads`
    (1-based, 0 = root); `return_scores=True` adds `distances`/`heights` (over the words the model saw),
    `return_tree=True` an `nltk.Tree`, and `output_format="conllu"` returns CoNLL-U text instead.
    """

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def _sanitize_parameters(
        self,
        is_split_into_words=None,
        keep_punctuation=None,
        return_scores=None,
        return_tree=None,
        output_format=None,
        **kwargs,
    ):
        preprocess, postprocess = {}, {}
        if is_split_into_words is not None:
            preprocess["is_split_into_words"] = is_split_into_words
        if keep_punctuation is not None:
            postprocess["keep_punctuation"] = keep_punctuation
        if return_scores is not None:
            postprocess["return_scores"] = return_scores
        if return_tree is not None:
            postprocess["return_tree"] = return_tree
        if output_format is not None:
            if output_format not in ("json", "conllu"):
                raise ValueError(f"output_format must be 'json' or 'conllu', got {output_format!r}")
            postprocess["output_format"] = output_format
        return preprocess, {}, postprocess

    def __call__(self, inputs, **kwargs):
        # A list of words is one sentence, not a batch of one-word sentences.
        single = bool(kwargs.get("is_split_into_words")) and isinstance(inputs, (list, tuple))
        single = single and not any(isinstance(word, (list, tuple)) for word in inputs)  # [["a"], ["b"]]: a batch
        if single:
            inputs = [inputs]
        if isinstance(inputs, list):
            for index, item in enumerate(inputs):
                try:
                    self._check_sentence(item, kwargs.get("is_split_into_words", False))
                except (TypeError, ValueError) as error:
                    if single:
                        raise
                    raise type(error)(f"sentence {index}: {error}") from None
            if kwargs.get("is_split_into_words") or (inputs and isinstance(inputs[0], list)):
                kwargs["is_split_into_words"] = True
                # Word lists travel wrapped so that the base class does not read them as a batch of strings.
                inputs = [_Words(item) for item in inputs]
        elif isinstance(inputs, str):
            self._check_sentence(inputs, False)
        outputs = super().__call__(inputs, **kwargs)
        return outputs[0] if single else outputs

    def _check_sentence(self, item, split) -> tuple[list[str], list[int]]:
        """Validate one sentence; returns its tokens and the indices of those the model sees (not punctuation)."""
        if isinstance(item, _Words):
            item = list(item)
        if isinstance(item, str):
            if split:
                raise TypeError("is_split_into_words=True needs a list of words, got a string")
            if not item.strip():
                raise ValueError("empty or whitespace-only text")
            tokens = word_tokenize(item)
        elif isinstance(item, (list, tuple)):
            if not item:
                raise ValueError("empty word list")
            for position, word in enumerate(item):
                if not isinstance(word, str):
                    raise TypeError(f"word {position} is a {type(word).__name__}, not a string")
                if not word.strip() or any(c.isspace() for c in word):
                    raise ValueError(f"word {position} ({word!r}) is empty or contains whitespace")
            tokens = list(item)
        else:
            raise TypeError(f"expected a string or a list of words, got {type(item).__name__}")
        content = [i for i, token in enumerate(tokens) if not is_punctuation(token)]
        if not content:
            raise ValueError(f"the sentence has no word besides punctuation: {' '.join(tokens)!r}")
        limit = self.model.config.max_position_embeddings
        if len(content) > limit:
            raise ValueError(
                f"the sentence has {len(content)} words; this model accepts at most {limit} (max_position_embeddings)"
            )
        return tokens, content

    def preprocess(self, sentence, is_split_into_words=False):
        tokens, content = self._check_sentence(sentence, is_split_into_words)
        encoded = self.tokenizer(
            [tokens[i] for i in content], is_split_into_words=True, return_tensors="pt", return_token_type_ids=False
        )
        if encoded["input_ids"].shape[1] != len(content):
            raise ValueError("the tokenizer split a word into several tokens; this model needs one token per word")
        return {**encoded, "tokens": tokens, "content": content}

    def _forward(self, model_inputs):
        parses = self.model.parse(model_inputs["input_ids"], model_inputs["attention_mask"])
        return {"parse": parses, "tokens": model_inputs["tokens"], "content": model_inputs["content"]}

    def postprocess(self, model_outputs, keep_punctuation=True, return_scores=False, return_tree=False,
                    output_format="json"):
        parse, tokens, content = model_outputs["parse"], model_outputs["tokens"], model_outputs["content"]
        if isinstance(parse, list):  # batch_size=1: the base class does not unbatch
            parse = parse[0]
        if keep_punctuation:
            words, position = tokens, content  # position[k]: index in `tokens` of the k-th word the model saw
        else:
            words, position = [tokens[i] for i in content], list(range(len(content)))
        root = position[parse["heads"].index(0)] + 1
        heads = [root] * len(words)  # punctuation attaches to the root word
        for model_index, head in enumerate(parse["heads"]):
            heads[position[model_index]] = 0 if head == 0 else position[head - 1] + 1
        # A constituent over words s..e-1 covers every token between its first and last word; the root covers all.
        spans = {(position[s], position[e - 1] + 1) for s, e in parse["spans"]}
        spans.discard((position[0], position[-1] + 1))
        spans = [[0, len(words)]] + sorted(map(list, spans), key=lambda span: (span[0], -span[1]))
        result = {"words": words, "tree": bracketed(words, spans), "spans": spans, "heads": heads}
        if return_scores:
            result["distances"] = parse["distances"]
            result["heights"] = parse["heights"]
        if return_tree:
            result["nltk_tree"] = nltk_tree(words, spans)
        if output_format == "conllu":
            rows = [
                f"{i + 1}\t{w}\t_\t_\t_\t_\t{h}\t{'root' if h == 0 else 'punct' if is_punctuation(w) else 'dep'}\t_\t_"
                for i, (w, h) in enumerate(zip(words, heads))
            ]
            return "\n".join(rows) + "\n\n"
        return result


class _Words(list):
    """A sentence given as words (kept apart from a batch of sentences)."""


def nltk_tree(words, spans):
    """An `nltk.Tree` (internal nodes labelled `X`) of nested spans over `words`."""
    import nltk

    ordered = sorted((tuple(span) for span in spans if span[1] - span[0] > 1), key=lambda s: (s[0], -s[1]))

    def build(start, end):
        children, k = [], start
        while k < end:
            child = next(((s, e) for s, e in ordered if s == k and e <= end and (s, e) != (start, end)), None)
            if child is None:
                children.append(words[k])
                k += 1
            else:
                children.append(build(*child))
                k = child[1]
        return nltk.Tree("X", children)

    return build(0, len(words))
