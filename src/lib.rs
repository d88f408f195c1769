//! agent-meeting: small composable programs that run a decision meeting between LLM agents.
//!
//! Modules follow the data flow of a meeting (docs/ARCHITECTURE.md#module-map-where-each-rule-lives): `model` (the documents),
//! `loader` (agent configs), `context` (collection), `stage` (one module per stage program and
//! the rule that orders them), `driver` (the `meeting` loop and its run folder). Beside them,
//! what several stages share: `ask` (the ask loop), `budget` (the token budget), `llm` (providers; imports nothing above
//! it), `schema`, `prompts`, `text`, `whiteboard`, `events`. `io`, `error` and `cli` are the edges.

pub(crate) mod ask;
pub mod budget;
pub mod circles;
pub mod cli;
pub mod config;
pub mod context;
pub mod driver;
pub mod error;
pub mod events;
pub(crate) mod final_report;
pub mod io;
pub mod llm;
pub mod loader;
pub mod model;
pub mod otlp;
pub mod prompts;
pub(crate) mod review;
pub mod schema;
pub mod stage;
pub mod text;
pub mod whiteboard;

pub use error::{Error, Invalid, Result};
