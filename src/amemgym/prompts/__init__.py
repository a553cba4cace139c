"""Prompt templates as Markdown files, rendered strictly.

A template refers to variables as ``${name}``. Rendering fails when a variable is missing or when a
passed variable is not used, so a prompt can never silently lose a piece of context. A literal dollar
sign is written ``$$``.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache, lru_cache
from importlib import resources

from ..errors import PromptError

_PLACEHOLDER = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$")


@cache
def load_template(name: str) -> str:
    """The text of template ``name`` (file ``prompts/<name>.md``)."""
    try:
        return resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"no prompt template named {name!r}") from None


def variables(template: str) -> set[str]:
    """The variable names a template uses."""
    return set(_variables(template))


@lru_cache(maxsize=256)
def _variables(template: str) -> frozenset[str]:
    # Every prompt of a run renders one of a few templates; scanning each once is enough.
    return frozenset(m.group(1) for m in _PLACEHOLDER.finditer(template) if m.group(1))


def render_text(template: str, name: str = "<template>", **values: object) -> str:
    """Render a template string strictly.

    Raises:
        PromptError: on a missing or unused variable, or a stray ``$``.
    """
    needed = _variables(template)
    missing = sorted(needed - values.keys())
    unused = sorted(values.keys() - needed)
    if missing:
        raise PromptError(f"prompt {name}: missing variable(s) {', '.join(missing)}")
    if unused:
        raise PromptError(f"prompt {name}: unused variable(s) {', '.join(unused)}")

    def sub(m: re.Match[str]) -> str:
        token = m.group(0)
        if token == "$$":
            return "$"
        if token == "$":
            raise PromptError(f"prompt {name}: stray '$' (write '$$' for a literal dollar sign)")
        return str(values[m.group(1)])

    return _PLACEHOLDER.sub(sub, template).strip() + "\n"


def render(name: str, **values: object) -> str:
    """Render the packaged template ``name`` strictly."""
    return render_text(load_template(name), name, **values)


def template_hashes() -> dict[str, str]:
    """sha256 of every packaged template, for run manifests."""
    out: dict[str, str] = {}
    for entry in sorted(resources.files(__package__).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".md"):
            out[entry.name[:-3]] = hashlib.sha256(entry.read_bytes()).hexdigest()
    return out
