//! The tests that need something of the machine it may lack (a sandbox
//! backend, /usr/bin/python3, xmllint, the SARIF Multitool, node with
//! mermaid): one trial per test and backend, named `module::test::backend`.
//! A trial whose facility is missing here is reported as ignored, with the
//! reason, and counted so in the summary line; under `CI=true` it FAILS.
//! No trial passes without having run.
//!
//! `harness = false` with libtest-mimic: the same command line as libtest
//! (`cargo test --test facilities NAME`, `--exact`, `--list`, `-q`,
//! `--test-threads`). To add a test: write `pub fn name(b: Backend)` (or
//! `pub fn name()`) in a module here, and list it below with the
//! facilities it needs.

#![allow(
    unreachable_pub, // one test binary: `pub` in its modules is for each other
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines, // the 120-line limit is for src/; case tables here are data
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::disallowed_methods
)]

use libtest_mimic::{Arguments, Completion, Trial};

use facility::{BWRAP, Facility, MODES, SANDBOXES};

// Modules of the integration binary whose helpers the trials share. This
// target builds without `--test`, so their `#[test]` functions are not
// compiled here; what only those use is dead code here.
#[allow(dead_code, unused_imports)]
#[path = "../integration/agent_stage.rs"]
mod agent_stage_shared;
#[allow(dead_code, unused_imports)]
#[path = "../integration/formats.rs"]
mod formats_shared;
#[allow(dead_code, unused_imports)]
#[path = "../integration/harness.rs"]
mod harness;
#[allow(dead_code, unused_imports)]
#[path = "../integration/mermaid.rs"]
mod mermaid_shared;

mod agent_stage;
mod egress;
mod facility;
mod formats;
mod git_activation;
mod git_indirection;
mod git_objects;
mod lanes;
mod links;
mod mermaid;
mod proc_isolation;
mod real_clis;
mod sandbox;
mod sandbox_reads;
mod seal;
mod sweep_user;

/// A trial that checks `needs` first: ignored (or, under `CI=true`,
/// failed) when one is missing; then runs `body`, whose panic fails it.
fn trial(name: String, needs: Vec<Facility>, body: impl FnOnce() + Send + 'static) -> Trial {
    Trial::ignorable_test(name, move || {
        for f in needs {
            if let Err(why) = f.available() {
                return facility::verdict(why, facility::in_ci());
            }
        }
        body();
        Ok(Completion::Completed)
    })
}

/// One trial per backend of `$modes` for each test: `module::test::label`,
/// needing the backend and `$needs`.
macro_rules! per_backend {
    ($trials:ident, $modes:expr, $needs:expr, $($test:path),+ $(,)?) => {
        $(
            for &b in $modes {
                let extra: &[Facility] = &$needs;
                let mut needs = b.needs();
                needs.extend_from_slice(extra);
                $trials.push(trial(
                    format!("{}::{}", stringify!($test), b.label()),
                    needs,
                    move || $test(b),
                ));
            }
        )+
    };
}

/// One trial for each test, needing `$needs`.
macro_rules! single {
    ($trials:ident, $needs:expr, $($test:path),+ $(,)?) => {
        $(
            let needs: &[Facility] = &$needs;
            $trials.push(trial(stringify!($test).to_owned(), needs.to_vec(), $test));
        )+
    };
}

