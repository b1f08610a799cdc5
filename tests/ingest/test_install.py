"""A fresh install can run ingest: every module imports, and trafilatura's fallback extractor
(jusText, which needs lxml.html.clean from the separate lxml_html_clean package) works.

pip < 24 ignores the extra ``lxml[html_clean]`` through which jusText asks for that package, so
without ``lxml_html_clean`` named in the ``ingest`` extra, ``import trafilatura`` fails on the
first page a user's run extracts.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.ingest import site

# What the first `vilbias ingest` run imports, in a fresh interpreter: every module of the
# package and the libraries the extractor imports only when the first page arrives.
FIRST_RUN = """
import importlib, pkgutil
import vilbias.ingest
modules = [m.name for m in pkgutil.walk_packages(vilbias.ingest.__path__, "vilbias.ingest.")]
for name in modules:
    importlib.import_module(name)
import trafilatura, pysbd, feedparser, lxml.html.clean
from vilbias.ingest import extract_article
html = "<html><head><title>T</title></head><body><article><h1>T</h1>" + "<p>One sentence of news text here. Another one follows it.</p>" * 5 + "</article></body></html>"
assert extract_article(html, "https://example.com/news/t").text.startswith("One sentence")
print(" ".join(sorted(modules)))
"""


def test_a_fresh_interpreter_imports_the_whole_ingest_path():
    env = {**os.environ, "PYTHONWARNINGS": "error::ImportWarning"}
    done = subprocess.run([sys.executable, "-c", FIRST_RUN], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(done.stdout.split()) >= {
        "vilbias.ingest.cli", "vilbias.ingest.extract", "vilbias.ingest.feeds", "vilbias.ingest.item",
        "vilbias.ingest.net", "vilbias.ingest.pipeline", "vilbias.ingest.urls",
    }
    help_run = subprocess.run([sys.executable, "-m", "vilbias.cli", "ingest", "--help"], capture_output=True, text=True, timeout=120)
    assert help_run.returncode == 0 and "--allow-private-addresses" in help_run.stdout, help_run.stderr[-2000:]


def test_trafilaturas_fallback_extractor_runs():
    import justext
    from lxml.html.clean import Cleaner

    paragraphs = "".join(f"<p>{p}</p>" for p in site.paragraphs(3))
    page = f"<html><body><div class='nav'><a href='/'>Home</a></div><script>track()</script><div>{paragraphs}</div></body></html>"
    kept = [p.text for p in justext.justext(page.encode(), justext.get_stoplist("English")) if not p.is_boilerplate]
    assert kept == site.paragraphs(3)  # jusText cleans the page with lxml.html.clean, then classifies
    assert "track()" not in Cleaner(javascript=True).clean_html(page)
