//! `agent-meeting github` (docs/design/github.md): a decision meeting on a pull request, where
//! the team reviews it. It reads the event the way the Actions runner leaves it
//! ([`event`]), builds the meeting from the pull request — its title and description, its diff
//! (bounded, secrets redacted), the files it changes, the repository's newest decision records,
//! and the repository's own `.github/agent-meeting.yaml` — runs `meeting` (a child of this
//! executable, as the MCP server does), and posts **one** comment ([`comment`]), updated in
//! place on every later run. It is advisory: a meeting that ends without a decision, or waiting
//! for a person, is said in the comment, and the program still exits 0; only its own failures
//! (a bad event, an API that refuses) exit non-zero.
//!
//! `--dry-run` ([`dry_run`], [`offline`]) holds the same meeting offline: the pull request from
//! the event, its diff from the local checkout, the comment printed instead of posted.
//!
//! The run folder of a topic is `pr-<number>-<topic digest>`: a re-run of the job with the
//! folder kept (the action caches it) resumes it or reposts its ending, never pays twice; an
//! `/answer` comment resumes the pull request's meeting that waits for a person.

pub mod api;
pub mod comment;
pub mod event;
pub mod gitlab;
pub mod offline;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::driver::absolute;
use crate::error::{Error, Result};
use crate::model::{DecisionPacket, MeetingBrief, MeetingResult};
use crate::settings::options::parse_strict;
use crate::settings::MeetingOptions;

/// The repository's own settings file, read from the checkout when there.
pub const REPO_CONFIG: &str = ".github/agent-meeting.yaml";

/// Where decision records are looked for when the repository's file names no folder.
const ADR_DIRS: [&str; 3] = ["docs/decisions", "docs/adr", "doc/adr"];

/// Where a GitHub event comes from and the API it is answered through, settled at the edge
/// (`src/bin/github.rs`).
#[derive(Debug, Clone)]
pub struct GithubEvent {
    /// `GITHUB_EVENT_NAME`.
    pub event_name: String,
    /// `GITHUB_EVENT_PATH`: the event's JSON.
    pub event_path: PathBuf,
    /// `GITHUB_REPOSITORY`: `owner/name`.
    pub repo: String,
    /// `GITHUB_API_URL` (default `https://api.github.com`): the one host the token goes to.
    pub api_url: String,
    /// `GITHUB_TOKEN`.
    pub token: Option<String>,
    pub options: event::Options,
}

/// How the meetings of a pull (merge) request run, on either forge (settled at the edge,
/// `cli::flags::PullArgs`).
pub use crate::settings::PullSettings as Settings;

/// A pull request (GitHub) or merge request (GitLab) as the meeting reads it.
#[derive(Debug, Clone, Default)]
pub struct Pull {
    pub number: u64,
    pub title: String,
    pub body: String,
}

/// A request's diff as the forge served it: `cut` when there was more than was read.
#[derive(Debug, Clone)]
pub struct Diff {
    pub text: String,
    pub cut: bool,
}

/// What the meeting needs of a forge: the request, its diff and changed files, and its one
/// comment (note) created or updated.
pub trait Forge {
    fn pull(&self, number: u64) -> Result<Pull>;
    fn diff(&self, number: u64) -> Result<Diff>;
    fn files(&self, number: u64) -> Result<Vec<String>>;
    /// Post `body` as the request's one comment, or update the one posted before; its URL.
    fn upsert(&self, number: u64, body: &str) -> Result<String>;
    /// How a person answers a waiting meeting there.
    fn answer_hint(&self) -> &'static str;
}

