//! docs/design/context.md#context-collection: secret files never reach the model
//! (names), and secrets inside the files that are read are redacted (content).

use serde_json::Value;

use crate::harness::Workdir;

/// Files that are secrets by their name alone: none of them is ever read.
const SECRET_FILES: [&str; 12] = [
    "id_ed25519",
    "id_ecdsa",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    "server.pfx",
    "terraform.tfstate",
    ".htpasswd",
    "service-account.json",
    "secrets.yaml",
    "sub/aws-credentials.txt",
];

/// Ordinary files beside them, collected as always.
const ORDINARY_FILES: [&str; 6] = [
    "README.md",
    "id_rsa.pub",
    "keys.md",
    "my_credentials.md",
    "secrets-management.md",
    "sub/notes.txt",
];

/// A meeting file in `w` whose one source is the folder `sec/`.
fn folder_meeting(w: &Workdir) -> std::path::PathBuf {
    w.write(
        "m.yaml",
        "topic: t\ndecision_packet: {decision_to_make: d}\ncontext_sources:\n  - {type: directory, path: sec, purpose: p, max_files: 50}\n",
    )
}

fn documents(v: &Value) -> Vec<String> {
    v["context_bundle"]["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["document_id"].as_str().unwrap().to_string())
        .collect()
}

fn skipped(v: &Value) -> Vec<(String, String)> {
    v["context_bundle"]["skipped_paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn secret_file_names_are_skipped_sensitive() {
    let w = Workdir::new();
    for f in SECRET_FILES {
        w.write(format!("sec/{f}"), "user=alice\n");
    }
    for f in ORDINARY_FILES {
        w.write(format!("sec/{f}"), "ordinary text\n");
    }
    let m = folder_meeting(&w);
    let v: Value = w
        .cli("collect-context")
        .arg("--meeting-file")
        .arg(&m)
        .run()
        .success()
        .json();
    let mut want_docs: Vec<String> = ORDINARY_FILES.iter().map(|f| format!("sec/{f}")).collect();
    want_docs.sort();
    assert_eq!(documents(&v), want_docs);
    let mut want_skipped: Vec<(String, String)> = SECRET_FILES
        .iter()
        .map(|f| (format!("sec/{f}"), "sensitive".to_string()))
        .collect();
    want_skipped.sort();
    assert_eq!(skipped(&v), want_skipped);

    // --allow-sensitive keeps its meaning for names: all of them are collected.
    let v: Value = w
        .cli("collect-context")
        .arg("--meeting-file")
        .arg(&m)
        .arg("--allow-sensitive")
        .run()
        .success()
        .json();
    assert_eq!(
        documents(&v).len(),
        SECRET_FILES.len() + ORDINARY_FILES.len()
    );
    assert_eq!(skipped(&v), []);
}

// ---------------------------------------------------------------------------------------------
// Content: secrets inside the documents that are read

/// Test tokens are built from pieces, so this file does not look like a leak to a scanner.
fn rep(prefix: &str, unit: &str, n: usize) -> String {
    format!("{prefix}{}", unit.repeat(n))
}

/// One line per kind: the text around the secret, the secret, and the kind it is redacted as.
fn token_lines() -> Vec<(String, String, &'static str)> {
    let key = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n{}\n-----END RSA PRIVATE KEY-----",
        rep("MIIEowIBAAKCAQEA", "q83vEjRWeJA", 4),
        "x9Kf2b7Q1mZ0sY=="
    );
    let jwt = format!(
        "{}.{}.{}",
        rep("eyJ", "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", 1),
        rep("eyJ", "zdWIiOiIxMjM0NTY3ODkwIn0", 1),
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    );
    vec![
        ("Deploy key:".into(), key, "private-key"),
        (
            "AWS id".into(),
            rep("AKIA", "Q3EGXPMLZ7TN", 1) + "4VRB",
            "aws-access-key-id",
        ),
        (
            "session".into(),
            rep("ASIA", "Z2X3C4V5", 2),
            "aws-access-key-id",
        ),
        (
            "GitHub PAT".into(),
            rep("ghp_", "x7Rk2Pq9", 4) + "aB3d",
            "github-token",
        ),
        (
            "OAuth".into(),
            rep("gho_", "x7Rk2Pq9", 4) + "aB3d",
            "github-token",
        ),
        (
            "user-to-server".into(),
            rep("ghu_", "x7Rk2Pq9", 4) + "aB3d",
            "github-token",
        ),
        (
            "app".into(),
            rep("ghs_", "x7Rk2Pq9", 4) + "aB3d",
            "github-token",
        ),
        (
            "refresh".into(),
            rep("ghr_", "x7Rk2Pq9", 4) + "aB3d",
            "github-token",
        ),
        (
            "fine-grained".into(),
            rep("github_pat_", "11ABCDEFG0_x7Rk2Pq9", 4),
            "github-token",
        ),
        (
            "Slack bot".into(),
            rep("xoxb-", "2409871234-", 2) + "Zk3pQ8rT5vW2yB6nD1fH4jL7",
            "slack-token",
        ),
        (
            "Slack user".into(),
            rep("xoxp-", "2409871234-", 3) + "a1b2c3d4e5f6",
            "slack-token",
        ),
        (
            "OpenAI".into(),
            rep("sk-", "T3Blbk9Jx7Rk2Pq", 3),
            "openai-key",
        ),
        (
            "OpenAI project".into(),
            rep("sk-proj-", "Ab_3-xYz9Q", 8),
            "openai-key",
        ),
        (
            "Anthropic".into(),
            rep("sk-ant-api03-", "Zx9_Qw-8Rt", 9) + "AA",
            "anthropic-key",
        ),
        (
            "Google".into(),
            rep("AIza", "SyD4k9Lm2Np", 3) + "Q7rTu",
            "google-api-key",
        ),
        (
            "Stripe".into(),
            rep("sk_live_", "51HxQk2eZvKYlo2C", 2),
            "stripe-key",
        ),
        (
            "Stripe restricted".into(),
            rep("rk_live_", "51HxQk2eZvKYlo2C", 2),
            "stripe-key",
        ),
        ("token header".into(), jwt, "jwt"),
    ]
}

/// A config-like document: assignments whose values go and whose keys stay.
const CONFIG: &str = "[database]\nhost = db.internal\npassword = \"c0rrect-h0rse\"\n\
secret: q9w8e7r6t5\napi_key=Zm9vYmFyYmF6cXV4\nport = 5432\n";
const CONFIG_REDACTED: &str =
    "[database]\nhost = db.internal\npassword = \"[REDACTED:secret-assignment]\"\n\
secret: [REDACTED:secret-assignment]\napi_key=[REDACTED:secret-assignment]\nport = 5432\n";

/// A prose document full of near misses around one real token (`LEAK`): only that one is a
/// secret.
const PROSE: &str = "# Secrets policy\n\n\
The old deploy token LEAK was revoked.\n\
Every password must be rotated yearly; the password is never written down.\n\
Password: ask the on-call engineer for it.\n\
OpenAI keys start with sk- and a key like sk-1234 is a demo value; sk-learn is a library.\n\
GitHub tokens start with ghp_ or github_pat_, AWS key ids with AKIA, Slack tokens with xoxb-.\n\
A PEM file begins with -----BEGIN RSA PRIVATE KEY----- and ends with an END line.\n\
Set max_tokens: 4000 and token_count = 12; passwordless: true.\n\
password: ${DB_PASSWORD}\napi_key: <your-api-key>\ntoken = get_token()\n\
Connect with postgres://user:password@localhost/db; the JWT header eyJhbGciOi is base64.\n\
Task-oriented, risk-adjusted, desk-bound work.\n";

/// A project with `docs/tokens.md` (every kind), `docs/config.ini` and `docs/prose.md`.
fn content_project(w: &Workdir) -> std::path::PathBuf {
    let mut tokens = String::from("# Leaked by mistake\n");
    for (label, secret, _) in token_lines() {
        tokens.push_str(&format!("{label}: {secret} (end)\n"));
    }
    w.write("docs/tokens.md", tokens);
    w.write("docs/config.ini", CONFIG);
    w.write("docs/prose.md", PROSE.replace("LEAK", &prose_leak()));
    w.write(
        "m.yaml",
        "topic: t\ndecision_packet: {decision_to_make: d}\ncontext_sources:\n  - {type: directory, path: docs, purpose: p, max_chars_per_file: 100000}\n",
    )
}

fn doc_of<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["context_bundle"]["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["document_id"] == id)
        .unwrap_or_else(|| panic!("no {id}"))
}

#[test]
fn embedded_tokens_are_redacted_by_kind_and_counted() {
    let w = Workdir::new();
    let m = content_project(&w);
    let out = w.cli("collect-context").arg("--meeting-file").arg(&m).run();
    let v: Value = out.success().json();

    let d = doc_of(&v, "docs/tokens.md");
    let excerpt = d["excerpt"].as_str().unwrap();
    let mut want = String::from("# Leaked by mistake\n");
    for (label, _, kind) in token_lines() {
        want.push_str(&format!("{label}: [REDACTED:{kind}] (end)\n"));
    }
    assert_eq!(excerpt, want);
    for (_, secret, _) in token_lines() {
        let summary = v["context_bundle"]["summary"].as_str().unwrap();
        let middle = &secret[secret.len() / 2 - 8..secret.len() / 2 + 8];
        assert!(!summary.contains(middle), "{middle} reached the summary");
    }
    assert_eq!(d["redactions"], token_lines().len());
    assert_eq!(d["char_count"], want.chars().count());

    let c = doc_of(&v, "docs/config.ini");
    assert_eq!(c["excerpt"], CONFIG_REDACTED);
    assert_eq!(c["redactions"], 3);

    // The warning names each document, the count and the kinds (first appearance order).
    out.stderr_has(
        "collect-context: docs/config.ini: 3 secrets redacted (secret-assignment)\n",
    )
    .stderr_has(&format!(
        "collect-context: docs/tokens.md: {} secrets redacted (private-key, aws-access-key-id, github-token, slack-token, openai-key, anthropic-key, google-api-key, stripe-key, jwt)\n",
        token_lines().len()
    ))
    .stderr_has("collect-context: docs/prose.md: 1 secret redacted (github-token)\n");
}

fn prose_leak() -> String {
    rep("ghp_", "Qm4Zt7Wc", 4) + "9kLs"
}

#[test]
fn near_misses_in_prose_are_not_redacted() {
    let w = Workdir::new();
    let m = content_project(&w);
    let out = w.cli("collect-context").arg("--meeting-file").arg(&m).run();
    let v: Value = out.success().json();
    let d = doc_of(&v, "docs/prose.md");
    assert_eq!(
        d["excerpt"],
        PROSE.replace("LEAK", "[REDACTED:github-token]")
    );
    assert_eq!(d["redactions"], 1);
    out.stderr_has("collect-context: docs/prose.md: 1 secret redacted (github-token)\n");

    // A document without secrets serialises exactly as before: no `redactions` field.
    w.write("docs/prose.md", PROSE.replace("LEAK ", ""));
    let v: Value = w
        .cli("collect-context")
        .arg("--meeting-file")
        .arg(&m)
        .run()
        .success()
        .json();
    let d = doc_of(&v, "docs/prose.md");
    assert_eq!(d["excerpt"], PROSE.replace("LEAK ", ""));
    let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "document_id",
            "source_path",
            "source_type",
            "purpose",
            "excerpt",
            "char_count"
        ]
    );
}

