"""The environment data model: typed records, load/save, consistency checks."""

from .io import dump_environment, load_environment, parse_environment, save_environment
from .model import (
    QA,
    AnswerChoice,
    Environment,
    Message,
    Period,
    Protocol,
    Session,
    StateUpdate,
    UserEnv,
    UserProfile,
)

__all__ = [
    "QA",
    "AnswerChoice",
    "Environment",
    "Message",
    "Period",
    "Protocol",
    "Session",
    "StateUpdate",
    "UserEnv",
    "UserProfile",
    "dump_environment",
    "load_environment",
    "parse_environment",
    "save_environment",
]
