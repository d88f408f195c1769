//! OpenTelemetry traces of a meeting (docs/design/otel.md#traces): the run folder's
//! `events.jsonl` and `llm.jsonl` made into OTLP spans (`spans`), encoded as OTLP/HTTP protobuf
//! (`proto`) and sent to a collector. The same function serves a live meeting (at its end) and a
//! finished run folder (`meeting --resume DIR --otlp-endpoint URL`). It reads the run folder
//! only: no stage is imported. An export that fails never fails the meeting: the caller shows
//! the error as a warning.

mod proto;
pub mod spans;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use spans::{build, parse_ts_ns, trace_id_of, Call, Kind, Span, SpanEvent, Trace, Value};

/// The standard variables (OpenTelemetry's OTLP exporter configuration): a traces endpoint is
/// used as it is, a general one gets `/v1/traces` added.
pub const TRACES_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
pub const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
pub const TRACES_HEADERS_ENV: &str = "OTEL_EXPORTER_OTLP_TRACES_HEADERS";
pub const HEADERS_ENV: &str = "OTEL_EXPORTER_OTLP_HEADERS";
/// A W3C `traceparent` the meeting's trace goes under (the MCP server sets it from a tool
/// call's `_meta.traceparent`; the name OpenTelemetry's environment carriers use).
pub const TRACEPARENT_ENV: &str = "TRACEPARENT";

/// Where a meeting's traces go, kept in `meeting.json` so a resumed meeting exports too. No
/// credentials: an endpoint with a user or password is refused, headers stay in the
/// environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtlpSettings {
    /// The whole URL the spans are posted to (`.../v1/traces`).
    pub traces_url: String,
    /// Prompts, answers and error texts included (`--otlp-content`).
    #[serde(default)]
    pub content: bool,
    /// The W3C `traceparent` the meeting's root span is a child of (`TRACEPARENT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// Where the traces go: `--otlp-endpoint` (`endpoint`), else the environment; None: no export.
/// A bad URL is a usage error.
pub fn target(endpoint: Option<&str>, content: bool) -> crate::Result<Option<OtlpSettings>> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (url, from) = match (endpoint, env(TRACES_ENDPOINT_ENV), env(ENDPOINT_ENV)) {
        (Some(flag), _, _) => (traces_url(flag), "--otlp-endpoint"),
        (None, Some(traces), _) => (traces.trim().to_string(), TRACES_ENDPOINT_ENV),
        (None, None, Some(base)) => (traces_url(&base), ENDPOINT_ENV),
        (None, None, None) => return Ok(None),
    };
    // The error names where the URL came from: a variable set long ago is easy to forget.
    check_endpoint(&url).map_err(|e| crate::Error::Usage(format!("{from}: {e}")))?;
    Ok(Some(OtlpSettings {
        traces_url: url,
        content,
        // A malformed one is no parent: the meeting's trace stands on its own.
        parent: env(TRACEPARENT_ENV).filter(|tp| spans::parse_traceparent(tp).is_some()),
    }))
}

/// A base endpoint with `/v1/traces` added (unless it ends with it already).
fn traces_url(base: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    if base.ends_with("/v1/traces") {
        base.to_string()
    } else {
        format!("{base}/v1/traces")
    }
}

/// An http(s) URL with a host and no user or password (which `meeting.json` would keep).
fn check_endpoint(url: &str) -> Result<(), String> {
    crate::llm::transport::check_base_url(url)?;
    let authority = url.split("://").nth(1).unwrap_or("").split('/').next();
    if authority.is_some_and(|a| a.contains('@')) {
        return Err(
            "a user or password in the URL would be saved in meeting.json; \
             give credentials as headers in OTEL_EXPORTER_OTLP_HEADERS"
                .into(),
        );
    }
    Ok(())
}

/// `OTEL_EXPORTER_OTLP_HEADERS`: `name=value` pairs separated by commas, values
/// percent-encoded; a pair without `=` is skipped.
pub fn parse_headers(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), percent_decode(v.trim())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).and_then(|&c| hex(c)),
            b.get(i + 2).and_then(|&c| hex(c)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why an export failed; shown as one warning line.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0}")]
    RunFolder(String),
    #[error("{url}: {message}")]
    Http { url: String, message: String },
}

/// The trace of a run folder: its events and exchange log (an unreadable log line is skipped).
pub fn trace_of_run(dir: &Path, content: bool) -> Result<Trace, ExportError> {
    let events_file = dir.join("events.jsonl");
    let events = if events_file.exists() {
        crate::meeting::events::read_events_file(&events_file)
            .map_err(|e| ExportError::RunFolder(e.to_string()))?
    } else {
        Vec::new()
    };
    let calls: Vec<Call> = match std::fs::read_to_string(dir.join("llm.jsonl")) {
        Ok(text) => text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
        Err(_) => Vec::new(),
    };
    let meeting = events
        .first()
        .map(|e| e.trace_id.clone())
        .unwrap_or_else(|| {
            let name = dir.file_name().unwrap_or_default();
            name.to_string_lossy().into_owned()
        });
    Ok(build(&meeting, &events, &calls, content))
}

