//! The OpenAI Responses API's wire format (docs/design/llm.md#responses-api): the body of
//! `POST {base}/responses` and what its reply means. Where a request goes is the OpenAI
//! provider's (`super::openai`, which calls this module); the JSON format asked for and the
//! strict conversion (`super::json_format`) and the usage's cached part
//! (`TokenUsage::reported_with_cache`) are one rule for both of its APIs.

use serde_json::{json, Map, Value};

use super::json_format::{undo_strict, JsonFormat, JsonMode, Subset};
use super::{AttemptError, Message, Options, RawReply, Request, TokenUsage};

/// The request body sent for `req`: the system message as `instructions`, the conversation
/// as `input` items, nothing stored at OpenAI (`store: false`: each call carries its whole
/// conversation, as on Chat Completions).
pub(crate) fn request_body(req: &Request, opts: &Options, mode: JsonMode) -> Value {
    let system = super::system_text(req, mode != JsonMode::Schema);
    let mut body = Map::new();
    body.insert("model".into(), json!(opts.model));
    if !system.is_empty() {
        body.insert("instructions".into(), json!(system));
    }
    let input: Vec<Value> = req.messages.iter().map(Message::to_json).collect();
    body.insert("input".into(), Value::Array(input));
    // Sent when set, as on Chat Completions: a model that takes none (a reasoning model) says
    // so in its 400, which names the setting to remove.
    if let Some(t) = opts.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = opts.max_tokens {
        body.insert("max_output_tokens".into(), json!(n));
    }
    body.insert("store".into(), json!(false));
    if let Some(format) = JsonFormat::of(req, mode, Subset::OpenAi) {
        let format = match format {
            JsonFormat::Schema {
                name,
                schema,
                strict,
            } => json!({"type": "json_schema", "name": name, "schema": schema, "strict": strict}),
            JsonFormat::Object => json!({"type": "json_object"}),
        };
        body.insert("text".into(), json!({ "format": format }));
    }
    Value::Object(body)
}

/// The text a reply stopped by the content filter carries when the model said nothing, so
/// the exchange log and the retry say why there is no answer (as a refusal's words would).
pub(crate) const FILTERED: &str = "[the provider's content filter stopped this reply]";

/// What a reply (`resp`, to the request `body` for `req`) means: the text of its `message`
/// items' `output_text` parts (reasoning items skipped; `output_text` at the top is only the
/// SDKs' shorthand, kept as a fallback for servers that send it), else its refusal; cut off
/// when the response is `incomplete` at `max_output_tokens`; a `failed` response is an attempt
/// error of the HTTP kind its code names. `redact` scrubs the server's words.
pub(crate) fn reply(
    resp: &Value,
    body: &Value,
    req: &Request,
    redact: impl Fn(&str) -> String,
) -> Result<RawReply, AttemptError> {
    let status = resp.get("status").and_then(Value::as_str);
    if status == Some("failed") {
        return Err(failed(resp.get("error"), &redact));
    }
    let Some(output) = resp.get("output").and_then(Value::as_array) else {
        return Err(AttemptError::Network(redact(&format!(
            "response has no output array: {}",
            crate::text::cut(&resp.to_string(), 200)
        ))));
    };
    let (mut text, mut refusal) = (String::new(), String::new());
    let parts = output
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
        .filter_map(|item| item.get("content").and_then(Value::as_array))
        .flatten();
    for part in parts {
        let words = |k: &str| part.get(k).and_then(Value::as_str).unwrap_or("");
        match part.get("type").and_then(Value::as_str) {
            Some("output_text") => text.push_str(words("text")),
            Some("refusal") => refusal.push_str(words("refusal")),
            _ => {}
        }
    }
    let reason = resp
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str);
    let incomplete = status == Some("incomplete");
    let text = if !text.is_empty() {
        text
    } else if !refusal.is_empty() {
        refusal
    } else if let Some(shorthand) = resp.get("output_text").and_then(Value::as_str) {
        shorthand.to_string()
    } else if incomplete && reason == Some("content_filter") {
        FILTERED.to_string()
    } else {
        String::new()
    };
    let strict = body.pointer("/text/format/strict") == Some(&json!(true));
    let usage = resp.get("usage").and_then(|u| {
        TokenUsage::reported_with_cache(
            u,
            "input_tokens",
            "output_tokens",
            "/input_tokens_details/cached_tokens",
        )
    });
    Ok(RawReply {
        text: undo_strict(text, req, strict),
        usage,
        truncated: incomplete && reason == Some("max_output_tokens"),
    })
}

