#!/usr/bin/env python
"""The documentation's picture of `hf-structure demo` (docs/demo.png): the page served on localhost with the bundled
models, a text parsed by `--model` in headless Chromium (Debian's `chromium` and `chromium-driver`), the page saved
as a PNG. Nothing is fetched from elsewhere: the driver's path is given, so Selenium Manager stays out, and
Selenium's statistics are off. The demo's browser test (tests/test_demo.py) drives the page with the same steps.

    python scripts/demo_screenshot.py --model arc-hybrid-ewt --output docs/demo.png
"""

import argparse
import os

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def open_browser(size: str = "1280,1400"):
    """Headless Chromium under Selenium, offline; `size`: the window, "width,height" in pixels."""
    os.environ.update(SE_OFFLINE="true", SE_AVOID_STATS="true")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={size}"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def parse_on_page(browser, url: str, text: str, model: str | None = None, timeout: float = 120) -> list:
    """Open the demo at `url`, choose `model` (None: the page's first), type `text`, press Parse and wait for the
    pictures; returns their `<figure>` elements."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(url)
    wait = WebDriverWait(browser, timeout)
    box = wait.until(lambda page: page.find_element(By.CSS_SELECTOR, "#text textarea"))
    if model is not None:
        chooser = browser.find_element(By.CSS_SELECTOR, "#model input")
        chooser.click()
        chooser.send_keys(Keys.CONTROL, "a")
        chooser.send_keys(model, Keys.ENTER)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.DELETE)
    box.send_keys(text)
    browser.find_element(By.CSS_SELECTOR, "#parse").click()
    return wait.until(lambda page: page.find_elements(By.CSS_SELECTOR, "#pictures figure") or False)


def table_rows(browser) -> list[list[str]]:
    """The cells of the page's table as shown, row by row (Gradio draws it as a grid of `gridcell`s)."""
    from selenium.webdriver.common.by import By

    rows: dict[int, dict[int, str]] = {}
    for cell in browser.find_elements(By.CSS_SELECTOR, "#table [role=gridcell]"):
        row, column = int(cell.get_attribute("data-row")), int(cell.get_attribute("data-col"))
        rows.setdefault(row, {})[column] = cell.text.strip()
    return [[cells[column] for column in sorted(cells)] for _, cells in sorted(rows.items())]


def main() -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    from hf_structure.bundled import bundled_checkpoints
    from hf_structure.demo import EXAMPLE_TEXT, package_demo, serve

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="arc-hybrid-ewt", help="the model chosen on the page")
    parser.add_argument("--text", default=EXAMPLE_TEXT)
    parser.add_argument("--output", default="docs/demo.png")
    parser.add_argument("--size", default="1280,1400", help="the window, in pixels: width,height")
    args = parser.parse_args()
    page = package_demo([args.model, *sorted(set(bundled_checkpoints()) - {args.model})])
    browser = open_browser(args.size)
    try:
        parse_on_page(browser, serve(page), args.text)
        WebDriverWait(browser, 60).until(lambda shown: table_rows(shown) or False)
        browser.save_screenshot(args.output)
    finally:
        browser.quit()
        page.close()
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
