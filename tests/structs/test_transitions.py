"""The arc-standard + SWAP system and its eager static oracle: replaying the oracle rebuilds the gold tree."""

import itertools

import pytest

from hf_structure.structs.transitions import (
    LEFT_ARC,
    RIGHT_ARC,
    SHIFT,
    SWAP,
    SwapConfiguration,
    projective_order,
    swap_oracle,
)
from hf_structure.structs.trees import heads_are_tree, is_projective


def replay(heads, actions):
    configuration = SwapConfiguration(len(heads))
    for action in actions:
        configuration.apply(action)
    assert configuration.is_terminal()
    return configuration.heads[1:]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_the_oracle_rebuilds_every_tree_and_swaps_only_for_non_projective_ones(n):
    for candidate in itertools.product(range(n + 1), repeat=n):
        heads = list(candidate)
        if not heads_are_tree(heads):
            continue
        actions = swap_oracle(heads)
        assert replay(heads, actions) == heads
        assert (SWAP in actions) == (not is_projective(heads)), heads
        assert actions.count(SHIFT) == n + actions.count(SWAP)


def test_a_crossing_pair_is_built_with_one_swap():
    # 1 <- 3 and 2 <- 4 cross: the oracle swaps 2 behind 3 so that 3 takes 1 and then 4 takes 2.
    heads = [3, 4, 0, 3]
    assert projective_order(heads) == [0, 1, 3, 2, 4]
    actions = swap_oracle(heads)
    assert actions == [SHIFT, SHIFT, SHIFT, SWAP, LEFT_ARC, SHIFT, SHIFT, LEFT_ARC, RIGHT_ARC, RIGHT_ARC]
    assert replay(heads, actions) == heads


def test_legal_actions_keep_a_single_root_and_stop_swap_loops():
    configuration = SwapConfiguration(2)
    assert configuration.legal_actions() == [True, False, False, False]  # only ROOT on the stack
    configuration.apply(SHIFT)
    # s1 is ROOT: no LEFT_ARC onto ROOT, no RIGHT_ARC while words remain, no SWAP of ROOT
    assert configuration.legal_actions() == [True, False, False, False]
    configuration.apply(SHIFT)
    assert configuration.legal_actions() == [False, True, True, True]
    configuration.apply(SWAP)  # word 1 back to the buffer; 2 and 1 are now in reverse order
    configuration.apply(SHIFT)
    assert configuration.legal_actions()[SWAP] is False  # the same pair cannot be swapped back
    with pytest.raises(ValueError, match="not legal"):
        configuration.apply(SWAP)


def test_the_oracle_rebuilds_every_ewt_training_tree(data_dir):
    from hf_structure.data.conllu_format import read_conllu

    path = data_dir / "ud-english-ewt" / "en_ewt-ud-train.conllu"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    sentences = read_conllu(path)
    assert len(sentences) == 12544
    non_projective = 0
    for sentence in sentences:
        actions = swap_oracle(sentence["heads"])
        assert replay(sentence["heads"], actions) == sentence["heads"], sentence["id"]
        non_projective += SWAP in actions
    assert non_projective > 100  # the non-projective trees are among them, rebuilt through SWAP


def test_the_model_code_uses_the_same_action_ids():
    from hf_structure.models.g2gtr import modeling_g2gtr

    assert (modeling_g2gtr.SHIFT, modeling_g2gtr.LEFT_ARC, modeling_g2gtr.RIGHT_ARC, modeling_g2gtr.SWAP) == (
        SHIFT,
        LEFT_ARC,
        RIGHT_ARC,
        SWAP,
    )
