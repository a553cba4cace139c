"""Cache keys and manifests forget the served model: only the configured name (here none) is used."""
from amemgym.llm.client import LLMClient


async def configured_name_only(self, role):
    return self.endpoint(role).model or ""


LLMClient.model_identity = configured_name_only
