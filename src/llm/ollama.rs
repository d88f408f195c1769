//! The Ollama provider (docs/design/llm.md#ollama): Ollama's native `POST /api/chat`, not its
//! OpenAI-compatible `/v1`, because only the native API takes the context size per request
//! (`options.num_ctx`). `/v1` keeps the server's default context (2,048 tokens in older
//! versions, 4,096 in newer ones) and cuts a longer prompt without an error, so a meeting's documents
//! would be lost; here each request asks for a context that fits its prompt and its reply.
//! Also: `OLLAMA_HOST` as Ollama's own client reads it, structured output through `format`,
//! usage from `prompt_eval_count` / `eval_count`, and the remedy for a model not pulled.

use serde_json::{json, Map, Value};

use super::openai::JsonMode;
use super::transport::{join_url, masked_url, Http, Timeouts};
use super::{AttemptError, Message, Options, Provider, RawReply, Request, TokenUsage};

/// Where Ollama listens when `OLLAMA_HOST` names nothing else.
pub(crate) const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";
/// Ollama's own variable for its address (`host:port` or a URL), read as its CLI reads it.
pub const HOST_VAR: &str = "OLLAMA_HOST";
/// An optional key, sent as `Authorization: Bearer` (a hosted or proxied Ollama).
pub const KEY_VAR: &str = "OLLAMA_API_KEY";
/// The model when no flag, metadata or config file names one (Ollama has no default model).
pub const MODEL_VAR: &str = "OLLAMA_MODEL";
/// The server's own default context size; set in this environment too, it is the smallest
/// `num_ctx` sent ([`context_floor`]).
pub const CONTEXT_VAR: &str = "OLLAMA_CONTEXT_LENGTH";
/// The port Ollama listens on, for an `OLLAMA_HOST` that names none.
const DEFAULT_PORT: u16 = 11434;

/// The reply tokens allowed (`num_predict`) when a caller sets no `max_tokens`: without a limit
/// Ollama generates until the context is full, and the context is sized for the reply.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;

/// `num_ctx` is a multiple of this, and never below it (Ollama's own default context since
/// 0.6). A coarse step because Ollama reloads the model whenever `num_ctx` changes, and
/// concurrent requests (a fan-out) share a loaded model only with the same `num_ctx`: the
/// calls of one meeting, whose prompts differ by a few hundred tokens, then mostly ask for
/// the same size.
pub(crate) const CONTEXT_STEP: u32 = 4096;

pub struct Ollama {
    http: Http,
    base_url: String,
    api_key: String,
    mode: JsonMode,
    /// The smallest `num_ctx` sent ([`context_floor`]).
    floor: u32,
}

impl Ollama {
    /// `base_url` is the server's root (`http://127.0.0.1:11434`), `api_key` empty for none;
    /// `mode` says how a JSON answer is asked for (`format` with the schema, `format: "json"`,
    /// or nothing); `floor` is the smallest context sent.
    pub fn new(
        base_url: &str,
        api_key: &str,
        mode: JsonMode,
        floor: u32,
        timeouts: Timeouts,
    ) -> Ollama {
        Ollama {
            http: Http::new(timeouts, api_key, base_url),
            base_url: base_url.to_string(),
            api_key: api_key.to_string(),
            mode,
            floor,
        }
    }

    /// Gateway headers on every request (docs/design/llm.md#gateways).
    pub fn with_headers(mut self, headers: super::headers::Expanded) -> Ollama {
        self.http = self.http.with_headers(headers);
        self
    }

    /// An error of the server in words that say what to do: a model not pulled names `ollama
    /// pull`, a 404 without a model names the base URL; no connection asks whether Ollama runs.
    fn explain(&self, e: AttemptError, model: &str) -> AttemptError {
        let at = masked_url(&self.base_url);
        match e {
            AttemptError::Http {
                status: 404,
                message,
                retry_after,
            } => {
                let m = message.to_lowercase();
                let hint = if m.contains("model") && m.contains("not found") {
                    format!(
                        "the Ollama server at {at} has no model {model:?}: pull it with `ollama pull {model}`, or name one `ollama list` shows"
                    )
                } else {
                    format!(
                        "no Ollama API at {at}: {HOST_VAR} (or the config file's base_urls.ollama) names the server's root, such as {DEFAULT_BASE_URL}, without /v1"
                    )
                };
                AttemptError::Http {
                    status: 404,
                    message: format!("{message}; {hint}"),
                    retry_after,
                }
            }
            AttemptError::Unreachable(m) => AttemptError::Unreachable(format!(
                "{m} (is Ollama running? `ollama serve` starts it; {HOST_VAR} names its address)"
            )),
            other => other,
        }
    }
}

