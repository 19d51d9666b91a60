//! One integration binary: every test drives the real `plangate` binary.
//! Tests that need something of the machine it may lack (a sandbox
//! backend, xmllint, node with mermaid, ...) are in tests/facilities.

#![allow(
    unreachable_pub, // one test binary: `pub` in its modules is for each other
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines, // the 120-line limit is for src/; case tables here are data
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::disallowed_methods
)]

mod agent;
mod agent_cli;
mod agent_http;
mod agent_preflight;
mod agent_read_only;
mod agent_record;
mod agent_stage;
mod agent_stage_kinds;
mod agent_two_ways;
mod bad_inputs;
mod boundary;
mod ci;
mod cli_help;
mod credentials;
mod diff;
mod distribution;
mod egress;
mod env_scope;
mod examples;
mod faults;
mod flow;
mod forge;
mod formats;
mod fuzz_regressions;
mod git_remote;
mod github;
mod gitlab;
mod gitlab_review;
mod guard_code;
mod guard_conformance;
mod guard_envelope;
mod guard_envelope_corpus;
mod guard_roundtrip;
mod harness;
mod install_action;
mod keep_going;
mod leaks;
mod matrix;
mod mermaid;
mod outcomes;
mod outdir;
mod permissions;
mod pictures;
mod plans;
mod policy;
mod publish;
mod publish_pr;
mod resume;
mod retry;
mod run;
mod sandbox;
mod secret_hosts;
mod secret_pieces;
mod secrets;
mod secrets_rules;
mod shard;
mod snapshots;
mod special_files;
mod step_folders;
mod sweep_reach;
mod tool_archive;
mod tool_git;
mod tool_http_request;
mod tools;
mod untrusted;
