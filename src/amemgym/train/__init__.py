"""Training interfaces (docs/design.md §13): a Gymnasium-style environment, its checker, and trajectory export."""

from .checker import EnvCheckError, check_env
from .env import MemoryEnv
from .export import export_run
from .registration import ENV_IDS, make_preset_env, register_envs

__all__ = ["ENV_IDS", "EnvCheckError", "MemoryEnv", "check_env", "export_run", "make_preset_env", "register_envs"]

# Importing this subpackage (not the top-level one) makes gymnasium.make("amemgym/Tiny-v0") work.
register_envs()