#[test]
fn no_redact_keeps_secrets_and_says_it_is_dangerous() {
    let w = Workdir::new();
    let m = content_project(&w);
    let out = w
        .cli("collect-context")
        .arg("--meeting-file")
        .arg(&m)
        .arg("--no-redact")
        .run();
    let v: Value = out.success().json();
    out.stderr_is("");
    let d = doc_of(&v, "docs/tokens.md");
    for (_, secret, _) in token_lines() {
        assert!(d["excerpt"].as_str().unwrap().contains(&secret));
    }
    assert!(d.get("redactions").is_none());
    assert_eq!(doc_of(&v, "docs/config.ini")["excerpt"], CONFIG);
    w.cli("collect-context")
        .arg("--help")
        .run()
        .success()
        .stdout_has("--no-redact")
        .stdout_has("DANGEROUS");
}

/// The bundle of a project holding one document with a GitHub token in it.
fn redacted_bundle(secret: &str) -> agent_meeting::model::ContextBundle {
    use agent_meeting::context::{collect, CollectOptions};
    use agent_meeting::model::{ContextSource, MeetingInput, SourceType};
    let w = Workdir::new();
    w.write(
        "docs/ci.md",
        format!("CI pushes with the token {secret} on main.\nBuilds take 4 minutes.\n"),
    );
    let mut input = MeetingInput::from_topic("Move CI?");
    input.context_sources = vec![ContextSource {
        source_type: SourceType::Directory,
        path: "docs".into(),
        purpose: "CI notes".into(),
        include: vec![],
        exclude: vec![],
        max_files: 20,
        max_chars_per_file: Some(4000),
        respect_gitignore: true,
        optional: false,
        keep: Default::default(),
        readers: Vec::new(),
    }];
    collect(&input, &CollectOptions::new(w.path())).unwrap()
}

