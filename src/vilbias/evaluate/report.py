"""Results of a run: ``results.json``, ``report.md`` with its PNG plots, and the model card's
``model-index``.

``results.json`` has one shape for every run (one model or per-fold models, classifier or
generative): ``evaluations`` (one record per view × regime × probe, each with ``closed`` metrics,
``open`` judge scores and ``rationale_check`` — the model-free check's pass rate, problems and
agreement with the judge's faithfulness — or None), ``summary`` (mean ± std over views), ``training_data`` (per
view: what the model trained on and the seen-row check), ``warnings``, ``closed_vs_open``.

    from vilbias.evaluate.report import write_model_index
    write_model_index("results/my-run/results.json", "outputs/my-model")   # updates README.md
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vilbias import __version__
from vilbias.evaluate.analysis import closed_open_points, closed_vs_open, plot_closed_vs_open
from vilbias.metrics.plots import plot_confusion_matrix, pyplot, set_title
from vilbias.metrics.scores import CLOSED_KEYS, OPEN_KEYS, summarize
from vilbias.publish.model import ModelCardInfo, render_model_card, rendered_by_vilbias
from vilbias.task import LABEL_NAMES

logger = logging.getLogger(__name__)


def one_class(references: Sequence[int], predictions: Sequence[int | None]) -> str | None:
    """Why one setting's scores cannot show the model telling the classes apart, or None when they can.

    A model that gives one label to every scored row (a constant), a setting whose scored rows all
    hold one gold label, or one where no answer could be read: their F1 is a constant's, and their
    probe deltas are zero by construction, not evidence about the image or the text.

    Args:
        references: gold class ids.
        predictions: predicted class ids; None for an unparseable answer.
    """
    n = len(references)
    gold = set(references)
    if len(gold) == 1:
        label = LABEL_NAMES[gold.pop()]
        return f"all {n} scored rows are {label}" if n > 1 else f"the one scored row is {label}"
    answered = [p for p in predictions if p is not None]
    if not answered:
        return f"none of the model's {n} answers could be read"
    if len(set(answered)) == 1:
        rows = "scored row" if len(answered) == n else f"row it answered ({len(answered)} of {n}; the rest unreadable)"
        return f"the model predicts {LABEL_NAMES[answered[0]]} for every {rows}"
    return None


def _summaries(evaluations: list[dict], regimes: list[str], probes: list[str]) -> list[dict]:
    out = []
    for regime in regimes:
        for probe in probes:
            per_view = [e for e in evaluations if e["regime"] == regime and e["probe"] == probe]
            if per_view:
                out.append({"regime": regime, "probe": probe, **summarize(per_view),
                            "degenerate": [e["view"] for e in per_view if e.get("degenerate")]})
    return out


DELTA_KEYS = ("f1_binary", "f1_macro", "accuracy")


def _probe_deltas(evaluations: list[dict]) -> list[dict]:
    """ΔF1 (probe − plain) per regime, the unimodal-shortcut check, averaged over the views whose plain
    run is not degenerate (:func:`one_class`): a constant model's deltas are zero by construction."""
    plain = {(e["view"], e["regime"]): e for e in evaluations if e["probe"] == "none"}
    by_setting: dict[tuple[str, str], list[tuple[dict, dict]]] = {}
    for e in evaluations:
        base = plain.get((e["view"], e["regime"]))
        if e["probe"] != "none" and base is not None and not base.get("degenerate"):
            by_setting.setdefault((e["regime"], e["probe"]), []).append((e, base))
    return [{"regime": regime, "probe": probe, "views": [e["view"] for e, _ in pairs],
             **{f"delta_{key}": sum(e["closed"][key] - b["closed"][key] for e, b in pairs) / len(pairs) for key in DELTA_KEYS}}
            for (regime, probe), pairs in by_setting.items()]


