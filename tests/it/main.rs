//! The integration tests, as one test binary (each binary of its own would be linked again on
//! every change to the library), in two layers:
//!
//! - the shared layer: `harness` runs the programs (`cli`, `Workdir`, golden files, table
//!   tests); `fake_http` is the scripted HTTP server; `fixtures` is everything else two test
//!   modules share: the one pinned clock `NOW`, the cassette builder
//!   (`Cassette::new().pm(..).agent(..).fault(..).at(seq)`), the PM's decisions (`pm::call`,
//!   `pm::fan_out`, `pm::finish`), the report's sections, the demo meeting's commands, what a
//!   run folder holds, and the boards and scripted provider of the in-process stage tests;
//! - the test modules, each covering one program or one concern. A test module imports only
//!   from the shared layer, never from another test module
//!   (`layers::test_modules_import_only_the_shared_layer`): a helper a second module needs
//!   moves into `fixtures`.
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
mod cost;
mod council;
mod crash_resume;
mod daily;
mod decision_record;
mod dry_run;
mod examples;
mod fan_out;
mod faults;
mod flows;
mod fork;
mod fuzz_regressions;
mod gateway;
mod gemini;
mod generate;
mod github;
mod habits;
mod help;
mod hostile_inputs;
mod human;
mod layers;
mod llm_http;
mod llm_replay;
mod llm_resolve;
mod local_server;
mod mcp;
mod meeting;
mod meeting_options;
mod meeting_outcomes;
mod multicall;
mod next_stage;
mod nothing_lost;
mod ollama;
mod pace;
mod packaging;
mod pm_step;
mod prompt_layout;
mod quality_bench;
mod redaction_corpus;
mod report;
mod responses_api;
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