/// `.github/agent-meeting.yaml`: how the repository's meetings run — the meeting's options as
/// every surface takes them ([`MeetingOptions`]: agents, budgets, council, reviewers, the
/// record's deciders), and what only a pull request has (its diff, the records it reads).
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
pub struct RepoConfig {
    #[serde(flatten)]
    pub options: MeetingOptions,
    /// The decision records' folder (default the first of docs/decisions, docs/adr, doc/adr).
    pub adr_dir: Option<PathBuf>,
    /// How many of the newest records the meeting reads (default 4).
    pub adrs: Option<usize>,
    /// Write the decision as the next record in `adr_dir` (the action commits it).
    #[serde(default)]
    pub write_adr: bool,
    /// The most characters of the diff the meeting reads (default 40,000).
    pub max_diff_chars: Option<usize>,
    #[serde(default)]
    pub brief: MeetingBrief,
    #[serde(default)]
    pub decision_packet: DecisionPacket,
    /// A command run when the meeting waits for a person (`meeting --on-waiting`): a webhook
    /// that tells the channel. Run only where the base branch is checked out — this file is
    /// then the base's, not the pull request's (docs/design/github.md#the-meeting).
    pub on_waiting: Option<String>,
}

/// A GitHub event tried offline (`--dry-run`), settled at the edge (`src/bin/github.rs`).
#[derive(Debug, Clone)]
pub struct DryRun {
    /// `--event-name`, else guessed from the event ([`event::guess_name`]).
    pub event_name: Option<String>,
    /// `--event`: the event's JSON.
    pub event_path: PathBuf,
    /// `--base`: where the diff starts ([`offline::base`]).
    pub base: Option<String>,
    pub options: event::Options,
}

/// The event's JSON.
fn read_event(path: &Path) -> Result<Value> {
    let label = path.display().to_string();
    let text = crate::io::read_text_file(path)?;
    serde_json::from_str(&text)
        .map_err(|err| Error::input(&label, "", format!("expected the event's JSON: {err}")))
}

/// What [`run`] would do on the event, held offline in the checkout of the current folder: the
/// pull request's title and description from the event, its diff and changed files from `git`
/// ([`offline::Offline`]), the comment printed on stdout instead of posted. No API is called
/// and no token read; the meeting is built and run as [`run`] builds and runs it.
pub fn dry_run(d: &DryRun, s: &Settings) -> Result<()> {
    let event = read_event(&d.event_path)?;
    let name = match &d.event_name {
        Some(name) => name.as_str(),
        None => event::guess_name(&event).ok_or_else(|| {
            Error::Usage(format!(
                "--dry-run: {} is neither a comment's event nor a pull request's: give --event-name",
                d.event_path.display()
            ))
        })?,
    };
    let ask = event::read(name, &event, &d.options);
    let forge = offline::Offline::new(
        event::pull(&event),
        d.base.as_deref(),
        &event::base_candidates(&event),
        api::ANSWER_HINT,
    )?;
    // The checkout is the pull request's own: the files are read as it has them.
    hold(s, Some(&forge), ask, Checkout::Head)
}

/// Run what a GitHub event asks.
pub fn run(e: &GithubEvent, s: &Settings) -> Result<()> {
    let event = read_event(&e.event_path)?;
    let ask = event::read(&e.event_name, &event, &e.options);
    if let event::Ask::Nothing(_) | event::Ask::ForkWithoutSecrets { .. } = ask {
        return hold(s, None, ask, event::checkout(&e.event_name));
    }
    let token = e.token.as_deref().filter(|t| !t.trim().is_empty()).ok_or_else(|| {
        Error::Usage(
            "GITHUB_TOKEN is not set: the workflow step needs `env: GITHUB_TOKEN: ${{ github.token }}` (with pull-requests: write)".into(),
        )
    })?;
    let api = api::Api::new(&e.api_url, &e.repo, token);
    hold(s, Some(&api), ask, event::checkout(&e.event_name))
}

