#!/usr/bin/env bash
# Breaks each protection in turn (a pytest plugin from this folder monkeypatches it; the repository is not
# modified) and runs the test that guards it: every block must show a FAILED test.
# Usage, from anywhere: bash bench/protections/run_all.sh   (PYTHON defaults to `python`)
cd "$(dirname "$0")/../.." || exit 1
py=${PYTHON:-python}
run() {
  local plugin=$1 test=$2
  echo "### $plugin"
  PYTHONPATH=src:bench/protections timeout 300 "$py" -m pytest -p "$plugin" "$test" -x -q -p no:cacheprovider 2>&1 \
    | grep -E "^FAILED|^E  +[A-Za-z]|passed|failed" | head -4
}
run break_atomic "tests/test_bad_input_properties.py::test_interrupted_write_keeps_the_old_file"
run break_torn "tests/test_bad_input_properties.py::test_torn_jsonl_line_is_skipped_and_the_next_append_starts_clean"
run break_retry "tests/test_llm_client.py::test_transient_faults_are_retried_and_counted"
run break_4xx "tests/test_llm_client.py::test_client_error_is_not_retried"
run break_secret "tests/test_llm_client.py::test_api_key_is_sent_but_never_stored_or_shown"
run break_manifest "tests/test_bad_input_properties.py::test_run_directory_of_another_run_is_refused"
run break_one_line "tests/test_bad_input_properties.py::test_mutated_environment_is_refused_in_one_line"
run break_model_identity "tests/test_trust_identity.py::test_a_model_swapped_behind_the_same_url_misses_the_cache_and_answers_anew"
run break_model_identity "tests/test_trust_identity.py::test_resuming_on_another_model_is_refused_unless_allowed"
run break_trial_seed "tests/test_trust_identity.py::test_every_trial_makes_its_own_calls"
run break_user_folder "tests/test_trust_identity.py::test_user_ids_that_differ_only_in_unsafe_characters_get_their_own_folders"
run break_lock "tests/test_hostile_endpoint.py::test_a_lock_left_by_a_killed_holder_is_taken_over"
run break_redact "tests/test_hostile_endpoint.py::test_an_echoed_key_reaches_no_file_and_no_output"
run break_overrun "tests/test_http_transport.py::test_bytes_after_a_complete_reply_never_answer_the_next_request"
run break_tls "tests/test_http_transport.py::test_an_untrusted_certificate_fails_once_in_one_line"
run break_nested_lock "tests/test_run_lock.py::test_a_directory_inside_a_held_one_is_refused_and_not_created"
