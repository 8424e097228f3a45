"""A page to try the parsers in a browser: `hf-structure demo` serves it on localhost (the `demo` extra: Gradio,
the Hub's convention for Spaces).

The page has a text box, the model (the bundled ones and any folder or Hub id given to `build_demo`), the options
that model's `parse` takes and the word convention; each sentence of the text is drawn as the package's SVG (the
tree above the words, the dependency arcs below), and the parse is given as a table (sentence, word, head, label)
and as text to copy (the bracketed tree and the heads). What cannot be parsed (an empty box, a sentence longer than
the model reads, an odd character) is one line on the page, never a traceback; the other sentences are still drawn.
Nothing is fetched from elsewhere: Gradio's usage statistics are off and the page uses the system's fonts.
"""

import os
from collections.abc import Callable, Sequence
from html import escape

from .visualization import render_svg

# Gradio reads this when it is imported: its usage statistics would leave the machine.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

MODEL_DEFAULT = "the model's own"
EXAMPLE_TEXT = "The old man sat on the bench. Stocks fell sharply after the report was released."
TABLE_HEADERS = ["sentence", "word", "form", "head", "head form", "label"]


def page_parts(pipeline, text: str, options: dict) -> tuple[str, list[list], str, str]:
    """What the page shows for `text` parsed by `pipeline` with `options` (values MODEL_DEFAULT left out): the
    SVG pictures (HTML), the table rows, the text to copy, and the one-line message of what could not be parsed
    ("" when everything was)."""
    options = {name: value for name, value in options.items() if value not in (None, "", MODEL_DEFAULT)}
    if not text.strip():
        return "", [], "", "Type a sentence or a paragraph to parse."
    try:
        results = pipeline(text, on_error="record", **options)
    except ValueError as error:  # the whole input refused (too long a text, an option the model lacks)
        return "", [], "", one_line(error)
    pictures, rows, lines, errors = [], [], [], []
    for number, result in enumerate(results, start=1):
        if "error" in result:  # it names the sentence
            errors.append(result["error"])
            continue
        pictures.append(f'<figure class="parse" data-sentence="{number}">{render_svg(result)}</figure>')
        words, heads, labels = result["words"], result.get("heads"), result.get("deprels")
        for index, word in enumerate(words):
            head = heads[index] if heads else None
            rows.append(
                [
                    number,
                    index + 1,
                    word,
                    head,
                    ("ROOT" if head == 0 else words[head - 1]) if head is not None else None,
                    labels[index] if labels else None,
                ]
            )
        lines.append(" ".join(words))
        if "tree" in result:
            lines.append(result["tree"])
        if heads:
            lines.append("heads: " + " ".join(map(str, heads)))
        if labels:
            lines.append("labels: " + " ".join(labels))
        lines.append("")
    message = "; ".join(errors)
    return "\n".join(pictures), rows, "\n".join(lines).strip(), escape(message, quote=False)


def one_line(error: Exception) -> str:
    """`error`'s message on one line, as text for the page (not HTML)."""
    return escape(" ".join(str(error).split()), quote=False)


def parse_option_names() -> list[str]:
    """The page's option dropdowns, after the word convention's: each option of a registered model's `parse`
    (`head_decoding` ...), shown for the models that take it."""
    from .registry import MODEL_SPECS

    return sorted({option for spec in MODEL_SPECS.values() for option in spec.parse_options} - {"structures"})


def build_demo(models: Sequence[str], load: Callable | None = None):
    """The Gradio page over `models` (bundled names, folders or Hub ids; the first is shown first). `load`: name ->
    pipeline (default: `load_parser`); each model is loaded once, when first chosen."""
    import gradio as gr

    from .configuration_utils import WORD_CONVENTIONS

    if load is None:
        from .pipelines import load_parser as load
    pipelines: dict = {}

    def pipeline_of(name):
        if name not in pipelines:
            pipelines[name] = load(name)
        return pipelines[name]

    def option_choices(name) -> dict[str, list]:
        return {
            option: list(values) for option, values in getattr(pipeline_of(name).model, "parse_options", {}).items()
        }

    option_names = parse_option_names()
    options_of = {models[0]: option_choices(models[0])}
    with gr.Blocks(title="hf_structure") as demo:  # Gradio 6 takes the theme at launch: `serve`
        gr.Markdown("# hf_structure\nParse English text into trees: constituency above the words, dependencies below.")
        text = gr.Textbox(label="Text", value=EXAMPLE_TEXT, lines=3, elem_id="text")
        with gr.Row():
            model = gr.Dropdown(choices=list(models), value=models[0], label="Model", elem_id="model")
            convention = gr.Dropdown(
                choices=[MODEL_DEFAULT, *WORD_CONVENTIONS], value=MODEL_DEFAULT, label="Word convention"
            )
            option_boxes = [
                gr.Dropdown(
                    choices=[MODEL_DEFAULT, *options_of[models[0]].get(option, [])],
                    value=MODEL_DEFAULT,
                    label=option.replace("_", " ").capitalize(),
                    visible=option in options_of[models[0]],
                    elem_id=f"option-{option}",
                )
                for option in option_names
            ]
        button = gr.Button("Parse", variant="primary", elem_id="parse")
        message = gr.HTML(elem_id="message")
        pictures = gr.HTML(elem_id="pictures")
        table = gr.Dataframe(headers=TABLE_HEADERS, label="Words, heads and labels", elem_id="table")
        copyable = gr.Textbox(label="As text", lines=6, elem_id="copyable")

        def parse(text_value, model_name, convention_value, *option_values):
            try:
                pipeline = pipeline_of(model_name)
            except (OSError, ValueError) as error:  # a folder or Hub id that does not load
                return f'<p class="error">{one_line(error)}</p>', "", [], ""
            pictures_html, rows, lines, refused = page_parts(
                pipeline,
                text_value,
                {"word_convention": convention_value, **dict(zip(option_names, option_values))},
            )
            return f'<p class="error">{refused}</p>' if refused else "", pictures_html, rows, lines

        def show_options(model_name):
            try:
                takes = option_choices(model_name)
            except (OSError, ValueError):  # a model that does not load: Parse says why, in one line
                takes = {}
            return [
                gr.Dropdown(
                    choices=[MODEL_DEFAULT, *takes.get(option, [])], value=MODEL_DEFAULT, visible=option in takes
                )
                for option in option_names
            ]

        inputs = [text, model, convention, *option_boxes]
        outputs = [message, pictures, table, copyable]
        button.click(parse, inputs, outputs)
        text.submit(parse, inputs, outputs)
        model.change(show_options, model, option_boxes)
    return demo


def serve(page, host: str = "127.0.0.1", port: int | None = None):
    """Start serving `page` (from `build_demo`) in the background; `port` None: a free one. Returns its URL."""
    import gradio as gr

    # Gradio's default fonts come from Google's servers: the system's own are used instead.
    theme = gr.themes.Default(
        font=["ui-sans-serif", "system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"]
    )
    page.launch(server_name=host, server_port=port, prevent_thread_lock=True, quiet=True, theme=theme)
    return page.local_url
