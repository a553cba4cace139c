"""Training interfaces (docs/design.md §13): a Gymnasium-style environment, its checker, and trajectory export."""

from .checker import EnvCheckError, check_env
from .env import MemoryEnv
from .export import export_run

__all__ = ["EnvCheckError", "MemoryEnv", "check_env", "export_run"]
