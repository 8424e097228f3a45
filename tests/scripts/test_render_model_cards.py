"""The shipped checkpoints' cards (each checkpoint's README.md and modeling_cards/<name>.md) are current."""

import shutil
from types import ModuleType

from tests.helpers.paths import ROOT
from tests.helpers.scripts import load_script


def _script() -> ModuleType:
    return load_script("render_model_cards")


def test_every_shipped_card_is_current(capsys):
    assert _script().main([]) == 0, capsys.readouterr().out


def test_a_stale_or_orphan_card_fails_the_check_and_fix_rewrites_it(tmp_path, monkeypatch, capsys):
    script = _script()
    cards = tmp_path / "modeling_cards"
    shutil.copytree(ROOT / "modeling_cards", cards)
    monkeypatch.setattr(script, "CARDS_DIR", cards)
    real_card_files = script.card_files
    # Only the copies under tmp_path are checked, so that --fix cannot touch the repository's checkpoints.
    monkeypatch.setattr(
        script, "card_files", lambda: {path: card for path, card in real_card_files().items() if path.parent == cards}
    )
    stale = cards / "structformer-ptb.md"
    stale.write_text(stale.read_text().replace("Sentence-level UF1", "UF1"))
    (cards / "retired-model.md").write_text("# gone\n")
    assert script.main([]) == 1
    out = capsys.readouterr().out
    assert f"stale: {stale}" in out and "no shipped checkpoint has this card" in out
    assert script.main(["--fix"]) == 0 and script.main([]) == 0
    assert not (cards / "retired-model.md").exists() and "Sentence-level UF1" in stale.read_text()
