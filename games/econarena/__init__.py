"""EconArena (Guo et al., *Economics Arena for Large Language Models*): one-shot contests and auctions.

- ``contests.py``: the beauty contest (guess a ratio of the average), with level-k reasoning.
- ``auctions.py``: the sealed-bid second-price auction and the English (ascending clock) auction.
Prompts: ``hosts/templates/{beauty_contest,second_price_auction,english_auction}.toml``.
"""

from .auctions import EnglishAuction, SecondPriceAuction
from .contests import BeautyContest

GAMES = (BeautyContest(), SecondPriceAuction(), EnglishAuction())
