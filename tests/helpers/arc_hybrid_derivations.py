"""Brute force for the arc-hybrid system: every legal derivation of a short sentence, and a derivation's score
replayed step by step; the references the exact decoders (`hf_structure.structs.arc_hybrid`) and the parser are
checked against."""

from hf_structure.structs.arc_hybrid import LEFT, RIGHT, SHIFT


def all_derivations(length, single_root=False):
    """Every legal arc-hybrid transition sequence of a sentence of `length` words (stack [0], buffer 1..n); with
    `single_root`, only those attaching one word to ROOT (RIGHT onto ROOT only with an empty buffer)."""
    found = []

    def extend(stack, front, transitions):
        if stack == [0] and front == length + 1:
            found.append(list(transitions))
            return
        if front <= length:
            extend(stack + [front], front + 1, transitions + [SHIFT])
        if len(stack) > 1:
            if front <= length:
                extend(stack[:-1], front, transitions + [LEFT])
            if not (single_root and len(stack) == 2 and front <= length):
                extend(stack[:-1], front, transitions + [RIGHT])

    extend([0], 1, [])
    return found


def stack_size_score(transitions, transition_scores, matching_scores, arc_scores, length):
    """Replay a derivation, scoring each step from the buffer front and the stack size (bucketed), each reduction
    with its matching and arc scores: the scores `stack_size_dp` maximises, written out step by step."""
    buckets = transition_scores.size(1)
    stack, shifted_onto, front, total = [0], {}, 1, 0.0
    for action in transitions:
        size = min(len(stack), buckets - 1)
        total += float(transition_scores[front, size, action])
        if action == SHIFT:
            shifted_onto[front] = len(stack)
            stack.append(front)
            front += 1
            continue
        k = stack.pop()
        total += float(matching_scores[k, min(shifted_onto[k], buckets - 1), front])
        total += float(arc_scores[front, k] if action == LEFT else arc_scores[stack[-1], k])
    return total