#[test]
fn report_appendix_mentions_redactions() {
    use agent_meeting::model::Status;
    use agent_meeting::stage::render_report;
    let mut b = crate::fixtures::board();
    b.context_bundle = redacted_bundle(&rep("ghp_", "x7Rk2Pq9", 4));
    b.status = Status::ForcedStop;
    let md = render_report::render(&b, None).unwrap().markdown;
    let appendix = &md[md.find("## Appendix").expect("appendix")..];
    assert!(
        appendix.contains(
            "- Secrets redacted from the context: 1 (in docs/ci.md); the agents saw `[REDACTED:<kind>]` in their place\n"
        ),
        "{appendix}"
    );
    // Without redactions the appendix says nothing about them.
    let mut b = crate::fixtures::board();
    b.status = Status::ForcedStop;
    let md = render_report::render(&b, None).unwrap().markdown;
    assert!(!md.contains("redacted"), "{md}");
}

#[test]
fn a_quote_of_redacted_text_verifies_only_against_the_redacted_excerpt() {
    use crate::fixtures::{board_with_call, client, clock, ok_json, opts};
    use agent_meeting::model::TurnStatus;
    use agent_meeting::stage::agent_turn::agent_turn;
    let secret = rep("ghp_", "x7Rk2Pq9", 4);
    let mut b = board_with_call("arch");
    b.context_bundle = redacted_bundle(&secret);
    let cite = |quote: String| serde_json::json!({"document_id": "docs/ci.md", "source_path": "docs/ci.md", "quote": quote});
    let reply = serde_json::json!({
        "response": "CI pushes with a token.",
        "key_points": ["CI uses a token"],
        "risks": [],
        "recommendations": [],
        "citations": [
            cite(format!("CI pushes with the token {secret} on main.")),
            cite("CI pushes with the token [REDACTED:github-token] on main.".into()),
        ]
    });
    let (mut c, _) = client(&b, vec![ok_json(reply)]);
    let b = agent_turn(b, &mut c, &opts(), &clock()).expect("agent_turn");
    let t = &b.last_turns[0];
    assert_eq!(t.status, TurnStatus::Ok);
    let cites = &t.result.as_ref().unwrap().citations;
    assert_eq!(
        (cites[0].verified, cites[1].verified),
        (Some(false), Some(true)),
        "the secret is not in what the model saw; the marker is"
    );
}

