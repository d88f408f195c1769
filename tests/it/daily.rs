//! Daily use (docs/GUIDE.md#daily-use): documents on the command line (`--doc`), the history
//! of the run folder (`meeting list`, `meeting show`), a command run when a meeting waits for
//! a person (`--on-waiting`), and a spending cap across meetings (`--max-cost-per-day`).

use crate::harness::Workdir;

/// `--doc PATH` (a file, a folder, repeatable) reaches the meeting through the collection's
/// rules: redacted, a secret file skipped, listed in the report; with a meeting file, after
/// its own sources.
#[test]
fn a_doc_on_the_command_line_is_read_under_the_meeting_files_rules() {
    let work = Workdir::new();
    work.write(
        "notes.md",
        "# Notes\nThe ingest box has 4 GB of RAM; ZEBRA-42.\nAWS key AKIAIOSFODNN7EXAMPLE\n",
    );
    work.write("more/a.md", "folder doc PENGUIN\n");
    work.write(".env", "TOKEN=hunter2\n");
    let out = work
        .cli("meeting")
        .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
        .args(["--provider", "sample", "-a", "arch", "--report-file", "-"])
        .args(["--doc", "notes.md", "--doc", "more", "--doc", ".env"])
        .arg("Adopt Rust for ingest?")
        .run();
    out.success()
        .stderr_has("notes.md: 1 secret redacted (aws-access-key-id)")
        .stderr_has("skipped .env: sensitive");
    let md = out.stdout();
    assert!(
        md.contains("- Documents used (2): `notes.md`, `more/a.md`"),
        "{md}"
    );
    assert!(md.contains("ZEBRA-42"), "{md}");
    assert!(
        !md.contains("AKIAIOSFODNN7EXAMPLE") && !md.contains("hunter2"),
        "{md}"
    );

    // The collect-context program takes it too, after a meeting file's own sources.
    work.write(
        "m.yaml",
        "topic: T?\ncontext_sources:\n  - type: file\n    path: more/a.md\n",
    );
    let packet: serde_json::Value = work
        .cli("collect-context")
        .args(["--meeting-file", "m.yaml", "--doc", "notes.md"])
        .run()
        .success()
        .json();
    let ids: Vec<&str> = packet["context_bundle"]["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["source_path"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["more/a.md", "notes.md"]);
}

/// A `--doc` that is not there, or outside the context root, is refused on one line naming
/// the flag and the path (exit 2), before any call.
#[test]
fn a_doc_not_found_or_outside_the_root_is_refused() {
    let work = Workdir::new();
    std::fs::create_dir(work.join("repo")).unwrap();
    std::fs::create_dir(work.join("repo/.git")).unwrap();
    work.write("outside.md", "x\n");
    let repo = work.join("repo");
    work.cli("meeting")
        .current_dir(&repo)
        .args([
            "--provider",
            "sample",
            "-a",
            "arch",
            "--doc",
            "missing.md",
            "T?",
        ])
        .run()
        .exit(2)
        .one_stderr_line()
        .stderr_has("--doc ")
        .stderr_has("missing.md: not found");
    work.cli("meeting")
        .current_dir(&repo)
        .args([
            "--provider",
            "sample",
            "-a",
            "arch",
            "--doc",
            "../outside.md",
            "T?",
        ])
        .run()
        .exit(2)
        .one_stderr_line()
        .stderr_has("outside.md: outside the context root");
}
