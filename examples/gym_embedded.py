"""Drive ``MemoryEnv`` with the embedded local model as the policy, on the bundled tiny environment.

The policy is a plain chat assistant whose memory is its own transcript: conversation turns are added
to its history, evaluation prompts are answered from the history without being added to it. It calls
the environment's own client (role ``agent``) through ``env.run_async``, since that client lives on the
environment's event loop. On a laptop CPU one user takes minutes.

    python examples/gym_embedded.py [--user 0] [--max-steps N] [--no-upper-bound]
"""

from __future__ import annotations

import argparse
import time

from amemgym.llm.types import ChatMessage
from amemgym.prompts import render
from amemgym.train import MemoryEnv


class TranscriptPolicy:
    """The assistant: the system prompt plus every conversation turn so far."""

    def __init__(self, env: MemoryEnv, reply_tokens: int = 256, answer_tokens: int = 96) -> None:
        self.env = env
        self.history: list[ChatMessage] = [{"role": "system", "content": render("agent_system")}]
        self.reply_tokens = reply_tokens
        self.answer_tokens = answer_tokens

    def act(self, observation: str, info: dict) -> str:
        """The reply to one observation."""
        chatting = info["kind"] == "chat"
        messages = [*self.history, {"role": "user", "content": observation}]
        result = self.env.run_async(self.env.llm.chat(
            "agent", messages, max_tokens=self.reply_tokens if chatting else self.answer_tokens, tag="example.policy"))
        if chatting:  # evaluation prompts are answered from memory but never become part of it
            self.history += [{"role": "user", "content": observation}, {"role": "assistant", "content": result.text}]
        return result.text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--user", type=int, default=0, help="index of the user to play")
    parser.add_argument("--max-steps", type=int, default=None, help="step budget (truncates the episode)")
    parser.add_argument("--no-upper-bound", action="store_true", help="skip the upper-bound calls")
    args = parser.parse_args()

    env = MemoryEnv(upper_bound=not args.no_upper_bound, max_steps=args.max_steps)
    start = time.perf_counter()
    try:
        observation, info = env.reset(seed=0, options={"user": args.user})
        policy = TranscriptPolicy(env)
        print(f"user {info['user']}: {info['periods']} periods, {info['questions']} questions per period")
        total = 0.0
        while True:
            action = policy.act(observation, info)
            if info["kind"] == "chat":
                where = f"p{info['period']} s{info['session']} r{info['round']}"
                print(f"[{where}] user: {observation[:70]!r}\n{' ' * len(where)}   assistant: {action[:70]!r}")
            observation, reward, terminated, truncated, info = env.step(action)
            total += reward
            for outcome in info["outcomes"]:
                if outcome["kind"] == "evaluation":
                    print(f"  p{outcome['period']} q{outcome['question']}: chose {outcome['choice']} "
                          f"(gold {outcome['gold']}, {outcome['status']}) reward {outcome['reward']}")
            if "period_result" in info:
                r = info["period_result"]
                ms = "n/a" if r["memory_score"] is None else f"{r['memory_score']:.3f}"
                print(f"period {r['period']}: overall {r['overall']:.3f} random {r['random']:.3f} "
                      f"upper bound {r['upper_bound']} memory score {ms}")
            if terminated or truncated:
                break
        print(f"{'terminated' if terminated else 'truncated'} after {info['step']} steps, "
              f"total reward {total}, {time.perf_counter() - start:.0f} s")
        if terminated:
            print("memory score over the episode:", info["metrics"]["overall"]["memory_score"])
        for role, usage in env.llm.ledger.to_dict().items():
            print(f"  {role}: {usage['calls']} calls, {usage['prompt_tokens']} prompt + "
                  f"{usage['completion_tokens']} completion tokens")
    finally:
        env.close()


if __name__ == "__main__":
    main()
