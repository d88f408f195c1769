//! Secrets inside the text that is sent to models (docs/design/context.md#context-collection): every
//! excerpt, and the meeting's own brief and decision packet, is scanned before it enters the
//! packet, and each secret is replaced by `[REDACTED:<kind>]`, so the model never sees it and
//! a quote is verified against what the model saw.
//!
//! Two ways to know a secret, after the public scanners' rule sets:
//! - **By its shape**, for tokens whose format is documented (gitleaks,
//!   github.com/gitleaks/gitleaks, `config/gitleaks.toml`): `private-key` (PEM, OpenSSH, PGP,
//!   SSH2 `---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----` and PuTTY `.ppk` blocks), `jwt`,
//!   `anthropic-key`, `openai-key` (legacy, `sk-proj-`, `sk-svcacct-`, `sk-admin-`,
//!   `sk-None-`), `github-token`, `aws-access-key-id`, `slack-token` (`xox?-`, `xapp-`,
//!   `xoxe.`), `slack-webhook`, `google-api-key`, `google-oauth-token` (`ya29.`, `1//0`,
//!   `GOCSPX-`), `stripe-key`, `gitlab-token`, `npm-token`, `pypi-token`,
//!   `huggingface-token`, `sendgrid-key`, and `service-token` (Vault `hvs.`, Grafana,
//!   DigitalOcean, Shopify, age, Databricks, Pulumi, Linear, xAI, Groq, Replicate, Postman,
//!   RubyGems, Atlassian, Doppler, Sentry, 1Password, Twilio, Mailgun, Telegram bot tokens,
//!   Azure AD client secrets, Discord and Teams webhooks). The prefixes are kept strict and the lengths loosened, so test and example
//!   tokens count too.
//! - **By the name it is given**, whatever the value looks like (detect-secrets,
//!   github.com/Yelp/detect-secrets: `plugins/keyword.py`'s denylist and its assignment
//!   forms, `basic_auth.py`, `keyword_xml.py`; gitleaks' `generic-api-key`,
//!   `curl-auth-header` and `curl-auth-user`): a key whose last word says secret
//!   (`secret_name`: password, passwd, passphrase, secret, token, credentials, `*_pass`,
//!   `*_pwd`, any `*_key` but the ones that name a row or a public half, `auth` and
//!   `client-key-data` with base64-like values) assigned in shell, dotenv, YAML (also block
//!   scalars and continuation lines), TOML, JSON (also with escaped quotes, as in notebooks),
//!   INI, PHP, Python, JS, Java properties, XML elements and `key=… value=…` attributes,
//!   Dockerfile `ENV`, SQL `WITH PASSWORD '…'`, and CSV columns (`secret-assignment`); command-line credentials (`--password x`,
//!   `mysql -p…`, `curl -u user:…`, `redis-cli -a`, `sshpass -p`, `sqlcmd -P`; `command-line-secret`);
//!   HTTP headers (`X-Api-Key: …`, `Authorization: Token …`; `header-secret`, and
//!   `bearer-token`, `basic-auth`); URL userinfo in every form (`url-password`) and signed URL
//!   signatures (`sig=`).
//!
//! Not secrets (kept as written, so prose and configuration that names secrets stays
//! readable): empty values, placeholders (`${X}`, `$X`, `%X%`, `{{ x }}`, `<x>`, `your-…`,
//! `…`, `xxxx`, `****`, and words such as `null`, `true`, `string`, `required`, `example`,
//! `dummy`), references to where a secret lives (`os.environ[…]`, `get_token()`,
//! `settings.SECRET`, `process.env.TOKEN`, a variable named like a secret, a path), and
//! prose labels (`"forgot_password": "Forgot your password?"`). Well-known defaults such as
//! `changeme` are redacted: wherever they are deployed they are the password.
//!
//! Not covered (docs/design/context.md#context-collection says why): secrets with neither a documented
//! shape nor a secret-sounding name (`.pgpass` fields, a Terraform variable's `default`, a
//! secret in a plain sentence), password hashes (`$2b$…`), secrets split across separate
//! assignments, and encodings other than base64 of a value that has a secret name.
//!
//! The meeting's own topic, brief and decision packet pass the same filter (`redact_input`).
//!
//! Cost: one `RegexSet` pass of the rules' triggers over the text, then only the rules whose
//! trigger matched run their own regex; every regex runs in time linear in the text, and the
//! checks on a match look at its line and the few lines after it.

mod finders;
mod names;
mod rules;

use std::collections::BTreeMap;
use std::ops::Range;

