//! agent-meeting: small composable programs that run a decision meeting between LLM agents.
//!
//! Modules follow the data flow of a meeting: `model` (types and validation), `loader` (agent
//! configs and meeting files), `context` (collection), `llm` (providers), `pm`, `turn`,
//! `board` (init and merge), `report`, `driver`. `io`, `error` and `cli` are the edges.

pub mod board;
pub mod cli;
pub mod context;
pub mod driver;
pub mod error;
pub mod events;
pub mod io;
pub mod llm;
pub mod loader;
pub mod model;
pub mod pm;
pub mod report;
pub mod turn;

pub use error::{Error, Invalid, Result};
