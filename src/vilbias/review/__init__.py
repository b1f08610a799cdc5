"""Human review of annotations: export sheets, import verdicts, agreement statistics.

    vilbias review export --workdir work --output sheets --reviewers 3
    vilbias review import --workdir work sheets/sheet_reviewer_1.csv sheets/sheet_reviewer_2.csv
    vilbias review stats --workdir work

See ``docs/review.md``.
"""

from typing import TYPE_CHECKING

from vilbias.lazy import attach

_import_structure = {
    "config": ["ExportConfig", "ImportConfig", "StatsConfig"],  # light: what the commands' --help parses
    "sheets": ["export_sheets", "import_verdicts"],
    "stats": ["review_stats"],
}
__getattr__, __dir__, __all__ = attach(__name__, _import_structure)

if TYPE_CHECKING:  # the same names, for editors and type checkers (tests/test_lazy.py keeps the two equal)
    from vilbias.review.config import ExportConfig, ImportConfig, StatsConfig
    from vilbias.review.sheets import export_sheets, import_verdicts
    from vilbias.review.stats import review_stats
