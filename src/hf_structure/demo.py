"""A page to try the parsers in a browser: `hf-structure demo` serves it on localhost (the `demo` extra: Gradio,
the Hub's convention for Spaces).

The page has a text box, the model (the bundled ones and any folder or Hub id given to `build_demo`), the options
that model's `parse` takes and the word convention; each sentence of the text is drawn as the package's SVG (the
tree above the words, the dependency arcs below), and the parse is given as a table (sentence, word, head, label)
and as text to copy (the bracketed tree and the heads). What cannot be parsed (an empty box, a sentence longer than
the model reads, an odd character) is one line on the page, never a traceback; the other sentences are still drawn.
So that one visitor cannot hold the page for long, a text is parsed only within the caps below (one line says which
it exceeds), requests wait in a bounded queue and are parsed two at a time, and uploads are refused (the page has no
file input). Nothing is fetched from elsewhere: Gradio's usage statistics are off and the page uses the system's fonts.
"""

import html
import os
import threading
from collections.abc import Callable, Iterable, Sequence

from .configuration_utils import WORD_CONVENTIONS
from .visualization import render_svg

MODEL_DEFAULT = "the model's own"
EXAMPLE_TEXT = "The old man sat on the bench. Stocks fell sharply after the report was released."
TABLE_HEADERS = ("sentence", "word", "form", "head", "head form", "label")

# What one request may ask. At these caps the slowest bundled model (g2gtr-ewt, whose time per sentence grows faster
# than its length) parses a text in a few seconds on a 2-core CPU, the others in under one (hf_structure's
# benchmarks/demo_latency.py); without them one 1 MB text held the page for minutes and returned 128 MB of HTML.
# The characters are counted before anything else, the rest once the text is split, before anything is parsed.
MAX_CHARACTERS = 2_000
MAX_SENTENCES = 20
MAX_WORDS = 300  # the words of all sentences, as the pipeline splits them (punctuation included)
MAX_SENTENCE_WORDS = 100  # a longer sentence is refused as the model refuses one too long for it; the others are drawn
# Requests waiting for those being parsed; a request beyond them is refused at once ("the queue is full") rather
# than left waiting for minutes.
QUEUE_SIZE = 16
# Requests parsed at once: two, so that a short text need not wait for a long one (on 2 cores, 0.2 s instead of 2.7 s
# behind the slowest capped text). A pipeline keeps no state between parses (four threads parsing at once gave each
# bundled model's parses as one thread does), and each parse takes its share of the free cores (`page_threads`).
CONCURRENCY = 2
# The largest upload, in bytes: none, since the page has no file input (Gradio accepts any size by default).
MAX_UPLOAD_BYTES = 0


def page_parts(pipeline, text: str, options: dict) -> tuple[str, list[list], str, str]:
    """What the page shows for `text` parsed by `pipeline` with `options` (values MODEL_DEFAULT left out): the
    SVG pictures (HTML), the table rows, the text to copy, and the one-line message of what could not be parsed
    ("" when everything was)."""
    options = {name: value for name, value in options.items() if value not in (None, "", MODEL_DEFAULT)}
    if not text.strip():
        return "", [], "", "Type a sentence or a paragraph to parse."
    if len(text) > MAX_CHARACTERS:  # before the text is even split
        return "", [], "", f"The text has {len(text):,} characters; this page parses at most {MAX_CHARACTERS:,}."
    try:
        results = parse_within_caps(pipeline, text, options)
    except ValueError as error:  # the whole input refused (a cap, an option the model lacks)
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
    return "\n".join(pictures), rows, "\n".join(lines).strip(), html.escape(message, quote=False)


def parse_within_caps(pipeline, text: str, options: dict) -> list[dict]:
    """`pipeline(text, on_error="record", **options)`'s results, the text split once (by the pipeline's `Parser`)
    and held to the page's caps before anything is parsed: a ValueError for too many sentences or words; a sentence
    over MAX_SENTENCE_WORDS is recorded with its error, as one too long for the model is. All the sentences are
    parsed as one batch."""
    options = dict(options)
    parser = pipeline.parser
    sentences = parser.sentences(text, on_error="record", word_convention=options.pop("word_convention", None))
    if len(sentences) > MAX_SENTENCES:
        raise ValueError(f"The text has {len(sentences):,} sentences; this page parses at most {MAX_SENTENCES}.")
    words = sum(len(sentence.words) for sentence in sentences)
    if words > MAX_WORDS:
        raise ValueError(f"The text has {words:,} words; this page parses at most {MAX_WORDS}.")
    sentences = [
        sentence._replace(
            seen=[],
            error=f"{sentence.name}: {len(sentence.words)} words; this page parses at most {MAX_SENTENCE_WORDS}",
        )
        if sentence.error is None and len(sentence.words) > MAX_SENTENCE_WORDS
        else sentence
        for sentence in sentences
    ]
    options.update(on_error="record", batch_size=MAX_SENTENCES, num_threads=page_threads(parser))
    return [result for done in parser.results(sentences, **options) for _, result in done]


