//! docs/design/context.md#context-collection, honest collection: `.gitignore` / `.ignore` files are
//! honoured in directory sources (`respect_gitignore: false` opts out), the tool's own run and
//! report folders are never collected, every skipped path gets one warning on stderr, and the
//! report's appendix lists what was used and what was skipped.

use std::fs;

use agent_meeting::context::{collect, CollectOptions};
use agent_meeting::model::{ContextBundle, ContextSource, MeetingInput, SkippedPath, SourceType};

use crate::harness::Workdir;

/// A work folder with a `.git` folder: the default context root.
fn project() -> Workdir {
    let w = Workdir::new();
    fs::create_dir_all(w.join(".git")).unwrap();
    w
}

fn source(kind: SourceType, path: &str) -> ContextSource {
    ContextSource {
        source_type: kind,
        path: path.to_string(),
        purpose: String::new(),
        include: vec![],
        exclude: vec![],
        max_files: 20,
        max_chars_per_file: Some(4000),
        respect_gitignore: true,
        optional: false,
        keep: Default::default(),
        readers: Vec::new(),
    }
}

fn dir(path: &str) -> ContextSource {
    source(SourceType::Directory, path)
}

fn collect_in(w: &Workdir, sources: Vec<ContextSource>) -> ContextBundle {
    let mut m = MeetingInput::from_topic("Decide something");
    m.context_sources = sources;
    collect(&m, &CollectOptions::new(w.path())).unwrap()
}

fn ids(b: &ContextBundle) -> Vec<&str> {
    b.documents.iter().map(|d| d.document_id.as_str()).collect()
}

fn skipped(b: &ContextBundle) -> Vec<(&str, &str)> {
    b.skipped_paths
        .iter()
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect()
}

#[test]
fn gitignored_files_are_not_collected_unless_the_source_opts_out() {
    let w = project();
    w.write(".gitignore", "*.log\n/docs/drafts/\n");
    w.write("docs/a.md", "a");
    w.write("docs/debug.log", "secret prompts");
    w.write("docs/drafts/wip.md", "draft");
    w.write("docs/sub/b.md", "b");
    let b = collect_in(&w, vec![dir("docs")]);
    assert_eq!(ids(&b), ["docs/a.md", "docs/sub/b.md"]);
    // Left out like an `exclude` glob: not a skipped path.
    assert!(b.skipped_paths.is_empty(), "{:?}", b.skipped_paths);

    let mut all = dir("docs");
    all.respect_gitignore = false;
    let b = collect_in(&w, vec![all]);
    assert_eq!(
        ids(&b),
        [
            "docs/a.md",
            "docs/debug.log",
            "docs/drafts/wip.md",
            "docs/sub/b.md"
        ]
    );
}

#[test]
fn nested_gitignore_and_ignore_files_apply_below_their_folder() {
    let w = project();
    w.write("docs/a.md", "a");
    w.write("docs/notes/.gitignore", "private.md\n");
    w.write("docs/notes/private.md", "p");
    w.write("docs/notes/public.md", "p");
    w.write("docs/.ignore", "scratch/\n");
    w.write("docs/scratch/x.md", "x");
    // A rule in a nested file does not reach its siblings.
    w.write("docs/private.md", "top-level, kept");
    let b = collect_in(&w, vec![dir("docs")]);
    assert_eq!(
        ids(&b),
        [
            "docs/.ignore",
            "docs/a.md",
            "docs/notes/.gitignore",
            "docs/notes/public.md",
            "docs/private.md"
        ]
    );
}

#[test]
fn ignore_files_above_the_source_count_up_to_the_context_root() {
    let w = project();
    w.write(".gitignore", "generated/\n");
    w.write("docs/.ignore", "*.tmp\n");
    w.write("docs/api/x.md", "x");
    w.write("docs/api/y.tmp", "y");
    w.write("docs/api/generated/z.md", "z");
    let b = collect_in(&w, vec![dir("docs/api")]);
    assert_eq!(ids(&b), ["docs/api/x.md"]);
    // A deeper rule wins over an outer one, as in git.
    w.write("docs/api/.gitignore", "!keep.tmp\n");
    w.write("docs/api/keep.tmp", "k");
    let b = collect_in(&w, vec![dir("docs/api")]);
    assert_eq!(
        ids(&b),
        ["docs/api/.gitignore", "docs/api/keep.tmp", "docs/api/x.md"]
    );
    // A file named by a source is collected: the rules thin out walks only.
    let b = collect_in(&w, vec![source(SourceType::File, "docs/api/y.tmp")]);
    assert_eq!(ids(&b), ["docs/api/y.tmp"]);
}

