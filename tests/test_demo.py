"""`hf-structure demo` and `hf_structure.demo`: what the page shows for a text (pictures, table, text to copy, one-line
errors) against the pipeline's own parse, the page served by the command and answering over HTTP, the same page as
an exported folder's Space (`python app.py` where hf_structure cannot be imported), both driven in a browser, and the
command without Gradio (the lowest-versions environment has none) saying what to install."""

import errno
import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from hf_structure import demo
from hf_structure.demo import MODEL_DEFAULT, page_option_names, page_parts, parse_option_names
from hf_structure.pipelines import load_parser
from tests.helpers.paths import ROOT
from tests.helpers.remote_code import serve_space_without_hf_structure
from tests.helpers.tiny_models import declared_tiny_models, save_declared_tiny_model

# The browser's steps are those of the documentation's screenshot (scripts/demo_screenshot.py).
_spec = importlib.util.spec_from_file_location("demo_screenshot", ROOT / "scripts" / "demo_screenshot.py")
assert _spec is not None and _spec.loader is not None  # a .py file gets the source file loader
browser_steps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(browser_steps)

HAS_GRADIO = importlib.util.find_spec("gradio") is not None
TEXT = "The old man sat on the bench. A dog ran."
CHROMIUM, CHROMEDRIVER = browser_steps.CHROMIUM, browser_steps.CHROMEDRIVER
OFFLINE = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}


