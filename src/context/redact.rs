//! Secrets inside the files that are read (DESIGN.md#context-collection): every excerpt is
//! scanned before it enters the bundle, and each high-confidence token is replaced by
//! `[REDACTED:<kind>]`, so the model never sees it and a quote is verified against what the
//! model saw.
//!
//! The formats follow gitleaks' rules (github.com/gitleaks/gitleaks, `config/gitleaks.toml`:
//! `private-key`, `aws-access-token`, `github-pat`/`-oauth`/`-app-token`/`-fine-grained-pat`,
//! `slack-*-token`, `slack-webhook-url`, `openai-api-key`, `anthropic-api-key`,
//! `gcp-api-key`, `stripe-access-token`, `gitlab-pat`, `npm-access-token`, `pypi-upload-token`,
//! `huggingface-access-token`, `sendgrid-api-token`, `jwt`, and the bearer part of
//! `curl-auth-header`), loosened on length where the real format is
//! longer than test and example tokens, and kept strict on the prefix; the assignment rule
//! follows detect-secrets' `KeywordDetector` (github.com/Yelp/detect-secrets,
//! `detect_secrets/plugins/keyword.py`) and the URL rule its `BasicAuthDetector`.
//!
//! Cost: one `RegexSet` pass over the text, then only the kinds that matched run their own
//! regex.

use std::ops::Range;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use super::decode::Text;

/// One kind of secret. A pattern with a `secret` (or `secret_q`, `secret_bare`) group
/// replaces only that group, keeping the key or the user name around it; otherwise the whole
/// match. `real` rejects placeholders the pattern cannot tell from values.
struct Rule {
    kind: &'static str,
    pattern: &'static str,
    real: fn(&str) -> bool,
}

fn always(_: &str) -> bool {
    true
}

/// In order of precedence: where two rules' secrets overlap the earlier rule's wins (so
/// `api_key = "sk-…"` is an `openai-key`, and a token inside a key block is the block).
const RULES: [Rule; 21] = [
    Rule {
        kind: "private-key",
        // A header followed by key material (so a header quoted in prose stays: at most a
        // few header lines, escaped or real line breaks, then 16 base64 characters), to its
        // END line, or to the end of the text when there is none (the excerpt cut it).
        pattern: r"(?s)-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:\\n|[A-Za-z-]{1,30}:[^\n]*\n|[^A-Za-z0-9+/=]){0,12}?[A-Za-z0-9+/=]{16}(?:.*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|.*)",
        real: always,
    },
    Rule {
        kind: "jwt",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.(?:[A-Za-z0-9_-]{8,}={0,2})?",
        real: always,
    },
    Rule {
        kind: "anthropic-key",
        pattern: r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
        real: always,
    },
    Rule {
        kind: "openai-key",
        // `sk-` and at least 20 letters and digits (legacy), or a project, service-account
        // or admin key; a hyphenated word after `sk-` is prose.
        pattern: r"(?-u:\b)sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20,}(?-u:\b))",
        real: always,
    },
    Rule {
        kind: "github-token",
        pattern: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
        real: always,
    },
    Rule {
        kind: "aws-access-key-id",
        pattern: r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?-u:\b)",
        real: always,
    },
    Rule {
        kind: "slack-token",
        pattern: r"(?-u:\b)xox[abeoprs]-[A-Za-z0-9-]{10,}",
        real: always,
    },
    Rule {
        kind: "slack-webhook",
        pattern: r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}",
        real: always,
    },
    Rule {
        kind: "google-api-key",
        pattern: r"(?-u:\b)AIza[0-9A-Za-z_-]{30,}",
        real: always,
    },
    Rule {
        kind: "stripe-key",
        pattern: r"(?-u:\b)(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{10,}",
        real: always,
    },
    Rule {
        kind: "gitlab-token",
        pattern: r"(?-u:\b)gl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,}",
        real: always,
    },
    Rule {
        kind: "npm-token",
        pattern: r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
        real: always,
    },
    Rule {
        kind: "pypi-token",
        pattern: r"(?-u:\b)pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}",
        real: always,
    },
    Rule {
        kind: "huggingface-token",
        pattern: r"(?-u:\b)hf_[A-Za-z0-9]{30,}(?-u:\b)",
        real: always,
    },
    Rule {
        kind: "sendgrid-key",
        pattern: r"(?-u:\b)SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}",
        real: always,
    },
    Rule {
        kind: "bearer-token",
        // `Bearer <token>` (an HTTP header, a curl line): the word stays.
        pattern: r"(?i)(?-u:\b)bearer[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)",
        real: has_letter_and_digit,
    },
    Rule {
        kind: "url-password",
        // `scheme://user:password@host`: the user name stays.
        pattern: r"(?i)(?-u:\b)[a-z][a-z0-9+.-]{1,20}://[^\s/:@'\x22]{1,64}:(?P<secret>[^\s/@'\x22]{1,128})@",
        real: is_real_value,
    },
    Rule {
        kind: "secret-assignment",
        // A key ending in a secret word, `=`, `:`, `:=` or `=>`, and a value: quoted anywhere
        // on the line, or bare only when the rest of the line is empty or a comment, or a
        // `;` or `&` follows (connection strings, query strings), so "Password: see below"
        // is prose. The key and the quotes stay.
        pattern: r#"(?im)(?:^|[\s{,;(&?])(?:export[ \t]+)?["']?[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|[_.-]pass|[_.-]pwd|secret|token|api[_.-]?key|apikey|access[_.-]?key|private[_.-]?key|secret[_.-]?key|auth[_.-]?key|client[_.-]?key|account[_.-]?key|credentials?)["']?[ \t]*(?::=|=>|=|:)[ \t]*(?:"(?P<secret>[^"\n]{1,256})"|'(?P<secret_q>[^'\n]{1,256})'|(?P<secret_bare>[^\s"';,&]{1,256})(?:[ \t]*$|[ \t]+#[^\n]*$|[;&]))"#,
        real: is_real_value,
    },
    Rule {
        kind: "secret-assignment",
        // A config line whose key is an identifier (`db_password`, `app.secret_key`) holds
        // its value to the end of the line, spaces included (`correct horse battery staple`);
        // a plain word key ("Password: see below") is prose and left to the rule above.
        pattern: r#"(?im)^[ \t]*(?:export[ \t]+)?[A-Za-z0-9]+[_.-][A-Za-z0-9_.-]*?(?:password|passwd|passphrase|secret|token|api[_.-]?key|apikey|access[_.-]?key|private[_.-]?key)[ \t]*(?::=|=|:)[ \t]*(?P<secret>[^\s"'#|>&*!{\[][^\n]{0,255}?)[ \t]*$"#,
        real: is_real_value,
    },
    Rule {
        kind: "secret-assignment",
        // The same in XML (`<password>…</password>`, Maven's settings.xml).
        pattern: r"(?i)<(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key)>(?P<secret>[^<\n]{1,256})</",
        real: is_real_value,
    },
    Rule {
        kind: "basic-auth",
        // `Authorization: Basic <base64 user:password>` (a header, a curl line).
        pattern: r"(?i)authorization[ \t]*[:=][ \t]*[\x22']?basic[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})",
        real: always,
    },
];