#[test]
fn decision_packet_values_ending_like_a_variable_name_are_redacted() {
    let w = Workdir::new();
    // Built from pieces, so this file does not look like a leak to a scanner.
    let (a, b, c) = (
        format!("Ab9Qx7Lm2{}", "KEY"),
        format!("OptK3y9Qx7OPT{}", "KEY"),
        format!("EvK3y9Qx7EVAL{}", "KEY"),
    );
    let m = w.write(
        "m.yaml",
        format!(
            "topic: t\ndecision_packet: {{decision_to_make: \"api_key={a}\", options: [\"api_key={b}\", \"b\"], evaluation_dimensions: [\"STRIPE_KEY={c}\"]}}\n"
        ),
    );
    let out = w.cli("collect-context").arg("--meeting-file").arg(&m).run();
    let text = out.stdout();
    let v: Value = out.success().json();
    for secret in [&a, &b, &c] {
        assert!(!text.contains(secret.as_str()), "{secret} leaked: {text}");
    }
    let d = &v["meeting_input"]["decision_packet"];
    assert_eq!(
        d["decision_to_make"],
        "api_key=[REDACTED:secret-assignment]"
    );
    assert_eq!(d["options"][0], "api_key=[REDACTED:secret-assignment]");
    assert_eq!(
        d["evaluation_dimensions"][0],
        "STRIPE_KEY=[REDACTED:secret-assignment]"
    );
}
