"""The budget family: memory under a write budget, with corrections, over a stream of entity documents.

An episode is a seeded world of entities from one domain template, streamed as documents in batches with
noise, correction notices, silent contradictions and questions. The harness owns the memory store and its
write budget; answers are checked by rule and scored on four axes (breadth, maintenance, reasoning,
efficiency). See docs/design.md for the data flow.
"""

from .generate import build_episode, episode_bytes
from .model import FAMILY, FORMAT_VERSION, Episode
from .tiers import TIERS, get_tier

__all__ = ["FAMILY", "FORMAT_VERSION", "TIERS", "Episode", "build_episode", "episode_bytes", "get_tier"]
