"""Classic: textbook games that none of the five papers has, played on the same contract.

- ``prisoners_dilemma.py``: the Prisoner's Dilemma repeated for an announced number of rounds, with a
  report after each (payoffs T > R > P > S, the subgame-perfect equilibrium defects in every round), its
  metrics (cooperation, mutual cooperation, reciprocity) and a ``tit_for_tat`` policy.
- ``matching_pennies.py``: asymmetric matching pennies, repeated, whose only equilibrium is mixed (the
  mismatcher shows heads with B / (A + B)); deviation is a total variation distance (games/mixed.py).
Prompts: ``hosts/templates/prisoners_dilemma.toml``, ``hosts/templates/matching_pennies.toml``; no importer;
no analysis module of its own (the report's shared tables, payoff ratio, deviation and the per-family metric
box plots cover it).
"""

from .matching_pennies import MatchingPennies
from .prisoners_dilemma import PrisonersDilemma

GAMES = (PrisonersDilemma(), MatchingPennies())
