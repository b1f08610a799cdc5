"""An ingest that keeps nothing: it says why and what to check, and leaves a workdir that the later
stages recognise as empty (not "run vilbias ingest first")."""

from __future__ import annotations

import pytest

from tests.fakes.web_server import Page
from tests.ingest import site
from vilbias.annotate import AnnotateConfig, annotate
from vilbias.corpus import BuildConfig
from vilbias.ingest import ingest
from vilbias.workdir import EmptyWorkdir, read_jsonl


def _run_cli(config, monkeypatch, capsys) -> tuple[int, str]:
    """``vilbias ingest`` on ``config``'s feeds (the CLI with the fake web's settings)."""
    from vilbias.ingest import cli, pipeline

    monkeypatch.setattr(pipeline, "ingest", lambda _: ingest(config))
    monkeypatch.setattr(cli, "save_config", lambda *a, **k: None)
    argv = ["--workdir", str(config.workdir), *[a for f in config.feed for a in ("--feed", f)], "--no-progress"]
    code = cli.main(argv)
    return code, capsys.readouterr().out


def test_an_empty_feed_says_so_and_annotate_and_build_say_the_workdir_is_empty(web, make_config, monkeypatch, capsys):
    feed = web.add("feeds.test", "/empty.xml", Page(site.rss([]), content_type="application/rss+xml"))
    config = make_config(feed)
    code, out = _run_cli(config, monkeypatch, capsys)
    assert code == 1
    last = out.strip().splitlines()[-1]
    assert last == (f"nothing kept: {config.workdir} holds no articles: the feeds listed no items (an empty feed, or a page "
                    "that is not RSS/Atom): check that each --feed URL lists entries, then run `vilbias ingest` again")
    # the workdir is one: its manifest and an empty articles.jsonl
    assert (config.workdir / "workdir.json").is_file() and (config.workdir / "articles.jsonl").read_bytes() == b""

    with pytest.raises(EmptyWorkdir, match=r"holds no articles: the feeds listed no items") as annotate_error:
        annotate(AnnotateConfig(workdir=config.workdir, progress=False))
    with pytest.raises(EmptyWorkdir, match=r"holds no articles: the feeds listed no items") as build_error:
        BuildConfig(workdir=config.workdir, output=config.workdir.parent / "out")
    for error in (annotate_error, build_error):
        assert "run `vilbias ingest" not in str(error.value).split(":")[0]
    assert not (config.workdir.parent / "out").exists()


def test_a_feed_whose_items_are_all_dropped_names_the_reasons(web, make_config, monkeypatch, capsys):
    u = web.url
    web.add("img.test", "/1.jpg", Page(site.jpeg(seed=1), content_type="image/jpeg"))
    web.add("news.test", "/short", Page(site.og_page("Brief", site.paragraphs(8, n_sentences=6), u("img.test", "/1.jpg"))))
    web.add("news.test", "/video/2", Page(site.og_page("Watch: harbour", site.paragraphs(9), u("img.test", "/1.jpg"), og_type="video.other")))
    feed = web.add("feeds.test", "/news.xml", Page(site.rss([{"link": u("news.test", "/short")}, {"link": u("news.test", "/video/2")}]),
                                                   content_type="application/rss+xml"))
    config = make_config(feed)
    code, out = _run_cli(config, monkeypatch, capsys)
    assert code == 1
    assert out.strip().splitlines()[-1] == (
        f"nothing kept: {config.workdir} holds no articles: ingest kept none of the 2 items it read (1 multimedia, "
        "1 too_few_sentences; see ingest_errors.jsonl): --min-sentences lowers the 20-sentence minimum")
    assert {e["reason"] for e in read_jsonl(config.workdir / "ingest_errors.jsonl")} == {"multimedia", "too_few_sentences"}
    with pytest.raises(EmptyWorkdir, match=r"ingest kept none of the 2 items it read \(1 multimedia, 1 too_few_sentences"):
        BuildConfig(workdir=config.workdir)


def test_a_dead_feed_says_the_feed_failed(web, make_config, monkeypatch, capsys):
    feed = web.add("feeds.test", "/gone.xml", Page(status=404))
    config = make_config(feed)
    code, out = _run_cli(config, monkeypatch, capsys)
    assert code == 1
    assert out.strip().splitlines()[-1] == (
        f"nothing kept: {config.workdir} holds no articles: every feed failed (1 http_404; see ingest_errors.jsonl): "
        "check the --feed URLs and that this machine reaches them, then run `vilbias ingest` again")


def test_a_folder_never_ingested_still_says_run_ingest_first(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"is not a workdir \(no articles.jsonl\): run `vilbias ingest --workdir"):
        AnnotateConfig(workdir=tmp_path / "nowhere").resolve_annotators()
    with pytest.raises(FileNotFoundError, match="run `vilbias ingest --workdir"):
        BuildConfig(workdir=tmp_path / "nowhere")
