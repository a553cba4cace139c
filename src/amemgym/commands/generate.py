"""``amemgym generate``: write an environment with the LLM pipeline or the procedural generator."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ..cli_common import ConfigOpt, SetOpt, app_config, handled, out
from ..errors import AMemGymError
from ..storage import atomic_write_json


class Generator(StrEnum):
    """Which generator writes the environment."""

    llm = "llm"
    procedural = "procedural"


def register(app: typer.Typer) -> None:
    """Add the ``generate`` command."""

    @app.command()
    @handled
    def generate(
        out_dir: Annotated[Path, typer.Option("--out", "-o", help="Output folder for data.json and the report.")],
        config: ConfigOpt = "tiny",
        set_: SetOpt = None,
        generator: Annotated[Generator, typer.Option("--generator", "-g", help="llm or procedural.")]
        = Generator.procedural,
        users: Annotated[int | None, typer.Option("--users", help="Number of users (default: the config's).")] = None,
        seed: Annotated[int | None, typer.Option("--seed", help="Seed (default: the config's).")] = None,
        personas: Annotated[Path | None, typer.Option("--personas", help="Persona table (parquet or JSONL).")]
        = None,
        salt: Annotated[int, typer.Option("--salt", help="Procedural only: vary surface forms.")] = 0,
        domains: Annotated[str | None, typer.Option(
            "--domains", help="Procedural only: comma-separated life domains to draw from, in this order "
            "(built-in, --pack, or installed packs; default: the built-in pack).")] = None,
        pack: Annotated[list[Path] | None, typer.Option(
            "--pack", help="Procedural only: a pack folder or domain YAML file whose domains are added "
            "(repeatable).")] = None,
        allow_partial: Annotated[bool, typer.Option("--allow-partial", help="LLM only: exit 0 even if some users "
                                                    "failed (they are listed in the report).")] = False,
        strict_checks: Annotated[bool, typer.Option(
            "--strict-checks", help="LLM only: fail a user whose answer or utterance still fails its reflection "
            "or exposure check after the refinements (default: keep it and list it as unverified).")] = False,
    ) -> None:
        """Generate an environment: data.json plus a generation report."""
        from ..data.io import save_environment
        from ..generate.personas import load_personas
        from ..run.lock import run_lock

        cfg = app_config(config, set_)
        pool = load_personas(personas) if personas else None
        if generator is not Generator.procedural:
            from ..llm.preflight import preflight

            preflight(cfg.llm, ["generator"])  # a wrong model name stops here, not after the first user's calls
        with run_lock(out_dir, "amemgym generate"):
            if generator is Generator.procedural:
                from ..generate.procedural import generate_procedural, select_domains

                names = [n.strip() for n in domains.split(",") if n.strip()] if domains else None
                chosen = select_domains(names, pack or ())
                env, report = generate_procedural(cfg.env, seed=seed, num_users=users, salt=salt, personas=pool,
                                                  domains=chosen)
                save_environment(env, out_dir / "data.json")
                atomic_write_json(out_dir / "generation_report.json", report)
                out.print(f"wrote {out_dir / 'data.json'} ({len(env.users)} users, {env.num_periods} periods) and "
                          f"{out_dir / 'generation_report.json'}")
                return
            from ..generate.llm.base import STAGES, Limits
            from ..generate.llm.pipeline import generate_llm
            from ..generate.progress import GenerationProgress
            from ..llm.client import LLMClient

            llm = LLMClient.from_config(cfg.llm, serial=cfg.run.serial)
            progress = GenerationProgress(users or cfg.env.num_user_profiles, len(STAGES), llm.ledger)

            async def go() -> object:
                try:
                    return await generate_llm(cfg.env, llm, out_dir, num_users=users, seed=seed, personas=pool,
                                              allow_partial=True, concurrency=cfg.run.user_concurrency,
                                              limits=Limits(strict_checks=strict_checks), progress=progress)
                finally:
                    progress.close()
                    await llm.aclose()

            import asyncio

            result = asyncio.run(go())
            failed = getattr(result, "failed", [])
            out.print(f"report: {out_dir / 'generation_report.json'}")
            if getattr(result, "data_path", None):
                out.print(f"wrote {result.data_path}")  # type: ignore[attr-defined]
            report = getattr(result, "report", {})
            if report:
                rates = {k: report[k]["pass_rate"] for k in ("answer_reflection", "exposure_check")}
                out.print(f"check pass rates: answer reflection {rates['answer_reflection']}, exposure "
                          f"{rates['exposure_check']}; {report['unverified_items']} unverified item(s) kept (listed "
                          "in the report)", highlight=False)
            if failed:
                for f in failed:
                    out.print(f"failed user {f.user_id} ({f.name}) at step {f.step}: {f.reason}", highlight=False,
                              markup=False)
                if not allow_partial:
                    raise AMemGymError(f"{len(failed)} user(s) could not be generated (see the report); "
                                       "pass --allow-partial to accept a partial environment")
