//! HTTP for the real providers: one ureq Agent with timeouts, JSON in and out, and provider
//! error bodies turned into [`AttemptError`]s. Retrying is the [`super::Client`]'s job.
//!
//! Every message that leaves this module has the API key scrubbed from it, because error texts
//! and bodies come from servers we do not control (some echo the credentials they rejected).

use std::io::ErrorKind;
use std::time::Duration;

use serde_json::Value;

use super::AttemptError;
use crate::text::cut;

/// Connect and read timeouts of one provider.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    pub connect: Duration,
    /// Waiting for the response head, and again for the whole body.
    pub read: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(120),
        }
    }
}

/// A JSON-over-HTTP client for one provider and one secret.
pub struct Http {
    agent: ureq::Agent,
    /// The key, the base URL's password and the `--header` values.
    secrets: Secrets,
    read_timeout: Duration,
    local: bool,
    /// `--header`s, sent on every request (docs/design/llm.md#gateways); their values are
    /// scrubbed like the key.
    extra: Vec<(String, String)>,
}

/// What must never be shown of a request: its credentials, scrubbed from every text a
/// server sends back before anyone sees it (error bodies, redirect targets, echoes). The one
/// redaction path for foreign text, shared by the providers and the trace exporter.
#[derive(Debug, Clone, Default)]
pub(crate) struct Secrets {
    values: Vec<String>,
    /// A URL's `user:password@`, shown as `user:***@` (see [`masked_url`]).
    userinfo: Option<String>,
}

impl Secrets {
    /// The secrets of a request to `url` carrying these credential `values`.
    pub(crate) fn new(url: &str, values: impl IntoIterator<Item = String>) -> Secrets {
        Secrets {
            values: values.into_iter().collect(),
            userinfo: userinfo(url).map(str::to_string),
        }
    }

    pub(crate) fn add(&mut self, values: impl IntoIterator<Item = String>) {
        self.values.extend(values);
    }

    /// `text` with every secret replaced (short values would match by accident).
    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut text = text.to_string();
        for secret in &self.values {
            text = redact(&text, secret);
        }
        match &self.userinfo {
            Some(info) => text.replace(info.as_str(), &masked_userinfo(info)),
            None => text,
        }
    }
}

