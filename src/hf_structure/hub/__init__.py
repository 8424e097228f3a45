"""Publishing: the Hub-ready folder and upload (`export`), model cards (`cards`), the checkpoint records
(`records`), and an offline Hub cache (`cache`)."""

from .cache import file_etag, make_hf_cache, populate_cache
from .cards import render_model_card, results_table
from .export import ExportWriteError, HubUploadError, check_export, export_model_folder, push_model
from .records import EVAL_RECORD, TRAINING_RECORD, load_eval_record, load_training_record

__all__ = [
    "EVAL_RECORD",
    "TRAINING_RECORD",
    "ExportWriteError",
    "HubUploadError",
    "check_export",
    "export_model_folder",
    "file_etag",
    "load_eval_record",
    "load_training_record",
    "make_hf_cache",
    "populate_cache",
    "push_model",
    "render_model_card",
    "results_table",
]
