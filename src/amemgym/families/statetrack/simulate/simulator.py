"""The simulated user (docs/design.md §4): role-plays the profile and keeps the conversation going.

It sees the profile, the date, the session's opening message and the recent exchange, with roles
flipped (the assistant's turns are its input). It is never told the state values: what the user
reveals about the tracked variables comes only from the validated opening message.

With ``resimulate_attempts`` > 0 (``run.resimulate_leaks``), a turn that names a schema value the opening
did not expose (:func:`~.leaks.leaked_values`) is drawn again with another seed, at most
that many times, before the agent sees it. A turn that still leaks after the last attempt is replaced by
the neutral follow-up, so the agent never reads a leaked value; both events are counted in a
:class:`LeakTally`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ....llm.client import LLMClient
from ....llm.types import ChatMessage
from ....prompts import render
from ....seeding import derive_seed
from ....textsim import jaccard, plain, shares_run, words
from ..data.model import UserEnv
from .leaks import leaked_values

#: Sent instead of an empty turn, or of one that kept leaking: it cannot reveal anything.
NEUTRAL_FOLLOW_UP = "Could you say a bit more about that?"


@dataclass
class LeakTally:
    """Counts of the leak guard over some turns (one session, or a whole run).

    Attributes:
        resimulated: extra simulator calls made because a draft turn leaked.
        unresolved: turns that still leaked after the last attempt (sent as the neutral follow-up).
        echoes: drafts redrawn because they mostly repeated the assistant's last reply.
    """

    resimulated: int = 0
    unresolved: int = 0
    echoes: int = 0

    def add(self, other: LeakTally) -> None:
        """Add another tally's counts to this one."""
        self.resimulated += other.resimulated
        self.unresolved += other.unresolved
        self.echoes += other.echoes

    def record_fields(self) -> dict[str, int]:
        """The non-zero counts, as extra keys for a session record (nothing when the guard never fired)."""
        out: dict[str, int] = {}
        if self.resimulated:
            out["resimulated"] = self.resimulated
        if self.unresolved:
            out["unresolved_leaks"] = self.unresolved
        if self.echoes:
            out["echo_redraws"] = self.echoes
        return out


#: A user turn that repeats this many consecutive words of the assistant's reply is quoting it back, not talking.
ECHO_RUN = 12


def echoes_assistant(draft: str, assistant: str) -> bool:
    """Whether a draft user turn mostly repeats the assistant's last reply (small models do this, at times
    framed as "here's a message for you: ..." around the copied reply)."""
    a, b = words(draft), words(assistant)
    if not a or not b:
        return False
    return (jaccard(a, b) >= 0.6 or draft.strip()[:60] == assistant.strip()[:60]
            or shares_run(draft, assistant, ECHO_RUN))


class UserSimulator:
    """Writes the user's next turn for one session.

    Args:
        llm: the client; calls are made with role ``simulator``.
        history_messages: how many recent messages it sees (the opening message is always in its prompt).
        max_tokens: budget of one user turn.
        resimulate_attempts: redraws of a turn that leaks a schema value; 0 turns the guard off.

    Attributes:
        tally: the guard's counts over every turn this simulator wrote.
    """

    def __init__(self, llm: LLMClient, *, history_messages: int = 6, max_tokens: int = 160,
                 resimulate_attempts: int = 0) -> None:
        if resimulate_attempts < 0:
            raise ValueError("resimulate_attempts must be >= 0")
        self.llm = llm
        self.history_messages = history_messages
        self.max_tokens = max_tokens
        self.resimulate_attempts = resimulate_attempts
        self.tally = LeakTally()

    def messages(self, user: UserEnv, date: str, opening: str, exchange: list[ChatMessage]) -> list[ChatMessage]:
        """The simulator's request: system prompt, then the recent exchange with roles flipped."""
        system = render(
            "simulator_system",
            profile=user.user_profile.formatted_str,
            date=date,
            opening=opening,
            topics=", ".join(plain(v) for v in user.state_schema),
        )
        recent = exchange[-self.history_messages :] if self.history_messages else exchange[-1:]
        # The first message of the window must be the assistant's (the simulator's "user") turn.
        while recent and recent[0]["role"] == "user":
            recent = recent[1:]
        flipped = [{"role": "user" if m["role"] == "assistant" else "assistant", "content": m["content"]}
                   for m in recent]
        if flipped:
            # Small models drift into the assistant's voice; the reminder sits where they look last.
            name = user.user_profile.name.split()[0] if user.user_profile.name else "the user"
            flipped[-1] = {"role": "user", "content": render("simulator_reminder", reply=flipped[-1]["content"],
                                                             person=name)}
        return [{"role": "system", "content": system}, *flipped]

    async def _draft(self, messages: list[ChatMessage], seed: int) -> str:
        res = await self.llm.chat("simulator", messages, max_tokens=self.max_tokens, seed=seed,
                                  tag="simulator.turn", keep_empty=True)
        return res.text.strip()

    async def next_turn(
        self,
        user: UserEnv,
        date: str,
        opening: str,
        exchange: list[ChatMessage],
        seed: int,
        *,
        exposed: Mapping[str, str] | None = None,
        tally: LeakTally | None = None,
    ) -> str:
        """The user's next message; an empty reply is replaced by a neutral follow-up.

        Args:
            user: the simulated user.
            date: the session's date.
            opening: the session's opening utterance (without the time prefix).
            exchange: the session's messages so far.
            seed: seed of the first draft; redraws use seeds derived from it.
            exposed: what the opening exposed (``Session.exposed_states``); the leak guard runs only when
                this is given and ``resimulate_attempts`` > 0.
            tally: also receives this turn's guard counts (the simulator's own ``tally`` always does).
        """
        messages = self.messages(user, date, opening, exchange)
        text = await self._draft(messages, seed)
        turn = LeakTally()
        if exchange and exchange[-1]["role"] == "assistant" and echoes_assistant(text, exchange[-1]["content"]):
            # One redraw; a second echo is sent as it is (the audit can flag it), never silently rewritten.
            turn.echoes += 1
            text = await self._draft(messages, derive_seed(seed, "echo"))
        if exposed is None or not self.resimulate_attempts:
            self._count(turn, tally)
            return text or NEUTRAL_FOLLOW_UP
        attempt = 0
        while leaked_values(text, user.state_schema, exposed):
            if attempt == self.resimulate_attempts:
                turn.unresolved += 1
                text = NEUTRAL_FOLLOW_UP
                break
            attempt += 1
            turn.resimulated += 1
            # A derived seed gives a fresh sample that is still reproducible (and cached) on a rerun.
            text = await self._draft(messages, derive_seed(seed, "resimulate", attempt))
        self._count(turn, tally)
        return text or NEUTRAL_FOLLOW_UP

    def _count(self, turn: LeakTally, tally: LeakTally | None) -> None:
        self.tally.add(turn)
        if tally is not None:
            tally.add(turn)