def page_threads(parser) -> int:
    """torch's threads for one parse of the page: the parser's own count (one per core that other processes leave
    free) shared among the CONCURRENCY parses that may run at once, since threads beyond the cores slow every parse
    several times over."""
    return max(1, parser.load.num_threads() // CONCURRENCY)


def one_line(error: Exception) -> str:
    """`error`'s message on one line, as text for the page (not HTML)."""
    return html.escape(" ".join(str(error).split()), quote=False)


def page_option_names(parse_options: Iterable[Iterable[str]]) -> list[str]:
    """The page's option dropdowns, after the word convention's, for models whose `parse_options` are given: each
    option (`head_decoding` ...) but `structures` (the page shows every structure a model gives)."""
    return sorted(set().union(*parse_options) - {"structures"})


def parse_option_names() -> list[str]:
    """The options of every registered model's `parse`, as the page of `hf-structure demo` offers them."""
    from .registry import MODEL_SPECS

    return page_option_names(spec.parse_options for spec in MODEL_SPECS.values())


def _gradio():
    """Gradio, imported with its usage statistics off (it reads the setting when imported): nothing leaves the
    machine."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    import gradio

    return gradio


def build_demo(models: Sequence[str], load: Callable, option_names: Sequence[str], title: str = "hf_structure"):
    """The Gradio page over `models` (names, the first shown first), each loaded by `load` (name -> pipeline) once,
    when first chosen; `option_names`: the dropdowns of the models' `parse` options (`page_option_names`), each
    shown for the models that take it; `title`: the page's."""
    gr = _gradio()
    pipelines: dict = {}
    loading = threading.Lock()

    def pipeline_of(name):
        with loading:  # two requests at once for a model not loaded yet: loaded once
            if name not in pipelines:
                pipelines[name] = load(name)
        return pipelines[name]

    def option_choices(name) -> dict[str, list]:
        return {
            option: list(values) for option, values in getattr(pipeline_of(name).model, "parse_options", {}).items()
        }

    options_of = {models[0]: option_choices(models[0])}
    with gr.Blocks(title=title) as demo:  # Gradio 6 takes the theme at launch: `serve`
        gr.Markdown(f"# {title}\nParse English text into trees: constituency above the words, dependencies below.")
        text = gr.Textbox(
            label="Text",
            value=EXAMPLE_TEXT,
            lines=3,
            elem_id="text",
            # Said, not enforced by the browser: its maxlength would cut a pasted text short without a word.
            info=f"At most {MAX_CHARACTERS:,} characters, {MAX_SENTENCES} sentences and {MAX_WORDS} words, "
            f"{MAX_SENTENCE_WORDS} to a sentence.",
        )
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
        table = gr.Dataframe(headers=list(TABLE_HEADERS), label="Words, heads and labels", elem_id="table")
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
        # One concurrency group: a model loaded for its options does not run beside a parse either.
        button.click(parse, inputs, outputs, concurrency_id="page")
        text.submit(parse, inputs, outputs, concurrency_id="page")
        model.change(show_options, model, option_boxes, concurrency_id="page")
    return demo.queue(max_size=QUEUE_SIZE, default_concurrency_limit=CONCURRENCY)


def package_demo(models: Sequence[str]):
    """The page of `hf-structure demo` over `models` (bundled names, folders or Hub ids): each loaded by
    `load_parser`, with the options of every registered model."""
    from .pipelines import load_parser

    return build_demo(models, load_parser, parse_option_names())


def serve(page, host: str | None = None, port: int | None = None):
    """Start serving `page` (from `build_demo`) in the background and return its URL. `host` and `port` None:
    Gradio's GRADIO_SERVER_NAME and GRADIO_SERVER_PORT (a Space sets them), else 127.0.0.1 and the first free port
    from 7860."""
    gr = _gradio()

    # Gradio's default fonts come from Google's servers: the system's own are used instead.
    theme = gr.themes.Default(
        font=["ui-sans-serif", "system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"]
    )
    page.launch(
        server_name=host,
        server_port=port,
        prevent_thread_lock=True,
        quiet=True,
        theme=theme,
        max_file_size=MAX_UPLOAD_BYTES,
    )
    return page.local_url
