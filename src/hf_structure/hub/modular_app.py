"""The Space of an exported model folder (`hf-structure export --space`): `python app.py` there serves the page of
`hf-structure demo` for the folder's own model, loaded with `trust_remote_code=True`, so that nothing but Gradio,
transformers and what they need is installed (`pip install -r requirements.txt`). On the Hub, the Space's Gradio SDK
runs it; the address and port follow GRADIO_SERVER_NAME and GRADIO_SERVER_PORT (default: 127.0.0.1, the first free
port from 7860).
"""

# The modular source of app.py, which scripts/modular_converter.py generates (hf_structure's definitions inlined)
# and `export_model_folder(..., space=True)` copies into the folder: edit this file, then run the converter.

from pathlib import Path

from huggingface_hub import ModelCard
from transformers import pipeline

from ..demo import build_demo, page_option_names, serve


def main() -> None:
    folder = Path(__file__).resolve().parent
    # The task is config.json's custom_pipelines' (transformers' overloads of `pipeline` name only its own).
    parser = pipeline(model=str(folder), trust_remote_code=True)  # type: ignore[call-overload]
    title = ModelCard.load(folder / "README.md").data.to_dict().get("title") or folder.name
    options = page_option_names([getattr(parser.model, "parse_options", {})])
    page = build_demo([title], lambda _: parser, options, title=title)
    print(f"{title}: serving {serve(page)}", flush=True)
    page.block_thread()


if __name__ == "__main__":
    main()
