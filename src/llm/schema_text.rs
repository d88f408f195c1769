//! The expected JSON as the providers send it (docs/design/prompts.md#structured-output): a name they
//! accept, the schema without meta keys, and the schema in words in the system message.

use serde_json::Value;

use super::{notation, Request};

/// A name OpenAI and Anthropic accept for a schema or tool: `[A-Za-z0-9_-]{1,64}`.
pub(crate) fn schema_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if s.is_empty() {
        "answer".to_string()
    } else {
        s
    }
}

/// The schema without `$schema` / `$id`, which some servers refuse in tool or format schemas.
pub(crate) fn without_meta_keys(schema: &Value) -> Value {
    let mut s = schema.clone();
    if let Some(m) = s.as_object_mut() {
        m.remove("$schema");
        m.remove("$id");
    }
    s
}

/// The system message as sent: `req.system`, plus the expected schema in words when it is
/// not sent natively (`describe_schema`). Both the request body and the exchange log use it.
pub(crate) fn system_text(req: &Request, describe_schema: bool) -> String {
    let mut system = req.system.clone();
    if let (Some(expect), true) = (&req.expect, describe_schema) {
        system.push_str(&schema_in_words(&without_meta_keys(&expect.schema)));
    }
    system
}

/// The schema spelled out in the system prompt, for servers without native structured output:
/// one compact block, the one place the format is stated in full, as a type where the notation
/// says all of it (`notation`), else as the JSON Schema on one line.
pub(crate) fn schema_in_words(schema: &Value) -> String {
    match notation::type_notation(schema) {
        Some(t) => format!("\n{SCHEMA_BLOCK_HEAD} this type:\n{t}"),
        None => format!("\n{SCHEMA_BLOCK_HEAD} this JSON Schema:\n{schema}"),
    }
}

/// The words that open the schema block (tests count them: at most one per request). The
/// system message it follows already asks for one JSON object only (the meeting's, the
/// builder's), so the head says only what the block is.
pub const SCHEMA_BLOCK_HEAD: &str = "The JSON object must match";