def degenerate_note(evaluations: list[dict]) -> str | None:
    """One sentence on the plain settings whose scores are a constant's (:func:`one_class`), or None."""
    plain = [e for e in evaluations if e["probe"] == "none"]
    bad = [e for e in plain if e.get("degenerate")]
    if not bad:
        return None
    several = [key for key in ("view", "regime") if len({e[key] for e in plain}) > 1]  # named only when there are several
    facts = []
    for e in bad:
        where = " ".join(e[key] for key in several)
        c = e["closed"]
        facts.append(f"{where + ': ' if where else ''}{e['degenerate']} ({c['n']} rows, F1 {c['f1_binary']:.4f}, "
                     f"macro-F1 {c['f1_macro']:.4f})")
    facts = "; ".join(facts)
    # a confusion-matrix row of zeros: a gold class that no scored row holds
    of_one_class = [any(sum(row) == 0 for row in e["closed"]["confusion_matrix"]) for e in bad]
    tails = []
    if any(of_one_class):
        tails.append("scores over rows of one class say nothing about telling the classes apart (score a split that "
                     "holds both)")
    if not all(of_one_class):
        tails.append("a model that gives every row the same answer tells nothing apart: these are a constant's scores, "
                     "and its probe deltas mean nothing")
    return f"{facts} — {'; '.join(tails)}"


def warnings(meta: dict) -> list[str]:
    """What the reader must know before trusting the numbers: unchecked models, scored training rows."""
    # first: scores of a model on its own labels measure nothing about the task
    out = [c["sentence"] for c in meta.get("circularity") or ()]
    for t in meta["training_data"]:
        if t["status"] == "unchecked":
            out.append(f"{t['view']}: not checked for training rows — {t['note']}; scores may include rows the model saw.")
        elif t["status"] == "overlap":
            out.append(f"{t['view']}: {t['overlap']} of {t['evaluated']} scored rows are rows the model trained on, "
                       "scored anyway (--allow-overlap); these numbers measure the leak, not the task.")
    return out


def finish_run(meta: dict, evaluations: list[dict], out: Path) -> dict:
    """Summaries, probe deltas, closed-vs-open r, ``results.json``, plots and ``report.md`` for one run."""
    summaries = _summaries(evaluations, meta["regimes"], meta["probes"])
    results = {"vilbias_version": __version__, **meta, "warnings": warnings(meta), "evaluations": evaluations,
               "summary": summaries, "degenerate": degenerate_note(evaluations), "probe_deltas": _probe_deltas(evaluations),
               "plots": []}
    results["closed_vs_open"] = closed_vs_open(closed_open_points(results))
    for s in summaries:
        if s["probe"] == "none":
            name = f"confusion_matrix_{s['regime']}.png"
            title = f"{meta['model']['title']} — {s['regime']} ({meta['dataset']['config']}/{meta['dataset']['split']})"
            plot_confusion_matrix(s["confusion_matrix"], out / name, title=title)
            results["plots"].append(name)
    # Bars of zero height are empty axes: the table says +0.0000 already.
    if any(p[f"delta_{key}"] for p in results["probe_deltas"] for key in DELTA_KEYS):
        plot_probe_deltas(results["probe_deltas"], out / "probes.png", meta["model"]["title"])
        results["plots"].append("probes.png")
    if results["closed_vs_open"]:
        c = results["closed_vs_open"]
        plot_closed_vs_open(c["points"], out / "closed_vs_open.png", c["pearson"]["r"] if c["pearson"] else None)
        results["plots"].append("closed_vs_open.png")
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    (out / "report.md").write_text(render_report(results), encoding="utf-8")
    logger.info("results in %s", out)
    return results


def _fmt(stat: dict | None, scale: float = 1.0, digits: int = 4, with_std: bool = True) -> str:
    if not stat:
        return "—"
    if not with_std:
        return f"{stat['mean'] * scale:.{digits}f}"
    return f"{stat['mean'] * scale:.{digits}f} ± {stat['std'] * scale:.{digits}f}"


def _header(results: dict) -> list[str]:
    d, m = results["dataset"], results["model"]
    questions = "; ".join(f"{q}: {what}" for q, what in results["questions"].items() if what)
    degenerate = results.get("degenerate")
    circular = [c["sentence"] for c in results.get("circularity") or ()]
    return [
        # the report's first line, before the title, as a leak would be: the numbers below are the model's own labels
        *([f"> **Warning — {c[0].upper()}{c[1:]}.**" for c in circular] + [""] if circular else []),
        f"# Evaluation: {results['run']}",
        "",
        *([f"> **These scores do not measure the task.** {degenerate[0].upper()}{degenerate[1:]}.", ""] if degenerate else []),
        f"- model: `{m['id']}`, {m['architecture']} (revision `{m['revision'] or 'unpinned'}`, {m['kind']}, {m['modality']})",
        f"- dataset: `{d['id']}` config `{d['config']}` split `{d['split']}` (revision `{d['revision'] or 'unpinned'}`)",
        f"- questions: {questions}" + (" — separate generations" if results["questions"]["ovqa"] else ""),
        f"- judge: `{results['judge']['id']}`" if results["judge"] else "- judge: none (no oVQA answers)",
        f"- seed {results['seed']}; prompts {', '.join(f'{k} `{v}`' for k, v in results['prompt_versions'].items() if v) or '—'}",
        f"- vilbias {results['vilbias_version']}, {results['created']}",
        "",
    ]


