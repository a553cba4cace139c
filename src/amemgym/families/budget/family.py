"""The budget family seen through the :class:`~amemgym.families.Family` protocol: the engine's commands
(``amemgym.engine.commands``) on its episodes (``units.py``), plus its own generation, validity and training."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config import load_config
from ...engine.commands import EngineFamily
from ...engine.flags import ModelFlags
from ...errors import ConfigError
from .. import ExportResult, GenerateRequest, RunRequest, ValidateRequest
from .commands import generate, validate
from .export import export_budget_run
from .legacy import adopt_legacy_runs
from .options import GenerateOptions, ValidateOptions
from .tiers import EMBEDDED_CTX_PER_SLOT, TIERS
from .units import UNITS

if TYPE_CHECKING:
    from rich.console import Console

    from ...config import AppConfig


class Budget(EngineFamily):
    """Entity documents streamed past a memory store with a write budget, corrections and contradictions."""

    generate_options = GenerateOptions
    validate_options = ValidateOptions

    def __init__(self) -> None:
        super().__init__(UNITS)

    def generate(self, request: GenerateRequest[GenerateOptions], console: Console) -> int:
        """One episode, or every domain x the official seeds with ``--official``."""
        o = request.options
        load_config(request.config, request.sets)  # refused in one line as statetrack refuses it, though unused
        if o.official and o.domain is not None:
            raise ConfigError(f"--domain {o.domain} does not apply with --official, which generates every built-in "
                              "domain; leave out one of them")
        if o.official and request.seed is not None:
            raise ConfigError(f"--seed {request.seed} does not apply with --official, which generates the official "
                              "seeds; leave out one of them")
        generate(request.out_dir, tier=o.tier, domain=o.domain, seed=request.seed or 0, salt=request.salt,
                 official=o.official, console=console, packs=o.packs)
        return 0

    def validate(self, request: ValidateRequest[ValidateOptions], console: Console) -> int:
        """Scripted strategies, attacks and invariants on the file and on seeds 0..N-1 of every domain."""
        return validate(request.env, seeds=request.options.seeds, json_out=request.json_out, console=console)

    def run(self, request: RunRequest[Any], console: Console) -> int:
        """The engine's run, after adopting a run directory an earlier version wrote (``legacy.py``): its pinned
        model, agent, run seed and tool protocol become the manifest's, so the engine's resume checks hold."""
        for root in adopt_legacy_runs(request.out_dir, allow_model_change=request.allow_model_change):
            console.print(f"adopted {root}: a run directory of an earlier amemgym (its model.json, batch.json and "
                          "tool_protocol.json now pinned in manifest.json)", highlight=False)
        return super().run(request, console)

    def configure(self, cfg: AppConfig, request: RunRequest[Any]) -> None:
        """``--judge-model`` turns the optional judge on (as ``budget.judge`` does), and the embedded model gets
        slots of :data:`~.tiers.EMBEDDED_CTX_PER_SLOT` tokens unless the config sets ``llm.embedded.ctx_per_slot``."""
        if request.judge_model is not None:
            cfg.budget.judge = True
        ModelFlags(user_model=request.user_model).refuse_unused_user_model(
            (), "a budget-family run", "its events come from the episode file")
        if "ctx_per_slot" not in cfg.llm.embedded.model_fields_set:
            cfg.llm.embedded.ctx_per_slot = max(cfg.llm.embedded.ctx_per_slot, EMBEDDED_CTX_PER_SLOT)

    def make_env(self, env: Path | None, **options: Any) -> Any:
        """:class:`~amemgym.families.budget.gym_env.BudgetEnv` on the episode file ``env`` (None: a generated
        episode from ``tier``, ``domain``, ``seed``, ``salt`` in ``options``)."""
        # Imported on use: importing amemgym.train registers every family's Gymnasium ids, which loads this module.
        from .gym_env import BudgetEnv

        return BudgetEnv(env, **options)

    def export(self, run_dir: Path, out_file: Path, *, fmt: str, unit: str | None,
               with_evaluation: bool) -> ExportResult:
        """Each event's conversation (``openai-chat``) or each tool call (``jsonl``) from the trace and results."""
        return export_budget_run(run_dir, out_file, fmt=fmt, unit=unit, with_evaluation=with_evaluation)

    def env_ids(self) -> dict[str, dict[str, Any]]:
        """``amemgym/Budget-<tier>-v0`` for every tier: a generated episode (``seed`` picks which)."""
        return {f"amemgym/Budget-{name}-v0": {"tier": name} for name in TIERS}


#: The registered instance.
FAMILY = Budget()
