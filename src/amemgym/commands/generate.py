"""``amemgym generate``: write an environment with the LLM pipeline or the procedural generator."""

from __future__ import annotations

import inspect
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ..cli_common import ConfigOpt, SetOpt, handled, out
from ..errors import ConfigError
from ..families import GenerateRequest, OptionValue, family_names, family_options, get_family


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
        users: Annotated[int | None, typer.Option("--users", min=1, max=1_000_000,
                                                           help="Number of users (default: the config's).")] = None,
        seed: Annotated[int | None, typer.Option("--seed", help="Seed (default: the config's).")] = None,
        personas: Annotated[Path | None, typer.Option("--personas", help="Persona table (parquet or JSONL).")]
        = None,
        salt: Annotated[int, typer.Option("--salt", help="Procedural only: vary surface forms.")] = 0,
        domains: Annotated[str | None, typer.Option(
            "--domains", help="Procedural only: comma-separated life domains to draw from, in this order "
            "(built-in, --pack, or installed packs; default: the built-in pack).")] = None,
        pack: Annotated[list[Path] | None, typer.Option(
            "--pack", help="Procedural statetrack or budget: a pack folder or domain YAML file whose domains are "
            "added (repeatable).")] = None,
        allow_partial: Annotated[bool, typer.Option("--allow-partial", help="LLM only: exit 0 even if some users "
                                                    "failed (they are listed in the report).")] = False,
        strict_checks: Annotated[bool, typer.Option(
            "--strict-checks", help="LLM only: fail a user whose answer or utterance still fails its reflection "
            "or exposure check after the refinements (default: keep it and list it as unverified).")] = False,
        family: Annotated[str, typer.Option("--family", help="Environment family: statetrack (default) or budget.")]
        = "statetrack",
        tier: Annotated[str, typer.Option("--tier", help="budget only: lite, standard, hard or multi.")] = "lite",
        domain: Annotated[str | None, typer.Option("--domain", help="budget only: domain template name "
                                                         "(built-in, --pack, or an installed budget pack).")] = None,
        official: Annotated[bool, typer.Option("--official", help="budget only: seeds 0-9 x every domain, "
                                               "under OUT/<domain>/seed<N>/.")] = False,
    ) -> None:
        """Generate an environment: data.json plus a generation report (or a budget-family episode)."""
        if family not in family_names():
            raise ConfigError(f"unknown --family {family!r} ({' or '.join(family_names())})")
        chosen = get_family(family)
        defaults = {name: p.default for name, p in inspect.signature(generate).parameters.items()}
        own = {name: OptionValue(flag, value, given != defaults[param]) for name, flag, param, value, given in (
            ("generator", "--generator", "generator", generator.value, generator),
            ("users", "--users", "users", users, users),
            ("personas", "--personas", "personas", personas, personas),
            ("domains", "--domains", "domains", domains, domains),
            ("packs", "--pack", "pack", tuple(pack or ()), pack),
            ("allow_partial", "--allow-partial", "allow_partial", allow_partial, allow_partial),
            ("strict_checks", "--strict-checks", "strict_checks", strict_checks, strict_checks),
            ("tier", "--tier", "tier", tier, tier),
            ("domain", "--domain", "domain", domain, domain),
            ("official", "--official", "official", official, official))}
        request = GenerateRequest(out_dir=out_dir, options=family_options(chosen, "generate", own), config=config,
                                  sets=set_, seed=seed, salt=salt)
        code = chosen.generate(request, out)
        if code:
            raise typer.Exit(code)
