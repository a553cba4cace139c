"""Keys that slipped past the scrubbing in earlier probes: a server echoing only the back half (or a middle
run) of a configured key, or its hex; vendor keys written in lower case with underscores, which no
registered key covers; and a key typed as the value of an option whose error message quotes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import looks_like_key
from amemgym.redact import MASK, PREFIX_CHARS, joins_safely, redact, redact_content, register_secret

KEY = "sk-proj-HalfEcho0123456789abcdefGHIJKLmnop4455qrstUVWX6677yzAB"


@pytest.mark.parametrize("cut", [slice(len(KEY) // 2, None), slice(-PREFIX_CHARS, None),
                                 slice(9, 9 + 2 * PREFIX_CHARS - 1), slice(17, -5)])
def test_any_long_run_of_a_registered_key_is_masked(cut: slice) -> None:
    register_secret(KEY)
    part = KEY[cut]
    text = json.dumps({"error": f"token ...{part} is not valid", "n": 3})
    for scrub in (redact, redact_content):
        shown = scrub(text)
        assert part not in shown and MASK in shown, (cut, shown)
    assert json.loads(redact_content(text))["n"] == 3
    # A run shorter than the guaranteed length, away from both ends, is ordinary text and stays.
    assert redact_content("abcdef") == "abcdef"


def test_a_joint_inside_a_back_half_is_not_safe() -> None:
    register_secret(KEY)
    tail = KEY[-20:]
    assert not joins_safely(f"x {tail[:10]}", f"{tail[10:]} y")


def test_the_hex_of_a_registered_key_is_masked() -> None:
    register_secret(KEY)
    for form in (KEY.encode().hex(), KEY.encode().hex().upper()):
        assert form not in redact_content(f'{{"echo": "{form}"}}')
        assert KEY.encode().hex()[:24] not in redact_content(f"echo {form}").lower()


VENDOR = ["sk_live_51abcdefghijklmnop0123456789", "rk_test_4eC39HqLyjWDarjtT1zdp7dc",
          "tgp_v1_a0b1c2d3e4f5g6h7i8j9k0l1m2n3", "gsk_0a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p",
          "github_pat_11abcdefg0123456789_abcdefghij", "nvapi-abcdefghij0123456789klmnop",
          "xai-abcdefghij0123456789klmnopqrst"]


@pytest.mark.parametrize("key", VENDOR)
def test_a_vendor_key_in_lower_case_is_masked_unregistered(key: str) -> None:
    assert looks_like_key(key)
    for scrub in (redact, redact_content):
        shown = scrub(f'{{"detail": "invalid key {key}"}}')
        assert key[8:] not in shown and MASK in shown, shown
        assert json.loads(shown)


def test_names_and_prose_are_not_vendor_keys() -> None:
    for text in ("OPENAI_API_KEY_2", "openai_key", "sk_learn_pipeline", "the hf_ hub", "task_live_update_2024"):
        assert redact_content(text) == text
    assert not looks_like_key("OPENAI_API_KEY_2") and not looks_like_key("task_live_update_2024")


TYPED = "Zq9xEchoedKEY77pwAbc123"


@pytest.mark.parametrize("args", [
    ["run", "-o", "x", "--executor", TYPED],
    ["run", "-o", "x", "--executor", "sk_live_51abcdefghijklmnop0123456789"],
    ["run", "-o", "x", f"-a={TYPED}"],
    ["run", "-o", "x", "--agent", TYPED],
    ["run", "-o", "x", "-c", TYPED],
    ["run", "-o", "x", "--model", "sk_live_51abcdefghijklmnop0123456789", "--executor", "nope"],
])
def test_a_key_typed_as_an_option_value_is_not_printed_back(args: list[str], tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert "Zq9xEchoed" not in result.output and "abcdefghijklmnop0123" not in result.output, result.output
    assert "error" in result.output.lower() or "Error" in result.output


def test_an_unknown_executor_that_is_not_a_key_is_still_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "-o", "x", "--executor", "rayy"])
    assert result.exit_code != 0 and "rayy" in result.output


# ---- what is not a key -------------------------------------------------------------------------------------
@pytest.mark.parametrize("placeholder", ["ollama", "sk-no-key-required", "Ollama", "lm-studio", "not-needed"])
def test_a_local_servers_placeholder_key_masks_nothing(placeholder: str) -> None:
    # Local servers ask for any key, and their documentation's placeholder is what people set: it is public.
    register_secret(placeholder)
    text = json.dumps({"reply": "I serve models with ollama; no key-required here", "ollama_version": "0.5"})
    assert redact_content(text) == text and redact(text) == text


def test_a_short_test_key_is_still_masked_where_a_server_echoes_it() -> None:
    register_secret("sk-test")
    shown = redact_content('{"error": "bad header Bearer sk-test", "fixture": "sk-test-fixture"}')
    assert "Bearer sk-test" not in shown and "sk-test-fixture" in shown


def test_a_short_key_is_masked_only_where_it_stands_alone() -> None:
    register_secret("391746")
    register_secret("pw42xy")
    text = json.dumps({"mean": -0.92391746003, "x": 0.391746, "ids": ["a391746b"], "note": "pw42xyz"}, indent=2)
    assert redact_content(text) == text and json.loads(redact_content(text))
    assert redact_content("the key is 391746 now") == f"the key is {MASK} now"
    assert redact_content('{"echo": "pw42xy"}') == f'{{"echo": "{MASK}"}}'


@pytest.mark.parametrize("word", ["hf_transformers_version2_release", "xai-grok-integration-2024-plan",
                                  "gsk_session_cache_key_2", "nvapi-client-wrapper-module-v2",
                                  "github_pat_rotation_policy_2024", "tgp_v1_migration_script_for_2025",
                                  "sk_test_fixture_data_file_01", "sk-learn-tutorial-2023-edition",
                                  "task-rk-0123456789abcdefgh"])
def test_identifiers_that_start_like_a_vendor_key_are_left_alone(word: str) -> None:
    text = f'{{"note": "see {word} for details"}}'
    assert redact_content(text) == text
