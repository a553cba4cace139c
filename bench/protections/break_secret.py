"""describe() (written into manifest.json) leaks the API key."""
import os

from amemgym.llm.client import LLMClient

_orig = LLMClient.describe


def leaky(self):
    out = _orig(self)
    for role, desc in out.items():
        desc["api_key"] = os.environ.get(self.endpoint(role).api_key_env)
    return out


LLMClient.describe = leaky