/// Do what `ask` asks on the forge, whose job checked out `checkout`, and post the comment.
pub fn hold(
    s: &Settings,
    forge: Option<&dyn Forge>,
    ask: event::Ask,
    checkout: Checkout,
) -> Result<()> {
    let (number, forge) = match (&ask, forge) {
        (event::Ask::Nothing(why), _) => {
            say(s, &format!("nothing to do: {why}"));
            return Ok(());
        }
        (event::Ask::ForkWithoutSecrets { number }, _) => {
            say(s, &format!(
                "pull request #{number} comes from a fork, and the forge gives a fork's pipeline no secrets (no provider key, a read-only token): no meeting ran. A maintainer can start one: a `/decide <topic>` comment on GitHub (an issue_comment workflow runs with the repository's secrets, on the base branch's files), a pipeline of the project itself on GitLab."
            ));
            return Ok(());
        }
        (event::Ask::Decide { number, .. } | event::Ask::Answer { number, .. }, Some(f)) => {
            (*number, f)
        }
        (_, None) => return Err(Error::Runtime("no forge to hold the meeting on".into())),
    };
    let config = repo_config(s)?;
    let (dir, args) = match &ask {
        event::Ask::Decide { topic, .. } => decide(s, forge, &config, number, topic, checkout)?,
        event::Ask::Answer { text, .. } => match waiting_run(&s.run_dir, number) {
            Some(dir) => {
                let file = work_dir(s, number)?.join("answer.txt");
                let answer = format!("[response]\n{}\n", text.trim());
                crate::io::write_atomic(&file, answer.as_bytes())?;
                let args = vec![
                    "resume".into(),
                    dir.display().to_string(),
                    "--answer".into(),
                    file.display().to_string(),
                ];
                (dir, args)
            }
            None => {
                say(
                    s,
                    &format!(
                        "nothing to do: no meeting of #{number} waits for an answer (in {})",
                        s.run_dir.display()
                    ),
                );
                return Ok(());
            }
        },
        _ => unreachable!("handled above"),
    };
    let mut args = args;
    match (&config.on_waiting, checkout) {
        (Some(command), Checkout::Base) => {
            args.extend(["--on-waiting".to_string(), command.clone()]);
        }
        (Some(_), Checkout::Head) => say(
            s,
            "on_waiting is not run: the checkout holds the pull request's own files, and so its own settings file",
        ),
        (None, _) => {}
    }
    let ran = run_meeting(s, &args)?;
    // The day's spending cap is spent: no meeting ran, and nothing is wrong with the workflow.
    let day_spent = ran.code == Some(i32::from(crate::error::DAY_SPENT_EXIT));
    let run_id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let report = ran
        .result
        .as_ref()
        .and_then(|r| r.report_file.as_deref())
        .and_then(|f| std::fs::read_to_string(f).ok())
        .unwrap_or_default();
    let waiting = crate::driver::RunDir { path: dir.clone() }
        .waiting()
        .ok()
        .flatten()
        .filter(|_| ran.code == Some(4));
    let asked = match &ask {
        event::Ask::Decide { topic, .. } => topic.clone(),
        _ => String::new(),
    };
    let started = dir.join("meeting.json").is_file();
    let topic = crate::driver::final_board(&dir)
        .map(|b| b.meeting_input.topic)
        .unwrap_or(asked);
    let body = comment::render(&comment::Outcome {
        number,
        topic: &topic,
        run_id: &run_id,
        result: ran.result.as_ref(),
        report: &report,
        waiting: waiting
            .as_ref()
            .map(|w| (w.agent.as_str(), w.question.as_str())),
        failure: ran.said.as_deref(),
        answer_hint: forge.answer_hint(),
        started,
        day_spent,
        notes: std::fs::read_to_string(notes_file(s, number, &run_id)?)
            .ok()
            .filter(|_| started)
            .as_deref(),
    });
    let url = forge.upsert(number, &body)?;
    summarise(s, &body);
    crate::note!("{}: {} ({url})", s.program, headline(&body));
    // Advisory about what the meeting decides, never about whether it could run: a
    // misconfigured workflow (no key, a bad setting) or a meeting that failed is not green.
    match (&ran.result, ran.code) {
        (Some(r), _) if r.status == crate::model::MeetingStatus::Failed => {
            Err(Error::Runtime(format!(
                "the meeting failed: {}",
                r.last_error.as_deref().unwrap_or("see its run folder")
            )))
        }
        (Some(_), _) => Ok(()),
        (None, _) if day_spent => Ok(()),
        (None, code) => {
            let why = format!(
                "the meeting could not run: {}",
                ran.said
                    .as_deref()
                    .map(|w| crate::text::one_line(w, 500))
                    .unwrap_or_default()
            );
            Err(match code {
                Some(2) => Error::Usage(why),
                _ => Error::Runtime(why),
            })
        }
    }
}

