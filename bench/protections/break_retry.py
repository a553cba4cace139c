"""Retries removed: every call gets one attempt."""
import amemgym.llm.client as client

client._StopRetrying = lambda attempts, timeout_retries: (lambda state: True)