/// The smallest `num_ctx` sent: [`CONTEXT_STEP`], or `OLLAMA_CONTEXT_LENGTH` when it is set in
/// this environment and larger (the server's variable: a user who gives the model a larger
/// context gets no smaller one from a request). A value that is no number is bad input.
pub fn context_floor() -> Result<u32, String> {
    match std::env::var(CONTEXT_VAR) {
        Ok(v) if !v.trim().is_empty() => match v.trim().parse::<u32>() {
            Ok(n) => Ok(n.max(CONTEXT_STEP)),
            Err(_) => Err(format!(
                "{CONTEXT_VAR}: expected a number of tokens, such as 8192, got {:?}",
                crate::text::cut(&v, 40)
            )),
        },
        _ => Ok(CONTEXT_STEP),
    }
}

/// The context a request needs: its prompt, estimated as the layer estimates usage
/// (`client::estimate_usage`, about four characters a token) with a quarter more (code, JSON
/// and text that is not English take more tokens a character, and the chat template adds
/// some), plus the reply's `reply` tokens; rounded up to a multiple of [`CONTEXT_STEP`], at
/// least `floor`. Too small, Ollama would cut the prompt without a word; too large only costs
/// memory.
pub(crate) fn num_ctx(req: &Request, reply: u32, floor: u32) -> u32 {
    let prompt = super::client::estimate_usage(req, "").tokens.prompt_tokens;
    let need = prompt + prompt.div_ceil(4) + u64::from(reply);
    let step = u64::from(CONTEXT_STEP);
    let rounded = need.div_ceil(step).saturating_mul(step);
    u32::try_from(rounded).unwrap_or(u32::MAX).max(floor)
}

/// What `meeting --dry-run` says of the context the PM's first call, `req`, asks for with
/// `reply` tokens for its answer.
pub fn context_line(req: &Request, reply: u32) -> String {
    let floor = context_floor().unwrap_or(CONTEXT_STEP);
    let prompt = super::client::estimate_usage(req, "").tokens.prompt_tokens;
    format!(
        "ollama: num_ctx {} for the PM's first call (its prompt of about {prompt} tokens, {reply} for the reply; every call's context is sized to its prompt)",
        num_ctx(req, reply, floor)
    )
}

/// The request body sent for `req`: the messages (system first), `stream: false`, `format`
/// (the schema, or `"json"` with the schema in the system message), and `options` with the
/// context sized to the request (`num_ctx`), the reply's limit (`num_predict`) and the
/// temperature.
pub(crate) fn request_body(req: &Request, opts: &Options, mode: JsonMode, floor: u32) -> Value {
    let system = super::system_text(req, mode != JsonMode::Schema);
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.extend(req.messages.iter().map(Message::to_json));
    let reply = opts.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let mut options = Map::new();
    options.insert("num_ctx".into(), json!(num_ctx(req, reply, floor)));
    options.insert("num_predict".into(), json!(reply));
    if let Some(t) = opts.temperature {
        options.insert("temperature".into(), json!(t));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(opts.model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(false));
    if let Some(expect) = &req.expect {
        match mode {
            JsonMode::Schema => {
                body.insert("format".into(), super::without_meta_keys(&expect.schema));
            }
            JsonMode::Object => {
                body.insert("format".into(), json!("json"));
            }
            JsonMode::Prompt => {}
        }
    }
    body.insert("options".into(), Value::Object(options));
    Value::Object(body)
}

/// `OLLAMA_HOST` as a base URL, read as Ollama's own client reads it (spaces and quotes
/// around it trimmed): `host:port`, `host`
/// (port 11434), `:port` (this machine) or a URL; a listen-everywhere address (`0.0.0.0`,
/// `::`, what a server is often started with) is this machine, `127.0.0.1`, so it is reached
/// as a local server. A URL keeps its path; a trailing `/` is dropped.
pub fn host_url(value: &str) -> String {
    let value = value
        .trim()
        .trim_matches(|c| c == '"' || c == '\'')
        .trim()
        .trim_end_matches('/');
    let (scheme, rest, bare) = match value.split_once("://") {
        Some((scheme, rest)) => (scheme, rest, false),
        None => ("http", value, true),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(i) => authority.split_at(i + 1),
        None => ("", authority),
    };
    let (host, port) = split_host_port(hostport);
    let host = match host.trim_start_matches('[').trim_end_matches(']') {
        "" | "0.0.0.0" | "::" => "127.0.0.1".to_string(),
        h if h.parse::<std::net::Ipv6Addr>().is_ok() => format!("[{h}]"),
        h => h.to_string(),
    };
    // Only the bare form gets Ollama's port: a URL without one means its scheme's.
    let port = match (port, bare) {
        (Some(p), _) => format!(":{p}"),
        (None, true) => format!(":{DEFAULT_PORT}"),
        (None, false) => String::new(),
    };
    format!("{scheme}://{userinfo}{host}{port}{path}")
}

/// `host:port` → (`host`, `Some(port)`); a bracketed or bare IPv6 address keeps its colons.
fn split_host_port(hostport: &str) -> (&str, Option<&str>) {
    if let Some(rest) = hostport.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((host, tail)) => (host, tail.strip_prefix(':')),
            None => (hostport, None),
        };
    }
    if hostport.parse::<std::net::Ipv6Addr>().is_ok() {
        return (hostport, None);
    }
    match hostport.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (hostport, None),
    }
}

