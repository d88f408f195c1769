//! The OpenAI provider (also any OpenAI-compatible server: Ollama, llama.cpp, vLLM, and Azure
//! OpenAI's two URL shapes): where a request goes, and the Chat Completions wire format; the
//! Responses API's is `super::responses` (docs/design/llm.md#responses-api). Native structured
//! output goes through a `json_schema` format, in strict mode when the schema can be converted
//! to OpenAI's strict subset — one conversion for both wire formats (`super::json_format`).

use serde_json::{json, Map, Value};

use super::json_format::{undo_strict, JsonFormat, Subset};
use super::transport::{join_url, Http, Timeouts};
use super::{AttemptError, Message, Options, Provider, RawReply, Request, TokenUsage};

// How the provider is told to ask for JSON (`OpenAi::with_mode`).
pub use super::json_format::JsonMode;

pub(crate) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub(crate) const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// Gemini's OpenAI-compatible endpoint (docs/design/llm.md#gemini).
pub(crate) const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta/openai";
/// Google's alias of its current Flash model.
pub(crate) const GEMINI_DEFAULT_MODEL: &str = "gemini-flash-latest";

pub struct OpenAi {
    http: Http,
    base_url: String,
    api_key: String,
    mode: JsonMode,
    /// Azure OpenAI's URL shape, when this is an Azure resource (docs/design/llm.md#azure).
    azure: Option<AzureForm>,
    api: Api,
    /// The schema subset the endpoint takes: Gemini's on its endpoint
    /// (docs/design/llm.md#gemini).
    subset: Subset,
}

/// Which of OpenAI's two APIs a request takes (docs/design/llm.md#responses-api).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `POST {base}/chat/completions`, the default.
    Chat,
    /// `POST {base}/responses`: the only API of some models (`gpt-5-pro`, the `-codex` ones).
    Responses,
}

impl Api {
    /// The name `--openai-api` and `--show-config` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Responses => "responses",
        }
    }
}

/// The two URL shapes of an Azure OpenAI resource (docs/design/llm.md#azure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AzureForm {
    /// `{endpoint}/openai/deployments/{model}/chat/completions?api-version=V`: the model names
    /// the deployment in the path.
    Deployment { api_version: String },
    /// `{endpoint}/openai/v1/chat/completions` (or `/responses`): no `api-version`, the
    /// deployment's name is the body's `model`, as on OpenAI.
    V1,
}

impl AzureForm {
    /// The v1 form when the endpoint already ends in `/openai/v1` or the version is `v1`
    /// (docs/design/llm.md#azure), else the deployment form with that `api-version`.
    pub fn of(endpoint: &str, api_version: &str) -> AzureForm {
        if is_v1_endpoint(endpoint) || api_version.trim().eq_ignore_ascii_case("v1") {
            AzureForm::V1
        } else {
            AzureForm::Deployment {
                api_version: api_version.trim().to_string(),
            }
        }
    }
}

/// Whether an Azure endpoint is already the v1 base (`…/openai/v1`, a trailing `/` allowed).
fn is_v1_endpoint(endpoint: &str) -> bool {
    let path = endpoint.split(['?', '#']).next().unwrap_or("");
    path.trim_end_matches('/')
        .to_ascii_lowercase()
        .ends_with("/openai/v1")
}

impl OpenAi {
    /// `native_schema` false means [`JsonMode::Object`]; see [`OpenAi::with_mode`].
    pub fn new(base_url: &str, api_key: &str, native_schema: bool, timeouts: Timeouts) -> OpenAi {
        OpenAi {
            http: Http::new(timeouts, api_key, base_url),
            base_url: base_url.to_string(),
            api_key: api_key.to_string(),
            mode: if native_schema {
                JsonMode::Schema
            } else {
                JsonMode::Object
            },
            azure: None,
            api: Api::Chat,
            subset: Subset::OpenAi,
        }
    }

    /// Gemini's OpenAI-compatible endpoint: every schema sent in the subset Gemini takes
    /// (`json_format::to_gemini`), never in OpenAI's strict form.
    pub fn gemini(mut self) -> OpenAi {
        self.subset = Subset::Gemini;
        self
    }

