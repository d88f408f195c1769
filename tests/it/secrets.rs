//! docs/DESIGN.md#context-collection, issue 10 item 3: secret files never reach the model
//! (names), and secrets inside the files that are read are redacted (content).

use serde_json::Value;

use crate::harness::Workdir;

/// The folder of the issue: every one of these is a secret by its name.
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
