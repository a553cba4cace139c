"""The runner: all users concurrently, each episode resumable, results and metrics at the end."""

from __future__ import annotations

import asyncio
import contextlib
import json
import platform
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ... import __version__
from ...agents.registry import AgentSpec
from ...config import AppConfig, RunSettings
from ...engine.ranking_flags import source_sessions_sha256
from ...engine.rundir import UnitRunDir, prepare_out_dir
from ...engine.usage import FLUSH_SECONDS, UsageBook
from ...errors import RunError
from ...llm.client import LLMClient
from ...llm.health import endpoint_problems
from ...llm.usage import UsageLedger
from ...prompts import template_hashes
from ...records import RUN_FORMAT_VERSION, Manifest, UsageFile, as_dict, read_record, versioned
from ...storage import remove_stale_temps
from .data.io import environment_sha256
from .data.model import Environment, UserEnv
from .episode import RUN_ROLES, Episode, EpisodeEvents, PeriodHook
from .layout import RunDir, adopt_legacy_folders, folder_clashes, user_folder
from .progress import RunProgress
from .results import compute_metrics, protocol_settings, write_trace

#: How often a running invocation writes its usage so far (a SIGKILL loses at most this much of it).
USAGE_FLUSH_SECONDS = FLUSH_SECONDS


def environment_hash(env: Environment) -> str:
    """sha256 of the environment's canonical serialisation (independent of file formatting)."""
    return environment_sha256(env)


def _model_name(desc: dict[str, Any]) -> str:
    return str(desc.get("served") or desc.get("model") or desc.get("backend") or "?")


def model_changes(before: dict[str, Any], now: dict[str, Any]) -> list[dict[str, str]]:
    """The run roles whose model differs between an earlier manifest's ``models`` and the current ones.

    Compared on the served model; a manifest from before served models were recorded is compared on what
    it holds (backend and configured name).
    """
    changes = []
    for role in RUN_ROLES:
        old, new = before.get(role), now.get(role)
        if not isinstance(old, dict) or new is None:
            continue
        if "served" in old:
            same = old["served"] == new.get("served")
        else:
            same = (old.get("backend"), old.get("model")) == (new.get("backend"), new.get("model"))
        if not same:
            changes.append({"role": role, "from": _model_name(old), "to": _model_name(new)})
    return changes


def protocol_of(env: Environment, spec: AgentSpec, cfg: AppConfig, off_policy: Path | None) -> dict[str, Any]:
    """What must match for a resumed run to be the same run."""
    return {
        "environment_sha256": environment_hash(env),
        "agent": {"name": spec.name, "options": spec.options},
        "rounds": {"init": cfg.env.num_rounds_init, "update": cfg.env.num_rounds_update},
        "run": cfg.run.model_dump(exclude={"serial", "user_concurrency", "workers"}),
        "off_policy": str(off_policy) if off_policy else None,
        # What was replayed, by content: runs replaying different conversations are never grouped together.
        **({"off_policy_sessions_sha256": source_sessions_sha256(off_policy)} if off_policy else {}),
    }


def existing_manifest(rundir: Path, protocol: dict[str, Any]) -> dict[str, Any] | None:
    """The manifest already in ``rundir`` (None if there is none), checked against ``protocol``.

    Raises:
        RunError: the directory holds a run of another environment, agent or protocol (or an unreadable one).
    """
    path = RunDir(rundir).manifest
    if not path.exists():
        return None
    old = as_dict(read_record(path, Manifest))
    for key, value in protocol.items():
        before = old.get("protocol", {}).get(key)
        if key == "run" and isinstance(before, dict):
            # A setting added in a later version, left at its default, does not change the protocol.
            defaults = RunSettings().model_dump()
            before = {**{k: v for k, v in value.items() if k not in before and v == defaults.get(k)}, **before}
        if before != value:
            raise RunError(
                f"{rundir}: holds a run with a different {key.replace('_', ' ')}; "
                f"refusing to mix results ({protocol_difference(key, before, value)}; use a new --out directory)"
            )
    return dict(old)


def protocol_difference(key: str, before: Any, now: Any, most: int = 3) -> str:
    """Which settings of one protocol entry differ, as ``run.seed: 0 in the directory, 99 now``."""

    def show(v: Any) -> str:
        text = repr(v) if not isinstance(v, str) or key != "environment_sha256" else v[:12]
        return text if len(text) <= 60 else text[:57] + "..."

    if isinstance(before, dict) and isinstance(now, dict):
        keys = [k for k in dict.fromkeys([*before, *now]) if before.get(k) != now.get(k)]
        parts = [f"{key}.{k}: {show(before.get(k))} in the directory, {show(now.get(k))} now" for k in keys[:most]]
        return "; ".join(parts) + (f"; and {len(keys) - most} more" if len(keys) > most else "")
    return f"{key}: {show(before)} in the directory, {show(now)} now"


