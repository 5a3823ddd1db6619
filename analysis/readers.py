"""The families' report modules and the scan's readers a report feeds, in one light module: the process
that writes a run's columnar copy as it plays (``analysis/follow.py``) builds the report's own readers
without importing the report's figures (matplotlib: a second of start-up)."""

from __future__ import annotations

from typing import Any

from . import distributions
from .families import econarena, gamabench, glee, steering
from .families import negotiationarena as na
from .transcripts import Collector as TalkCollector

# Every family module gives scorecard(ctx) and section(ctx); the order breaks ties between cards that
# summarise as many run directories. EconArena's card covers the experiments no other module claims.
FAMILY_MODULES = (econarena, gamabench, na, glee, steering)


def report_collectors(transcripts: int = 50) -> dict[str, Any]:
    """The scan's consumers a report feeds beside the store, by name: one place, so the copy written as a run
    plays holds the parts the report's own reading asks for."""
    collectors = {m.FAMILY: m.collector() for m in FAMILY_MODULES if hasattr(m, "collector")}
    collectors["distributions"] = distributions.Collector()
    collectors["transcripts"] = TalkCollector(transcripts)
    return collectors