impl Http {
    /// `base_url` only decides whether the environment's proxy applies: a local server
    /// (Ollama, llama.cpp, a test fake) is reached directly.
    pub fn new(timeouts: Timeouts, secret: &str, base_url: &str) -> Http {
        let local = is_loopback(base_url);
        let mut builder = ureq::Agent::config_builder();
        if local {
            builder = builder.proxy(None);
        }
        // A redirect is never followed: ureq would re-send every header but `Authorization` and
        // `Cookie` to wherever it points (docs/design/llm.md#redirects).
        let config = builder
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(timeouts.connect))
            .timeout_send_body(Some(timeouts.read))
            .timeout_recv_response(Some(timeouts.read))
            .timeout_recv_body(Some(timeouts.read))
            .user_agent(concat!("agent-meeting/", env!("CARGO_PKG_VERSION")))
            .build();
        Http {
            agent: ureq::Agent::new_with_config(config),
            secrets: Secrets::new(base_url, [secret.to_string()]),
            read_timeout: timeouts.read,
            local,
            extra: Vec::new(),
        }
    }

    /// Send these headers on every request too; one named like a provider header (a gateway's
    /// own `Authorization`) replaces it.
    pub fn with_headers(mut self, headers: super::headers::Expanded) -> Http {
        self.extra = headers.sent;
        self.secrets.add(headers.secrets);
        self
    }

    /// Whether the server is on this machine (see [`super::Provider::is_local`]).
    pub(crate) fn is_local(&self) -> bool {
        self.local
    }

    /// `text` with the key, the base URL's password and the header values scrubbed.
    pub(crate) fn redact(&self, text: &str) -> String {
        self.secrets.scrub(text)
    }

    /// POST `body` to `url`; a 2xx JSON body is returned with what a gateway says it billed
    /// for the call (LiteLLM's `x-litellm-response-cost`, US dollars), anything else becomes
    /// an attempt error.
    pub(crate) fn post_json(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> Result<(Value, Option<f64>), AttemptError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| AttemptError::Fatal(format!("cannot encode request: {e}")))?;
        let mut req = self
            .agent
            .post(url)
            .header("content-type", "application/json");
        let replaced = |k: &str| self.extra.iter().any(|(n, _)| n.eq_ignore_ascii_case(k));
        for (k, v) in headers.iter().filter(|(k, _)| !replaced(k)) {
            req = req.header(*k, *v);
        }
        for (k, v) in &self.extra {
            req = req.header(k.as_str(), v.as_str());
        }
        let mut resp = req.send(&bytes[..]).map_err(|e| self.map_error(e, url))?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let billed = resp
            .headers()
            .get(BILLED_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|usd| usd.is_finite() && *usd >= 0.0);
        if (300..400).contains(&status) {
            let location = resp.headers().get("location").and_then(|v| v.to_str().ok());
            return Err(AttemptError::Fatal(self.redact(&redirect_refused(
                status,
                location,
                "--base-url",
            ))));
        }
        let text = resp.body_mut().read_to_string();
        if !(200..300).contains(&status) {
            let text = text.unwrap_or_default();
            let message = self.redact(&error_message(&text));
            return Err(AttemptError::Http {
                status,
                message,
                retry_after,
            });
        }
        let text = text.map_err(|e| self.map_error(e, url))?;
        let value = serde_json::from_str(&text).map_err(|e| {
            AttemptError::Network(self.redact(&format!(
                "HTTP {status} response body is not JSON ({e}): {:?}",
                cut(&text, 201)
            )))
        })?;
        Ok((value, billed))
    }

    fn map_error(&self, e: ureq::Error, url: &str) -> AttemptError {
        // A slow server (a local model on a CPU) needs a longer wait, not more attempts.
        let timeout = |why: String| {
            AttemptError::Timeout(self.redact(&format!(
                "no answer from {url} within {} s ({why}); a slow server needs a longer --read-timeout",
                self.read_timeout.as_secs_f64()
            )))
        };
        match e {
            ureq::Error::Timeout(t) => timeout(t.to_string()),
            ureq::Error::Io(io)
                if matches!(io.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) =>
            {
                timeout(io.to_string())
            }
            ureq::Error::BadUri(u) => AttemptError::Fatal(self.redact(&format!("bad URL {u}"))),
            ureq::Error::HostNotFound | ureq::Error::ConnectionFailed => {
                AttemptError::Unreachable(self.redact(&format!("{url}: {e}")))
            }
            ureq::Error::Io(io)
                if matches!(
                    io.kind(),
                    ErrorKind::ConnectionRefused
                        | ErrorKind::AddrNotAvailable
                        | ErrorKind::HostUnreachable
                        | ErrorKind::NetworkUnreachable
                ) =>
            {
                AttemptError::Unreachable(self.redact(&format!("{url}: {io}")))
            }
            // A failed name lookup reaches ureq as std's I/O error of no stable kind: the host
            // is unknown, as unreachable as a refused connection (docs/design/failure-policy.md#failure-policy).
            ureq::Error::Io(io) if is_lookup_failure(&io) => {
                AttemptError::Unreachable(self.redact(&format!("{url}: unknown host: {io}")))
            }
            other => AttemptError::Network(self.redact(&format!("{url}: {other}"))),
        }
    }
}

/// The error for a redirect we do not follow: the status, where it points, and the remedy
/// (`setting` names what to change: a flag or a variable).
pub(crate) fn redirect_refused(status: u16, location: Option<&str>, setting: &str) -> String {
    let to = match location {
        Some(l) => format!("to {}", cut(l, 200)),
        None => "with no Location".to_string(),
    };
    format!(
        "HTTP {status} redirect {to} not followed: a request that carries credentials goes only \
         to the address you gave; set {setting} to the address that answers"
    )
}

/// Whether an I/O error is a failed host name lookup: std words every `getaddrinfo` failure
/// "failed to lookup address information: <reason>" and gives it no kind one can match.
fn is_lookup_failure(io: &std::io::Error) -> bool {
    io.to_string()
        .starts_with("failed to lookup address information")
}

