"""Human review of annotations: export sheets, import verdicts, agreement statistics."""