@pytest.fixture(scope="module")
def tiny_folders(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("demo")
    return {name: str(save_declared_tiny_model(name, folder / name)) for name in declared_tiny_models()}


@pytest.mark.parametrize("name", list(declared_tiny_models()))
def test_the_page_shows_each_sentence_as_the_pipeline_parses_it(name, tiny_folders):
    pipeline = load_parser(tiny_folders[name])
    pictures, rows, text, message = page_parts(pipeline, TEXT, {"word_convention": MODEL_DEFAULT})
    expected = pipeline(TEXT)
    assert message == "" and pictures.count("<figure") == len(expected) == 2
    assert pictures.count("<svg") == 2
    words = [
        (number, index + 1, word)
        for number, parse in enumerate(expected, 1)
        for index, word in enumerate(parse["words"])
    ]
    assert [tuple(row[:3]) for row in rows] == words
    if "heads" in expected[0]:
        assert [row[3] for row in rows] == [head for parse in expected for head in parse["heads"]]
        assert "heads: " + " ".join(map(str, expected[1]["heads"])) in text
    if "tree" in expected[0]:
        assert expected[0]["tree"] in text and expected[1]["tree"] in text


def test_what_cannot_be_parsed_is_one_line_and_the_rest_is_drawn(tiny_folders):
    pipeline = load_parser(tiny_folders["arc_hybrid"])
    assert page_parts(pipeline, "  \n ", {})[3] == "Type a sentence or a paragraph to parse."
    long_sentence = " ".join(["word"] * 80) + "."  # under the page's caps, over the tiny encoder's 64 positions
    pictures, rows, _, message = page_parts(pipeline, f"A dog ran. {long_sentence}", {})
    assert pictures.count("<figure") == 1 and {row[0] for row in rows} == {1}
    assert "\n" not in message and "word pieces" in message
    _, _, _, message = page_parts(pipeline, "A dog\x01 ran.", {})
    assert "\n" not in message and "control character" in message
    _, _, _, message = page_parts(pipeline, "A dog ran.", {"tree_decoding": "viterbi"})
    assert "\n" not in message and "tree_decoding" in message
    _, _, _, message = page_parts(pipeline, "A dog ran.", {"head_decoding": "<b>x</b>"})  # shown as text, not HTML
    assert "&lt;b&gt;x&lt;/b&gt;" in message and "<b>" not in message


def test_a_text_over_a_cap_is_one_line_and_nothing_is_parsed(tiny_folders, monkeypatch):
    pipeline = load_parser(tiny_folders["arc_hybrid"])
    parsed: list[list[str]] = []
    parse = pipeline.model.parse

    def recording_parse(sentences, *args, **kwargs):
        parsed.extend(sentences)
        return []

    monkeypatch.setattr(pipeline.model, "parse", recording_parse)
    refused: tuple = ("", [], "")
    assert page_parts(pipeline, "A dog ran. " * 100_000, {}) == (
        *refused,
        "The text has 1,100,000 characters; this page parses at most 2,000.",
    )
    assert page_parts(pipeline, "A dog ran. " * 21, {}) == (
        *refused,
        "The text has 21 sentences; this page parses at most 20.",
    )
    many_words = "The dog and the cat and the bird and the fish and the man ran. " * 20  # 16 words, the period one
    assert page_parts(pipeline, many_words, {}) == (*refused, "The text has 320 words; this page parses at most 300.")
    assert page_parts(pipeline, many_words + "A dog ran.", {}) == (
        *refused,
        "The text has 21 sentences; this page parses at most 20.",
    )
    assert not parsed
    # A sentence over MAX_SENTENCE_WORDS is that sentence's one line, unparsed, as one too long for the model is.
    monkeypatch.setattr(pipeline.model, "parse", parse)
    monkeypatch.setattr(demo, "MAX_SENTENCE_WORDS", 5)
    pictures, rows, _, message = page_parts(pipeline, "A dog ran. The old man sat on the bench. A cat sat.", {})
    assert message == "sentence 2: 8 words; this page parses at most 5"
    assert pictures.count("<figure") == 2 and {row[0] for row in rows} == {1, 3}


@pytest.fixture(scope="module")
def served(tiny_folders, tmp_path_factory):
    """`hf-structure demo --port 0` over the two tiny models and an empty folder, in a subprocess: (its URL, the
    empty folder)."""
    if not HAS_GRADIO:
        pytest.skip("the demo extra (Gradio) is not installed")
    command = [sys.executable, "-m", "hf_structure.cli", "demo", "--port", "0"]
    command += ["--model", tiny_folders["arc_hybrid"], "--model", tiny_folders["structformer"]]
    command += ["--model", str(tmp_path_factory.mktemp("not-a-model"))]  # loaded only when chosen
    server = subprocess.Popen(command, env=OFFLINE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert server.stdout is not None and server.stderr is not None  # both piped
    try:
        line = server.stdout.readline()
        url = re.match(r"hf-structure demo: serving (http://127\.0\.0\.1:\d+/) \(", line)
        assert url, line + (server.stderr.read() if server.poll() is not None else "")
        yield url.group(1), command[-1]
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def space(tiny_folders, tmp_path_factory):
    """The tiny arc-hybrid parser exported with `--space`, its `python app.py` serving where hf_structure cannot be
    imported: (its URL, the exported folder, the Space's title)."""
    if not HAS_GRADIO:
        pytest.skip("the demo extra (Gradio) is not installed")
    from hf_structure.hub import export_model_folder
    from hf_structure.hub.records import EVAL_RECORD, TRAINING_RECORD, write_json

    workdir = tmp_path_factory.mktemp("space")
    model = shutil.copytree(tiny_folders["arc_hybrid"], workdir / "arc-hybrid-tiny")
    write_json(model / EVAL_RECORD, {"dataset": "test fixture", "uas": 50.0, "las": 25.0, "uas_eisner": 40.0})
    write_json(model / TRAINING_RECORD, {"command": "x", "wall_time_s": 1, "machine": "x", "steps": 1, "epochs": 1})
    folder = export_model_folder(model, workdir / "export", repo_id="org/arc-hybrid-tiny", space=True)
    with socket.socket() as probe:  # a port free now; Gradio takes the next free one if another process took it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = serve_space_without_hf_structure(folder, workdir, port)
    assert server.stdout is not None and server.stderr is not None  # both piped
    try:
        line = server.stdout.readline()
        url = re.match(r"arc-hybrid-tiny: serving (http://127\.0\.0\.1:\d+/)$", line.strip())
        assert url, line + (server.stderr.read() if server.poll() is not None else "")
        yield url.group(1), folder, "arc-hybrid-tiny"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_an_exported_space_serves_the_page_without_hf_structure_as_the_package_draws_it(space):
    from gradio_client import Client

    url, folder, title = space
    pipeline = load_parser(str(folder))  # the package's own classes, on the same weights
    options = [MODEL_DEFAULT] * (1 + len(page_option_names([pipeline.parser.model.parse_options])))
    client = Client(url, verbose=False)
    message, pictures, table, text = client.predict(TEXT, title, *options, api_name="/parse")
    expected_pictures, expected_rows, expected_text, _ = page_parts(pipeline, TEXT, {})
    assert message == "" and pictures.count("<svg") == 2
    assert pictures == expected_pictures and table["data"] == expected_rows and text == expected_text
    too_long = "A dog ran. " + " ".join(["word"] * 80) + "."  # refused by the folder's own pipeline code
    message, pictures, _, _ = client.predict(too_long, title, *options, api_name="/parse")
    assert message == f'<p class="error">{page_parts(pipeline, too_long, {})[3]}</p>' and "word pieces" in message
    assert pictures.count("<svg") == 1


@pytest.mark.skipif(not HAS_GRADIO, reason="the demo extra (Gradio) is not installed")
@pytest.mark.parametrize("server", ["served", "space"])
def test_a_served_page_refuses_a_text_over_its_caps_and_uploads_and_still_answers(server, request, tiny_folders):
    # The command's page (the tiny arc-hybrid parser first) or the exported folder's Space (the same weights).
    import httpx
    from gradio_client import Client

    if server == "served":
        url, _ = request.getfixturevalue(server)
        model, options = tiny_folders["arc_hybrid"], parse_option_names()
    else:
        url, folder, model = request.getfixturevalue(server)  # the Space's one model, by its title
        options = page_option_names([load_parser(str(folder)).parser.model.parse_options])
    client = Client(url, verbose=False)

    def parse(text):
        return client.predict(text, model, *[MODEL_DEFAULT] * (1 + len(options)), api_name="/parse")

    message, pictures, table, text = parse("A dog ran. " * 100_000)  # 1.1 MB, as one visitor sent
    assert message == '<p class="error">The text has 1,100,000 characters; this page parses at most 2,000.</p>'
    assert (pictures, table["data"], text) == ("", [], "")
    assert (
        parse("A dog ran. " * 21)[0] == '<p class="error">The text has 21 sentences; this page parses at most 20.</p>'
    )
    upload = httpx.post(url + "gradio_api/upload", files={"files": ("text.txt", b"A dog ran.")}, timeout=60)
    assert upload.status_code == 413, upload.text  # the page has no file input
    message, pictures, _, _ = parse("A dog ran.")
    assert message == "" and pictures.count("<svg") == 1


class HeldPipeline:
    """A pipeline whose every parse waits for `release`, counting the parses running at once (`running`, `most`)."""

    model = None  # no options

    def __init__(self):
        from hf_structure.threads import LoadMeasurement

        self.load = LoadMeasurement()
        self.parser = self  # the demo reads and parses through the pipeline's Parser
        self.release, self.changed = threading.Event(), threading.Condition()
        self.running = self.most = 0

    def sentences(self, text, **options):
        with self.changed:
            self.running += 1
            self.most = max(self.most, self.running)
            self.changed.notify_all()
        self.release.wait(120)
        with self.changed:
            self.running -= 1
        return []

    def results(self, sentences, **options):
        return iter([])


@pytest.mark.skipif(not HAS_GRADIO, reason="the demo extra (Gradio) is not installed")
def test_requests_are_parsed_two_at_a_time_and_one_beyond_the_queue_is_refused():
    from gradio_client import Client
    from gradio_client.utils import QueueError, Status

    from hf_structure.demo import CONCURRENCY, QUEUE_SIZE, build_demo, serve

    pipeline = HeldPipeline()
    page = build_demo(["held"], lambda _: pipeline, [])
    try:
        client = Client(serve(page), verbose=False)

        def submit():
            return client.submit("A dog ran.", "held", MODEL_DEFAULT, api_name="/parse")

        jobs = [submit() for _ in range(CONCURRENCY)]
        with pipeline.changed:
            assert pipeline.changed.wait_for(lambda: pipeline.running == CONCURRENCY, timeout=60)
        for _ in range(QUEUE_SIZE):
            jobs.append(submit())
            deadline = time.monotonic() + 60
            while jobs[-1].status().code != Status.IN_QUEUE and time.monotonic() < deadline:
                time.sleep(0.05)
        refused = submit()
        with pytest.raises(QueueError, match="Queue is full"):
            refused.result(timeout=60)
        pipeline.release.set()
        assert [job.result(timeout=60)[0] for job in jobs] == [""] * (CONCURRENCY + QUEUE_SIZE)
        assert pipeline.most == CONCURRENCY == 2
    finally:
        pipeline.release.set()
        page.close()


@pytest.mark.skipif(not HAS_GRADIO, reason="the demo extra (Gradio) is not installed")
def test_the_page_is_built_without_warnings(tiny_folders):
    import warnings

    from hf_structure.demo import package_demo

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        package_demo([tiny_folders["arc_hybrid"]])
    assert not [str(warning.message) for warning in caught if issubclass(warning.category, UserWarning)]


def test_the_command_serves_the_page_on_localhost_and_it_parses_as_the_pipeline(served, tiny_folders):
    from gradio_client import Client

    url, broken = served
    options = [MODEL_DEFAULT] * (1 + len(parse_option_names()))  # the word convention, then the models' options
    client = Client(url, verbose=False)
    message, pictures, table, text = client.predict(TEXT, tiny_folders["arc_hybrid"], *options, api_name="/parse")
    expected = load_parser(tiny_folders["arc_hybrid"])(TEXT)
    assert message == "" and pictures.count("<svg") == 2
    assert [row[3] for row in table["data"]] == [head for parse in expected for head in parse["heads"]]
    assert " ".join(expected[0]["words"]) in text and " ".join(expected[1]["words"]) in text
    # A model chosen on the page that does not load: no option shown, and Parse says why in one line.
    assert all(not update.get("visible", True) for update in client.predict(broken, api_name="/show_options"))
    message, pictures, _, _ = client.predict(TEXT, broken, *options, api_name="/parse")
    assert message == f'<p class="error">model folder {broken} has no config.json: is it a saved model folder?</p>'
    assert pictures == ""


@pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
    reason=f"no {CHROMIUM} and {CHROMEDRIVER} (Debian: apt install chromium chromium-driver; .ci/run installs them)",
)
@pytest.mark.parametrize("server", ["served", "space"])
def test_a_browser_types_a_text_and_sees_each_word_drawn_and_the_pipelines_table(
    server, request, tiny_folders, tmp_path
):
    # The command's page (the tiny arc-hybrid parser first) or the exported folder's Space (the same weights).
    url = request.getfixturevalue(server)[0]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser = browser_steps.open_browser()
    try:
        started = time.perf_counter()
        figures = browser_steps.parse_on_page(browser, url, TEXT)
        shown = time.perf_counter() - started
        expected = load_parser(tiny_folders["arc_hybrid"])(TEXT)
        assert len(figures) == len(expected)
        for figure, parse in zip(figures, expected):
            labels = [word.text for word in figure.find_elements(By.CSS_SELECTOR, "svg text.word")]
            assert labels == parse["words"]
        rows = WebDriverWait(browser, 60).until(lambda page: browser_steps.table_rows(page) or False)
        assert [row[2:4] for row in rows] == [
            [word, str(head)] for parse in expected for word, head in zip(parse["words"], parse["heads"])
        ]
        screenshot = tmp_path / "demo.png"
        assert browser.save_screenshot(str(screenshot)) and screenshot.stat().st_size > 0
        print(f"{server}: page to first parse shown {shown:.1f} s; screenshot {screenshot}")
    finally:
        browser.quit()


@pytest.mark.skipif(not HAS_GRADIO, reason="the demo extra (Gradio) is not installed")
def test_a_model_that_does_not_load_ends_the_command_in_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "hf_structure.cli", "demo", "--model", str(tmp_path), "--port", "0"],
        env=OFFLINE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == f"hf-structure demo: model folder {tmp_path} has no config.json: is it a saved model folder?"
    )


