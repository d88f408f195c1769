//! The LLM layer (docs/design/llm.md#llm-layer): one interface for the rest of the code, several
//! providers behind it.
//!
//! Callers build a [`Request`] (system prompt, messages, optional expected JSON schema) and
//! [`Options`] (model, temperature, ...), and call [`Client::call`]. They never see provider
//! differences. Every *attempt* (including transport retries) takes the next global call
//! number, which is the board's `usage.calls`, so replay cassettes stay in step across the
//! separate processes of one meeting.
//!
//! The stages reach it through the ask loop (`crate::meeting::ask`), which validates answers; this layer
//! imports nothing above it (only the documents, errors and file reading it needs).
//!
//! Modules: `request` (what a call sends), `reply` (what it gives back), `client` (retries,
//! call numbers, the exchange log), `provider` (one backend's interface), `schema_text` (the
//! expected schema as sent), `transport` (ureq, timeouts, error bodies), `openai` /
//! `responses` / `anthropic` / `ollama` (wire formats: OpenAI's Chat Completions and Responses API,
//! Anthropic's Messages, Ollama's native chat), `json_format` (how OpenAI's two APIs ask for JSON, its strict subset), `replay` (cassettes, `--record`), `sample` (answers made
//! from the request, no model), `resume` (answers from an earlier run's log), `parse` (tolerant JSON), `config` (the LLM configuration a program runs with), `resolve` (what each caller gets of it).

pub mod anthropic;
pub mod build;
mod client;
pub mod config;
pub mod headers;
pub(crate) mod json_format;
pub(crate) mod notation;
pub mod ollama;
pub mod openai;
pub mod pace;
pub mod parse;
pub mod prices;
mod provider;
pub mod replay;
mod reply;
mod request;
pub mod resolve;
mod responses;
pub mod resume;
pub mod sample;
mod schema_text;
pub mod transport;

pub use build::{client_for, client_for_caller, Clients};
pub use client::{Client, RetryPolicy, MAX_CHARS_PER_TOKEN};
pub use config::{ConfigDefaults, LlmConfig, OpenAiApi};
pub use parse::parse_json_reply;
pub use provider::{AttemptError, Provider, ProviderName, RawReply};
pub use reply::{LlmError, NoJson, Reply, TokenUsage, CUT_OFF};
pub use request::{
    default_max_tokens, ExpectedJson, FactDocument, Facts, Message, Options, Request, Role,
};
pub use resolve::{resolve, Resolved, Setting, Source};
pub use schema_text::SCHEMA_BLOCK_HEAD;
pub(crate) use schema_text::{schema_name, system_text, without_meta_keys};
pub use transport::Timeouts;