@dataclass
class RunOutcome:
    """What a finished invocation produced."""

    metrics: dict[str, Any]
    failures: list[dict[str, Any]]
    usage: UsageLedger
    seconds: float


class UserExecutor(Protocol):
    """Runs the users' episodes somewhere other than this event loop (e.g. Ray tasks).

    It must leave the same per-user files in the run directory as the local executor, add what its
    episodes spent to ``runner.llm.ledger`` and append their failures to ``events.failures``.
    """

    async def run_users(self, runner: Runner, users: list[UserEnv], events: EpisodeEvents) -> None:
        """Run (or resume) every episode in ``users``."""
        ...


class Runner:
    """Runs one agent on one environment into a run directory; re-running resumes."""

    def __init__(
        self,
        env: Environment,
        spec: AgentSpec,
        rundir: Path,
        cfg: AppConfig,
        llm: LLMClient,
        *,
        env_path: Path | None = None,
        off_policy: Path | None = None,
        progress: RunProgress | None = None,
        after_period: PeriodHook | None = None,
        allow_model_change: bool = False,
        protocol: dict[str, Any] | None = None,
        environment_cut: dict[str, Any] | None = None,
    ) -> None:
        self.env = env
        self.spec = spec
        self.rundir = RunDir(rundir)
        self.cfg = cfg
        self.llm = llm
        self.env_path = env_path
        self.off_policy = RunDir(off_policy) if off_policy else None
        self.progress = progress
        self.after_period = after_period
        self.allow_model_change = allow_model_change
        self.environment_sha256: str | None = None
        # ``protocol_of`` for these inputs when the caller already computed it (it hashes the whole environment).
        self._protocol: dict[str, Any] | None = protocol
        # A ``--limit`` run's cut of its file (``cut.environment_cut``), recorded in a new manifest.
        self.environment_cut = environment_cut

    def _check_models(self, old: dict[str, Any], models: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Refuse to resume with another model unless allowed; an allowed change is logged in the manifest."""
        changes = model_changes(old.get("models") or {}, models)
        if not changes:
            return old
        if not self.allow_model_change:
            c = changes[0]
            raise RunError(
                f"{self.rundir.root}: was run with {c['role']} model {c['from']!r}, now {c['to']!r}; refusing to "
                "mix models in one run (use a new --out directory, or pass --allow-model-change to continue: "
                "each session then records its model)"
            )
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        updated = {**old, "models": models,
                   "model_changes": [*old.get("model_changes", []), *({**c, "at": when} for c in changes)]}
        self.rundir.writer().put_now("manifest.json", updated)
        return updated

    def _user_folders(self) -> dict[str, str]:
        """Each user's folder under ``users/``, for readers of the run directory."""
        return {u.id: user_folder(u.id) for u in self.env.users}

    def _check_protocol(self) -> dict[str, Any] | None:
        """The manifest of an earlier invocation, once its protocol is checked; None for a new run."""
        protocol = self._protocol or protocol_of(self.env, self.spec, self.cfg,
                                                 self.off_policy.root if self.off_policy else None)
        self._protocol = protocol
        self.environment_sha256 = protocol["environment_sha256"]
        old = existing_manifest(self.rundir.root, protocol)
        if old is not None:
            if "user_folders" not in old:
                # Written before folder names were one-to-one: move slug-named folders to their new names.
                adopt_legacy_folders(self.rundir.root, [u.id for u in self.env.users])
                old = {**old, "user_folders": self._user_folders()}
                self.rundir.writer().put_now("manifest.json", old)
            return old
        return None

    def _write_manifest(self, old: dict[str, Any] | None, models: dict[str, dict[str, Any]]) -> dict[str, Any]:
        if old is not None:
            return self._check_models(old, models)
        # The one _check_protocol computed: hashing the environment again costs as much as a few dozen calls.
        protocol = self._protocol
        if protocol is None:
            protocol = protocol_of(self.env, self.spec, self.cfg, self.off_policy.root if self.off_policy else None)
        manifest = {
            "format_version": RUN_FORMAT_VERSION,
            "amemgym_version": __version__,
            "python": platform.python_version(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "environment_file": str(self.env_path) if self.env_path else None,
            "users": [u.id for u in self.env.users],
            "user_folders": self._user_folders(),
            "periods": self.env.num_periods,
            "protocol": protocol,
            "config": json.loads(self.cfg.model_dump_json()),
            "models": models,
            "prompt_sha256": template_hashes(),
        }
        if self.environment_cut is not None:
            manifest["environment_cut"] = self.environment_cut
        self.rundir.writer().put_now("manifest.json", manifest)
        return manifest

    async def run(self, user_ids: list[str] | None = None, *, executor: UserExecutor | None = None) -> RunOutcome:
        """Run or resume the selected users (all by default) and write metrics.

        Args:
            user_ids: the users to run; all by default.
            executor: where the episodes run; None runs them concurrently on this event loop.
        """
        clashes = folder_clashes([u.id for u in self.env.users])
        if clashes:
            a, b = clashes[0]
            raise RunError(f"user ids {a!r} and {b!r} would share the folder users/{user_folder(a)} (names that "
                           "differ only in letter case are one folder on macOS and Windows); rename one of them")
        if self.off_policy is not None and not self.off_policy.manifest.exists():
            raise RunError(f"{self.off_policy.root}: not a run directory (no manifest.json) for --off-policy")
        prepare_out_dir(self.rundir.root)
        remove_stale_temps(self.rundir.root)  # left by a killed invocation; the caller holds the lock
        # Every call of this run (each trial has its own seed) is a fresh sample, cached under that seed.
        self.llm.sample_seed = self.cfg.run.seed
        old = self._check_protocol()  # before any call: another run's directory is refused even offline
        models = await self.llm.resolve_models(RUN_ROLES)
        # Written (and fsynced) before the first call, so every later write into the directory follows it.
        self._write_manifest(old, models)
        start = time.perf_counter()
        users = [u for u in self.env.users if user_ids is None or u.id in user_ids]
        events = EpisodeEvents()
        if self.progress:
            self.progress.attach(events, users, self.llm.ledger)
        limit = asyncio.Semaphore(1 if self.cfg.run.serial else self.cfg.run.user_concurrency)

        async def one(user: Any) -> None:
            async with limit:
                await Episode(user, self.spec, self.llm, self.cfg, self.rundir, off_policy=self.off_policy,
                              events=events, after_period=self.after_period).run()
            # Assembled (and fsynced) in a thread as soon as this user is done, while the others still run.
            await write_trace(user, self.rundir)

        self._fold_pending_usage()
        invocation = uuid.uuid4().hex
        journal = self.llm.usage_journal = UsageBook(self.rundir.root).journal(invocation)
        flusher = asyncio.create_task(self._flush_usage(invocation))
        try:
            if executor is None:
                await asyncio.gather(*(one(u) for u in users))
            else:
                await executor.run_users(self, users, events)
        finally:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
            journal.close()
            self._save_usage(invocation)
        if executor is not None:
            # Worker processes write their users' traces as each finishes; the rest (Ray, users a worker never
            # finished or never ran) are assembled here.
            traced: set[str] = getattr(executor, "traced", set())
            for user in users:
                if user.id not in traced:
                    await write_trace(user, self.rundir)
        metrics = compute_metrics(self.env, self.rundir, self.cfg.run.answer_rule)
        elapsed = time.perf_counter() - start
        usage = as_dict(read_record(self.rundir.usage, UsageFile))
        usage.pop("format_version", None)
        metrics["usage"] = usage
        metrics["endpoint_problems"] = endpoint_problems(usage.get("last_invocation") or {})
        metrics["agent"] = self.spec.name
        metrics["protocol_settings"] = protocol_settings(self.cfg.run)
        metrics["wall_seconds_last_invocation"] = round(elapsed, 3)
        # Redacted again there: a failure text from a plug-in or an executor may not have passed the client.
        metrics["failures"] = UnitRunDir(self.rundir.root).write_failures(events.failures)
        self.rundir.writer().put_now("metrics.json", versioned(metrics))
        return RunOutcome(metrics, events.failures, self.llm.ledger, elapsed)

    def _save_usage(self, invocation: str, ledger: UsageLedger | None = None) -> None:
        UsageBook(self.rundir.root).save(invocation, ledger if ledger is not None else self.llm.ledger)

    def _fold_pending_usage(self) -> None:
        """Add the usage a killed invocation flushed before it died."""
        UsageBook(self.rundir.root).fold_pending()

    async def _flush_usage(self, invocation: str) -> None:
        await UsageBook(self.rundir.root).flush_forever(invocation, self.llm.ledger, None, USAGE_FLUSH_SECONDS)
