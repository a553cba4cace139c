"""Retries removed: every call gets one attempt."""
import tenacity

import amemgym.llm.client as client

client._StopRetrying = lambda attempts, timeout_retries: tenacity.stop_after_attempt(1)
