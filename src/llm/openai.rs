//! The OpenAI Chat Completions provider (also any OpenAI-compatible server: Ollama, llama.cpp,
//! vLLM). Native structured output goes through `response_format: json_schema`, in strict mode
//! when the schema can be converted to OpenAI's strict subset.

use serde_json::{json, Map, Value};

use super::transport::{join_url, Http, Timeouts};
use super::{AttemptError, Message, Options, Provider, RawReply, Request, TokenUsage};

pub(crate) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub(crate) const DEFAULT_MODEL: &str = "gpt-4o-mini";

pub struct OpenAi {
    http: Http,
    base_url: String,
    api_key: String,
    mode: JsonMode,
    /// Azure OpenAI's `api-version`, when this is an Azure deployment (docs/design/llm.md#azure).
    azure: Option<String>,
}

/// How a JSON answer is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonMode {
    /// `response_format: json_schema` (strict when the schema allows it).
    Schema,
    /// `response_format: json_object`, the schema described in the system prompt
    /// (`--no-native-schema`).
    Object,
    /// No `response_format` at all, for servers that reject it (`--no-response-format`).
    Prompt,
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
        }
    }

    /// An Azure OpenAI resource (`base_url` is its endpoint): the model names the deployment,
    /// the key goes in `api-key`, and every request carries `api-version`.
    pub fn azure(mut self, api_version: &str) -> OpenAi {
        self.azure = Some(api_version.to_string());
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
        match &self.azure {
            Some(version) => (
                join_url(
                    &self.base_url,
                    &format!(
                        "openai/deployments/{}/chat/completions?api-version={}",
                        url_part(model),
                        url_part(version)
                    ),
                ),
                key.map(|k| ("api-key", k.to_string())),
            ),
            None => (
                join_url(&self.base_url, "chat/completions"),
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
pub(crate) fn request_body(req: &Request, opts: &Options, mode: JsonMode) -> Value {
    let system = super::system_text(req, mode != JsonMode::Schema);
    let mut response_format = None;
    if let Some(expect) = &req.expect {
        let schema = super::without_meta_keys(&expect.schema);
        if mode == JsonMode::Schema {
            let (schema, strict) = match to_strict(&schema) {
                Some(s) => (s, true),
                None => (schema, false),
            };
            response_format = Some(json!({
                "type": "json_schema",
                "json_schema": {"name": super::schema_name(&expect.name), "schema": schema, "strict": strict},
            }));
        } else if mode == JsonMode::Object {
            response_format = Some(json!({"type": "json_object"}));
        }
    }
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
        if self.azure.is_some() {
            "azure"
        } else {
            "openai"
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

    fn attempt(
        &mut self,
        _seq: u64,
        req: &Request,
        opts: &Options,
    ) -> Result<RawReply, AttemptError> {
        let body = request_body(req, opts, self.mode);
        // A local server (Ollama, llama.cpp) may run without a key: then no header at all.
        let (url, auth) = self.endpoint(&opts.model);
        let headers: Vec<(&str, &str)> = auth.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (resp, billed) = self.http.post_json(&url, &headers, &body)?;
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
        // Strict mode made optional fields nullable; the caller validates against its own
        // schema, where "absent" is allowed but null may not be, so the nulls we caused go.
        let text = match (
            &req.expect,
            body.pointer("/response_format/json_schema/strict"),
        ) {
            (Some(expect), Some(Value::Bool(true))) => {
                drop_added_nulls_in_text(&text, &expect.schema)
            }
            _ => text,
        };
        let usage = resp
            .get("usage")
            .and_then(reported_usage)
            .map(|u| u.billed(billed));
        if let Some(cut) = usage
            .as_ref()
            .and_then(|u| super::client::prompt_cut(req, u.tokens.prompt_tokens))
        {
            return Err(AttemptError::Fatal(cut));
        }
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
    let cached = usage
        .pointer("/prompt_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let mut u = TokenUsage::reported(usage, "prompt_tokens", "completion_tokens")?;
    u.tokens.cached_tokens = cached.min(u.tokens.prompt_tokens);
    Some(u)
}

fn drop_added_nulls_in_text(text: &str, schema: &Value) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(mut v) => {
            drop_added_nulls(&mut v, schema);
            v.to_string()
        }
        Err(_) => text.to_string(),
    }
}

/// Remove `null` values of properties that the original schema made optional and that do not
/// allow null themselves (the strict conversion added that null). Local `$ref`s are followed.
pub(crate) fn drop_added_nulls(value: &mut Value, schema: &Value) {
    drop_nulls_at(value, schema, schema, 0);
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) if r.starts_with("#/") => root.pointer(&r[1..]).unwrap_or(schema),
        _ => schema,
    }
}

fn drop_nulls_at(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    // Recursive `$ref`s cannot loop forever on finite JSON, but keep a bound anyway.
    if depth > 64 {
        return;
    }
    let schema = resolve(schema, root);
    match value {
        Value::Object(obj) => {
            let Some(props) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            obj.retain(|k, v| {
                !(v.is_null()
                    && !required.contains(&k.as_str())
                    && props.get(k).is_some_and(|p| !allows_null(resolve(p, root))))
            });
            for (k, v) in obj.iter_mut() {
                if let Some(p) = props.get(k) {
                    drop_nulls_at(v, p, root, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for v in items {
                    drop_nulls_at(v, item_schema, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}

fn allows_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => true,
    }
}

/// Convert a JSON Schema to OpenAI's strict structured-output form: every object lists all its
/// properties in `required` (the optional ones made nullable) and has
/// `additionalProperties: false`. `None` when the schema uses what strict mode cannot express
/// (free-form objects, arrays without `items`, `oneOf`, `allOf`, `not`, `patternProperties`, a
/// non-object root); the caller then sends it non-strict.
pub(crate) fn to_strict(schema: &Value) -> Option<Value> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    strict_node(schema)
}

/// Keywords strict mode accepts (besides the structural ones handled explicitly).
const STRICT_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "enum",
    "const",
    "$ref",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

fn strict_node(schema: &Value) -> Option<Value> {
    let Value::Object(map) = schema else {
        // `true`/`false` schemas accept anything or nothing: not expressible.
        return None;
    };
    for unsupported in [
        "oneOf",
        "allOf",
        "not",
        "patternProperties",
        "if",
        "then",
        "else",
        "dependentSchemas",
    ] {
        if map.contains_key(unsupported) {
            return None;
        }
    }
    let mut out = strict_keywords(map)?;
    let is_object = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => map.contains_key("properties"),
    };
    let is_array = match map.get("type") {
        Some(Value::String(t)) => t == "array",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
        _ => false,
    };
    // Strict mode wants every array's item schema; an array of anything is not expressible.
    if is_array && !map.contains_key("items") {
        return None;
    }
    if is_object {
        strict_properties(map, &mut out)?;
    }
    Some(Value::Object(out))
}

/// A schema node's keywords in strict form, its properties aside: sub-schemas converted,
/// keywords outside strict mode's subset dropped; `None` when a sub-schema is not expressible.
fn strict_keywords(map: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    for (k, v) in map {
        match k.as_str() {
            "properties" | "required" | "additionalProperties" => {}
            "items" => {
                out.insert(k.clone(), strict_node(v)?);
            }
            "anyOf" => {
                let alts = v
                    .as_array()?
                    .iter()
                    .map(strict_node)
                    .collect::<Option<Vec<_>>>()?;
                out.insert(k.clone(), Value::Array(alts));
            }
            "$defs" | "definitions" => {
                let mut defs = Map::new();
                for (name, d) in v.as_object()? {
                    defs.insert(name.clone(), strict_node(d)?);
                }
                out.insert(k.clone(), Value::Object(defs));
            }
            "format" if v.as_str().is_some_and(|f| STRICT_FORMATS.contains(&f)) => {
                out.insert(k.clone(), v.clone());
            }
            // Keywords outside strict mode's subset (`default`, `minLength`, `$schema`, ...) are
            // dropped: they only loosen decoding, the caller still validates against the
            // original schema.
            _ if STRICT_KEYWORDS.contains(&k.as_str()) => {
                out.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
    Some(out)
}

/// An object node's properties in strict form, into `out`: every property required, the
/// optional ones made nullable, no additional properties; `None` when not expressible.
fn strict_properties(map: &Map<String, Value>, out: &mut Map<String, Value>) -> Option<()> {
    if map
        .get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(false))
    {
        return None;
    }
    let props = match map.get("properties") {
        Some(Value::Object(p)) if !p.is_empty() => p,
        // An object with no declared properties is a free-form map in practice.
        _ => return None,
    };
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut new_props = Map::new();
    for (name, p) in props {
        let converted = strict_node(p)?;
        let converted = if required.contains(&name.as_str()) {
            converted
        } else {
            nullable(converted)
        };
        new_props.insert(name.clone(), converted);
    }
    out.insert("properties".into(), Value::Object(new_props));
    out.insert(
        "required".into(),
        Value::Array(props.keys().map(|k| json!(k)).collect()),
    );
    out.insert("additionalProperties".into(), Value::Bool(false));
    Some(())
}

fn nullable(mut schema: Value) -> Value {
    let Some(map) = schema.as_object_mut() else {
        return schema;
    };
    // An enum stays a branch of its own: grammar-constrained local servers (llama.cpp's
    // schema-to-grammar) read a type list before an enum and would drop the enum.
    if map.contains_key("enum") {
        return json!({"anyOf": [schema, {"type": "null"}]});
    }
    match map.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = t.clone();
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(ts)) => {
            if !ts.iter().any(|t| t == "null") {
                ts.push(json!("null"));
            }
        }
        Some(_) => {}
        None => return json!({"anyOf": [schema, {"type": "null"}]}),
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_makes_optional_nullable() {
        let s = json!({
            "type": "object",
            "properties": {
                "response": {"type": "string"},
                "key_points": {"type": "array", "items": {"type": "string"}},
                "kind": {"type": "string", "enum": ["a", "b"]},
                "cite": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}}
            },
            "required": ["response"]
        });
        let strict = to_strict(&s).unwrap();
        assert_eq!(
            strict,
            json!({
                "type": "object",
                "properties": {
                    "response": {"type": "string"},
                    "key_points": {"type": ["array", "null"], "items": {"type": "string"}},
                    "kind": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]},
                    "cite": {"type": ["array", "null"], "items": {"type": "object",
                        "properties": {"id": {"type": ["string", "null"]}},
                        "required": ["id"], "additionalProperties": false}}
                },
                "required": ["response", "key_points", "kind", "cite"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn strict_drops_unsupported_keywords() {
        let s = json!({"$schema": "x", "title": "T", "type": "object", "properties": {
            "n": {"type": "integer", "format": "uint32", "minimum": 0, "default": 1},
            "s": {"type": "string", "minLength": 1, "format": "date"}
        }, "required": ["n", "s"]});
        assert_eq!(
            to_strict(&s).unwrap(),
            json!({"type": "object", "properties": {
                "n": {"type": "integer", "minimum": 0},
                "s": {"type": "string", "format": "date"}
            }, "required": ["n", "s"], "additionalProperties": false})
        );
    }

    #[test]
    fn stage_schemas_convert_to_strict() {
        for (name, schema) in crate::model::schemas() {
            if name == "PMDecision" || name == "AgentTurnResult" {
                let strict = to_strict(&schema).unwrap_or_else(|| panic!("{name} not strict-able"));
                jsonschema::validator_for(&strict).unwrap();
            }
        }
    }

    #[test]
    fn added_nulls_dropped_through_refs() {
        let s = json!({"type": "object", "$defs": {"C": {"type": "object",
            "properties": {"id": {"type": "string"}, "quote": {"type": "string"}}, "required": ["id"]}},
            "properties": {"citations": {"type": "array", "items": {"$ref": "#/$defs/C"}}}});
        let mut v = json!({"citations": [{"id": "a", "quote": null}]});
        drop_added_nulls(&mut v, &s);
        assert_eq!(v, json!({"citations": [{"id": "a"}]}));
    }

    #[test]
    fn strict_refuses_free_form() {
        let s =
            json!({"type": "object", "properties": {"m": {"type": "object"}}, "required": ["m"]});
        assert_eq!(to_strict(&s), None);
        let s = json!({"type": "object", "properties": {"m": {"type": "string"}}, "additionalProperties": true});
        assert_eq!(to_strict(&s), None);
        assert_eq!(to_strict(&json!({"type": "array"})), None);
        let s = json!({"type": "object", "properties": {"tags": {"type": "array"}}});
        assert_eq!(to_strict(&s), None, "an array without items");
        let s = json!({"type": "object", "properties": {"m": {"oneOf": [{"type": "string"}]}}});
        assert_eq!(to_strict(&s), None);
    }

    #[test]
    fn added_nulls_dropped_real_nulls_kept() {
        let s = json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "array"}, "c": {"type": ["string", "null"]}
        }, "required": ["a"]});
        let mut v = json!({"a": "x", "b": null, "c": null});
        drop_added_nulls(&mut v, &s);
        assert_eq!(v, json!({"a": "x", "c": null}));
    }
}
