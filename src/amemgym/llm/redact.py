"""The LLM seam's name for :mod:`amemgym.redact` (redaction is used by every layer, so it lives at the top)."""

from ..redact import MASK, redact, redact_content, redact_obj, register_secret

__all__ = ["MASK", "redact", "redact_content", "redact_obj", "register_secret"]
