"""G2GTr decoding the straightforward way, as it was before issue 31: at every step, every graph layer runs at every
piece of every unfinished sentence (`G2GTrForParsing.encode_configurations`, the training path), and the classifiers
read the result at s1, s0 and b0. The tests compare `G2GTrForParsing.parse`, which keeps what a transition does not
change (`G2GTrDecodingCache`), with it."""

import torch

from hf_structure.data.tokenization import encode_word_pieces
from hf_structure.models.g2gtr.modeling_g2gtr import (
    TO_DEPENDENT,
    TO_HEAD,
    configuration_slot_positions,
    initial_piece_relations,
)
from hf_structure.structs.transitions import LEFT_ARC, RIGHT_ARC, SwapConfiguration


@torch.no_grad()
def recompute_every_step_parse(model, tokenizer, sentences: list[list[str]]) -> tuple[list[dict], list[tuple]]:
    """The parses (as `parse` returns them) and, per step, the action and label scores of the unfinished sentences."""
    inputs = encode_word_pieces(sentences, tokenizer, model.config.encoder_config.max_position_embeddings)
    first_pieces = inputs["first_pieces"].tolist()
    attention_mask = inputs["attention_mask"]
    states = model.encode_sentences(inputs["input_ids"], attention_mask)
    relations = initial_piece_relations(first_pieces, inputs["lengths"].tolist(), attention_mask)
    token_labels = torch.zeros_like(inputs["input_ids"])
    configurations = [SwapConfiguration(len(words)) for words in sentences]
    scores = []
    while active := [b for b, configuration in enumerate(configurations) if not configuration.is_terminal()]:
        index = torch.tensor(active)
        slots = torch.tensor([configuration_slot_positions(configurations[b], first_pieces[b]) for b in active])
        hidden = model.encode_configurations(
            states[index], attention_mask[index], relations[index], token_labels[index]
        )
        action_logits, label_logits = model.classify(hidden, slots)
        scores.append((action_logits, label_logits))
        legal = torch.tensor([configurations[b].legal_actions() for b in active])
        actions = action_logits.masked_fill(~legal, float("-inf")).argmax(-1).tolist()
        for b, action, (left_label, right_label) in zip(active, actions, label_logits.argmax(-1).tolist()):
            configuration, label = configurations[b], None
            if action in (LEFT_ARC, RIGHT_ARC):
                label = left_label if action == LEFT_ARC else right_label
                s1, s0 = configuration.stack[-2], configuration.stack[-1]
                head, dependent = (s0, s1) if action == LEFT_ARC else (s1, s0)
                head_piece, dependent_piece = first_pieces[b][head], first_pieces[b][dependent]
                relations[b, head_piece, dependent_piece] = TO_DEPENDENT
                relations[b, dependent_piece, head_piece] = TO_HEAD
                token_labels[b, dependent_piece] = label + 1
            configuration.apply(action, label)
    parses = [
        {
            "words": list(words),
            "heads": configuration.heads[1:],
            "deprels": [model.config.deprels[label] for label in configuration.labels[1:]],
        }
        for words, configuration in zip(sentences, configurations)
    ]
    return parses, scores