/// The meeting on `topic`: the run folder's resume when it exists (it goes on, or says again
/// how it ended, at no cost), else a new meeting built from the pull request.
fn decide(
    s: &Settings,
    api: &dyn Forge,
    config: &RepoConfig,
    number: u64,
    topic: &str,
    checkout: Checkout,
) -> Result<(PathBuf, Vec<String>)> {
    let id = run_id(number, topic);
    let dir = absolute(&s.run_dir.join(&id));
    if dir.join("meeting.json").is_file() {
        return Ok((
            dir.clone(),
            vec!["resume".into(), dir.display().to_string()],
        ));
    }
    let pr = api.pull(number)?;
    let work = work_dir(s, number)?;
    let max_diff = config.max_diff_chars.unwrap_or(40_000);
    // A diff too big to serve (GitHub's 406) or to read whole: the meeting is held on what
    // can be read, and says what was left out.
    let (diff, left_out) = match api.diff(number) {
        Ok(d) if d.cut => {
            let mib = api::MAX_DIFF_BYTES >> 20;
            (d.text, Some(format!("the diff past its first {mib} MiB")))
        }
        Ok(d) => (d.text, None),
        Err(e) => (String::new(), Some(format!("the diff ({e})"))),
    };
    let diff_file = work.join("pr.diff");
    // Redacted before it is kept: the run folder travels as the job's artifact.
    crate::io::write_atomic(&diff_file, crate::context::redact(&diff).text.as_bytes())?;
    // What the comment says of what the meeting read, on this run and every re-run.
    let mut notes = vec![format!("The changed files were read {}.", checkout.said())];
    if let Some(note) = &left_out {
        notes.insert(0, format!("Read in part: the meeting did not read {note}; it read the list of changed files and the files themselves."));
    }
    crate::io::write_atomic(&notes_file(s, number, &id)?, notes.join("\n").as_bytes())?;
    let files = api.files(number)?;
    let mut meeting = meeting_file(&pr, topic, config, &diff_file, max_diff, &files, checkout);
    if let Some(note) = &left_out {
        let state = meeting["brief"]["current_state"].as_str().unwrap_or("");
        meeting["brief"]["current_state"] = json!(format!(
            "{state}\n\nNot read: {note}; the list of changed files and the files themselves are."
        ));
    }
    let file = work.join(format!("{id}.json"));
    crate::io::write_atomic(&file, crate::io::to_json_line(&meeting, true).as_bytes())?;
    let mut args: Vec<String> = vec![
        "--meeting-file".into(),
        file.display().to_string(),
        "--run-dir".into(),
        absolute(&s.run_dir).display().to_string(),
        "--trace-id".into(),
        id,
    ];
    args.extend(meeting_options(s, config).to_args());
    args.extend(s.meeting_args.iter().cloned());
    Ok((dir, args))
}

/// The options of a request's meeting: the program's flags over the repository file's. `write_adr` writes the record into `adr_dir` (the first
/// of [`ADR_DIRS`] when none); without a record to write, its deciders apply to nothing.
fn meeting_options(s: &Settings, config: &RepoConfig) -> MeetingOptions {
    let mut repo = config.options.clone();
    if config.write_adr && repo.adr.is_none() {
        repo.adr = Some(adr_dir(config).unwrap_or_else(|| PathBuf::from(ADR_DIRS[0])));
    }
    if repo.adr.is_none() {
        repo.supersedes = None;
        repo.deciders.clear();
    }
    // No panel named: `meeting` seats the default one (`settings::resolve`).
    s.options.clone().over(repo)
}