#[test]
fn gitignore_is_honoured_without_a_git_repository() {
    let w = Workdir::new();
    w.write("ctx/.gitignore", "out/\n");
    w.write("ctx/a.md", "a");
    w.write("ctx/out/b.md", "b");
    let b = collect_in(&w, vec![dir("ctx")]);
    assert_eq!(ids(&b), ["ctx/.gitignore", "ctx/a.md"]);
}

#[test]
fn a_nested_repositorys_gitignore_rules_end_at_its_root() {
    let w = project();
    w.write(".gitignore", "*.txt\n");
    w.write(".ignore", "*.bak\n");
    w.write("vendor/lib/.git/HEAD", "ref");
    w.write("vendor/lib/notes.txt", "n");
    w.write("vendor/lib/old.bak", "o");
    let b = collect_in(&w, vec![dir("vendor/lib")]);
    // `.git` is never walked; `.ignore` files are not git's and count up to the context root.
    assert_eq!(ids(&b), ["vendor/lib/notes.txt"]);
}

#[test]
fn ignore_files_above_the_context_root_are_not_read() {
    let w = Workdir::new();
    w.write(".gitignore", "*.md\n");
    w.write(".ignore", "*.md\n");
    w.write("proj/.git/HEAD", "ref");
    w.write("proj/docs/a.md", "a");
    let mut m = MeetingInput::from_topic("Decide something");
    m.context_sources = vec![dir("docs")];
    let b = collect(&m, &CollectOptions::new(w.join("proj"))).unwrap();
    assert_eq!(ids(&b), ["docs/a.md"]);
}

#[test]
fn the_tools_run_and_report_folders_are_never_collected() {
    let w = project();
    w.write("README.md", "r");
    w.write("runs/20260101T000000Z-1/meeting.json", "{}");
    w.write("runs/20260101T000000Z-1/.lock", "");
    w.write("runs/20260101T000000Z-1/llm.jsonl", "{\"prompt\": \"...\"}");
    w.write("runs/notes.md", "n");
    w.write("reports/demo.md", "# Report");
    // A run folder elsewhere (`--run-dir`) is known by its files.
    w.write("tmp/meetings/r1/meeting.json", "{}");
    w.write("tmp/meetings/r1/.lock", "");
    w.write("tmp/meetings/r1/events.jsonl", "{}");
    w.write("tmp/keep.md", "k");
    // Folders of those names deeper down are the project's own.
    w.write("docs/reports/q1.md", "q1");
    let b = collect_in(&w, vec![dir(".")]);
    assert_eq!(ids(&b), ["README.md", "docs/reports/q1.md", "tmp/keep.md"]);
    assert!(b.skipped_paths.is_empty(), "{:?}", b.skipped_paths);

    // Named by a source, they are skipped with the reason, and so is anything inside them.
    let b = collect_in(
        &w,
        vec![
            dir("runs"),
            source(SourceType::File, "reports/demo.md"),
            source(SourceType::File, "tmp/meetings/r1/llm.jsonl"),
            dir("tmp/meetings/r1"),
        ],
    );
    assert!(b.documents.is_empty(), "{:?}", ids(&b));
    assert_eq!(
        skipped(&b),
        [
            ("runs", "agent-meeting output"),
            ("reports/demo.md", "agent-meeting output"),
            ("tmp/meetings/r1/llm.jsonl", "agent-meeting output"),
            ("tmp/meetings/r1", "agent-meeting output"),
        ]
    );
}

#[test]
fn collect_context_warns_once_per_skipped_path() {
    let w = project();
    w.write("docs/a.md", "a");
    w.write("docs/.env", "KEY=1");
    w.write("docs/img.png", b"\x89PNG\0\0");
    w.write(
        "meeting.yaml",
        "topic: T\ndecision_packet:\n  decision_to_make: T\ncontext_sources:\n\
         - {type: file, path: missing.md, optional: true}\n\
         - {type: file, path: ../outside.md, optional: true}\n\
         - {type: directory, path: docs}\n",
    );
    let run = w
        .cli("collect-context")
        .args(["--meeting-file", "meeting.yaml"])
        .run();
    run.success()
        .stderr_has("collect-context: skipped missing.md: not found\n")
        .stderr_has("collect-context: skipped ../outside.md: outside context root\n")
        .stderr_has("collect-context: skipped docs/.env: sensitive\n")
        .stderr_has("collect-context: skipped docs/img.png: binary\n");
    assert_eq!(run.stderr().lines().count(), 4, "{}", run.stderr());
}

