"""The command-line tests' model: a tiny random StructFormer that reads 16 positions, saved once per module."""

import pytest

from tests.helpers.tiny_models import save_tiny_model


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    return str(save_tiny_model(tmp_path_factory.mktemp("cli") / "tiny", max_position_embeddings=16))
