"""NegotiationArena (Bianchi et al.): two players, RED and BLUE, exchange tagged messages and proposals.

- ``common.py``: the alternating-message engine and trades, and the replay of a released log, shared by:
- ``exchange.py`` (resource exchange), ``ultimatum.py`` (multi-turn ultimatum), ``buysell.py`` (seller and
  buyer).
- ``logs.py``: what a released ``game_state.json`` records (the END summary: the outcome of record) and the
  causes that make our replay of it disagree.
Prompts: ``hosts/templates/{resource_exchange,ultimatum,buy_sell}.toml``; analysis:
``analysis/families/negotiationarena.py``; importer: ``importers/negotiationarena.py``.
"""

from .buysell import BuySell
from .exchange import ResourceExchange
from .ultimatum import MultiTurnUltimatum

GAMES = (ResourceExchange(), MultiTurnUltimatum(), BuySell())