def _training_data_section(results: dict) -> list[str]:
    lines = ["## Training data and seen rows", ""]
    lines += [f"> **Warning:** {w}" for w in results["warnings"]] + ([""] if results["warnings"] else [])
    lines += ["| view | model | trained on | evaluated | seen in training | check |", "|---|---|---|---|---|---|"]
    for t in results["training_data"]:
        trained = t["training_data"]["description"] if t["training_data"] else "no record"
        check = {"checked": "no overlap", "overlap": "**overlap allowed (--allow-overlap)**",
                 "unchecked": "**unchecked** (no record)"}[t["status"]]
        seen = str(t["overlap"]) if t["training_data"] else "?"
        lines.append(f"| {t['view']} | `{t['model']}` | {trained} | {t['evaluated']} | {seen} | {check} |")
    return lines + [""]


def _closed_section(results: dict) -> list[str]:
    source = ("the closed question's answers (label only, strictly parsed)" if results["questions"]["closed"] != "classifier prediction"
              else "the classifier's predictions")
    lines = ["## Closed-ended", "", f"From {source}. Unparseable answers are counted as wrong; their rate is the last column."
             + (" Values are mean ± std over the five folds." if results["dataset"]["config"].startswith("fold_0..") else ""),
             "", "| regime | probe | " + " | ".join(CLOSED_KEYS) + " | unparseable |",
             "|---|---|" + "---|" * (len(CLOSED_KEYS) + 1)]
    for s in results["summary"]:
        many = s["views"] > 1
        row = ([s["regime"], s["probe"]] + [_fmt(s["closed"][k], with_std=many) for k in CLOSED_KEYS]
               + [_fmt(s["closed"]["unparseable_rate"], 100, 1, with_std=many) + " %"])
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def _sentence_section(results: dict) -> list[str]:
    protocols = [(e["view"], e["sentence_protocol"]) for e in results["evaluations"] if e.get("sentence_protocol")]
    if not protocols:
        return []
    runtime = results["model"].get("runtime")
    lines = ["## Sentence-level protocol", "",
             "The sentence model scored as `vilbias train sentence` scores its test split: each row's calibrated P(biased) "
             "(biased at 0.5), its expected calibration error (10 bins), and articles (sentences grouped by link, an "
             "article's label the majority of its expert labels, ties left out) labelled by the model's article rule."
             + (f" It ran here as: {runtime}." if runtime else ""), "",
             "| view | sentences | macro-F1 | accuracy | ECE | articles | article macro-F1 |", "|---|---|---|---|---|---|---|"]
    for view, p in protocols:
        a = p.get("article")
        articles, article_f1 = (a["groups"], f"{a['f1_macro']:.4f}") if a else (p["articles"], "—")
        lines.append(f"| {view} | {p['sentences']} | {p['f1_macro']:.4f} | {p['accuracy']:.4f} | {p['ece']:.4f} | {articles} | {article_f1} |")
    return lines + [""]


