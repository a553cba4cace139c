"""Configuration models: the one place where each default is declared.

A config is built from a named preset (docs/design.md §9), then a YAML/JSON file, then ``--set a.b=c`` flags,
each overriding the previous. API keys are never part of a config: an endpoint names the environment
variable (or a key file) that holds its key.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ConfigError
from .redact import VENDOR_PREFIXES
from .urls import bare_path, base_url_problem, public_url

Role = Literal["generator", "simulator", "agent", "memory", "judge", "embedder"]
ROLES: tuple[Role, ...] = ("generator", "simulator", "agent", "memory", "judge", "embedder")

#: Sampling temperature per role when an endpoint sets none (low 0.2 for every step but
#: questions and state updates, which pass HIGH_TEMPERATURE explicitly; the agent and judge decode greedily).
ROLE_TEMPERATURE: dict[str, float] = {"generator": 0.2, "simulator": 0.2, "agent": 0.0, "memory": 0.0, "judge": 0.0}
HIGH_TEMPERATURE = 1.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True)


#: The most user+assistant rounds one session may have, in a config or in an environment file's ``_amemgym``. The
#: original protocol's largest preset (v1.extra) has 5 per update session; each round is at least two model
#: calls and grows the conversation every later call carries, so a session of more than 100 is a typo, not a
#: protocol (docs/design.md §2).
MAX_ROUNDS_PER_SESSION = 100


class EnvConfig(_Strict):
    """Sizes and dynamics of an environment and its conversation protocol (docs/design.md §2, §9).

    Field names follow the original release's env configs so their files load as they are.
    """

    name: str = "custom"
    start_date: str = "2020-10-01"
    num_user_profiles: int = Field(20, ge=1, le=1_000_000, description="Users in the environment.")
    num_questions: int = Field(10, ge=1, description="Questions per user (Q).")
    num_periods: int = Field(10, ge=1, description="Periods after the initial one (N_p).")
    num_months_per_period: int = Field(3, ge=1)
    num_states_per_question: int = Field(2, ge=1, description="Required variables per question (N_s).")
    num_choices_per_state: int = Field(3, ge=2, description="Values per state variable.")
    num_changes_per_period: int = Field(4, ge=1)
    max_changes_per_state: int = Field(3, ge=1)
    min_state_variants: int = Field(4, ge=2, description="Minimum answer choices per question.")
    num_rounds_init: int = Field(1, ge=1, le=MAX_ROUNDS_PER_SESSION,
                                 description="User+assistant rounds per session in period 0.")
    num_rounds_update: int = Field(2, ge=1, le=MAX_ROUNDS_PER_SESSION,
                                   description="Rounds per session in later periods.")
    seed: int = 42

    @field_validator("start_date")
    @classmethod
    def _a_calendar_date(cls, v: str) -> str:
        try:
            datetime.date.fromisoformat(v)
        except ValueError:
            raise ValueError(f"expected a calendar date as YYYY-MM-DD, got {v!r}") from None
        if len(v) != 10:
            raise ValueError(f"expected a calendar date as YYYY-MM-DD, got {v!r}")
        return v


PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(name="tiny", num_user_profiles=2, num_questions=3, num_periods=2, num_changes_per_period=2),
    "small": dict(name="small", num_user_profiles=5, num_questions=5, num_periods=4, num_changes_per_period=3),
    "v1.base": dict(name="v1.base"),
    "v1.extra": dict(
        name="v1.extra", num_periods=20, num_states_per_question=3, num_rounds_init=2, num_rounds_update=5
    ),
    "large": dict(
        name="large", num_user_profiles=100, num_questions=20, num_periods=40, num_choices_per_state=4,
        min_state_variants=5, max_changes_per_state=10,
    ),
}


#: Completion budget of every agent reply, answer and simulator turn in the original protocol.
PROTOCOL_MAX_TOKENS = 8192

#: Run settings that come with a preset. The v1 presets follow the original protocol: 8192-token budgets,
#: the whole conversation in context (the original never trimmed it), no system prompt for the native
#: agent, and the simulator seeing the last exchange only. ``tiny`` is sized for the embedded CPU model
#: (short replies, a small window): its numbers are not comparable with published ones, and the run
#: summary says so.
PROTOCOL_RUN: dict[str, Any] = dict(
    reply_max_tokens=PROTOCOL_MAX_TOKENS, simulator_max_tokens=PROTOCOL_MAX_TOKENS,
    eval_max_tokens=PROTOCOL_MAX_TOKENS, context_window=1_048_576, simulator_history_turns=2,
    agent_system_prompt=False,
)
PRESET_RUN: dict[str, dict[str, Any]] = {
    "tiny": dict(reply_max_tokens=96, simulator_max_tokens=48, eval_max_tokens=40, context_window=6144),
    "v1.base": dict(PROTOCOL_RUN),
    "v1.extra": dict(PROTOCOL_RUN),
}


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,255}")


def looks_like_key(value: str) -> bool:
    """A long token mixing letters and digits, with no underscore, with both cases, or opening with a vendor's
    key prefix (``sk_live_``, ``tgp_v1_``): the look of a generated key, and not of a variable name like
    ``OPENAI_API_KEY_2`` or a file name like ``openai_key``."""
    return (len(value) >= 16 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
            and ("_" not in value or (any(c.islower() for c in value) and any(c.isupper() for c in value))
                 or value.startswith(VENDOR_PREFIXES)))


def shown_typed(value: str, *, quoted: bool = True) -> str:
    """How an error message quotes a value typed on the command line: as it is (in quotes unless not
    ``quoted``), unless it looks like a key pasted in the wrong place (a leading ``=`` of ``-a=VALUE``
    included), which is never printed back."""
    if looks_like_key(value.lstrip("=")) and not Path(value).exists():
        return "(not shown: it looks like a key)"
    return repr(value) if quoted else value


class EndpointConfig(_Strict):
    """Where one role's calls go. ``base_url`` unset means the embedded local model."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the key.")
    api_key_file: str | None = Field(None, description="File holding the key (read at call time).")
    temperature: float | None = None
    max_tokens: int = Field(1024, ge=1)
    max_concurrency: int = Field(
        128, ge=1, description="Ceiling of calls in flight on this endpoint; the limit adapts below it (429, 5xx, "
        "slow replies halve it, successes raise it again)."
    )
    timeout_s: float | None = Field(None, gt=0, description="Seconds for a whole attempt (default: 600 for a "
                                    "local or private-network endpoint, 180 for a hosted one).")
    connect_timeout_s: float | None = Field(None, gt=0, description="Seconds to connect (default 5 local, 10 hosted).")
    read_timeout_s: float | None = Field(None, gt=0, description="Seconds without a byte of the reply before the "
                                         "attempt is abandoned (default 300 local, 90 hosted).")
    max_retries: int = Field(5, ge=0)
    max_timeout_retries: int = Field(2, ge=0, description="Retries of a timed-out attempt (a hung server rarely "
                                     "recovers within seconds); never more than max_retries.")
    max_reply_bytes: int = Field(4 << 20, ge=1024, description="Largest reply body accepted; a larger one is a "
                                 "failed call, neither stored nor cached.")
    price_per_mtok_in: float = Field(0.0, ge=0, description="USD per million prompt tokens, for cost reports.")
    price_per_mtok_out: float = Field(0.0, ge=0)

    # A key pasted where its variable's or file's name goes would be recorded in the run's manifest like any
    # setting, so such values are refused (without echoing them) before anything is written.
    @field_validator("api_key_env")
    @classmethod
    def _a_variable_name(cls, v: str) -> str:
        if not _ENV_NAME.fullmatch(v):
            raise ValueError("must be the name of an environment variable (letters, digits and underscores); "
                             "the key itself goes in that variable, never in the config")
        if v not in os.environ and looks_like_key(v):
            raise ValueError("looks like a key rather than the name of an environment variable; put the key in a "
                             "variable and give its name here")
        return v

    @field_validator("api_key_file")
    @classmethod
    def _a_file_name(cls, v: str | None) -> str | None:
        if v and not any(c in v for c in "/\\.~") and looks_like_key(v) and not Path(v).exists():
            raise ValueError("names no file here and looks like a key itself; put the key in a file and give "
                             "the file's path here")
        return v

    @field_validator("base_url")
    @classmethod
    def _no_secrets_in_url(cls, v: str | None) -> str | None:
        problem = base_url_problem(v) if v else None
        if problem is not None:
            raise ValueError(problem)
        return v


