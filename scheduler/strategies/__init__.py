"""The registered search strategies, one module each: importing this package registers them."""

from . import autotune, beam, dropout, greedy, hierarchical, top_k  # noqa: F401
from . import mcts, polymage_dp, portfolio  # noqa: F401
