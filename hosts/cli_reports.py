"""Subcommands that turn run directories into reports: report, compare, suite (issue: reports)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the report commands to the ``econarena`` parser."""