def _open_section(results: dict) -> list[str]:
    lines = ["## Open-ended (oVQA, LLM judge)", "",
             "The judge scores the oVQA answers (label + reasoning), a generation of their own. Percentages over judged "
             "answers, with bootstrap 95% intervals (per view; mean ± std over folds with --cv). Judge failures (no valid "
             "JSON after the retries) are counted, not scored.", "",
             "| view | regime | probe | reasoning accuracy % | faithfulness % | judged | judge failures | 0/0 by rule |",
             "|---|---|---|---|---|---|---|---|"]
    for e in results["evaluations"]:
        o = e["open"]
        if not o:
            continue
        cells = ["—" if o[key]["percent"] is None else f"{o[key]['percent']:.1f} [{o[key]['ci95'][0]:.1f}, {o[key]['ci95'][1]:.1f}]"
                 for key in OPEN_KEYS]
        lines.append(f"| {e['view']} | {e['regime']} | {e['probe']} | {cells[0]} | {cells[1]} | {o['judged']} | "
                     f"{o['judge_failures']} ({100 * o['judge_failure_rate']:.1f} %) | {o['rule_zero']} |")
    opened = [s for s in results["summary"] if s["open"]]
    if any(s["views"] > 1 for s in opened):
        lines += ["", "| regime | probe | reasoning accuracy % | faithfulness % |", "|---|---|---|---|"]
        lines += [f"| {s['regime']} | {s['probe']} | {_fmt(s['open'].get('reasoning_accuracy'), 1, 1)} | "
                  f"{_fmt(s['open'].get('faithfulness'), 1, 1)} |" for s in opened]
    c = results["closed_vs_open"]
    if c:
        r = (f"Pearson r = {c['pearson']['r']:.3f} (p = {c['pearson']['p_value']:.3g}, n = {c['pearson']['n']})"
             if c["pearson"] else "Pearson r: undefined (fewer than 3 settings, or a score that does not vary)")
        lines += ["", f"Closed accuracy vs reasoning accuracy across this run's settings (regime × probe): {r}; "
                  "across runs: `vilbias evaluate compare`."]
    return lines + [""]


def _rationale_check_section(results: dict) -> list[str]:
    lines = ["## Rationale check (model-free)", "",
             "The oVQA rationales through `vilbias.rationale.check_rationale` (no model, offline; see docs/rationale.md): "
             "a rationale passes when it quotes only the article, argues for the label the model gave, and is complete and "
             "not repetitive. Beside it, the judge's faithfulness on the same answers and how often the two agree "
             "(check pass ↔ faithful).", "",
             "| view | regime | probe | passes % | judge faithfulness % | agreement % | passes, judge unfaithful "
             "| fails, judge faithful | problems (answers) |", "|---|---|---|---|---|---|---|---|---|"]
    for e in results["evaluations"]:
        c = e.get("rationale_check")
        if not c:
            continue
        faithful = e["open"]["faithfulness"]["percent"] if e["open"] else None
        cells = [f"{v:.1f}" if v is not None else "—" for v in (c["pass_percent"], faithful, c["agreement_percent"])]
        problems = ", ".join(f"{code} {n}" for code, n in c["problems"].items()) or "none"
        lines.append(f"| {e['view']} | {e['regime']} | {e['probe']} | {cells[0]} | {cells[1]} | {cells[2]} | "
                     f"{c['check_passes_judge_unfaithful']} | {c['check_fails_judge_faithful']} | {problems} |")
    return lines + [""]


def _probes_section(results: dict) -> list[str]:
    lines = ["## Robustness probes", ""]
    deltas = results["probe_deltas"]
    constant = {s["regime"]: s["degenerate"] for s in results["summary"] if s["probe"] == "none" and s["degenerate"]}
    for regime, views in constant.items():
        lines += [f"{regime}: no deltas from {', '.join(views)} — its plain-input scores are a constant's (see the top of "
                  "this report); a probe cannot change what a constant model does not use, so its deltas mean nothing.", ""]
    if not deltas:
        return lines
    some_constant = " over the views whose plain-input scores are not a constant's" if constant else ""
    lines += [f"ΔF1 = F1 under the probe − F1 on the plain input{some_constant}. Near zero for `no_image`/`swap_image` "
              "means the model does not use the image (a unimodal shortcut); for `headline_only`, that it reads little "
              "beyond the headline.", "",
              "| regime | probe | ΔF1 (binary) | ΔF1 (macro) | Δaccuracy |", "|---|---|---|---|---|"]
    lines += [f"| {p['regime']} | {p['probe']} | {p['delta_f1_binary']:+.4f} | {p['delta_f1_macro']:+.4f} | "
              f"{p['delta_accuracy']:+.4f} |" for p in deltas]
    if "probes.png" not in results["plots"]:
        lines += ["", "Every delta is zero, so there is no probe plot."]
    return lines + [""]


def render_report(results: dict) -> str:
    """The markdown report of one run."""
    lines = _header(results) + _training_data_section(results) + _closed_section(results) + _sentence_section(results)
    if any(s["open"] for s in results["summary"]):
        lines += _open_section(results)
    if any(e.get("rationale_check") for e in results["evaluations"]):
        lines += _rationale_check_section(results)
    if len(results["probes"]) > 1:
        lines += _probes_section(results)
    if results["plots"]:
        lines += ["## Plots", ""] + [f"![{p}]({p})" for p in results["plots"]]
    return "\n".join(lines) + "\n"


