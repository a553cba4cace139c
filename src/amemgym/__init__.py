"""amemgym: an on-policy gym for the memory of LLM assistants."""

__version__ = "0.1.0"

