"""The user simulator and the session loop (user and agent as peers)."""

from .session import opening_message, replay_session, run_session
from .simulator import UserSimulator

__all__ = ["UserSimulator", "opening_message", "replay_session", "run_session"]