def plot_probe_deltas(deltas: list[dict], path: Path, model: str) -> None:
    """Bars of ΔF1 (binary) per probe and regime of ``model`` (as the title names it)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    labels = [f"{d['probe']}\n{d['regime']}" for d in deltas]
    values = [d["delta_f1_binary"] for d in deltas]
    ax.bar(range(len(values)), values, color=["C3" if v < 0 else "C2" for v in values])
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(values)), labels, fontsize=7)
    ax.set_ylabel("ΔF1 (binary)")
    set_title(ax, f"{model}: F1 change under each probe", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- model card ---------------------------------------------------------------------------------


def eval_results(results: dict) -> list[dict[str, Any]]:
    """``ModelCardInfo.eval_results`` entries for a run: each regime's plain-input metrics. The
    entries of a setting whose scores are a constant's (:func:`one_class`) carry a ``note``
    saying so, which the card prints under its table."""
    entries = []
    split = results["dataset"]["split"]
    config = results["dataset"]["config"]
    cv = config.startswith("fold_0..")
    why = {(e["view"], e["regime"]): e["degenerate"] for e in results.get("evaluations", [])
           if e["probe"] == "none" and e.get("degenerate")}
    for s in results["summary"]:
        if s["probe"] != "none":
            continue
        suffix = f"{s['regime']}" + (", 5-fold CV mean" if cv else "")
        reasons = list(dict.fromkeys(why.get((view, s["regime"]), "") for view in s.get("degenerate", [])))
        note = (f"{results.get('model', {}).get('title', 'the model')}, {s['regime']}: {'; '.join(r for r in reasons if r) or 'degenerate'} — "
                "a constant's scores, not evidence that the model tells the classes apart") if reasons else None
        start = len(entries)
        for metric, key in (("accuracy", "accuracy"), ("f1", "f1_binary"), ("f1", "f1_macro"),
                            ("precision", "precision_binary"), ("recall", "recall_binary")):
            name = "accuracy" if key == "accuracy" else f"{metric} ({key.split('_')[1]})"
            entries.append({"metric_type": metric, "metric_name": f"{name}, {suffix}", "value": s["closed"][key]["mean"],
                            "split": split, "config": "default" if cv else config})
        if s["open"]:
            for key in OPEN_KEYS:
                if key in s["open"]:
                    entries.append({"metric_type": key, "metric_name": f"{key.replace('_', ' ')} (LLM judge, %), {suffix}",
                                    "value": s["open"][key]["mean"], "split": split, "config": "default" if cv else config})
        if note:
            for entry in entries[start:]:
                entry["note"] = note
    return entries


def write_model_index(results: dict | str | Path, card_or_dir):
    """Put a run's results into a model card's ``model-index``.

    Args:
        results: the results dict, or the path of ``results.json`` (or its folder).
        card_or_dir: a :class:`vilbias.publish.model.ModelCardInfo` (updated and returned), or a
            model folder holding ``vilbias_card.json``: its info is updated, saved, and the card
            rendered into ``README.md`` (unless that file is one vilbias did not render, which stays).

    Returns:
        The updated ``ModelCardInfo`` (for a folder, after writing it) and the rendered card, as
        ``(info, card)``. Existing entries for the same metric name, split and config are
        replaced; others are kept.
    """
    if not isinstance(results, dict):
        path = Path(results)
        path = path / "results.json" if path.is_dir() else path
        results = json.loads(path.read_text(encoding="utf-8"))
    folder = None
    if isinstance(card_or_dir, ModelCardInfo):
        info = card_or_dir
    else:
        folder = Path(card_or_dir)
        info = ModelCardInfo.load(folder)
    new = eval_results(results)
    replaced = {(e["metric_name"], e["split"], e.get("config")) for e in new}
    info.eval_results = [e for e in info.eval_results
                         if (e.get("metric_name"), e["split"], e.get("config")) not in replaced] + new
    if results["dataset"].get("revision") and not info.dataset_revision:
        info.dataset_revision = results["dataset"]["revision"]
    card = render_model_card(info)
    if folder is not None:
        info.save(folder)
        if not (folder / "README.md").exists() or rendered_by_vilbias(folder / "README.md"):  # never a README of yours
            card.save(folder / "README.md")
    return info, card
