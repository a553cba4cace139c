"""Retries removed: every call gets one attempt."""
import tenacity

import amemgym.llm.client as client

client.stop_after_attempt = lambda n: tenacity.stop_after_attempt(1)