fn trials() -> Vec<Trial> {
    let mut t = Vec::new();
    per_backend!(
        t,
        SANDBOXES,
        [],
        sandbox::the_approved_risk_is_the_sandbox_profile,
        sandbox::an_agent_cli_runs_in_the_sandbox_of_its_step,
        sandbox::a_rollback_runs_in_the_sandbox_of_its_step,
        sandbox_reads::bash_steps_and_rollbacks_read_neither_denied_paths_nor_home,
        sandbox_reads::a_declared_readable_path_is_readable_and_nothing_else_outside,
        sandbox_reads::a_readable_path_that_leads_to_a_denied_folder_grants_nothing_of_it,
        sandbox_reads::a_link_in_the_workspace_grants_nothing_of_what_it_points_to,
        sandbox_reads::an_agent_cli_reads_no_denied_path_of_the_real_workspace,
        sandbox_reads::a_step_reads_no_other_process_in_proc,
        sandbox_reads::a_checkout_credential_in_git_config_is_withheld_from_steps_and_given_to_the_git_push,
        sandbox_reads::git_credentials_in_every_configuration_file_are_withheld,
        sandbox_reads::a_step_cannot_be_granted_the_backup_of_the_withheld_credentials,
        sandbox_reads::a_hard_link_to_the_git_config_never_gets_the_credential,
        seal::the_self_test_names_every_property_and_unenforced_ones_stop_auto_approval,
        seal::a_step_leaves_nothing_in_the_hosts_shared_memory,
        seal::an_artifact_changed_behind_the_sweeps_back_is_swept_again,
        links::another_name_for_a_denied_file_never_shows_its_content,
        links::a_step_cannot_take_an_output_folder_inside_the_workspace,
        git_indirection::safe_and_moderate_steps_change_nothing_in_the_git_directory,
        git_indirection::a_step_below_dangerous_leaves_no_nested_repository_that_runs_programs,
        git_indirection::reading_git_commands_in_a_moderate_step_change_nothing_and_pass,
        git_indirection::a_linked_git_directory_is_the_workspaces_own_and_is_put_back,
        git_activation::a_folder_a_step_turns_into_a_git_directory_is_judged_whole,
        git_activation::a_step_changes_no_configuration_file_git_includes,
        agent_stage::writes_outside_the_staged_copy_are_refused_by_the_sandbox,
        agent_stage::a_read_only_agent_cli_leaves_the_workspace_byte_identical,
    );
    per_backend!(
        t,
        SANDBOXES,
        [Facility::SystemPython],
        sandbox::the_network_is_off_unless_the_step_declares_it,
        seal::without_network_no_unix_or_abstract_socket_is_reachable,
        seal::a_step_reaches_no_kernel_setting_keyring_or_host_ipc_object,
        seal::a_sandboxed_step_changes_no_metadata_outside_its_writable_set,
        egress::only_declared_hosts_are_reached_through_the_proxy,
        git_objects::a_bash_step_reads_no_denied_path_through_the_object_store,
        git_objects::an_agent_cli_reads_no_denied_path_through_the_object_store,
        git_objects::nested_and_separate_git_directories_hide_their_stores_too,
        seal::a_writing_step_changes_nothing_the_rules_deny_or_fails,
    );

    per_backend!(
        t,
        SANDBOXES,
        [Facility::SystemPython, Facility::FileFlags],
        seal::no_sandboxed_step_changes_a_files_flags_not_even_in_the_workspace,
    );
    per_backend!(
        t,
        SANDBOXES,
        [],
        egress::landlock_egress_is_not_auto_approved_bwrap_egress_is,
        egress::the_model_key_stays_with_plangate,
        egress::an_upstream_echoing_the_key_gives_it_to_no_cli,
        egress::the_endpoint_refuses_calls_past_the_budget,
        egress::step_budgets_refuse_the_next_call_in_each_providers_shape,
        egress::a_call_for_a_model_without_a_price_is_refused_under_a_cost_budget,
        egress::secrets_in_a_steps_processes_go_only_to_hosts_the_operator_allows,
    );
    per_backend!(
        t,
        SANDBOXES,
        [Facility::AgentClis, Facility::SystemPython],
        real_clis::each_real_cli_answers_through_plangates_endpoint_and_never_holds_the_key,
    );
    // bwrap only: the Landlock backend has no pid namespace (a `setsid`
    // child escapes it, as without a sandbox; seal.rs reaps it).
    per_backend!(
        t,
        &[BWRAP],
        [],
        sandbox::nothing_a_sandboxed_step_forks_outlives_it_even_after_setsid,
        git_indirection::a_step_approved_as_dangerous_keeps_the_repositories_it_makes,
    );
    single!(
        t,
        [Facility::Sandbox(BWRAP)],
        git_indirection::the_diff_summary_lists_what_the_run_hid_from_git
    );
    single!(
        t,
        [Facility::Sandbox(BWRAP)],
        lanes::a_chain_of_bwrap_steps_shares_one_sandbox_and_each_step_starts_clean,
        lanes::a_safe_step_keeps_a_read_only_workspace_after_a_moderate_step_in_another_sandbox,
        lanes::a_hidden_path_replaced_or_added_between_steps_stays_hidden,
        lanes::a_step_that_leaves_ipc_objects_or_changes_its_supervisor_does_not_hand_its_sandbox_on,
        lanes::a_step_cannot_slow_or_mark_the_steps_after_it_in_its_sandbox,
        lanes::a_process_whose_first_thread_exited_does_not_outlive_its_step,
    );
    for &b in SANDBOXES {
        t.push(trial(
            format!(
                "seal::a_sandboxed_step_cannot_signal_a_process_outside_it::{}",
                b.label()
            ),
            vec![Facility::Sandbox(b), Facility::SignalScoping(b)],
            move || seal::a_sandboxed_step_cannot_signal_a_process_outside_it(b),
        ));
    }
    per_backend!(
        t,
        MODES,
        [],
        seal::no_step_reads_a_secret_from_plangates_environment,
        seal::no_descriptor_plangate_inherited_reaches_a_step,
        seal::what_a_step_leaves_running_is_killed_and_reported_before_anything_looks,
        seal::a_step_that_times_out_leaves_nothing_running_either,
        seal::a_step_that_kills_its_supervisor_still_leaves_nothing_running,
        proc_isolation::no_step_reads_a_secret_from_another_steps_command_line,
        seal::a_step_cannot_reach_plangates_terminal,
    );
    per_backend!(
        t,
        MODES,
        [Facility::PidNamespace],
        seal::steps_run_in_a_container_whose_session_leader_is_outside_it,
    );
    single!(t, [], seal::the_self_test_probe_reads_nothing_it_should_not);
    single!(
        t,
        [Facility::AnotherUser],
        sweep_user::a_folder_plangates_user_cannot_list_or_write_is_swept_or_withheld,
        sweep_user::scan_fails_on_what_its_user_cannot_read
    );
    // The hostile run's writing steps are auto-approved only where the
    // sandbox enforces everything: bubblewrap (Landlock leaves a writing
    // step's metadata free, so it asks for an approval).
    single!(
        t,
        [Facility::Sandbox(BWRAP), Facility::Xmllint],
        formats::junit_is_valid_against_the_common_junit_xsd
    );
    single!(
        t,
        [Facility::Sandbox(BWRAP), Facility::SarifMultitool],
        formats::sarif_passes_the_sarif_multitools_sarif_and_github_rules
    );
    single!(
        t,
        [Facility::Mermaid],
        mermaid::the_mermaid_parser_reads_every_diagram_as_plangate_meant_it
    );
    single!(
        t,
        [],
        a_missing_facility_is_ignored_with_its_reason_and_fails_under_ci
    );
    single!(t, [], the_command_line_takes_libtests_several_filters);
    // In name order, as libtest runs and lists its tests.
    t.sort_by(|a, b| a.name().cmp(b.name()));
    t
}

