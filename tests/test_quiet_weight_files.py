"""Loading or saving one of our checkpoints draws none of transformers' per-tensor bars ("Loading weights",
"Writing model shards"), and leaves transformers' own setting as it was."""

from transformers.utils import logging

from hf_structure import cli


def test_export_and_the_pipeline_draw_no_weight_bars(tmp_path, capsys):
    from hf_structure.pipelines import load_parser

    assert logging.is_progress_bar_enabled()
    cli.main(["export", "--model", "structformer-ptb", "--output", str(tmp_path / "export")])
    parser = load_parser("structformer-ptb")
    assert parser("It rained.")[0]["words"] == ["It", "rained", "."]
    err = capsys.readouterr().err
    assert "Loading weights" not in err and "Writing model shards" not in err, err
    assert logging.is_progress_bar_enabled()  # the user's setting, restored


def test_a_user_who_turned_bars_off_keeps_them_off(capsys):
    from hf_structure.bundled import quiet_weight_files

    logging.disable_progress_bar()
    try:
        with quiet_weight_files():
            pass
        assert not logging.is_progress_bar_enabled()
    finally:
        logging.enable_progress_bar()
