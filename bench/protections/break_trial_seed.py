"""The run's seed is no longer mixed into every call: trials replay each other from the cache."""
from amemgym.llm.client import LLMClient

LLMClient.sample_seed = property(lambda self: None, lambda self, value: None)