#[test]
fn a_misspelled_source_path_stops_collect_context_naming_file_and_field() {
    let w = project();
    w.write("docs/a.md", "a");
    w.write(
        "meeting.yaml",
        "topic: T\ndecision_packet:\n  decision_to_make: T\ncontext_sources:\n\
         - {type: directory, path: docs}\n\
         - {type: file, path: dosc/a.md}\n",
    );
    let run = w
        .cli("collect-context")
        .args(["--meeting-file", "meeting.yaml"])
        .run();
    run.exit(2).one_stderr_line();
    let err = run.stderr();
    assert!(
        err.starts_with(
            "collect-context: meeting.yaml: context_sources[1].path: \"dosc/a.md\" not found"
        ),
        "{err}"
    );
}

#[test]
fn a_directory_source_warns_about_at_most_twenty_paths() {
    let w = project();
    // Files whose names say they hold secrets: each is skipped on a line of its own.
    for i in 0..25 {
        w.write(format!("docs/k{i:02}.pem"), "x");
    }
    w.write(
        "meeting.yaml",
        "topic: T\ndecision_packet:\n  decision_to_make: T\ncontext_sources:\n\
         - {type: directory, path: docs, max_files: 100}\n\
         - {type: file, path: gone.md, optional: true}\n",
    );
    let run = w
        .cli("collect-context")
        .args(["--meeting-file", "meeting.yaml"])
        .run();
    run.success()
        .stderr_has("collect-context: skipped docs/k00.pem: sensitive\n")
        .stderr_has("collect-context: skipped docs/k19.pem: sensitive\n")
        .stderr_lacks("docs/k20.pem")
        .stderr_has("collect-context: and 5 more skipped under docs (context_bundle.skipped_paths lists them)\n")
        // The next source's warnings are not swallowed by the cap.
        .stderr_has("collect-context: skipped gone.md: not found\n");
    assert_eq!(run.stderr().lines().count(), 22, "{}", run.stderr());
}

/// The files past `max_files` are one line, however many there are.
#[test]
fn the_files_past_max_files_are_counted_on_one_line() {
    let w = project();
    for i in 0..25 {
        w.write(format!("docs/f{i:02}.md"), "x");
    }
    w.write(
        "meeting.yaml",
        "topic: T\ncontext_sources:\n - {type: directory, path: docs, max_files: 2}\n",
    );
    let run = w
        .cli("collect-context")
        .args(["--meeting-file", "meeting.yaml"])
        .run();
    run.success()
        .one_stderr_line()
        .stderr_has("collect-context: skipped docs: 23 more files not collected (max_files 2)\n");
}

#[test]
fn the_report_appendix_lists_documents_used_and_skipped() {
    use agent_meeting::model::Status;
    use agent_meeting::stage::render_report;
    let mut b = crate::fixtures::board();
    b.status = Status::ForcedStop;
    b.context_bundle.skipped_paths = vec![
        SkippedPath {
            path: "docs/.env".into(),
            reason: "sensitive".into(),
        },
        SkippedPath {
            path: "missing.md".into(),
            reason: "not found".into(),
        },
    ];
    let used: Vec<String> = b
        .context_bundle
        .documents
        .iter()
        .map(|d| format!("`{}`", d.document_id))
        .collect();
    assert!(!used.is_empty(), "the fixture board has documents");
    let md = render_report::render(&b, None).unwrap().markdown;
    // The record header lists them (docs/design/report.md#report).
    let appendix = &md[..md.find("## Topic").expect("header")];
    let want = format!(
        "- Documents used ({}): {}\n\
         - Documents skipped (2; not given to the agents):\n  \
         - `docs/.env`: sensitive\n  - `missing.md`: not found\n",
        used.len(),
        used.join(", ")
    );
    assert!(appendix.contains(&want), "{appendix}");

    // Nothing skipped: no skipped list.
    b.context_bundle.skipped_paths.clear();
    let md = render_report::render(&b, None).unwrap().markdown;
    assert!(!md.contains("Documents skipped"), "{md}");
}
