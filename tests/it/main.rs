//! The integration tests, as one test binary (each binary of its own would be linked again on
//! every change to the library). `harness` runs the programs; `fixtures` and `fake_http` are
//! the shared boards, scripted provider and scripted HTTP server; every other module covers one
//! program or one concern.
//!
//! Run one module with `cargo test --test integration meeting::`, only some cases of a table
//! test (`bad_inputs`, `faults`) with
//! `CASE=<part of a case name> cargo test --test integration bad_inputs::`.

// Test diagnostics may use eprintln! (a closed stderr in a test run is not a user's problem).
#![allow(clippy::print_stderr)]

mod fake_http;
mod fixtures;
mod harness;

mod adr;
mod agent_builder;
mod agent_turn;
mod agents_lookup;
mod ask_loop;
mod bad_inputs;
mod bounded_board;
mod budget;
mod circles;
mod closed_stderr;
mod config;
mod context;
mod context_ignore;
mod crash_resume;
mod decision_record;
mod dry_run;
mod examples;
mod fan_out;
mod faults;
mod flows;
mod fuzz_regressions;
mod gateway;
mod generate;
mod habits;
mod help;
mod hostile_inputs;
mod human;
mod layers;
mod llm_http;
mod llm_replay;
mod llm_resolve;
mod local_server;
mod meeting;
mod meeting_options;
mod meeting_outcomes;
mod multicall;
mod next_stage;
mod nothing_lost;
mod pm_step;
mod prompt_layout;
mod redaction_corpus;
mod report;
mod review;
mod sample_provider;
mod sanitise;
mod schemas;
mod secrets;
mod settings_agree;
mod start_line;
mod step_and_loops;
mod terminal;
mod traces;
mod url_password;
mod usage;
