"""Redaction removed: no key is registered and no credential shape is recognised."""
import amemgym.llm.redact as redact

redact.MIN_SECRET_CHARS = 10**9
redact._PATTERNS = ()
