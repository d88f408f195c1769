//! agent-meeting: small composable programs that run a decision meeting between LLM agents.
//!
//! The layers, bottom to top (docs/ARCHITECTURE.md#module-map-where-each-rule-lives); a module
//! imports only from its own layer's foundations or below, never upward, and the import graph
//! has no circle (`tests/it/layers.rs` keeps it so):
//!
//! 1. `text` (cut, fold, plural, the sanitiser, the Markdown line lexer) and `error`.
//! 2. `schema` (JSON Schema validation), `model` (the documents), `io` (reading documents,
//!    atomic writes, stderr notes).
//! 3. `llm`: providers, retries, the exchange log, cassettes; nothing above it.
//! 4. `loader` (agent configs) and `context` (collect-context).
//! 5. `meeting`: the rules several stages share (events, ask loop, prompts, whiteboard,
//!    circles, budget, review, the final report).
//! 6. `stage` (one module per stage program and the rule that orders them) and `otlp`
//!    (traces of a run folder).
//! 7. `settings`: the settings a program runs with, resolved once with their sources (the
//!    config file, each precedence, `--show-config`); `cli`: the programs' shared edge (the
//!    clap flag groups and their step to `settings`' types, `main_with`).
//! 8. `driver`: the `meeting` loop and its run folder.
//! 9. `mcp`: `agent-meeting mcp`, meetings as tools for coding agents (runs `meeting`); `github`:
//!    `agent-meeting github`, a meeting on a pull request posted as its comment (runs `meeting`).

pub mod error;
pub mod text;

pub mod io;
pub mod model;
pub mod schema;

pub mod llm;

pub mod context;
pub mod loader;

pub mod meeting;

pub mod otlp;
pub mod stage;

pub mod settings;

pub mod cli;

pub mod driver;

pub mod mcp;

pub mod github;

pub use error::{Error, Invalid, Result};