/// Whether a URL points at this machine.
pub(crate) fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or("");
    let authority = authority
        .rsplit_once('@')
        .map(|(_, h)| h)
        .unwrap_or(authority);
    let host = if authority.starts_with('[') {
        authority.split(']').next().map(|h| &h[1..]).unwrap_or("")
    } else {
        authority.split(':').next().unwrap_or("")
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A URL's `user:password@` part, when it has a password (an empty user too: `redis://:…@host`).
fn userinfo(url: &str) -> Option<&str> {
    let start = url.find("://")? + 3;
    let rest = &url[start..];
    // A password may hold a `/`: the userinfo ends at the last `@` before any query.
    let end = rest.find(['?', '#', ' ', '\n']).unwrap_or(rest.len());
    let at = rest[..end].rfind('@')?;
    let info = &rest[..=at];
    info.contains(':').then_some(info)
}

/// `user:password@` as shown: `user:***@`.
fn masked_userinfo(info: &str) -> String {
    let user = info.split(':').next().unwrap_or("");
    format!("{user}:***@")
}

/// Whether `url` can be a provider's base URL: `http://` or `https://` and a host, no spaces;
/// else what was expected (a value that is no URL would be retried as a network error).
pub fn check_base_url(url: &str) -> Result<(), String> {
    let rest = ["http://", "https://"].iter().find_map(|scheme| {
        url.get(..scheme.len())
            .filter(|s| s.eq_ignore_ascii_case(scheme))
            .map(|_| &url[scheme.len()..])
    });
    let host = rest.map(|r| {
        let authority = r.split(['/', '?', '#']).next().unwrap_or("");
        authority.rsplit('@').next().unwrap_or("")
    });
    // What the HTTP client will parse: a bracket left open, a port above 65535 or a character
    // no URL holds would otherwise surface only as a network error at the first call.
    // The userinfo is left out: its password is masked everywhere, whatever it holds.
    let parses = || {
        let bare = userinfo(url).map_or(url.to_string(), |info| url.replacen(info, "", 1));
        bare.parse::<ureq::http::Uri>().is_ok_and(|uri| {
            uri.authority().is_some_and(|a| {
                let host_port = a.as_str().rsplit('@').next().unwrap_or("");
                let port = (!host_port.ends_with(']'))
                    .then(|| host_port.rsplit_once(':').map(|(_, p)| p))
                    .flatten();
                port.is_none_or(|p| p.parse::<u16>().is_ok())
            })
        })
    };
    match host {
        Some(h) if !h.is_empty() && !url.contains(char::is_whitespace) && parses() => Ok(()),
        _ => Err(format!(
            "expected an http(s) URL with a host, such as http://localhost:11434/v1, got {:?}",
            masked_url(url)
        )),
    }
}

/// A URL as it may be shown (errors, `--show-config`): a password in it becomes `***`.
pub fn masked_url(url: &str) -> String {
    match userinfo(url) {
        Some(info) => url.replacen(info, &masked_userinfo(info), 1),
        None => url.to_string(),
    }
}

pub(crate) fn redact(text: &str, secret: &str) -> String {
    if secret.len() < 8 {
        return text.to_string();
    }
    text.replace(secret, "[redacted]")
}

/// The header a LiteLLM gateway puts its own cost of a call in (US dollars).
pub(crate) const BILLED_HEADER: &str = "x-litellm-response-cost";

/// `Retry-After` in seconds (the HTTP-date form is rare from these APIs and ignored).
pub(crate) fn parse_retry_after(v: &str) -> Option<Duration> {
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)))
}

/// The provider's own words from an error body: `{"error": {"message": ...}}` (OpenAI and
/// Anthropic both), with OpenAI's `code` when it says more; else the body itself, cut short.
pub(crate) fn error_message(body: &str) -> String {
    // The provider's words reach stderr, the board and the report: sanitised, on one line
    // (docs/design/report.md#sanitising).
    crate::text::fold_ws(&crate::text::sanitise(&provider_words(body)))
}

fn provider_words(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let err = v.get("error");
        let message = err
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .or_else(|| err.and_then(Value::as_str))
            .or_else(|| v.get("message").and_then(Value::as_str));
        if let Some(m) = message {
            let code = err.and_then(|e| e.get("code")).and_then(Value::as_str);
            return match code {
                Some(c) if !m.contains(c) => format!("{m} ({c})"),
                _ => m.to_string(),
            };
        }
    }
    let t = body.trim();
    if t.is_empty() {
        "(empty error body)".to_string()
    } else {
        cut(t, 301)
    }
}

