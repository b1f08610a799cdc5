"""``vilbias audit``: VIGNETTE's stereotype audit for vision-language models and for the corpus's
own LLM annotators (``docs/audit.md``).

    from vilbias.audit import AuditConfig, MetricOptions, run_audit, audit_annotators, compute_metrics, read_responses

    summary = run_audit(AuditConfig(output="audits/qwen", model="openai:Qwen/Qwen2.5-VL-7B-Instruct@http://localhost:8000/v1"))
    tables = compute_metrics(read_responses("audits/qwen/responses.jsonl"), MetricOptions(alpha=0.05))
    audit_annotators("annotators.yaml", "work")      # summaries into work/annotations.sqlite
"""

from vilbias.audit.annotators import audit_annotators
from vilbias.audit.metrics import MetricOptions, compute_metrics
from vilbias.audit.responses import read_responses
from vilbias.audit.runner import AuditConfig, run_audit

__all__ = ["AuditConfig", "MetricOptions", "audit_annotators", "compute_metrics", "read_responses", "run_audit"]