    /// An Azure OpenAI resource (`base_url` is its endpoint): the key goes in `api-key`; in the
    /// deployment form the model names the deployment in the path and every request carries
    /// `api-version`, in the v1 form neither.
    pub fn azure(mut self, form: AzureForm) -> OpenAi {
        self.azure = Some(form);
        self
    }

    /// Send every request to this API (Chat Completions unless told).
    pub fn with_api(mut self, api: Api) -> OpenAi {
        self.api = api;
        self
    }

    /// Gateway headers on every request (docs/design/llm.md#gateways).
    pub fn with_headers(mut self, headers: super::headers::Expanded) -> OpenAi {
        self.http = self.http.with_headers(headers);
        self
    }

    /// Where a request for `model` goes, and its credential header.
    fn endpoint(&self, model: &str) -> (String, Option<(&'static str, String)>) {
        let key = (!self.api_key.is_empty()).then_some(self.api_key.as_str());
        let path = match self.api {
            Api::Chat => "chat/completions",
            Api::Responses => "responses",
        };
        let api_key = || key.map(|k| ("api-key", k.to_string()));
        match &self.azure {
            // The start refuses the Responses API on this form (`llm::build`): it is Azure's
            // on the v1 form only.
            Some(AzureForm::Deployment { api_version }) => (
                join_url(
                    &self.base_url,
                    &format!(
                        "openai/deployments/{}/{path}?api-version={}",
                        url_part(model),
                        url_part(api_version)
                    ),
                ),
                api_key(),
            ),
            Some(AzureForm::V1) if is_v1_endpoint(&self.base_url) => {
                (join_url(&self.base_url, path), api_key())
            }
            Some(AzureForm::V1) => (
                join_url(&self.base_url, &format!("openai/v1/{path}")),
                api_key(),
            ),
            None => (
                join_url(&self.base_url, path),
                key.map(|k| ("authorization", format!("Bearer {k}"))),
            ),
        }
    }

    pub fn with_mode(mut self, mode: JsonMode) -> OpenAi {
        self.mode = mode;
        self
    }
}

/// The request body sent for `req` (public so tests and the recorder can see it).
pub(crate) fn request_body(req: &Request, opts: &Options, mode: JsonMode, subset: Subset) -> Value {
    let system = super::system_text(req, mode != JsonMode::Schema);
    let response_format = JsonFormat::of(req, mode, subset).map(|f| match f {
        JsonFormat::Schema {
            name,
            schema,
            strict,
        } => json!({
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": strict},
        }),
        JsonFormat::Object => json!({"type": "json_object"}),
    });
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.extend(req.messages.iter().map(Message::to_json));
    let mut body = Map::new();
    body.insert("model".into(), json!(opts.model));
    body.insert("messages".into(), Value::Array(messages));
    if let Some(t) = opts.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = opts.max_tokens {
        body.insert("max_tokens".into(), json!(n));
    }
    if let Some(rf) = response_format {
        body.insert("response_format".into(), rf);
    }
    Value::Object(body)
}

impl Provider for OpenAi {
    fn name(&self) -> &str {
        match (&self.azure, self.subset) {
            (Some(_), _) => "azure",
            (None, Subset::Gemini) => "gemini",
            (None, Subset::OpenAi) => "openai",
        }
    }

    fn is_local(&self) -> bool {
        self.http.is_local()
    }

    fn system_text(&self, req: &Request) -> String {
        super::system_text(req, self.schema_in_prompt())
    }

    fn schema_in_prompt(&self) -> bool {
        self.mode != JsonMode::Schema
    }

    fn counts_prompts(&self) -> bool {
        true
    }

