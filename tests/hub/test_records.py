"""The records module (`hf_structure.hub.records`): the one place that reads and writes a checkpoint's two records."""

import json

import pytest

from hf_structure.hub import records


def test_a_training_record_is_written_with_the_machine_and_its_required_keys(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "machine_description", lambda: "this machine")
    path = records.write_training_record(
        tmp_path, {"command": "python x.py", "wall_time_s": 1.5, "steps": 3, "epochs": 0.5}
    )
    assert path == tmp_path / records.TRAINING_RECORD
    assert json.loads(path.read_text())["machine"] == "this machine"
    assert records.load_training_record(tmp_path)["steps"] == 3
    records.write_training_record(
        tmp_path, {**records.read_record(tmp_path, records.TRAINING_RECORD), "machine": "the training machine"}
    )
    assert records.load_training_record(tmp_path)["machine"] == "the training machine"  # a given machine is kept
    with pytest.raises(ValueError, match=r"lacks the required keys \['steps', 'epochs'\]"):
        records.write_training_record(tmp_path, {"command": "x", "wall_time_s": 1})


def test_an_evaluation_record_names_its_dataset_and_an_absent_record_reads_as_empty(tmp_path):
    assert records.read_record(tmp_path, records.EVAL_RECORD) == {}
    with pytest.raises(ValueError, match=r"lacks the required keys \['dataset'\]"):
        records.write_eval_record(tmp_path, {"uas": 50.0})
    records.write_eval_record(tmp_path, {"dataset": "two sentences", "uas": 50.0})
    assert records.load_eval_record(tmp_path, ("uas",)) == {"dataset": "two sentences", "uas": 50.0}


def test_a_staged_training_record_sums_the_stages():
    stages = [
        {"command": "python a.py", "wall_time_s": 10, "steps": 100, "epochs": 1.234},
        {"command": "python b.py", "wall_time_s": 5, "steps": 50, "epochs": 0.5},
    ]
    record = records.staged_training_record(stages, train_data="ptb")
    assert record == {
        "command": "# stage 1\npython a.py\n# stage 2\npython b.py",
        "wall_time_s": 15,
        "steps": 150,
        "epochs": 1.73,
        "train_data": "ptb",
        "stages": stages,
    }
    assert records.staged_training_record(stages[:1])["command"] == "python a.py"
