//! The Anthropic Messages API provider. Structured output goes through one forced tool whose
//! input is the answer; with native mode off, the schema is described in the system prompt.

use serde_json::{json, Map, Value};

use super::transport::{join_url, Http, Timeouts};
use super::{AttemptError, Message, Options, Provider, RawReply, Request, TokenUsage};

pub(crate) const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub(crate) const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
pub(crate) const API_VERSION: &str = "2023-06-01";
/// The Messages API requires `max_tokens`.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;

pub struct Anthropic {
    http: Http,
    base_url: String,
    api_key: String,
    native_schema: bool,
}

impl Anthropic {
    pub fn new(
        base_url: &str,
        api_key: &str,
        native_schema: bool,
        timeouts: Timeouts,
    ) -> Anthropic {
        Anthropic {
            http: Http::new(timeouts, api_key, base_url),
            base_url: base_url.to_string(),
            api_key: api_key.to_string(),
            native_schema,
        }
    }

    /// Gateway headers on every request (docs/design/llm.md#gateways).
    pub fn with_headers(mut self, headers: super::headers::Expanded) -> Anthropic {
        self.http = self.http.with_headers(headers);
        self
    }
}

/// Anthropic's prompt-cache breakpoint: everything up to the marked block is cached for a few
/// minutes and read back at a tenth of the price by the next call with the same prefix.
fn cache_mark() -> Value {
    json!({"type": "ephemeral"})
}

/// One message: a user message with a stable block is sent as two text blocks, the stable one
/// carrying the second cache mark; any other message as plain text.
fn message_json(m: &Message) -> Value {
    let (stable, rest) = m.split_stable();
    if stable.is_empty() {
        return m.to_json();
    }
    let mut blocks = vec![json!({"type": "text", "text": stable, "cache_control": cache_mark()})];
    if !rest.is_empty() {
        blocks.push(json!({"type": "text", "text": rest}));
    }
    let mut v = m.to_json();
    v["content"] = Value::Array(blocks);
    v
}

/// The request body sent for `req`.
pub(crate) fn request_body(req: &Request, opts: &Options, native_schema: bool) -> Value {
    let system = super::system_text(req, !native_schema);
    let tool = req.expect.as_ref().filter(|_| native_schema).map(|expect| {
        (
            super::schema_name(&expect.name),
            super::without_meta_keys(&expect.schema),
        )
    });
    let messages: Vec<Value> = req.messages.iter().map(message_json).collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(opts.model));
    body.insert(
        "max_tokens".into(),
        json!(opts.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if !system.is_empty() {
        // The system is the same for every call of a caller (docs/design/prompts.md#prompt-layout): its end
        // is the first cache mark.
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": system, "cache_control": cache_mark()}]),
        );
    }
    body.insert("messages".into(), Value::Array(messages));
    if let Some(t) = opts.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some((name, schema)) = tool {
        body.insert(
            "tools".into(),
            json!([{
                "name": name,
                "description": "Give your answer as this tool's input. The input is the whole answer.",
                "input_schema": schema,
            }]),
        );
        body.insert("tool_choice".into(), json!({"type": "tool", "name": name}));
    }
    Value::Object(body)
}

impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn is_local(&self) -> bool {
        self.http.is_local()
    }

    fn system_text(&self, req: &Request) -> String {
        super::system_text(req, self.schema_in_prompt())
    }

    fn schema_in_prompt(&self) -> bool {
        !self.native_schema
    }

    fn attempt(
        &mut self,
        _seq: u64,
        req: &Request,
        opts: &Options,
    ) -> Result<RawReply, AttemptError> {
        let body = request_body(req, opts, self.native_schema);
        let url = join_url(&self.base_url, "v1/messages");
        let headers = [
            ("x-api-key", self.api_key.as_str()),
            ("anthropic-version", API_VERSION),
        ];
        let (resp, billed) = self.http.post_json(&url, &headers, &body)?;
        let Some(blocks) = resp.get("content").and_then(Value::as_array) else {
            let s = crate::text::cut(&resp.to_string(), 200);
            return Err(AttemptError::Network(
                self.http
                    .redact(&format!("response has no content array: {s}")),
            ));
        };
        let tool_name = body.pointer("/tool_choice/name").and_then(Value::as_str);
        let tool_input = blocks.iter().find(|b| {
            b.get("type").and_then(Value::as_str) == Some("tool_use")
                && (tool_name.is_none() || b.get("name").and_then(Value::as_str) == tool_name)
        });
        let text = match tool_input.and_then(|b| b.get("input")) {
            Some(input) => input.to_string(),
            None => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
        };
        let usage = resp
            .get("usage")
            .and_then(reported_usage)
            .map(|u| u.billed(billed));
        let truncated = resp.get("stop_reason").and_then(Value::as_str) == Some("max_tokens");
        Ok(RawReply {
            text,
            usage,
            truncated,
        })
    }
}

/// Anthropic's `usage` in the meeting's terms (docs/design/llm.md#llm-layer): its `input_tokens` are only
/// the uncached rest of the prompt, so `prompt_tokens` adds `cache_read_input_tokens` (also
/// `cached_tokens`) and `cache_creation_input_tokens` (also `cache_creation_tokens`), making it
/// every input token as OpenAI counts them.
pub(crate) fn reported_usage(usage: &Value) -> Option<TokenUsage> {
    let count = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    let u = TokenUsage::reported(usage, "input_tokens", "output_tokens")?;
    let (read, written) = (
        count("cache_read_input_tokens"),
        count("cache_creation_input_tokens"),
    );
    let mut u = u;
    u.tokens.prompt_tokens = u
        .tokens
        .prompt_tokens
        .saturating_add(read)
        .saturating_add(written);
    u.tokens.cached_tokens = read;
    u.tokens.cache_creation_tokens = written;
    Some(u)
}