use super::decode::Text;
use rules::{REGEXES, RULES, SET};

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
    // Secrets by start: (end, kind), never overlapping.
    let mut spans: BTreeMap<usize, (usize, &'static str)> = BTreeMap::new();
    let mut found = Vec::new();
    for i in matched.iter() {
        let rule = &RULES[i];
        for c in REGEXES[i].captures_iter(text) {
            found.clear();
            (rule.find)(text, &c, &mut found);
            for range in found.drain(..) {
                if range.is_empty() {
                    continue;
                }
                let before = spans.range(..=range.start).next_back();
                let after = spans.range(range.start..).next();
                let overlaps = before.is_some_and(|(_, (end, _))| *end > range.start)
                    || after.is_some_and(|(start, _)| *start < range.end);
                if !overlaps {
                    spans.insert(range.start, (range.end, rule.kind));
                }
            }
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut markers = Vec::with_capacity(spans.len());
    let mut from = 0;
    for (start, (end, kind)) in spans {
        out.push_str(&text[from..start]);
        let at = out.len();
        out.push_str(MARKER);
        out.push_str(kind);
        out.push(']');
        markers.push((kind, at..out.len()));
        from = end;
    }
    out.push_str(&text[from..]);
    Redacted { text: out, markers }
}

/// Redact the meeting's own text in place: its topic, brief and decision packet, each field
/// on its own. Returns the kinds of the markers, in field order.
pub(crate) fn redact_input(input: &mut crate::model::MeetingInput) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    let mut field = |s: &mut String| {
        let r = redact(s);
        if !r.markers.is_empty() {
            kinds.extend(r.markers.iter().map(|(k, _)| *k));
            *s = r.text;
        }
    };
    let b = &mut input.brief;
    let d = &mut input.decision_packet;
    field(&mut input.topic);
    field(&mut b.project_background);
    field(&mut b.current_state);
    for list in [
        &mut b.constraints,
        &mut b.success_criteria,
        &mut b.non_goals,
    ] {
        list.iter_mut().for_each(&mut field);
    }
    field(&mut d.decision_to_make);
    for list in [
        &mut d.options,
        &mut d.evaluation_dimensions,
        &mut d.required_questions,
    ] {
        list.iter_mut().for_each(&mut field);
    }
    field(&mut d.risk_tolerance);
    field(&mut d.time_horizon);
    kinds
}

/// Characters read past the excerpt when redacting, so a token the excerpt's end would cut is
/// still seen whole (and a key block without its END line is redacted to the end).
pub(crate) const LOOKAHEAD_CHARS: usize = 4096;

/// How every redaction marker starts (`[REDACTED:<kind>]`): what counts one in a text.
pub(crate) const MARKER: &str = "[REDACTED:";

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
            // A LiteLLM config: an environment variable by name, and prices per token.
            "      api_key: os.environ/UPSTREAM_KEY\n  master_key: os.environ/LITELLM_MASTER_KEY\n      input_cost_per_token: 0.00000015",
        ] {
            let r = redact(text);
            assert_eq!(r.text, text, "redacted: {:?}", r.markers);
        }
    }

    #[test]
    fn random_values_ending_like_a_variable_name_are_secrets() {
        // Built from pieces: a value that ends in `KEY` is not a reference to one.
        for (name, value) in [
            ("api_key", format!("Ab9Qx7Lm2{}", "KEY")),
            ("api_key", format!("OptK3y9Qx7OPT{}", "KEY")),
            ("STRIPE_KEY", format!("EvK3y9Qx7EVAL{}", "KEY")),
        ] {
            let text = format!("{name}={value}");
            assert_eq!(
                redact(&text).text,
                format!("{name}=[REDACTED:secret-assignment]"),
                "{text}"
            );
        }
        // Names of variables in one case per word stay references.
        for text in [
            "api_key_env: OPENAI_API_KEY",
            "password = DB_PASSWORD_2",
            "password = hashedPassword",
            "token = db_token_v2",
        ] {
            assert_eq!(redact(text).text, text);
        }
    }

    #[test]
    fn one_huge_line_is_redacted_like_short_ones() {
        // The checks on a match look at a bounded window of its line (minified JSON).
        let item = "{\"db_password\": \"Hunter2-x\", \"note\": \"caf\u{e9} \u{2014} ok\"}, ";
        let text = format!("[{}]", item.repeat(2000));
        let r = redact(&text);
        assert_eq!(r.markers.len(), 2000);
        assert!(!r.text.contains("Hunter2-x"));
        assert!(r.text.contains("caf\u{e9} \u{2014} ok"));
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