impl Provider for Ollama {
    fn name(&self) -> &str {
        "ollama"
    }

    fn is_local(&self) -> bool {
        self.http.is_local()
    }

    fn system_text(&self, req: &Request) -> String {
        super::system_text(req, self.schema_in_prompt())
    }

    fn counts_prompts(&self) -> bool {
        true
    }

    fn schema_in_prompt(&self) -> bool {
        self.mode != JsonMode::Schema
    }

    fn attempt(
        &mut self,
        _seq: u64,
        req: &Request,
        opts: &Options,
    ) -> Result<RawReply, AttemptError> {
        let body = request_body(req, opts, self.mode, self.floor);
        let url = join_url(&self.base_url, "api/chat");
        let auth = format!("Bearer {}", self.api_key);
        let headers: Vec<(&str, &str)> = if self.api_key.is_empty() {
            Vec::new()
        } else {
            vec![("authorization", auth.as_str())]
        };
        let (resp, billed) = self
            .http
            .post_json(&url, &headers, &body)
            .map_err(|e| self.explain(e, &opts.model))?;
        let Some(text) = resp.pointer("/message/content").and_then(Value::as_str) else {
            return Err(AttemptError::Network(self.http.redact(&format!(
                "response has no message.content: {}",
                crate::text::cut(&resp.to_string(), 200)
            ))));
        };
        let usage = reported_usage(&resp).map(|u| u.billed(billed));
        // `length`: the reply reached `num_predict`, or the context was full.
        let truncated = resp.get("done_reason").and_then(Value::as_str) == Some("length");
        Ok(RawReply {
            text: text.to_string(),
            usage,
            truncated,
        })
    }
}