/// A `failed` response as the HTTP error its code means: `server_error` (and a store's
/// timeout) a 500 and `rate_limit_exceeded` a 429, both retried; any other code (an invalid
/// prompt, a bad image) a 400, which fails the call — or is absorbed when it says the prompt
/// is too long, as an HTTP 400 saying so is.
fn failed(error: Option<&Value>, redact: &impl Fn(&str) -> String) -> AttemptError {
    let error = error.filter(|e| e.is_object());
    let code = error
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let status = match code {
        "rate_limit_exceeded" => 429,
        "" | "server_error" | "vector_store_timeout" => 500,
        _ => 400,
    };
    let words = match error {
        Some(e) => super::transport::error_message(&json!({ "error": e }).to_string()),
        None => "no error given".to_string(),
    };
    AttemptError::Http {
        status,
        message: redact(&format!(
            "the response failed (status \"failed\" in an HTTP 200 reply): {words}"
        )),
        retry_after: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ExpectedJson;

    fn req() -> Request {
        Request {
            caller: "arch".into(),
            system: "You are the architect.".into(),
            messages: vec![
                Message::user("Which database?"),
                Message::assistant("{\"response\": 1}"),
                Message::user("Not valid: response must be a string."),
            ],
            expect: Some(ExpectedJson {
                name: "agent turn".into(),
                schema: json!({"$schema": "x", "type": "object", "properties": {
                    "response": {"type": "string"}, "note": {"type": "string"}
                }, "required": ["response"]}),
            }),
            facts: Default::default(),
        }
    }

    fn opts(temperature: Option<f64>, max_tokens: Option<u32>) -> Options {
        Options {
            model: "gpt-5-pro".into(),
            temperature,
            max_tokens,
        }
    }

    fn no_redact(t: &str) -> String {
        t.to_string()
    }

    /// The documented body: instructions, input items with their roles, max_output_tokens,
    /// temperature only when set, store false, the strict schema under text.format.
    #[test]
    fn the_body_is_the_responses_shape() {
        let body = request_body(&req(), &opts(Some(0.3), Some(1200)), JsonMode::Schema);
        assert_eq!(body["model"], "gpt-5-pro");
        assert_eq!(body["instructions"], "You are the architect.");
        assert_eq!(
            body["input"],
            json!([
                {"role": "user", "content": "Which database?"},
                {"role": "assistant", "content": "{\"response\": 1}"},
                {"role": "user", "content": "Not valid: response must be a string."}
            ])
        );
        assert_eq!(body["max_output_tokens"], 1200);
        assert_eq!(body["temperature"], 0.3);
        assert_eq!(body["store"], false);
        assert!(body.get("messages").is_none() && body.get("max_tokens").is_none());
        assert!(body.get("response_format").is_none());
        let format = &body["text"]["format"];
        assert_eq!(format["type"], "json_schema");
        assert_eq!(format["name"], "agent_turn");
        assert_eq!(format["strict"], true);
        assert_eq!(
            format["schema"],
            crate::llm::json_format::to_strict(&crate::llm::without_meta_keys(
                &req().expect.unwrap().schema
            ))
            .unwrap(),
            "the one strict conversion, meta keys dropped"
        );
        let bare = request_body(&req(), &opts(None, None), JsonMode::Schema);
        assert!(bare.get("temperature").is_none() && bare.get("max_output_tokens").is_none());
    }

    /// --no-native-schema: JSON mode and the schema in the instructions; --no-response-format:
    /// no format at all; a plain-text call: none either.
    #[test]
    fn the_json_modes_give_their_formats() {
        let object = request_body(&req(), &opts(None, None), JsonMode::Object);
        assert_eq!(object["text"], json!({"format": {"type": "json_object"}}));
        let said = object["instructions"].as_str().unwrap();
        assert!(said.contains(crate::llm::SCHEMA_BLOCK_HEAD), "{said}");
        let prompt = request_body(&req(), &opts(None, None), JsonMode::Prompt);
        assert!(prompt.get("text").is_none());
        assert!(prompt["instructions"]
            .as_str()
            .unwrap()
            .contains(crate::llm::SCHEMA_BLOCK_HEAD));
        let plain = Request {
            expect: None,
            system: String::new(),
            ..req()
        };
        let body = request_body(&plain, &opts(None, None), JsonMode::Schema);
        assert!(body.get("text").is_none() && body.get("instructions").is_none());
    }

    fn response(output: Value, extra: Value) -> Value {
        let mut v = json!({
            "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5-pro",
            "output": output, "error": null, "incomplete_details": null,
            "usage": {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 600},
                      "output_tokens": 90, "output_tokens_details": {"reasoning_tokens": 40},
                      "total_tokens": 1090},
        });
        for (k, val) in extra.as_object().unwrap() {
            v[k] = val.clone();
        }
        v
    }

    fn message(parts: Value) -> Value {
        json!({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
               "content": parts})
    }

    fn parse(resp: &Value) -> Result<RawReply, AttemptError> {
        let body = request_body(&req(), &opts(None, Some(100)), JsonMode::Schema);
        reply(resp, &body, &req(), no_redact)
    }

    /// The text is the message items' output_text parts (a reasoning item is skipped); the
    /// nulls strict mode added are dropped; usage with the cached part.
    #[test]
    fn a_reply_is_its_message_text_without_reasoning() {
        let resp = response(
            json!([
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]},
                message(json!([
                    {"type": "output_text", "text": "{\"response\": \"Use", "annotations": []},
                    {"type": "output_text", "text": " Postgres.\", \"note\": null}", "annotations": []}
                ]))
            ]),
            json!({}),
        );
        let raw = parse(&resp).unwrap();
        assert_eq!(raw.text, r#"{"response":"Use Postgres."}"#);
        assert!(!raw.truncated);
        let t = raw.usage.unwrap().tokens;
        assert_eq!(
            (t.prompt_tokens, t.completion_tokens, t.cached_tokens),
            (1000, 90, 600)
        );
        assert!(!raw.usage.unwrap().estimated);
    }

    /// A refusal's words are the text, as on Chat Completions; a reply with no usage has none
    /// (the client estimates).
    #[test]
    fn a_refusal_is_the_text() {
        let mut resp = response(
            json!([message(
                json!([{"type": "refusal", "refusal": "I can't help with that."}])
            )]),
            json!({}),
        );
        resp.as_object_mut().unwrap().remove("usage");
        let raw = parse(&resp).unwrap();
        assert_eq!(raw.text, "I can't help with that.");
        assert_eq!(raw.usage, None);
        assert!(!raw.truncated);
    }

    /// Stopped at max_output_tokens: cut off; stopped by the content filter: not cut off, and
    /// with no words of the model's the text says why.
    #[test]
    fn an_incomplete_reply_says_why() {
        let cut = response(
            json!([message(
                json!([{"type": "output_text", "text": "{\"response\": \"Use Post"}])
            )]),
            json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}),
        );
        let raw = parse(&cut).unwrap();
        assert!(raw.truncated);
        assert_eq!(raw.text, "{\"response\": \"Use Post");
        let only_reasoning = response(
            json!([{"type": "reasoning", "id": "rs_1", "summary": []}]),
            json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}),
        );
        let raw = parse(&only_reasoning).unwrap();
        assert!(raw.truncated && raw.text.is_empty());
        let filtered = response(
            json!([]),
            json!({"status": "incomplete", "incomplete_details": {"reason": "content_filter"}}),
        );
        let raw = parse(&filtered).unwrap();
        assert!(!raw.truncated);
        assert_eq!(raw.text, FILTERED);
    }

    /// A failed response is the HTTP error of its kind: server_error retried as a 500,
    /// rate_limit_exceeded as a 429, an invalid prompt fatal as a 400; the server's words
    /// scrubbed and named as a failed response.
    #[test]
    fn a_failed_response_is_an_http_error_of_its_kind() {
        let fail = |code: &str, message: &str| {
            let resp = response(
                json!([]),
                json!({"status": "failed", "error": {"code": code, "message": message}}),
            );
            let body = request_body(&req(), &opts(None, None), JsonMode::Schema);
            match reply(&resp, &body, &req(), |t| {
                t.replace("sk-secret-0123456789", "[redacted]")
            }) {
                Err(AttemptError::Http {
                    status, message, ..
                }) => (status, message),
                other => panic!("{other:?}"),
            }
        };
        let (status, message) = fail("server_error", "The model failed. sk-secret-0123456789");
        assert_eq!(status, 500);
        assert!(message.contains("the response failed"), "{message}");
        assert!(
            message.contains("The model failed. [redacted] (server_error)"),
            "{message}"
        );
        assert_eq!(fail("rate_limit_exceeded", "Slow down.").0, 429);
        assert_eq!(fail("invalid_prompt", "Bad prompt.").0, 400);
        let resp = response(json!([]), json!({"status": "failed"}));
        let body = request_body(&req(), &opts(None, None), JsonMode::Schema);
        assert!(matches!(
            reply(&resp, &body, &req(), no_redact),
            Err(AttemptError::Http { status: 500, .. })
        ));
    }

    /// A body that is no response (no output array) is a network error, as Chat's without
    /// choices is; the SDKs' `output_text` shorthand is read when nothing else is there.
    #[test]
    fn a_reply_without_output_is_a_network_error() {
        let resp = json!({"object": "response", "status": "completed"});
        assert!(matches!(parse(&resp), Err(AttemptError::Network(_))));
        let short = response(json!([]), json!({"output_text": "{\"response\": \"ok\"}"}));
        assert_eq!(parse(&short).unwrap().text, r#"{"response":"ok"}"#);
    }
}