/// The cost the run folder's newest report says (its ReportResult's `cost`), if any.
fn cost_of_run(dir: &Path) -> Option<crate::model::Cost> {
    let mut outs: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("-render-report.out.json"))
        .collect();
    outs.sort();
    let text = std::fs::read_to_string(dir.join(outs.last()?)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    serde_json::from_value(v.get("cost")?.clone()).ok()
}

/// The OTLP request body of a trace.
pub fn encode(trace: &Trace) -> Vec<u8> {
    let resource = [
        (
            "service.name".to_string(),
            Value::Str("agent-meeting".into()),
        ),
        (
            "service.version".to_string(),
            Value::Str(env!("CARGO_PKG_VERSION").into()),
        ),
    ];
    proto::export_request(&trace.trace_id, &resource, &trace.spans)
}

/// Export a run folder's trace to `target`; the number of spans sent.
pub fn export_run(dir: &Path, target: &OtlpSettings) -> Result<usize, ExportError> {
    let mut trace = trace_of_run(dir, target.content)?;
    trace.add_cost(&cost_of_run(dir));
    if let Some(parent) = target.parent.as_deref().and_then(spans::parse_traceparent) {
        trace.put_under(parent);
    }
    let body = encode(&trace);
    let headers = std::env::var(TRACES_HEADERS_ENV)
        .or_else(|_| std::env::var(HEADERS_ENV))
        .map(|h| parse_headers(&h))
        .unwrap_or_default();
    post(&target.traces_url, &headers, &body)?;
    Ok(trace.spans.len())
}

fn post(url: &str, headers: &[(String, String)], body: &[u8]) -> Result<(), ExportError> {
    // A collector's reply may echo the headers it was sent: they are its credentials.
    let secrets = crate::llm::transport::Secrets::new(url, headers.iter().map(|(_, v)| v.clone()));
    let fail = |message: String| ExportError::Http {
        url: crate::llm::transport::masked_url(url),
        message: secrets.scrub(&message),
    };
    let mut builder = ureq::Agent::config_builder();
    if crate::llm::transport::is_loopback(url) {
        builder = builder.proxy(None);
    }
    let agent = ureq::Agent::new_with_config(
        builder
            .http_status_as_error(false)
            // Never followed: the headers are the collector's credentials (docs/design/llm.md#redirects).
            .max_redirects(0)
            .timeout_global(Some(Duration::from_secs(30)))
            .timeout_connect(Some(Duration::from_secs(5)))
            .user_agent(concat!("agent-meeting/", env!("CARGO_PKG_VERSION")))
            .build(),
    );
    let mut request = agent
        .post(url)
        .header("content-type", "application/x-protobuf");
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    // The error text names no header: their values are credentials.
    let response = request.send(body).map_err(|e| fail(e.to_string()))?;
    let status = response.status().as_u16();
    if (300..400).contains(&status) {
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok());
        return Err(fail(crate::llm::transport::redirect_refused(
            status,
            location,
            "--otlp-endpoint",
        )));
    }
    if !(200..300).contains(&status) {
        let text = response.into_body().read_to_string().unwrap_or_default();
        return Err(fail(format!(
            "HTTP {status} {}",
            crate::text::cut(text.trim(), 200)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_get_the_traces_path_once() {
        assert_eq!(traces_url("http://h:4318"), "http://h:4318/v1/traces");
        assert_eq!(traces_url("http://h:4318/"), "http://h:4318/v1/traces");
        assert_eq!(traces_url("http://h/v1/traces"), "http://h/v1/traces");
        assert!(check_endpoint("http://h:6006/v1/traces").is_ok());
        assert!(check_endpoint("ftp://h").is_err());
        let e = check_endpoint("https://u:p@h/v1/traces").unwrap_err();
        assert!(e.contains("OTEL_EXPORTER_OTLP_HEADERS"), "{e}");
    }

    #[test]
    fn headers_are_comma_separated_and_percent_decoded() {
        assert_eq!(
            parse_headers("note=a%20b, x-team = ops,broken"),
            vec![
                ("note".to_string(), "a b".to_string()),
                ("x-team".to_string(), "ops".to_string())
            ]
        );
    }

    #[test]
    fn timestamps_parse_to_nanoseconds() {
        assert_eq!(parse_ts_ns("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            parse_ts_ns("2023-11-14T22:13:20.005Z"),
            Some(1_700_000_000_005_000_000)
        );
        assert_eq!(
            parse_ts_ns("2000-02-29T00:00:00Z"),
            Some(951_782_400_000_000_000)
        );
        assert_eq!(parse_ts_ns("yesterday"), None);
    }
}
