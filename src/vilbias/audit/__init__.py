"""``vilbias audit``: VIGNETTE's stereotype audit for vision-language models and for the corpus's
own LLM annotators (``docs/audit.md``).

    from vilbias.audit import AuditConfig, MetricOptions, run_audit, audit_annotators, compute_metrics, read_responses

    summary = run_audit(AuditConfig(output="audits/qwen", model="openai:Qwen/Qwen2.5-VL-7B-Instruct@http://localhost:8000/v1"))
    tables = compute_metrics(read_responses("audits/qwen/responses.jsonl"), MetricOptions(alpha=0.05))
    audit_annotators("annotators.yaml", "work")      # summaries into work/annotations.sqlite
"""

import importlib

# name -> the module defining it. Loaded on first use, so that parsing one audit command does not
# load the others (`audit run --help` need not import the annotation stage).
_EXPORTS = {
    "AuditConfig": "vilbias.audit.runner", "run_audit": "vilbias.audit.runner",
    "MetricOptions": "vilbias.audit.metrics", "compute_metrics": "vilbias.audit.metrics",
    "audit_annotators": "vilbias.audit.annotators", "read_responses": "vilbias.audit.responses",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
