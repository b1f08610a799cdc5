"""``vilbias audit``: VIGNETTE's stereotype audit for vision-language models and for the corpus's
own LLM annotators (``docs/audit.md``).

    from vilbias.audit import AuditConfig, MetricOptions, run_audit, audit_annotators, compute_metrics, read_responses

    summary = run_audit(AuditConfig(output="audits/qwen", model="openai:Qwen/Qwen2.5-VL-7B-Instruct@http://localhost:8000/v1"))
    tables = compute_metrics(read_responses("audits/qwen/responses.jsonl"), MetricOptions(alpha=0.05))
    audit_annotators("annotators.yaml", "work")      # summaries into work/annotations.sqlite
"""

from typing import TYPE_CHECKING

from vilbias.lazy import attach

# loaded on first use, so that parsing one audit command does not load the others (`audit run
# --help` need not import the annotation stage)
_import_structure = {
    "annotators": ["audit_annotators"],
    "config": ["AnnotatorAuditConfig", "AuditConfig"],  # light: what the commands' --help parses
    "metrics": ["MetricOptions", "compute_metrics"],
    "responses": ["read_responses"],
    "runner": ["run_audit"],
}
__getattr__, __dir__, __all__ = attach(__name__, _import_structure)

if TYPE_CHECKING:  # the same names, for editors and type checkers (tests/test_lazy.py keeps the two equal)
    from vilbias.audit.annotators import audit_annotators
    from vilbias.audit.config import AnnotatorAuditConfig, AuditConfig
    from vilbias.audit.metrics import MetricOptions, compute_metrics
    from vilbias.audit.responses import read_responses
    from vilbias.audit.runner import run_audit
