"""One session of the on-policy loop: opening message, agent reply, then simulator and agent in turn."""

from __future__ import annotations

from ....agents.base import MemoryAgent
from ....llm.types import ChatMessage
from ..data.model import Session, UserEnv
from .simulator import LeakTally, UserSimulator


def opening_message(session: Session) -> str:
    """The first user message of a session, with its simulated-time prefix."""
    return f"[Current Time: {session.session_time}]\n{session.query}"


async def run_session(
    agent: MemoryAgent,
    simulator: UserSimulator,
    user: UserEnv,
    session: Session,
    rounds: int,
    seed: int,
    *,
    tally: LeakTally | None = None,
) -> list[ChatMessage]:
    """Play one session for ``rounds`` user+assistant rounds and return its messages.

    ``tally`` receives the simulator's leak-guard counts for this session (see :class:`UserSimulator`).
    """
    opening = opening_message(session)
    messages: list[ChatMessage] = []
    user_text = opening
    for r in range(rounds):
        if r > 0:
            user_text = await simulator.next_turn(user, session.session_time.split(" ")[0], session.query,
                                                  messages, seed=seed * 100 + r,
                                                  exposed=session.exposed_states, tally=tally)
        reply = await agent.reply(user_text, time=session.session_time)
        messages += [{"role": "user", "content": user_text}, {"role": "assistant", "content": reply}]
    return messages


async def replay_session(agent: MemoryAgent, session: Session, messages: list[ChatMessage]) -> None:
    """Feed a recorded session into the agent (off-policy mode)."""
    for i in range(0, len(messages) - 1, 2):
        await agent.ingest(messages[i]["content"], messages[i + 1]["content"], time=session.session_time)
