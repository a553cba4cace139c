"""The user simulator and the session loop (user and agent as peers)."""

from .leaks import leaked_values
from .session import opening_message, replay_session, run_session
from .simulator import LeakTally, UserSimulator

__all__ = ["LeakTally", "UserSimulator", "leaked_values", "opening_message", "replay_session", "run_session"]