static SET: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(RULES.iter().map(|r| r.pattern)).expect("redaction set"));
static REGEXES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|r| Regex::new(r.pattern).expect("redaction rule"))
        .collect()
});

/// Bearer tokens are random: a word after "bearer" with no digit is prose.
fn has_letter_and_digit(v: &str) -> bool {
    v.chars().any(|c| c.is_ascii_alphabetic()) && v.chars().any(|c| c.is_ascii_digit())
}

/// Values the assignment and URL rules leave alone: empty, placeholders (`${X}`, `<token>`,
/// `{{ x }}`, `%(x)s`, `your-key-here`, `xxxx`, `****`), references (`settings.SECRET`,
/// `get_token()`), markers already in place, and words that name a type or a state.
fn is_real_value(v: &str) -> bool {
    const WORDS: [&str; 27] = [
        "null",
        "none",
        "nil",
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "undefined",
        "empty",
        "required",
        "optional",
        "string",
        "str",
        "text",
        "bool",
        "boolean",
        "int",
        "integer",
        "number",
        "secret",
        "password",
        "pass",
        "token",
        "redacted",
        "hidden",
    ];
    let v = v.trim();
    let lower = v.to_lowercase();
    let lower = lower.trim_end_matches(['.', ',', ';', ':']);
    if lower.is_empty()
        || WORDS.contains(&lower)
        || v.starts_with(['$', '{', '<', '%', '['])
        || v.contains("[REDACTED:")
        || v.contains('(')
        || lower.starts_with("your")
        || v.contains("...")
        || v.contains('…')
    {
        return false;
    }
    let mut chars = lower.chars();
    let first = chars.next().unwrap_or(' ');
    if chars.all(|c| c == first) {
        return false;
    }
    // A dotted reference: `process.env.TOKEN`, `config.password`.
    let dotted = v.contains('.')
        && v.split('.').all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    !dotted
}