/// The verdict on a missing facility, both ways.
fn a_missing_facility_is_ignored_with_its_reason_and_fails_under_ci() {
    let why = "the bwrap sandbox backend does not work here: cannot start `bwrap`";
    match facility::verdict(why.to_owned(), false) {
        Ok(Completion::Ignored { reason }) => assert_eq!(reason.as_deref(), Some(why)),
        Ok(Completion::Completed) => panic!("a missing facility passed"),
        Err(e) => panic!("outside CI a missing facility failed: {e:?}"),
    }
    match facility::verdict(why.to_owned(), true) {
        Err(e) => {
            let msg = e.message().unwrap_or_default();
            assert!(
                msg.starts_with("CI=true and ") && msg.contains(why),
                "{msg}"
            );
        }
        Ok(_) => panic!("under CI=true a missing facility did not fail"),
    }
}

/// `arguments`: several FILTERs are kept for `main`, one goes to
/// libtest-mimic, an option's value is never a filter.
fn the_command_line_takes_libtests_several_filters() {
    let argv = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let (args, filters) = arguments(argv(&[
        "bin",
        "--test-threads",
        "2",
        "seal",
        "--skip",
        "landlock",
        "formats",
        "--exact",
    ]));
    assert_eq!(filters, ["seal", "formats"]);
    assert_eq!(args.filter, None);
    assert_eq!(args.test_threads, Some(2));
    assert_eq!(args.skip, ["landlock"]);
    assert!(args.exact);
    let (args, filters) = arguments(argv(&["bin", "-q", "seal", "--color", "never"]));
    assert!(filters.is_empty());
    assert_eq!(args.filter.as_deref(), Some("seal"));
    assert!(args.quiet);
}

fn main() {
    let (args, filters) = arguments(std::env::args().collect());
    let mut trials = trials();
    if !filters.is_empty() {
        trials.retain(|t| {
            filters.iter().any(|f| {
                if args.exact {
                    t.name() == f
                } else {
                    t.name().contains(f.as_str())
                }
            })
        });
    }
    libtest_mimic::run(&args, trials).exit();
}

/// The command line, and the FILTERs libtest-mimic does not take: libtest
/// runs a test whose name matches any of several (`cargo test -- a b`
/// passes both to every test binary), libtest-mimic takes one. With two or
/// more they are applied in `main` (the summary's "filtered out" then
/// counts none of those); with one, libtest-mimic applies it.
fn arguments(argv: Vec<String>) -> (Arguments, Vec<String>) {
    const WITH_VALUE: &[&str] = &[
        "--test-threads",
        "--logfile",
        "--skip",
        "--color",
        "--format",
        "-Z",
    ];
    let mut rest = Vec::new();
    let mut filters = Vec::new();
    let mut argv = argv.into_iter();
    rest.extend(argv.next());
    while let Some(a) = argv.next() {
        if WITH_VALUE.contains(&a.as_str()) {
            rest.push(a);
            rest.extend(argv.next());
        } else if a.starts_with('-') {
            rest.push(a);
        } else {
            filters.push(a);
        }
    }
    if filters.len() <= 1 {
        rest.append(&mut filters);
    }
    (Arguments::from_iter(rest), filters)
}
