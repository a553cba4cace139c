"""Keys that reached a file or the screen by a side door (found by probing with an echoing server): cut short
before scrubbing, wrapped by the console, riding in a base URL's query, configured for a role the run never
calls, or copied with an original agent config."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.table import Table

from amemgym.config import EndpointConfig, LLMConfig
from amemgym.console import new_console, styled
from amemgym.errors import BackendUnavailable
from amemgym.families.statetrack.compat.flags import agent_from_original
from amemgym.llm.client import LLMClient, read_api_key
from amemgym.llm.openai_backend import OpenAIBackend
from amemgym.redact import MASK, PREFIX_CHARS, redact, redact_content, register_secret
from notes_plugin import NOTES_METHODS

LONG = "sk-proj-Q7wErTy8UiOp9AsDfGh0JkLzXcVbNm1234567890abcdefGHIJKLmnopqrstUVWXyz0987654321LONGkey"


def test_a_key_cut_short_keeps_none_of_its_opening() -> None:
    register_secret(LONG)
    for cut in (PREFIX_CHARS, 20, 40, len(LONG) - 1):
        text = f'{{"error": "bad token {LONG[:cut]}"}}'
        assert LONG[:PREFIX_CHARS] not in redact_content(text) and LONG[:PREFIX_CHARS] not in redact(text)
        assert json.loads(redact_content(text))["error"] == f"bad token {MASK}"
    # Fewer opening characters than that are left alone (they say nothing of the key).
    assert redact_content(LONG[: PREFIX_CHARS - 1]) == LONG[: PREFIX_CHARS - 1]


def test_a_long_key_in_a_narrow_table_or_a_wrapped_line_is_never_printed() -> None:
    register_secret(LONG)
    buf = io.StringIO()
    console = new_console(file=buf, width=40, force_terminal=False)
    table = Table("role", "reply")
    table.add_row("agent", LONG)
    console.print(table)
    console.print(f"answered by: agent {LONG}")
    console.print(styled("red", "FAIL", f": {LONG}"))
    shown = buf.getvalue()
    # No run of 8 key characters survives, on any line.
    assert not any(LONG[i:i + 8] in shown.replace("\n", "") for i in range(len(LONG) - 8)), shown


def test_a_credential_in_the_base_urls_query_is_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "AZFUNCqueryCODEvalue0042xyz"
    OpenAIBackend(f"http://127.0.0.1:9/v1?api-version=2024-02-01&code={secret}", "m", None)
    echoed = f"404 no route /v1/chat/completions?code={secret}"
    assert secret not in redact_content(echoed) and secret not in redact(echoed)
    assert "2024-02-01" in redact_content("api-version=2024-02-01")  # a parameter not named as a secret stays


def test_a_key_of_a_role_never_called_is_known_from_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "judgeOnlyKEY55aa77bb99cc"
    monkeypatch.setenv("JUDGE_ONLY_KEY", secret)
    LLMClient(LLMConfig(roles={"judge": {"api_key_env": "JUDGE_ONLY_KEY"}}))
    assert secret not in redact_content(f"reply quoting {secret}")


def test_a_key_pasted_as_a_key_file_name_is_not_echoed() -> None:
    pasted = "0123456789abcdef0123456789abcdef.PROBEsecretKeyXyZ"
    with pytest.raises(BackendUnavailable) as info:
        read_api_key(EndpointConfig(api_key_file=pasted))
    assert pasted not in str(info.value) and "PROBEsecret" not in str(info.value)
    with pytest.raises(BackendUnavailable, match="missing/key.txt"):
        read_api_key(EndpointConfig(api_key_file="missing/key.txt"))  # a path is named, to be fixed


def test_an_error_text_about_a_key_setting_stays_readable() -> None:
    text = "llm.default.api_key: Extra inputs are not permitted; embedder_api_key: field required"
    assert redact(text) == text
    assert "abc123def456" not in redact("api_key=abc123def456")


def test_an_original_agent_config_is_copied_without_any_key(tmp_path: Path) -> None:
    cfg = {"type": "awe", "name": "a", "llm_config": {"model": "m", "api_key": "sk-top-0000aaaa"},
           "memory_config": {"llm": {"config": {"api_key": "nestedKEY1234abcd", "model": "m2"}},
                             "embedder": {"config": {"openai_api_key": "embKEY9876zyxw"}}},
           "agent_config": {"update_bsz": 2, "local_length": 4, "top_k": 30}}
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    raw = json.dumps(agent_from_original(str(path)).raw)
    assert not any(k in raw for k in ("sk-top-0000aaaa", "nestedKEY1234abcd", "embKEY9876zyxw"))
    assert '"model": "m2"' in raw and '"top_k": 30' in raw


def test_an_over_encoded_or_lower_case_percent_form_of_a_key_is_masked() -> None:
    key = "sk-proj-OverEncoded0123456789"
    register_secret(key)
    for form in ("sk%2Dproj%2DOverEncoded0123456789", "sk%2dproj%2dOverEncoded0123456789"):
        assert "OverEncoded" not in redact_content(f'{{"echo": "{form}"}}')


# ---- keys typed where the command line does not expect them ------------------------------------------------
@pytest.mark.parametrize("args", [
    ["run", "--out", "x", "--set", "llm.default.api_key", "Abc123def456ghi789XYZjkl"],  # "=" forgotten
    ["run", "--out", "x", "Abc123def456ghi789XYZjkl"],
    ["run", "--out", "x", "--set", "Abc123def456ghi789XYZjkl"],
    ["report", "--out", "x", "--unknown-flag", "sk-proj-Abc123def456ghi789XYZ"],
])
def test_a_key_typed_as_a_stray_argument_is_not_printed_back(args: list[str]) -> None:
    from typer.testing import CliRunner

    from amemgym.cli import app

    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert "Abc123def456ghi789XYZ" not in result.output and "Abc123def456" not in result.output
    assert MASK in result.output or "not shown" in result.output or "No such option" in result.output


@pytest.mark.parametrize("url", ["https://example.invalid/v1;key=Zq9xSECRET77pw ", "http://127.0.0.1:4a/v1?key=Zq9xSECRET77pw",
                                 "http://u:Zq9xSECRET77pw@h:99999/v1", "http://h/v1?token=Zq9xSECRET77pw&x=1 "])
def test_a_malformed_base_url_is_refused_without_its_secret_parts(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from amemgym.cli import app

    monkeypatch.setenv("OPENAI_BASE_URL", url)
    result = CliRunner().invoke(app, ["info"])
    assert result.exit_code == 2 and "malformed base URL" in result.output
    assert "Zq9xSECRET77pw" not in result.output and "not shown" in result.output


# ---- keys that a plug-in's code prints, and keys a command that makes no client must still know ------------
LEAKY_PLUGIN = '''
import json, logging, os, sys, warnings

SECRET = os.environ.get("OPENAI_API_KEY", "") + " " + os.environ.get("JUDGE_KEY", "")
print("import:", SECRET)

class Agent:
    def __init__(self):
        self.notes = []
    async def reply(self, message, *, time=None):
        print("reply:", SECRET)
        print("split:", SECRET[:14], end="")
        print(SECRET[14:])
        print("stderr:", SECRET, file=sys.stderr)
        logging.getLogger("leaky.plugin").error("log: %s", SECRET)
        warnings.warn("warn: " + SECRET)
        self.notes.append(message)
        return "noted"
''' + NOTES_METHODS.lstrip("\n") + '''
def make(llm, ctx):
    return Agent()

def raising(llm, ctx):
    raise RuntimeError("cannot start with " + SECRET)

make.roles = ("agent",)
'''
#: Keys no shape gives away (hex, a UUID): only their registration masks them.
HEX_KEY, UUID_KEY = "5f0e8d2c4b6a19377a2c4e6f8091b3d5", "6c1f3a9e-7d24-4b8e-9a05-2e7c3f1d8b46"


def test_what_a_plugin_prints_logs_or_warns_during_a_run_hides_every_key(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         capfd: pytest.CaptureFixture[str]) -> None:
    from typer.testing import CliRunner

    from amemgym.cli import app
    from amemgym.testing.fake_endpoint import FakeEndpoint

    plugin = tmp_path / "leaky.py"
    plugin.write_text(LEAKY_PLUGIN, encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", HEX_KEY)
    monkeypatch.setenv("JUDGE_KEY", UUID_KEY)
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        result = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "run"), "--limit", "1", "--agent",
                                          f"{plugin}:make", "--set", "llm.roles.judge.api_key_env=JUDGE_KEY",
                                          "--set", "llm.default.max_retries=1"])
    shown = result.output + "".join(capfd.readouterr())
    assert result.exit_code == 0, shown
    assert "reply:" in shown and "log:" in shown and "warn:" in shown  # printed, masked
    assert HEX_KEY[:12] not in shown and HEX_KEY[-12:] not in shown and UUID_KEY[-12:] not in shown, shown


@pytest.mark.parametrize("factory", ["make", "raising"])
def test_check_agent_hides_the_configured_keys_a_plugin_prints_or_raises_with(
        factory: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    from typer.testing import CliRunner

    from amemgym.cli import app

    plugin = tmp_path / "leaky.py"
    plugin.write_text(LEAKY_PLUGIN, encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", HEX_KEY)
    monkeypatch.setenv("JUDGE_KEY", UUID_KEY)
    result = CliRunner().invoke(app, ["check-agent", f"{plugin}:{factory}", "--set",
                                      "llm.roles.judge.api_key_env=JUDGE_KEY"])
    shown = result.output + "".join(capfd.readouterr())
    assert ("cannot start with" if factory == "raising" else "reply:") in shown, shown
    assert HEX_KEY[:12] not in shown and HEX_KEY[-12:] not in shown and UUID_KEY[-12:] not in shown, shown


def test_a_report_hides_the_configured_key_held_in_the_environment_file(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from amemgym.cli import app
    from amemgym.testing.fake_endpoint import FakeEndpoint

    key = "0b7e4d1a9c3f5e2d8a6b4c0e1f3a5d7c"
    fixture = Path(__file__).parent / "fixtures" / "original_shape.json"
    env = tmp_path / "env.json"
    env.write_text(fixture.read_text(encoding="utf-8").replace("full_home_kitchen", key), encoding="utf-8")
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        ran = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(tmp_path / "run")])
    assert ran.exit_code == 0, ran.output
    monkeypatch.setenv("OPENAI_API_KEY", key)  # the key of the endpoint, configured where the report is made
    result = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    assert key[:12] not in (tmp_path / "r.html").read_text(encoding="utf-8")
