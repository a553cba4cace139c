"""Every HTTP error status treated as transient (so a 400 is retried)."""
import amemgym.llm.openai_backend as ob

ob.status_error = lambda status, body, headers: ob.TransientError(f"http_{status}", f"HTTP {status}")