@pytest.fixture
def held_port():
    """A port of 127.0.0.1 that another socket holds, listening, as another server would."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.mark.skipif(not HAS_GRADIO, reason="the demo extra (Gradio) is not installed")
def test_a_port_in_use_ends_the_command_in_one_line_naming_it(held_port, tiny_folders):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hf_structure.cli",
            "demo",
            "--model",
            tiny_folders["arc_hybrid"],
            "--port",
            str(held_port),
        ],
        env=OFFLINE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr == f"hf-structure demo: port {held_port} is in use on 127.0.0.1; choose another with --port\n"


@pytest.mark.skipif(not HAS_GRADIO, reason="the demo extra (Gradio) is not installed")
def test_a_port_taken_while_the_model_loads_ends_the_command_in_the_same_line(tiny_folders, monkeypatch):
    from hf_structure.cli import main

    with socket.socket() as probe:  # free when the command checks it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    serve = demo.serve
    with socket.socket() as holder:

        def take_the_port_then_serve(page, host, port):
            holder.bind((host, port))
            holder.listen()
            return serve(page, host, port)

        monkeypatch.setattr(demo, "serve", take_the_port_then_serve)
        with pytest.raises(SystemExit) as ended:
            main(["demo", "--model", tiny_folders["arc_hybrid"], "--port", str(port)])
    assert str(ended.value) == f"hf-structure demo: port {port} is in use on 127.0.0.1; choose another with --port"


def test_an_address_not_of_this_machine_ends_the_command_in_one_line():
    from hf_structure.cli.demo import check_address

    with pytest.raises(SystemExit) as ended:  # 203.0.113.0/24: documentation's addresses (RFC 5737), no machine's
        check_address("203.0.113.1", 7860)
    reason = os.strerror(errno.EADDRNOTAVAIL)  # "Cannot assign requested address"
    assert str(ended.value) == f"hf-structure demo: cannot serve on 203.0.113.1 port 7860: {reason}"


@pytest.mark.skipif(HAS_GRADIO, reason="Gradio is installed here; the lowest-versions environment runs this")
def test_the_command_without_gradio_says_what_to_install():
    done = subprocess.run(
        [sys.executable, "-m", "hf_structure.cli", "demo"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "hf-structure demo: hf-structure demo needs gradio, which the plain install leaves out: "
        "pip install 'hf_structure[demo]'"
    )