    fn attempt(
        &mut self,
        _seq: u64,
        req: &Request,
        opts: &Options,
    ) -> Result<RawReply, AttemptError> {
        let body = match self.api {
            Api::Chat => request_body(req, opts, self.mode, self.subset),
            Api::Responses => super::responses::request_body(req, opts, self.mode),
        };
        // A local server (Ollama, llama.cpp) may run without a key: then no header at all.
        let (url, auth) = self.endpoint(&opts.model);
        let headers: Vec<(&str, &str)> = auth.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (resp, billed) = self.http.post_json(&url, &headers, &body)?;
        if self.api == Api::Responses {
            let raw = super::responses::reply(&resp, &body, req, |t| self.http.redact(t))?;
            return Ok(RawReply {
                usage: raw.usage.map(|u| u.billed(billed)),
                ..raw
            });
        }
        let message = resp.pointer("/choices/0/message").ok_or_else(|| {
            AttemptError::Network(self.http.redact(&format!(
                "response has no choices[0].message: {}",
                crate::text::cut(&resp.to_string(), 200)
            )))
        })?;
        let text = message
            .get("content")
            .and_then(Value::as_str)
            .or_else(|| message.get("refusal").and_then(Value::as_str))
            .unwrap_or("")
            .to_string();
        let strict = body.pointer("/response_format/json_schema/strict") == Some(&json!(true));
        let text = undo_strict(text, req, strict);
        let usage = resp
            .get("usage")
            .and_then(reported_usage)
            .map(|u| u.billed(billed));
        let truncated = resp.pointer("/choices/0/finish_reason") == Some(&json!("length"));
        Ok(RawReply {
            text,
            usage,
            truncated,
        })
    }
}

/// A deployment name or API version as one URL path segment or query value: unreserved
/// characters kept, anything else percent-encoded.
fn url_part(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// OpenAI's `usage`: `prompt_tokens` (cached ones included), `completion_tokens`, and
/// `prompt_tokens_details.cached_tokens` when the server reports it (docs/design/llm.md#llm-layer).
pub(crate) fn reported_usage(usage: &Value) -> Option<TokenUsage> {
    TokenUsage::reported_with_cache(
        usage,
        "prompt_tokens",
        "completion_tokens",
        "/prompt_tokens_details/cached_tokens",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Azure's form: the v1 one when the endpoint ends in /openai/v1 (any case, a trailing /)
    /// or the version is v1, else the deployment one; each with its URL and `api-key`, OpenAI's
    /// with a bearer token; the Responses API's path beside Chat's.
    #[test]
    fn each_form_posts_where_it_should() {
        let deployment = |v: &str| AzureForm::Deployment {
            api_version: v.into(),
        };
        assert_eq!(
            AzureForm::of("https://r.openai.azure.com", "2024-10-21"),
            deployment("2024-10-21")
        );
        assert_eq!(
            AzureForm::of("https://r.openai.azure.com/OpenAI/v1/", "2024-10-21"),
            AzureForm::V1
        );
        assert_eq!(
            AzureForm::of("https://r.openai.azure.com", " V1 "),
            AzureForm::V1
        );
        assert_eq!(
            AzureForm::of("https://r.openai.azure.com/openai/v10", "x"),
            deployment("x")
        );
        let url = |base: &str, form: Option<AzureForm>, api: Api| {
            let mut p = OpenAi::new(base, "k", true, Timeouts::default()).with_api(api);
            p.azure = form;
            let (url, auth) = p.endpoint("team gpt");
            (url, auth.map(|(h, _)| h))
        };
        let root = "https://r.openai.azure.com/";
        assert_eq!(
            url(root, Some(deployment("2024-10-21")), Api::Chat),
            (
                "https://r.openai.azure.com/openai/deployments/team%20gpt/chat/completions?api-version=2024-10-21".into(),
                Some("api-key")
            )
        );
        assert_eq!(
            url(root, Some(AzureForm::V1), Api::Chat).0,
            "https://r.openai.azure.com/openai/v1/chat/completions"
        );
        assert_eq!(
            url(
                "https://r.openai.azure.com/openai/v1/",
                Some(AzureForm::V1),
                Api::Responses
            ),
            (
                "https://r.openai.azure.com/openai/v1/responses".into(),
                Some("api-key")
            )
        );
        assert_eq!(
            url("https://api.openai.com/v1", None, Api::Responses),
            (
                "https://api.openai.com/v1/responses".into(),
                Some("authorization")
            )
        );
    }
}