class EmbeddedConfig(_Strict):
    """The in-process llama.cpp server used when no endpoint is configured."""

    model: str = "qwen2.5-coder-0.5b-instruct"
    ctx_per_slot: int = Field(8192, ge=512)
    parallel: int = Field(2, ge=1, description="Parallel decoding slots.")
    threads: int | None = None


class LLMConfig(_Strict):
    """Model settings for every role; ``roles`` overrides ``default`` field by field."""

    default: EndpointConfig = EndpointConfig()
    roles: dict[Role, dict[str, Any]] = Field(default_factory=dict)
    embedded: EmbeddedConfig = EmbeddedConfig()
    cache: bool = True
    cache_path: str | None = Field(None, description="Response cache file; default under the cache dir.")

    @field_validator("roles")
    @classmethod
    def _check_roles(cls, v: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for role, override in v.items():
            try:
                EndpointConfig(**override)  # fail early, naming the bad field
            except ValidationError as exc:
                first = exc.errors()[0]
                loc = [role, *(str(p) for p in first["loc"])]
                # A plain ValueError: the outer error then names roles.<role>.<field> in one line.
                raise ValueError(_unknown_field(loc) if first["type"] == "extra_forbidden"
                                 else f"{'.'.join(loc)}: {str(first['msg']).removeprefix('Value error, ')}") from None
        return v

    def endpoint(self, role: Role) -> EndpointConfig:
        """The effective endpoint of ``role``."""
        merged = self.default.model_dump(exclude_unset=True)
        if role == "memory":  # memory writes run on the agent's model unless configured apart
            merged.update(self.roles.get("agent", {}))
        merged.update(self.roles.get(role, {}))
        return EndpointConfig(**merged)

    def chat_base_url(self, role: Role) -> str | None:
        """The HTTP endpoint ``role`` chats with: its ``base_url``, else ``$OPENAI_BASE_URL``; None means embedded.

        The environment variable is the one fallback every OpenAI-compatible tool honours; it is read here
        and nowhere else. It does not apply to the embedder, whose calls stay local unless configured.
        """
        own = self.endpoint(role).base_url
        if own:
            return check_base_url(own, f"llm base_url of role {role}")
        env = os.environ.get("OPENAI_BASE_URL")
        return check_base_url(env, "OPENAI_BASE_URL") if env else None


def check_base_url(url: str, where: str) -> str:
    """``url`` if it parses as an absolute URL with a host (and a valid port), else a ConfigError naming ``where``.

    Checked before any call, so a typo is one line at the start instead of a traceback from the HTTP stack.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- parsing the port is what raises on e.g. ':99999'
    except ValueError as exc:
        raise ConfigError(f"{where}: malformed base URL {_shown_url(url)}: {exc}") from None
    if not parts.scheme or not parts.hostname or any(ch.isspace() for ch in url):
        space = "; it holds whitespace (a pasted line break?)" if any(ch.isspace() for ch in url) else ""
        raise ConfigError(f"{where}: malformed base URL {_shown_url(url)}{space}; expected e.g. "
                          "http://127.0.0.1:8000/v1")
    return url


def _shown_url(url: str) -> str:
    """``url`` as an error may print it: a key can sit in its query, its path parameters or its user part."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(not shown)"
    host = parts.netloc.rsplit("@", 1)[-1]
    hidden = parts.query or parts.fragment or ";" in parts.path or "@" in parts.netloc
    return repr(f"{parts.scheme}://{host}{bare_path(parts.path)}") + (" (its query, parameters and user part not shown)"
                                                    if hidden else "")


class RunSettings(_Strict):
    """How a run is executed (not what it measures)."""

    user_concurrency: int = Field(
        64, ge=1, description="Users simulated at once (the endpoints' adaptive limits pace the calls)."
    )
    serial: bool = Field(False, description="One call at a time, for debugging.")
    workers: int = Field(
        0, ge=0, description="Processes the users are spread over (docs/design.md §10); 0 = auto: one per core, "
        "at most one per 8 users, and 1 when a role runs on the embedded model. Results do not depend on it.",
    )
    agent_call_timeout: float = Field(
        900.0, gt=0, description="Seconds one call into a plug-in agent (reply, act, answer, ...) may take, model "
        "calls included, before it is recorded as a failure; a call silent for 30 s is reported before that.",
    )
    agent_factory_timeout: float = Field(
        120.0, gt=0, description="Seconds a plug-in agent's module import and its factory may take to give an agent "
        "before the run stops with one line naming it.",
    )
    seed: int = 0
    eval_max_tokens: int = Field(96, ge=8)
    reply_max_tokens: int = Field(256, ge=8)
    simulator_max_tokens: int = Field(160, ge=8)
    simulator_history_turns: int = Field(6, ge=0, description="Recent messages the simulator sees.")
    resimulate_leaks: bool = Field(
        False, description="Redraw a simulator turn that names an unexposed schema value before the agent sees it."
    )
    resimulate_attempts: int = Field(2, ge=0, description="Redraws of a leaking simulator turn (resimulate_leaks).")
    context_window: int = Field(
        16384, ge=512, description="Agent context budget in tokens; older turns are dropped beyond it."
    )
    agent_system_prompt: bool = Field(
        True, description="The native agent opens with amemgym's system prompt (the original sent none)."
    )
    answer_rule: Literal["strict", "original"] = Field(
        "strict", description="Headline scoring of invalid answers: 'strict' scores them wrong; 'original' "
        "maps 0 to the last option and other bad replies to a seeded random option, as the original did.",
    )


class BudgetSettings(_Strict):
    """Settings of budget-family runs (docs/budget.md)."""

    tools: Literal["auto", "native", "text"] = Field(
        "auto", description="How the built-in tool agent calls tools: 'native' function calls, the strict 'text' "
        "JSON protocol, or 'auto': probe the agent's endpoint once (the embedded model always uses text).",
    )
    judge: bool = Field(
        False, description="Send answers the rule checker marks wrong to the judge role's model for a second "
        "verdict (also turned on by --judge-model); never the model under test.",
    )


class AppConfig(_Strict):
    """Everything a command needs."""

    env: EnvConfig = EnvConfig()
    llm: LLMConfig = LLMConfig()
    run: RunSettings = RunSettings()
    budget: BudgetSettings = BudgetSettings()

    def recorded(self) -> dict[str, Any]:
        """The settings as a run directory records them: every endpoint's ``base_url`` without its query string
        or fragment, where some services take a key (keys themselves are never settings)."""
        data: dict[str, Any] = json.loads(self.model_dump_json())
        llm = data["llm"]
        for endpoint in (llm["default"], *llm["roles"].values()):
            if isinstance(endpoint, dict) and isinstance(endpoint.get("base_url"), str):
                endpoint["base_url"] = public_url(endpoint["base_url"])
        return data


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error as one line (PyYAML's own message spans several, with a source excerpt)."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{where}: {problem}"


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path.name}: not UTF-8 text (byte {exc.start})") from None
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path.name}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") \
                from None
    else:
        data = _yaml_file(path.name, text)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path.name}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def settings_yaml(text: str) -> Any:
    """YAML as settings read it: PyYAML's safe loader, except that dates stay strings (every date setting is a
    string, and an impossible date such as 2024-02-30 would otherwise fail inside PyYAML with a ValueError).

    Raises:
        yaml.YAMLError: the text is not YAML.
    """
    loader = _settings_loader()(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


@functools.cache
def _settings_loader() -> type:
    class _Loader(yaml.SafeLoader):
        pass

    _Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return _Loader


def _yaml_file(name: str, text: str) -> Any:
    try:
        return settings_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{name}: not valid YAML{yaml_problem(exc)}") from None


#: A ``--set`` value that YAML reads as this very string: a letter first, then name and URL characters only,
#: and not one of YAML's boolean or null words (every other implicit type starts with a digit, sign, dot or
#: symbol). Such values skip PyYAML, which a run otherwise imports only for this.
_PLAIN_VALUE = re.compile(r"[A-Za-z][A-Za-z0-9_./:-]*")
_YAML_WORDS = frozenset(f(w) for w in ("yes", "no", "true", "false", "on", "off", "null")
                        for f in (str.lower, str.capitalize, str.upper))


def set_value(raw: str) -> Any:
    """The value of ``--set KEY=RAW``: YAML's reading of ``RAW``, or ``RAW`` itself where YAML fails."""
    if _PLAIN_VALUE.fullmatch(raw) and not raw.endswith(":") and raw not in _YAML_WORDS:
        return raw

    try:
        return settings_yaml(raw)
    except (yaml.YAMLError, ValueError, OverflowError):
        return raw


def _parse_set(item: str) -> dict[str, Any]:
    if "=" not in item:
        # Without "=", a pasted key may be the whole item: it is not printed back.
        raise ConfigError(f"--set {shown_typed(item)}: expected KEY.PATH=VALUE")
    key, raw = item.split("=", 1)
    value = set_value(raw)
    out: dict[str, Any] = {}
    cur = out
    parts = key.strip().split(".")
    for part in parts[:-1]:
        cur = cur.setdefault(part, {})
    cur[parts[-1]] = value
    return out


#: Setting names a user may reach for to give a key directly (``--set llm.default.api_key=...``).
_KEY_LIKE = re.compile(r"(?i)(api[_-]?key|key|token|secret|password)")


def _unknown_field(loc: list[str]) -> str:
    """The error for a setting that does not exist, as ``where: message``. A key-like name gets advice instead
    of "unknown field", and is written so that the redaction of error texts leaves the message readable."""
    if _KEY_LIKE.fullmatch(loc[-1]):
        where = ".".join(loc[:-1]) or "config"
        return (f"{where}: there is no {loc[-1]} setting; a key is never put in the config: name the environment "
                "variable that holds it with api_key_env, or a file with api_key_file")
    return f"{'.'.join(loc)}: unknown field"


def _format_validation(name: str, exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    if err["type"] == "extra_forbidden":
        return f"{name}: {_unknown_field(loc)}{more}"
    return f"{name}: {'.'.join(loc)}: {str(err['msg']).removeprefix('Value error, ')}{more}"


def load_config(preset_or_file: str | None = None, sets: list[str] | None = None) -> AppConfig:
    """Build the app config from a preset name or a file, plus ``--set`` overrides.

    A file may hold a full :class:`AppConfig` (keys ``env``/``llm``/``run``), or, like the original
    release's env configs, just the env fields at the top level (unknown original keys are ignored).

    Raises:
        ConfigError: one line naming the file or flag, the field and the problem.
    """
    data: dict[str, Any] = {}
    name = "config"
    if preset_or_file:
        if preset_or_file in PRESETS:
            data = {"env": dict(PRESETS[preset_or_file]), "run": dict(PRESET_RUN.get(preset_or_file, {}))}
            name = f"preset {preset_or_file}"
        else:
            path = Path(preset_or_file)
            if not path.exists():
                known = ", ".join(PRESETS)
                shown = shown_typed(preset_or_file, quoted=False)
                raise ConfigError(f"{shown}: neither a preset ({known}) nor an existing file")
            raw = _read_file(path)
            name = path.name
            if not ({"env", "llm", "run", "budget"} & raw.keys()):
                env_fields = set(EnvConfig.model_fields)
                base = dict(PRESETS.get(str(raw.get("name")), {}))
                base.update({k: v for k, v in raw.items() if k in env_fields})
                raw = {"env": base}
            elif isinstance(raw.get("env"), dict) and isinstance(raw["env"].get("name"), str) \
                    and raw["env"]["name"] in PRESETS:
                preset = raw["env"]["name"]
                raw["env"] = _deep_merge(PRESETS[preset], raw["env"])
                raw["run"] = _deep_merge(PRESET_RUN.get(preset, {}), raw.get("run") or {})
            data = raw
    for item in sets or []:
        data = _deep_merge(data, _parse_set(item))
    try:
        return AppConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation(name, exc)) from None


def env_preset(name: str) -> EnvConfig:
    """The :class:`EnvConfig` of a named preset."""
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {shown_typed(name)}; known: {', '.join(PRESETS)}")
    return EnvConfig(**PRESETS[name])
