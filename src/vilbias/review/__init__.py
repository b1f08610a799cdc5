"""Human review of annotations: export sheets, import verdicts, agreement statistics.

    vilbias review export --workdir work --output sheets --reviewers 3
    vilbias review import --workdir work sheets/sheet_reviewer_1.csv sheets/sheet_reviewer_2.csv
    vilbias review stats --workdir work

See ``docs/review.md``.
"""

from vilbias.review.sheets import ExportConfig, ImportConfig, export_sheets, import_verdicts
from vilbias.review.stats import StatsConfig, review_stats

__all__ = ["ExportConfig", "ImportConfig", "StatsConfig", "export_sheets", "import_verdicts", "review_stats"]