/// Whether an HTTP error means "the prompt is too long": not a configuration problem, so the
/// meeting absorbs it instead of stopping.
pub(crate) fn is_context_length(status: u16, message: &str) -> bool {
    if status == 413 {
        return true;
    }
    let m = message.to_lowercase();
    [
        "context_length_exceeded",
        "context length",
        "context window",
        "maximum context",
        "prompt is too long",
        "too many tokens",
        "reduce the length",
    ]
    .iter()
    .any(|k| m.contains(k))
}

/// Join a base URL (which may carry a path prefix) and an endpoint path.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_is_an_http_url_with_a_host() {
        for ok in [
            "http://localhost:11434/v1",
            "HTTPS://api.openai.com/v1",
            "http://u:p@h:1",
            "http://[::1]:8080/v1",
            "http://127.0.0.1:65535/v1",
        ] {
            assert_eq!(check_base_url(ok), Ok(()), "{ok}");
        }
        for bad in [
            "localhost:11434",
            "ftp://h/v1",
            "http://",
            "http:///v1",
            "http://h /v1",
            "",
            "http://[::1/v1",
            "http://h:99999/v1",
            "http://h:x/v1",
        ] {
            assert!(check_base_url(bad).is_err(), "{bad}");
        }
        let e = check_base_url("ws://user:s3cret@h").unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn a_base_urls_password_is_never_shown() {
        for (url, shown) in [
            ("http://user:pw@host/v1", "http://user:***@host/v1"),
            ("redis://:pw@host:6379", "redis://:***@host:6379"),
            (
                "https://u:p/a@ss@gw.example/v1",
                "https://u:***@gw.example/v1",
            ),
            ("http://user@host/v1", "http://user@host/v1"),
            ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
        ] {
            assert_eq!(masked_url(url), shown, "{url}");
        }
        let http = Http::new(
            Timeouts {
                connect: Duration::from_secs(1),
                read: Duration::from_secs(1),
            },
            "",
            "http://alice:s3cret/pw@127.0.0.1:9/v1",
        );
        let said = http.redact("http://alice:s3cret/pw@127.0.0.1:9/v1/chat/completions: refused");
        assert!(!said.contains("s3cret"), "{said}");
        assert!(said.contains("alice:***@127.0.0.1:9"), "{said}");
    }

    #[test]
    fn a_failed_name_lookup_is_recognised() {
        use std::net::ToSocketAddrs;
        // `.invalid` never resolves (RFC 2606), with or without a network.
        let e = "no-such-host.invalid:80".to_socket_addrs().unwrap_err();
        assert!(is_lookup_failure(&e), "{e}");
        let refused = std::io::Error::from(ErrorKind::ConnectionRefused);
        assert!(!is_lookup_failure(&refused));
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad key","type":"x"}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#),
            "too long (context_length_exceeded)"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(error_message("<html>oops</html>"), "<html>oops</html>");
        assert_eq!(error_message(""), "(empty error body)");
        assert_eq!(
            error_message(r#"{"error":{"message":"a\u001b]52;c;eA==\u0007\u202e\nb"}}"#),
            "a b",
            "sanitised, on one line"
        );
    }

    #[test]
    fn context_length_detection() {
        assert!(is_context_length(
            400,
            "This model's maximum context length is 8192 tokens"
        ));
        assert!(is_context_length(
            400,
            "prompt is too long: 201000 tokens > 200000 maximum"
        ));
        assert!(is_context_length(413, "request_too_large"));
        assert!(!is_context_length(400, "Invalid model"));
    }

    #[test]
    fn urls_keep_prefix() {
        assert_eq!(
            join_url("http://h:1/anthropic/", "/v1/messages"),
            "http://h:1/anthropic/v1/messages"
        );
        assert_eq!(
            join_url("https://api.openai.com/v1", "chat/completions"),
            "https://api.openai.com/v1/chat/completions"
        );
    }

    #[test]
    fn retry_after_values() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }

    #[test]
    fn loopback_hosts() {
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:9/x"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("https://127.0.0.1.example.com"));
    }

    #[test]
    fn redaction() {
        assert_eq!(
            redact("key sk-abcdefghij here", "sk-abcdefghij"),
            "key [redacted] here"
        );
        assert_eq!(redact("short", ""), "short");
    }
}
