"""`hf-structure demo`: the parsers on a page in the browser, served on localhost (`hf_structure.demo`; needs the
`demo` extra, Gradio)."""

from __future__ import annotations

import errno
import socket
import time

from .common import count_or_zero_argument, fail, load_or_fail, resolved_model_path


def add_command(commands) -> None:
    """The `demo` command; its description and options are added when it parses or prints its help (`add_options`)."""
    demo = commands.add_parser(
        "demo", help="serve a page to try the models in a browser, on localhost (needs hf_structure[demo])"
    )
    demo.defer(add_options)


def add_options(demo) -> None:
    """The `demo` command's description, with the page's limits as its module declares them (it imports
    transformers' config code, and so torch), and its options."""
    from ..demo import CONCURRENCY, MAX_CHARACTERS, MAX_SENTENCE_WORDS, MAX_SENTENCES, MAX_WORDS, QUEUE_SIZE

    demo.description = (
        "Serve a page to try the models in a browser. It parses a text of at most "
        f"{MAX_CHARACTERS:,} characters, {MAX_SENTENCES} sentences and {MAX_WORDS} words ({MAX_SENTENCE_WORDS} to a "
        f"sentence), {CONCURRENCY} requests at a time with {QUEUE_SIZE} more waiting, and refuses uploads."
    )
    demo.add_argument(
        "--model",
        action="append",
        help="a folder, Hub id or bundled name to offer (repeat it for several; default: every bundled model, "
        "structformer-ptb first)",
    )
    demo.add_argument("--host", default="127.0.0.1", help="the address to serve on (127.0.0.1: this machine only)")
    demo.add_argument(
        "--port", type=count_or_zero_argument, default=7860, help="the port (7860, Gradio's; 0: any free one)"
    )
    demo.set_defaults(run=run)


def run(args) -> None:
    from ..extras import MissingExtraError, require_extra

    started = time.perf_counter()
    try:
        require_extra("demo", "hf-structure demo")
    except MissingExtraError as error:
        raise fail("demo", str(error)) from None
    from ..bundled import DEFAULT_MODEL, bundled_checkpoints
    from ..demo import package_demo, serve

    models = args.model or sorted(bundled_checkpoints(), key=lambda name: (name != DEFAULT_MODEL, name))
    for model in models:  # an unknown name is refused now, not when it is chosen on the page
        resolved_model_path("demo", model)
    check_address(args.host, args.port)  # before the model loads
    page = load_or_fail("demo", lambda _: package_demo(models), models[0])  # it loads the first model
    try:
        url = serve(page, args.host, args.port or None)
    except OSError as error:  # Gradio's words name neither the address nor why (taken since the check, or the like)
        check_address(args.host, args.port)
        raise fail("demo", " ".join(str(error).split())) from None
    print(f"hf-structure demo: serving {url} ({time.perf_counter() - started:.1f} s); Ctrl-C ends it", flush=True)
    page.block_thread()


def check_address(host: str, port: int) -> None:
    """Fail in one line where this machine cannot serve on `host`, `port` now (0: any free port): the port taken by
    another program, an address that is not this machine's or that does not resolve."""
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as error:
        raise fail("demo", f"cannot serve on {host}: {error.strerror}") from None
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: a closed port is free
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise fail("demo", f"port {port} is in use on {host}; choose another with --port") from None
            raise fail("demo", f"cannot serve on {host} port {port}: {error.strerror}") from None
