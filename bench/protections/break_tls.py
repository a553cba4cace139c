"""TLS failures classed as dropped connections (transient, so an untrusted certificate is retried)."""
import amemgym.llm.openai_backend as ob

ob._tls_failure = lambda exc: None
