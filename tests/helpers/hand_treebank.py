"""A two-sentence gold treebank written by hand, in the PTB sample's layout (`mrg/` constituents, `dp/` heads),
whose baseline scores tests/cli/test_evaluate.py works out."""

from pathlib import Path

# Gold spans (no single words, no whole sentence) and heads over the scored words:
#   A "The old man sat on the bench":  NP(0,3) VP(3,7) PP(4,7) NP(5,7);   heads [3, 3, 4, 0, 4, 7, 5]
#   C "The company said it would grow": NP(0,2) VP(2,6) SBAR+S(3,6) VP(4,6); heads [2, 3, 0, 5, 3, 5]
MRG = """( (S (NP-SBJ (DT The) (JJ old) (NN man) ) (, ,)
    (VP (VBD sat) (PP-LOC (IN on) (NP (DT the) (NN bench) ))) (. .) ))
( (S (NP-SBJ (NP (DT The) (NN company) ))
    (VP (VBD said) (SBAR (-NONE- 0) (S (NP-SBJ (PRP it) ) (VP (MD would) (VP (VB grow) ))))) (. .) ))
"""
DP = (
    "The\tDT\t3\nold\tJJ\t3\nman\tNN\t5\n,\t,\t5\nsat\tVBD\t0\non\tIN\t5\nthe\tDT\t8\nbench\tNN\t6\n.\t.\t5\n\n"
    "The\tDT\t2\ncompany\tNN\t3\nsaid\tVBD\t0\nit\tPRP\t5\nwould\tMD\t3\ngrow\tVB\t5\n.\t.\t3\n"
)


def write_hand_treebank(folder: Path) -> Path:
    """Write the treebank as `folder/mrg/wsj_0001.mrg` and `folder/dp/wsj_0001.dp`; returns `folder`."""
    for subfolder, name, text in (("mrg", "wsj_0001.mrg", MRG), ("dp", "wsj_0001.dp", DP)):
        (folder / subfolder).mkdir(parents=True)
        (folder / subfolder / name).write_text(text, encoding="utf-8")
    return folder