/// Ollama's counts: `prompt_eval_count` (the prompt's tokens) and `eval_count` (the reply's);
/// `None` when either is missing (an older server leaves out the prompt's when it was all
/// cached), and the client estimates.
pub(crate) fn reported_usage(resp: &Value) -> Option<TokenUsage> {
    TokenUsage::reported(resp, "prompt_eval_count", "eval_count")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ExpectedJson;

    fn request(chars: usize) -> Request {
        Request {
            caller: "arch".into(),
            system: "You are the architect.".into(),
            messages: vec![Message::user("d".repeat(chars))],
            expect: Some(ExpectedJson {
                name: "agent turn".into(),
                schema: json!({"$schema": "x", "type": "object",
                    "properties": {"response": {"type": "string"}}, "required": ["response"]}),
            }),
            facts: Default::default(),
        }
    }

    fn opts(max_tokens: Option<u32>) -> Options {
        Options {
            model: "llama3.2".into(),
            temperature: Some(0.2),
            max_tokens,
        }
    }

    /// The native body: system first, no streaming, the schema as `format` (without its meta
    /// keys), and the options Ollama reads.
    #[test]
    fn the_body_asks_for_a_context_that_fits() {
        let req = request(24_000);
        let body = request_body(&req, &opts(Some(1200)), JsonMode::Schema, CONTEXT_STEP);
        assert_eq!(body["model"], "llama3.2");
        assert_eq!(body["stream"], false);
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "You are the architect."})
        );
        assert_eq!(body["messages"][1]["role"], "user");
        assert_eq!(
            body["format"],
            json!({"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]})
        );
        let options = &body["options"];
        assert_eq!(options["num_predict"], 1200);
        assert_eq!(options["temperature"], 0.2);
        let estimate = crate::llm::client::estimate_usage(&req, "")
            .tokens
            .prompt_tokens;
        let ctx = options["num_ctx"].as_u64().unwrap();
        assert!(ctx >= estimate + 1200, "{ctx} < {estimate} + 1200");
        assert_eq!(ctx % u64::from(CONTEXT_STEP), 0, "{ctx}");
        // 24,000 characters: more than Ollama's default context of 4,096 tokens.
        assert!(ctx > 4096, "{ctx}");
    }

    /// Sizes: the floor for a short prompt, a step more for a longer one; a reply with no
    /// limit is given one; the floor raised by the user is kept.
    #[test]
    fn num_ctx_is_rounded_and_floored() {
        assert_eq!(num_ctx(&request(100), 1200, CONTEXT_STEP), 4096);
        assert_eq!(num_ctx(&request(100), 1200, 32_768), 32_768);
        // ~6,000 tokens estimated, a quarter more, and 2000 for the reply: 9,500 → 12,288.
        assert_eq!(num_ctx(&request(24_000), 2000, CONTEXT_STEP), 12_288);
        let body = request_body(&request(100), &opts(None), JsonMode::Schema, 4096);
        assert_eq!(body["options"]["num_predict"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["options"]["num_ctx"], 8192);
        assert!(body["options"].get("temperature").is_some());
        let mut no_temp = opts(Some(10));
        no_temp.temperature = None;
        let body = request_body(&request(1), &no_temp, JsonMode::Schema, 4096);
        assert!(body["options"].get("temperature").is_none(), "{body}");
    }

    /// Without native structured output the schema is in the system message, once: JSON mode
    /// (`format: "json"`), or no `format` at all.
    #[test]
    fn without_native_schema_the_schema_is_in_the_prompt() {
        let req = request(10);
        for (mode, format) in [
            (JsonMode::Object, Some(json!("json"))),
            (JsonMode::Prompt, None),
        ] {
            let body = request_body(&req, &opts(Some(10)), mode, 4096);
            assert_eq!(body.get("format").cloned(), format, "{mode:?}");
            let system = body["messages"][0]["content"].as_str().unwrap();
            assert_eq!(system.matches(crate::llm::SCHEMA_BLOCK_HEAD).count(), 1);
        }
        let plain = Request {
            expect: None,
            ..request(10)
        };
        let body = request_body(&plain, &opts(Some(10)), JsonMode::Schema, 4096);
        assert!(body.get("format").is_none(), "{body}");
    }

    #[test]
    fn ollama_host_is_read_as_ollama_reads_it() {
        for (given, url) in [
            ("127.0.0.1:11434", "http://127.0.0.1:11434"),
            ("gpu-box:8080", "http://gpu-box:8080"),
            ("gpu-box", "http://gpu-box:11434"),
            (":11500", "http://127.0.0.1:11500"),
            ("0.0.0.0", "http://127.0.0.1:11434"),
            ("0.0.0.0:11434", "http://127.0.0.1:11434"),
            ("[::]:11434", "http://127.0.0.1:11434"),
            ("::1", "http://[::1]:11434"),
            ("[::1]:9", "http://[::1]:9"),
            ("http://gpu-box:11434/", "http://gpu-box:11434"),
            ("https://ollama.example.com", "https://ollama.example.com"),
            (
                "https://u:p@gw.example/ollama",
                "https://u:p@gw.example/ollama",
            ),
            ("http://0.0.0.0:11434", "http://127.0.0.1:11434"),
            (" localhost:11434 ", "http://localhost:11434"),
            ("\"gpu-box:8080\"", "http://gpu-box:8080"),
        ] {
            assert_eq!(host_url(given), url, "{given}");
            assert_eq!(crate::llm::transport::check_base_url(url), Ok(()), "{url}");
        }
    }

    #[test]
    fn usage_is_the_prompts_and_the_replys_counts() {
        let u = reported_usage(&json!({"prompt_eval_count": 900, "eval_count": 40})).unwrap();
        assert_eq!(
            (
                u.tokens.prompt_tokens,
                u.tokens.completion_tokens,
                u.estimated
            ),
            (900, 40, false)
        );
        assert_eq!(reported_usage(&json!({"eval_count": 40})), None);
    }
}
