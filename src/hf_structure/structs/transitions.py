"""The arc-standard transition system with SWAP (Nivre 2009), which builds any (non-projective) dependency tree,
and its static oracle with eager swaps.

A configuration is a stack (ROOT, word 0, at the bottom), a buffer of words and the arcs built so far. Actions:
SHIFT moves the buffer's front onto the stack; LEFT_ARC makes the stack top s0 the head of the word below it, s1,
and removes s1; RIGHT_ARC makes s1 the head of s0 and removes s0; SWAP moves s1 back to the front of the buffer,
which reorders words so that crossing arcs become adjacent. Words are 1-based; heads are 1-based with 0 = ROOT.

Self-contained (standard library only): the decoding side (`SwapConfiguration`) is copied into model Hub code.
"""

SHIFT, LEFT_ARC, RIGHT_ARC, SWAP = 0, 1, 2, 3
ACTION_NAMES = ("SHIFT", "LEFT_ARC", "RIGHT_ARC", "SWAP")


class SwapConfiguration:
    """A parser configuration of an n-word sentence; `heads[i]`/`labels[i]` of word i (index 0 unused) are -1/None
    until its arc is built."""

    def __init__(self, length: int):
        self.stack = [0]
        self.buffer = list(range(1, length + 1))
        self.heads = [-1] * (length + 1)
        self.labels: list[int | None] = [None] * (length + 1)

    def is_terminal(self) -> bool:
        return not self.buffer and len(self.stack) == 1

    def legal_actions(self) -> list[bool]:
        """Which of SHIFT, LEFT_ARC, RIGHT_ARC, SWAP may apply. ROOT takes its one dependent last (so the tree has
        a single root), and a SWAP needs s1 before s0 in the sentence, so no pair is swapped twice and parsing ends."""
        if len(self.stack) < 2:
            return [bool(self.buffer), False, False, False]
        s1 = self.stack[-2]
        return [
            bool(self.buffer),
            s1 != 0,
            s1 != 0 or not self.buffer,
            0 < s1 < self.stack[-1],
        ]

    def apply(self, action: int, label: int | None = None) -> None:
        if not self.legal_actions()[action]:
            raise ValueError(f"action {action} is not legal in stack {self.stack}, buffer {self.buffer[:3]}...")
        if action == SHIFT:
            self.stack.append(self.buffer.pop(0))
        elif action == SWAP:
            self.buffer.insert(0, self.stack.pop(-2))
        else:
            s0 = self.stack.pop()
            s1 = self.stack.pop()
            head, dependent = (s0, s1) if action == LEFT_ARC else (s1, s0)
            self.heads[dependent], self.labels[dependent] = head, label
            self.stack.append(head)


def projective_order(heads: list[int]) -> list[int]:
    """Rank of each word (index 0 = ROOT) in the in-order traversal of the tree: each head between its left and
    right dependents. Swapping words into this order makes every arc projective."""
    children: list[list[int]] = [[] for _ in range(len(heads) + 1)]
    for word, head in enumerate(heads, start=1):
        children[head].append(word)
    order, stack = [], [(0, False)]
    while stack:  # iterative in-order walk (trees can be deep)
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        left = [c for c in children[node] if c < node]
        right = [c for c in children[node] if c > node]
        stack.extend((c, False) for c in reversed(right))
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(left))
    rank = [0] * (len(heads) + 1)
    for position, node in enumerate(order):
        rank[node] = position
    return rank


def swap_oracle(heads: list[int]) -> list[int]:
    """The static oracle's actions for the gold tree `heads` (1-based, 0 = ROOT): an arc as soon as its dependent
    has all its own dependents, else SWAP when s0 precedes s1 in the projective order (eager), else SHIFT."""
    rank = projective_order(heads)
    missing = [0] * (len(heads) + 1)  # dependents not attached yet
    for head in heads:
        missing[head] += 1
    configuration = SwapConfiguration(len(heads))
    actions = []
    while not configuration.is_terminal():
        stack = configuration.stack
        action = SHIFT
        if len(stack) >= 2:
            s1, s0 = stack[-2], stack[-1]
            if s1 != 0 and heads[s1 - 1] == s0 and missing[s1] == 0:
                action = LEFT_ARC
            elif heads[s0 - 1] == s1 and missing[s0] == 0 and (s1 != 0 or not configuration.buffer):
                action = RIGHT_ARC
            elif 0 < s1 < s0 and rank[s0] < rank[s1]:
                action = SWAP
        if action in (LEFT_ARC, RIGHT_ARC):
            dependent = stack[-2] if action == LEFT_ARC else stack[-1]
            missing[heads[dependent - 1]] -= 1
        configuration.apply(action)
        actions.append(action)
    return actions