/// The meeting file of a pull request: the topic; the pull request's title and description as
/// the brief's current state (the repository's brief and decision packet kept); the diff, the
/// files it changes (as the checkout has them) and the newest decision records as documents.
fn meeting_file(
    pr: &Pull,
    topic: &str,
    config: &RepoConfig,
    diff: &Path,
    max_diff: usize,
    files: &[String],
    checkout: Checkout,
) -> Value {
    // Redacted before it is kept, as the diff is: the run folder travels as the job's artifact.
    let title = crate::context::redact(&pr.title).text;
    let body = crate::context::redact(&crate::text::cut(pr.body.trim(), 8_000)).text;
    let mut brief = config.brief.clone();
    let state = format!("Pull request #{}: {title}\n\n{body}", pr.number);
    brief.current_state = if brief.current_state.is_empty() {
        state
    } else {
        format!("{}\n\n{state}", brief.current_state)
    };
    let mut sources = vec![json!({
        "type": "file", "path": diff.display().to_string(),
        "purpose": "The pull request's diff",
        "max_chars_per_file": max_diff,
    })];
    for f in files.iter().filter(|f| Path::new(f).is_file()).take(10) {
        sources.push(
            json!({"type": "file", "path": absolute(Path::new(f)).display().to_string(),
            "purpose": format!("A file the pull request changes, {}", checkout.said()),
            "optional": true}),
        );
    }
    if let Some(adr) = adr_dir(config) {
        sources.push(json!({"type": "directory", "path": absolute(&adr).display().to_string(),
            "purpose": "The repository's newest decision records; say which one this decision changes",
            "include": ["[0-9][0-9][0-9][0-9]-*.md"], "keep": "last",
            "max_files": config.adrs.unwrap_or(4), "max_chars_per_file": 2_000}));
    }
    json!({
        "topic": topic,
        "brief": brief,
        "decision_packet": config.decision_packet,
        "context_sources": sources,
    })
}

/// The decision records' folder: the repository file's, else the first of [`ADR_DIRS`] there.
fn adr_dir(config: &RepoConfig) -> Option<PathBuf> {
    match &config.adr_dir {
        Some(d) => Some(d.clone()),
        None => ADR_DIRS.iter().map(PathBuf::from).find(|d| d.is_dir()),
    }
}

/// The run id of a meeting on `topic` about pull request `number`: the same topic, the same
/// folder (a re-run resumes it); another topic, another meeting.
pub fn run_id(number: u64, topic: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(topic.trim().as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("pr-{number}-{hex}")
}

/// The newest run folder of pull request `number` that waits for a person.
fn waiting_run(run_dir: &Path, number: u64) -> Option<PathBuf> {
    let prefix = format!("pr-{number}-");
    let mut waiting: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(run_dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .filter(|p| p.join(crate::model::WAITING_FILE).is_file())
        .filter_map(|p| {
            let at = std::fs::metadata(p.join(crate::model::WAITING_FILE))
                .and_then(|m| m.modified())
                .ok()?;
            Some((at, absolute(&p)))
        })
        .collect();
    waiting.sort();
    waiting.pop().map(|(_, p)| p)
}

/// Where the meeting `run_id` of request `number` keeps what the comment says of what it read
/// (which version of the files, what it could not read), one note a line, for every run,
/// resumed or not.
fn notes_file(s: &Settings, number: u64, run_id: &str) -> Result<PathBuf> {
    Ok(work_dir(s, number)?.join(format!("{run_id}.notes.txt")))
}

/// Which version of the changed files the job's checkout holds, and so the meeting reads
/// beside the diff: the base branch (`issue_comment`, `pull_request_target`: a fork's code is
/// never checked out) or the request's own (`pull_request`'s merge commit, a merge request
/// pipeline's source branch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkout {
    Base,
    Head,
}

impl Checkout {
    /// As the comment and the documents' purpose say it.
    fn said(self) -> &'static str {
        match self {
            Checkout::Base => {
                "as the base branch has them (this trigger checks out no code of the pull request; its change is in the diff)"
            }
            Checkout::Head => "as the pull request has them",
        }
    }
}

/// The folder for what this program writes about pull request `number` (the diff, the
/// meeting file, an answer), beside the run folders.
fn work_dir(s: &Settings, number: u64) -> Result<PathBuf> {
    let dir = absolute(&s.run_dir.join(".github").join(format!("pr-{number}")));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::Runtime(format!("{}: {}", dir.display(), crate::io::os_error(&e))))?;
    Ok(dir)
}

/// The repository's settings file: the one given, else [`REPO_CONFIG`] when there.
fn repo_config(s: &Settings) -> Result<RepoConfig> {
    let file = match &s.config {
        Some(f) => f.clone(),
        None if Path::new(REPO_CONFIG).is_file() => PathBuf::from(REPO_CONFIG),
        None => return Ok(RepoConfig::default()),
    };
    let label = file.display().to_string();
    let text = crate::io::read_text_file(&file)?;
    parse_strict(&label, &text, crate::io::Format::Yaml)
}

