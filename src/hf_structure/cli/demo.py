"""`hf-structure demo`: the parsers on a page in the browser, served on localhost (`hf_structure.demo`; needs the
`demo` extra, Gradio)."""

from __future__ import annotations

import time

from .common import count_or_zero_argument, fail, load_or_fail, resolved_model_path


def add_command(commands) -> None:
    demo = commands.add_parser(
        "demo", help="serve a page to try the models in a browser, on localhost (needs hf_structure[demo])"
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
    page = load_or_fail("demo", lambda _: package_demo(models), models[0])  # it loads the first model
    url = serve(page, args.host, args.port or None)
    print(f"hf-structure demo: serving {url} ({time.perf_counter() - started:.1f} s); Ctrl-C ends it", flush=True)
    page.block_thread()
