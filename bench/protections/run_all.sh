#!/usr/bin/env bash
# Breaks each protection in turn (a pytest plugin from this folder monkeypatches it; the repository is not
# modified) and runs the test that guards it: every block must show a FAILED test. Exits 1 when a guarded test
# passes with its protection removed, or does not run at all (a renamed test, a plugin that no longer imports):
# either way the table in bench/PROTECTIONS.md no longer holds. tests/test_protections.py runs this in CI.
# The cases run JOBS at a time (default 4: most of their time is spent waiting), and print in order.
# Usage, from anywhere: bash bench/protections/run_all.sh   (PYTHON defaults to `python`); arguments, if any, replace
# the list of cases ("PLUGIN TEST" each).
cd "$(dirname "$0")/../.." || exit 1
py=${PYTHON:-python}
jobs=${JOBS:-4}
cases=(
  "break_atomic tests/test_bad_input_properties.py::test_interrupted_write_keeps_the_old_file"
  "break_torn tests/test_bad_input_properties.py::test_torn_jsonl_line_is_skipped_and_the_next_append_starts_clean"
  "break_retry tests/llm/test_llm_client.py::test_transient_faults_are_retried_and_counted"
  "break_4xx tests/llm/test_llm_client.py::test_client_error_is_not_retried"
  "break_secret tests/llm/test_llm_client.py::test_api_key_is_sent_but_never_stored_or_shown"
  "break_manifest tests/test_bad_input_properties.py::test_run_directory_of_another_run_is_refused"
  "break_one_line tests/test_bad_input_properties.py::test_mutated_environment_is_refused_in_one_line"
  "break_model_identity tests/test_trust_identity.py::test_a_model_swapped_behind_the_same_url_misses_the_cache_and_answers_anew"
  "break_model_identity tests/test_trust_identity.py::test_resuming_on_another_model_is_refused_unless_allowed"
  "break_trial_seed tests/test_trust_identity.py::test_every_trial_makes_its_own_calls"
  "break_user_folder tests/test_trust_identity.py::test_user_ids_that_differ_only_in_unsafe_characters_get_their_own_folders"
  "break_lock tests/llm/test_hostile_endpoint.py::test_a_lock_left_by_a_killed_holder_is_taken_over"
  "break_redact tests/llm/test_hostile_endpoint.py::test_an_echoed_key_reaches_no_file_and_no_output"
  "break_overrun tests/llm/test_http_transport.py::test_bytes_after_a_complete_reply_never_answer_the_next_request"
  "break_tls tests/llm/test_http_transport.py::test_an_untrusted_certificate_fails_once_in_one_line"
  "break_nested_lock tests/engine/test_run_lock.py::test_a_directory_inside_a_held_one_is_refused_and_not_created"
  "break_episode_check tests/budget/test_budget_integrity.py::test_run_refuses_a_tampered_episode_in_one_line"
  "break_maintenance_gate tests/budget/test_budget_scoring.py::test_a_note_of_names_earns_no_maintenance"
  # Issue 30: plug-ins, keys on the success path, ranking, large inputs, small hardening.
  "break_plugin_view tests/agents/test_plugin_guard.py::test_the_plugin_context_holds_the_rules_only"
  "break_plugin_guard tests/agents/test_plugin_guard.py::test_sys_exit_in_a_tool_plugin_is_a_failure_not_a_clean_exit"
  "break_plugin_guard tests/agents/test_plugin_guard.py::test_a_wrong_reply_type_is_one_line"
  "break_redact tests/test_keys_on_success_path.py::test_a_statetrack_run_stores_and_prints_no_echoed_key"
  "break_ranking_flag tests/engine/test_ranking_flags.py::test_a_statetrack_run_resumed_on_another_model_is_flagged_and_not_ranked"
  "break_source_hash tests/engine/test_ranking_flags.py::test_off_policy_runs_group_by_the_conversations_they_replayed"
  "break_stream tests/statetrack/test_large_environment.py::test_a_full_load_never_holds_the_whole_text"
  "break_temp_cleanup tests/test_small_hardening.py::test_a_statetrack_resume_removes_temp_files_a_kill_left"
  "break_export_refusal tests/test_small_hardening.py::test_exporting_an_unfinished_statetrack_run_is_refused"
  "break_env_folder tests/test_small_hardening.py::test_a_fifo_in_an_env_folder_is_an_error_not_a_skip"
)
[ $# -gt 0 ] && cases=("$@")
one() {  # plugin, test, temp folder -> the pytest output; exit status 0 when the test failed as it must
  local out rc
  out=$(PYTHONPATH=src:tests:bench/protections timeout 300 "$py" -m pytest -p "$1" "$2" -x -q \
        -p no:cacheprovider --basetemp "$3" 2>&1)
  rc=$?
  echo "$out" | grep -E "^FAILED|^E  +[A-Za-z]|passed|failed|error" | head -4
  # pytest exits 1 when a test failed; 0 means the protection is not guarded, anything else that it did not run.
  if [ "$rc" -ne 1 ] || ! grep -q "^FAILED" <<<"$out"; then
    echo "!!! $1: the guarding test did not fail (pytest exit $rc)"
    return 1
  fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in "${!cases[@]}"; do
  read -r plugin test <<<"${cases[$i]}"
  one "$plugin" "$test" "$tmp/base$i" >"$tmp/$i.out" 2>&1 && echo ok >"$tmp/$i.rc" || echo bad >"$tmp/$i.rc" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
done
wait
bad=()
for i in "${!cases[@]}"; do
  echo "### ${cases[$i]}"
  cat "$tmp/$i.out"
  [ "$(cat "$tmp/$i.rc")" = ok ] || bad+=("${cases[$i]}")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "${#bad[@]} protection(s) not guarded:"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "every protection is guarded: each guarding test failed with its protection removed"