impl AsRef<MeetingOptions> for RepoConfig {
    fn as_ref(&self) -> &MeetingOptions {
        &self.options
    }
}

/// How `meeting` ended.
struct Ran {
    code: Option<i32>,
    result: Option<MeetingResult>,
    /// Its last lines on stderr, when it printed no result.
    said: Option<String>,
}

/// The forges' credentials in a job's environment: this program's, for the API only — never
/// the meeting's (whose model calls, `--header` values and stage commands could carry them
/// elsewhere).
const FORGE_CREDENTIALS: [&str; 13] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "GITLAB_TOKEN",
    "CI_JOB_TOKEN",
    "CI_JOB_JWT",
    "CI_JOB_JWT_V1",
    "CI_JOB_JWT_V2",
    "CI_REGISTRY_PASSWORD",
    "CI_DEPENDENCY_PROXY_PASSWORD",
    "CI_DEPLOY_PASSWORD",
];

/// Run `meeting ARGS --quiet`, its stderr passed on to ours. The meeting gets no forge
/// credential ([`FORGE_CREDENTIALS`]).
fn run_meeting(s: &Settings, args: &[String]) -> Result<Ran> {
    let mut cmd = Command::new(&s.exe);
    cmd.arg("meeting")
        .args(args)
        .arg("--quiet")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in FORGE_CREDENTIALS {
        cmd.env_remove(var);
    }
    let child = cmd.spawn().map_err(|e| {
        Error::Runtime(format!(
            "cannot run {} meeting: {}",
            s.exe.display(),
            crate::io::os_error(&e)
        ))
    })?;
    let ended = crate::driver::child::wait(child, 3, |_| {})?;
    Ok(Ran {
        code: ended.code,
        said: ended.result.is_none().then(|| ended.said.join("\n")),
        result: ended.result,
    })
}

/// The comment's headline (`decided`, `waiting for ana`, ...).
fn headline(body: &str) -> String {
    body.lines()
        .find_map(|l| l.strip_prefix("### agent-meeting: "))
        .unwrap_or("")
        .to_string()
}

/// A line for the log and the job's summary page.
fn say(s: &Settings, text: &str) {
    crate::note!("{}: {text}", s.program);
    summarise(s, &format!("agent-meeting: {text}\n"));
}

/// Append to the job's summary page (`GITHUB_STEP_SUMMARY`), when there is one; a summary
/// that cannot be written loses nothing the comment does not have.
fn summarise(s: &Settings, text: &str) {
    if let Some(file) = &s.summary {
        let appended = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(file)
            .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{text}\n").as_bytes()));
        if let Err(e) = appended {
            crate::note!(
                "{}: {}: {}",
                s.program,
                file.display(),
                crate::io::os_error(&e)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guide's `.github/agent-meeting.yaml` is one this program reads.
    #[test]
    fn the_guides_repository_file_is_read() {
        let guide = include_str!("../../docs/GUIDE.md");
        let at = guide
            .find("`.github/agent-meeting.yaml` sets the rest")
            .expect("the guide's example");
        let start = guide[at..].find("```yaml\n").unwrap() + at + "```yaml\n".len();
        let end = guide[start..].find("```").unwrap() + start;
        let config: RepoConfig =
            crate::io::parse_doc("guide", &guide[start..end], crate::io::Format::Yaml).unwrap();
        assert_eq!(config.options.agents, ["arch", "sre", "ana"]);
        assert!(config.write_adr);
        assert_eq!(config.decision_packet.required_questions.len(), 1);
    }

    #[test]
    fn a_topic_keeps_its_run_folder() {
        assert_eq!(run_id(7, "Move CI?"), run_id(7, " Move CI? "));
        assert_ne!(run_id(7, "Move CI?"), run_id(7, "Move CD?"));
        assert_ne!(run_id(7, "Move CI?"), run_id(8, "Move CI?"));
        assert!(run_id(7, "x").starts_with("pr-7-"));
    }
}