/// The redacted text and where its markers are.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Redacted {
    pub text: String,
    /// Each marker's kind and byte range in `text`, in text order.
    pub markers: Vec<(&'static str, Range<usize>)>,
}

/// Redact `text`. Cheap when there is nothing to redact: one `RegexSet` pass; then each kind
/// that matched finds its secrets in the original text, an earlier rule's secret wins over an
/// overlapping later one, and the text is rebuilt once.
pub fn redact(text: &str) -> Redacted {
    let matched = SET.matches(text);
    let mut spans: Vec<(Range<usize>, &'static str)> = Vec::new();
    for i in matched.iter() {
        let rule = &RULES[i];
        for c in REGEXES[i].captures_iter(text) {
            let secret = c
                .name("secret")
                .or_else(|| c.name("secret_q"))
                .or_else(|| c.name("secret_bare"))
                .or_else(|| c.get(0))
                .expect("a match");
            let range = secret.range();
            if (rule.real)(secret.as_str())
                && !spans
                    .iter()
                    .any(|(r, _)| r.start < range.end && range.start < r.end)
            {
                spans.push((range, rule.kind));
            }
        }
    }
    spans.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(text.len());
    let mut markers = Vec::with_capacity(spans.len());
    let mut from = 0;
    for (range, kind) in spans {
        out.push_str(&text[from..range.start]);
        let start = out.len();
        out.push_str("[REDACTED:");
        out.push_str(kind);
        out.push(']');
        markers.push((kind, start..out.len()));
        from = range.end;
    }
    out.push_str(&text[from..]);
    Redacted { text: out, markers }
}

/// Characters read past the excerpt when redacting, so a token the excerpt's end would cut is
/// still seen whole (and a key block without its END line is redacted to the end).
pub(crate) const LOOKAHEAD_CHARS: usize = 4096;

/// The excerpt of a file read to `max_chars + LOOKAHEAD_CHARS` characters: redacted first,
/// then cut to `max_chars` characters, never inside a marker (a marker the cut would split is
/// kept whole). `char_count` counts each marker as its own characters instead of the secret's.
/// Returns the kinds of the markers in the excerpt, in text order.
pub(crate) fn redact_excerpt(text: Text, max_chars: usize) -> (Text, Vec<&'static str>) {
    let r = redact(&text.excerpt);
    if r.markers.is_empty() {
        let end = char_end(&text.excerpt, max_chars);
        let mut excerpt = text.excerpt;
        excerpt.truncate(end);
        return (
            Text {
                excerpt,
                char_count: text.char_count,
            },
            Vec::new(),
        );
    }
    let char_count = text.char_count - text.excerpt.chars().count() + r.text.chars().count();
    let mut end = char_end(&r.text, max_chars);
    if let Some((_, m)) = r.markers.iter().find(|(_, m)| m.start < end && end < m.end) {
        end = m.end;
    }
    let kinds = r
        .markers
        .iter()
        .filter(|(_, m)| m.end <= end)
        .map(|(k, _)| *k)
        .collect();
    let mut excerpt = r.text;
    excerpt.truncate(end);
    (
        Text {
            excerpt,
            char_count,
        },
        kinds,
    )
}

/// The byte index after the first `n` characters of `s`.
fn char_end(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test tokens are built from pieces, so this file does not look like a leak to a scanner.
    fn tok(prefix: &str, unit: &str, n: usize) -> String {
        format!("{prefix}{}", unit.repeat(n))
    }

    fn kinds(text: &str) -> Vec<&'static str> {
        redact(text).markers.iter().map(|(k, _)| *k).collect()
    }

    #[test]
    fn each_kind_is_redacted_and_the_rest_kept() {
        let key_block = format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n{}\n-----END OPENSSH PRIVATE KEY-----",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ".repeat(2),
            "QyNTUxOQAAACBhbGljZQ=="
        );
        let jwt = format!(
            "{}.{}.{}",
            tok("eyJ", "hbGciOiJIUzI1NiJ9", 1),
            tok("eyJ", "zdWIiOiIxMjM0NTY3ODkwIn0", 1),
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
        );
        let cases: Vec<(String, &str)> = vec![
            (key_block, "private-key"),
            (jwt, "jwt"),
            (tok("sk-ant-api03-", "Ab1_", 20), "anthropic-key"),
            (tok("sk-proj-", "Ab1-", 12), "openai-key"),
            (tok("sk-", "Ab12", 12), "openai-key"),
            (tok("ghp_", "Ab12", 9), "github-token"),
            (tok("gho_", "Ab12", 9), "github-token"),
            (tok("ghs_", "Ab12", 9), "github-token"),
            (tok("github_pat_", "11AB_cd", 12), "github-token"),
            (tok("AKIA", "IOSFODNN7EXAMPL", 1) + "E", "aws-access-key-id"),
            (tok("ASIA", "Z2X3C4V5", 2), "aws-access-key-id"),
            (tok("xoxb-", "1234567890-", 3) + "abcdef", "slack-token"),
            (
                tok("https://hooks.slack.com/services/", "T000/B000/XXXX", 2),
                "slack-webhook",
            ),
            (tok("AIza", "SyA1b2C3d4", 4) + "xyz", "google-api-key"),
            (tok("sk_live_", "4eC39HqL", 3), "stripe-key"),
            (tok("rk_live_", "4eC39HqL", 3), "stripe-key"),
            (tok("glpat-", "Ab1_x", 5), "gitlab-token"),
            (tok("npm_", "Ab12Cd34Ef", 3) + "Gh56Ij", "npm-token"),
            (tok("pypi-AgEIcHlwaS5vcmc", "CJDk3ZTQ4", 6), "pypi-token"),
            (tok("hf_", "AbCd12EfGh", 3) + "Ij34", "huggingface-token"),
            (
                tok("SG.", "ngeVfQFYQlKU0ufo8x5d1A", 1)
                    + "."
                    + &tok("", "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc", 1),
                "sendgrid-key",
            ),
        ];
        for (secret, kind) in cases {
            let text = format!("before {secret} after\n");
            let r = redact(&text);
            assert_eq!(
                r.text,
                format!("before [REDACTED:{kind}] after\n"),
                "{secret}"
            );
            assert_eq!(kinds(&text), [kind]);
            let (k, range) = &r.markers[0];
            assert_eq!(
                (*k, &r.text[range.clone()]),
                (kind, &*format!("[REDACTED:{kind}]"))
            );
        }
        // Basic auth keeps the header and the scheme.
        let header = format!("Authorization: Basic {}", tok("dXNlcj", "pwYXNz", 2));
        assert_eq!(
            redact(&header).text,
            "Authorization: Basic [REDACTED:basic-auth]"
        );
    }

    #[test]
    fn assignments_keep_the_key_and_lose_the_value() {
        let k = "secret-assignment";
        for (text, want) in [
            ("password = \"hunter2\"", "password = \"[REDACTED:@]\""),
            (
                "  db_password: 'c0rrect horse'",
                "  db_password: '[REDACTED:@]'",
            ),
            ("DB_PASSWORD=s3cr3t-value", "DB_PASSWORD=[REDACTED:@]"),
            ("export API_KEY=abc123def", "export API_KEY=[REDACTED:@]"),
            (
                "secret: q9w8e7r6  # rotate",
                "secret: [REDACTED:@]  # rotate",
            ),
            (
                "{\"user\": \"a\", \"password\": \"pw1\"}",
                "{\"user\": \"a\", \"password\": \"[REDACTED:@]\"}",
            ),
            (
                "client_secret => 'zz-top'",
                "client_secret => '[REDACTED:@]'",
            ),
            ("authToken := \"t0k3n\"", "authToken := \"[REDACTED:@]\""),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [REDACTED:@]",
            ),
            ("DB_PASS=pa55w0rd", "DB_PASS=[REDACTED:@]"),
            // Review findings: a `#` inside a value, a value with spaces on a config line,
            // XML elements.
            ("password=abc#123xyz", "password=[REDACTED:@]"),
            (
                "db_password: correct horse battery staple",
                "db_password: [REDACTED:@]",
            ),
            (
                "<server><password>Hunter2Secret99</password></server>",
                "<server><password>[REDACTED:@]</password></server>",
            ),
            (
                "Server=db;User Id=app;Password=p4ss;Encrypt=true",
                "Server=db;User Id=app;Password=[REDACTED:@];Encrypt=true",
            ),
            (
                "AccountName=acme;AccountKey=bG9uZ2tleQ==;EndpointSuffix=core",
                "AccountName=acme;AccountKey=[REDACTED:@];EndpointSuffix=core",
            ),
            (
                "GET /x?user=a&token=abc123&page=2",
                "GET /x?user=a&token=[REDACTED:@]&page=2",
            ),
        ] {
            assert_eq!(redact(text).text, want.replace('@', k), "{text}");
        }
        // The token rule wins where both match; the key stays.
        let t = format!("api_key = \"{}\"", tok("sk-", "Ab12", 12));
        assert_eq!(redact(&t).text, "api_key = \"[REDACTED:openai-key]\"");
        let h = format!(
            "curl -H 'Authorization: Bearer {}'",
            tok("", "a1B2c3D4e5", 3)
        );
        assert_eq!(
            redact(&h).text,
            "curl -H 'Authorization: Bearer [REDACTED:bearer-token]'"
        );
        let url = "db: postgres://app:Xy7-pq2@db.internal:5432/app";
        assert_eq!(
            redact(url).text,
            "db: postgres://app:[REDACTED:url-password]@db.internal:5432/app"
        );
    }

    #[test]
    fn prose_and_placeholders_are_not_secrets() {
        for text in [
            "Use sk-learn or the sk-1234 key from the demo; a key looks like sk-....",
            "export OPENAI_API_KEY=sk-...\nexport ANTHROPIC_API_KEY=\"sk-ant-…\"",
            "sk-ant is the prefix of Anthropic keys; sk-proj-short too.",
            "A password is required. The password: see the vault below.",
            "Password: ask the on-call engineer for it",
            "Rotate every secret yearly; token budgets are set per team.",
            "max_tokens: 4000\ntoken_count = 12\npasswordless: true\nsecret_santa_list.md",
            "password: ${DB_PASSWORD}\ntoken: \"{{ secrets.TOKEN }}\"\napi_key: <your-api-key>",
            "password = os.environ[\"DB_PASSWORD\"]\ntoken = get_token()\nsecret: settings.SECRET",
            "password: null\nsecret: true\napi_key: \"\"\npassword: \"********\"\ntoken: xxxxxxxx",
            "GitHub tokens start with ghp_ and AWS key ids with AKIA.",
            "The file starts with `-----BEGIN RSA PRIVATE KEY-----` and ends with an END line.",
            "Between -----BEGIN EC PRIVATE KEY----- and -----END EC PRIVATE KEY----- is base64.",
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
            "The JWT header eyJhbGciOi is base64 of {\"alg\":.",
            "Connect with postgres://user:password@localhost/db or https://example.com:8080/x.",
            "AKIA keys are 20 characters: AKIA followed by 16.",
            "xoxb- tokens are Slack bot tokens; AIza keys belong to Google.",
            "Task-oriented risk-adjusted mask-wearing desk-bound tasks.",
            "The bearer token travels in a header; bearer responsibilities-and-obligations apply.",
            "We bypass: the cache; compass: north; the PWD=/home/me variable.",
            "hf_ and glpat- and npm_ prefixes; SG.x.y is not a key.",
            "app.secret_key: ${SECRET_KEY}\ndb_password: <set in the vault>",
            "Use <password>...</password> in settings.xml; Authorization: Basic auth is off.",
        ] {
            let r = redact(text);
            assert_eq!(r.text, text, "redacted: {:?}", r.markers);
        }
    }

    #[test]
    fn a_key_block_cut_before_its_end_is_redacted_to_the_end() {
        let text = format!(
            "intro\n-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\n{}",
            "MIIEowIBAAKCAQEA".repeat(5)
        );
        assert_eq!(redact(&text).text, "intro\n[REDACTED:private-key]");
        // Escaped newlines, as in a service-account JSON.
        let json = format!(
            "{{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{}\\n-----END PRIVATE KEY-----\\n\", \"x\": 1}}",
            "MIIEvQIBADANBgkq".repeat(3)
        );
        assert_eq!(
            redact(&json).text,
            "{\"private_key\": \"[REDACTED:private-key]\\n\", \"x\": 1}"
        );
    }

    #[test]
    fn the_excerpt_is_cut_after_redaction_and_never_splits_a_marker() {
        let secret = tok("ghp_", "Ab12", 9);
        let text = format!("012345678 {secret} tail");
        let full = |t: &str| Text {
            excerpt: t.to_string(),
            char_count: t.chars().count(),
        };
        // The token straddles the cut at 20 characters: it is still redacted, kept whole.
        let (t, k) = redact_excerpt(full(&text), 20);
        assert_eq!(t.excerpt, "012345678 [REDACTED:github-token]");
        assert_eq!(k, ["github-token"]);
        assert_eq!(
            t.char_count,
            "012345678 [REDACTED:github-token] tail".chars().count()
        );
        // Cut before the token: nothing redacted in the excerpt.
        let (t, k) = redact_excerpt(full(&text), 5);
        assert_eq!((t.excerpt.as_str(), k.len()), ("01234", 0));
        // Nothing to redact: the plain cut.
        let (t, k) = redact_excerpt(full("héllo wörld"), 4);
        assert_eq!((t.excerpt.as_str(), t.char_count, k.len()), ("héll", 11, 0));
    }
}
