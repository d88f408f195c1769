//! A person's turn (docs/design/agent-turn.md#a-human-at-the-table): an agent with `kind: human` answers
//! through a [`Provider`] of its own, so the rest of the turn is an agent's: the same ask loop,
//! the same AgentTurnResult checks and one chance to fix, the same exchange log (`llm.jsonl`,
//! provider `human`), and so the same resume from the log (a logged answer is never asked
//! again).
//!
//! Where the answer comes from, in this order: the cassette when replaying one that holds it
//! (`--record` writes it there), `--human-answers FILE` (JSONL, one answer per
//! line, consumed in order across the meeting), `$VISUAL`/`$EDITOR` (a template to fill, like
//! `git commit`), the terminal line by line. stdin carries the board and stdout the new board,
//! so the person is reached on the terminal itself (`/dev/tty`, or the file `MEETING_HUMAN_TTY`
//! names: tests and scripts), never on stdout.
//!
//! With no one to ask (no terminal, no editor, no answer left) the turn does not fail: it
//! stops with [`Error::Waiting`], carrying the `waiting.json` the run folder keeps for the
//! person, and `meeting --resume DIR --answer FILE` gives the answer later ([`Given`],
//! docs/design/agent-turn.md#waiting-for-a-person).

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::rc::Rc;

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::llm::{AttemptError, Client, Options, Provider, RawReply, Request, TokenUsage};
use crate::meeting::prompts::render;
use crate::meeting::whiteboard::note_process;
use crate::model::{Board, ParticipantKind, PendingCall, ProcessKind, Waiting, WaitingDocument};

use crate::model::HUMAN_PROVIDER as PROVIDER;

/// The variable behind `--human-answers` (agent-turn and meeting).
pub const ANSWERS_ENV: &str = "MEETING_HUMAN_ANSWERS";

/// The terminal a person answers on; tests and scripts point it at a file of lines.
pub const TTY_ENV: &str = "MEETING_HUMAN_TTY";

/// Where this turn's answer comes from, decided once before the turn.
pub enum Source {
    /// `--human-answers FILE`: its non-empty lines, and the next one to use.
    Answers {
        file: PathBuf,
        lines: Vec<String>,
        next: usize,
    },
    /// `$VISUAL` / `$EDITOR`, run with `sh -c` on a template file.
    Editor { command: String },
    /// Line by line on the terminal.
    Terminal { path: PathBuf },
    /// No one to ask, but the answer is in the exchange log (a resumed meeting).
    Logged,
    /// `--provider replay` and the cassette holds this person's answer (a recorded meeting).
    Cassette(Box<crate::llm::replay::Replay>),
    /// The answer a waiting meeting was given (`meeting --resume --answer`), used once.
    Given(Option<String>),
}

/// The answer given to a meeting waiting for a person (`meeting --resume DIR --answer FILE`):
/// the AgentTurnResult JSON, and when the person was asked (from `waiting.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct Given {
    pub text: String,
    pub asked_at: String,
}

/// Read an answer file given to a waiting meeting: a JSON object (an AgentTurnResult, a
/// citation's `source_path` may be left out), or the editor's text form (`[response]`,
/// `[citations]`, ... as in `waiting.json`'s `answer_text`). Anything else is bad input.
pub fn read_answer(file: &Path, waiting: &Waiting) -> Result<String> {
    let label = file.display().to_string();
    let text = crate::io::read_text_file(file)?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return match serde_json::from_str::<Value>(trimmed) {
            Ok(Value::Object(o)) => Ok(Value::Object(o).to_string()),
            _ => Err(Error::input(
                &label,
                "",
                "expected one JSON object (an AgentTurnResult) or the answer template's text form",
            )),
        };
    }
    let has_response = text
        .lines()
        .any(|l| l.trim().eq_ignore_ascii_case("[response]"));
    if !has_response {
        return Err(Error::input(
            &label,
            "",
            "expected one JSON object (an AgentTurnResult) or the answer template's text form (a [response] section; see answer_text in waiting.json)",
        ));
    }
    let docs: Vec<(String, String)> = waiting
        .documents
        .iter()
        .map(|d| (d.document_id.clone(), d.source_path.clone()))
        .collect();
    Ok(answer_from_template(&text, &docs))
}

/// Whether the board's pending call is addressed to a human.
pub fn is_human_turn(board: &Board) -> bool {
    super::single_call(board)
        .and_then(|c| board.agents.get(&c.target_agent))
        .is_some_and(|a| a.kind == ParticipantKind::Human)
}

/// Human answers given so far in this meeting: the calls charged to human participants (one
/// per answer, retries included), which is also the next line of `--human-answers`.
fn answered_so_far(board: &Board) -> usize {
    board
        .agents
        .values()
        .filter(|a| a.kind == ParticipantKind::Human)
        .filter_map(|a| board.usage.by_caller.get(&a.name))
        .map(|u| u.calls as usize)
        .sum()
}

/// The answers of a `--human-answers` file, one JSON object per non-blank line; a file that
/// cannot be read, or a line that is not a JSON object, is bad input. `meeting` reads it once
/// before the first call, so a wrong path or a broken file stops it there
/// (docs/design/agent-turn.md#a-human-at-the-table).
pub fn answer_lines(file: &Path) -> Result<Vec<String>> {
    let label = file.display().to_string();
    let text = crate::io::read_text_file(file)?;
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if !matches!(serde_json::from_str::<Value>(line), Ok(Value::Object(_))) {
            return Err(crate::error::Error::input(
                &label,
                format!("line {}", n + 1),
                "expected one JSON object per line (a person's answer, like an AgentTurnResult)",
            ));
        }
        lines.push(line.to_string());
    }
    Ok(lines)
}

/// Decide where the answer comes from: `Ok(Err(why))` when no one can answer (the turn is an
/// error turn, the meeting goes on); an unreadable `--human-answers` file is bad input.
pub fn source(
    board: &Board,
    answers: Option<&Path>,
) -> Result<std::result::Result<Source, String>> {
    if let Some(file) = answers {
        let label = file.display().to_string();
        let lines = answer_lines(file)?;
        let next = answered_so_far(board);
        if next >= lines.len() {
            return Ok(Err(format!(
                "no human available: {label} has no answer left ({} used)",
                lines.len()
            )));
        }
        return Ok(Ok(Source::Answers {
            file: file.to_path_buf(),
            lines,
            next,
        }));
    }
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    if let Some(command) = env("VISUAL").or_else(|| env("EDITOR")) {
        return Ok(Ok(Source::Editor { command }));
    }
    let path = tty_path();
    if File::open(&path).is_ok() {
        return Ok(Ok(Source::Terminal { path }));
    }
    Ok(Err(
        "no human available: no terminal, no $VISUAL/$EDITOR and no --human-answers FILE".into(),
    ))
}

fn tty_path() -> PathBuf {
    std::env::var_os(TTY_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/dev/tty"), PathBuf::from)
}

/// A human's whole turn: from the cassette, `given` (a waiting meeting's answer), `answers`
/// (`--human-answers`), the editor or the terminal; with no one there, [`Error::Waiting`].
pub fn turn(
    board: Board,
    answers: Option<&Path>,
    given: Option<Given>,
    llm: &crate::llm::LlmConfig,
) -> Result<Board> {
    super::check_turn(&board)?;
    let clock = crate::meeting::events::clock_from_env();
    let logged = |why: String| {
        let name = super::single_call(&board).map(|c| c.target_agent.as_str());
        match (&llm.llm_log, llm.reuse_log, name) {
            (Some(log), true, Some(name))
                if crate::llm::resume::has_reply(log, board.usage.calls + 1, name) =>
            {
                Ok(Source::Logged)
            }
            _ => Err(why),
        }
    };
    let asked_at = given.as_ref().map(|g| g.asked_at.clone());
    let source = match (from_cassette(&board, llm)?, given) {
        (Some(replay), _) => Ok(Source::Cassette(Box::new(replay))),
        (None, Some(g)) => Ok(Source::Given(Some(g.text))),
        (None, None) => source(&board, answers)?.or_else(logged),
    };
    // Asked when first asked: a fix the meeting waits for again keeps that time.
    let mut wait = waiting_for(&board, asked_at.as_deref().unwrap_or(&clock.now()))?;
    let source = match source {
        Ok(source) => source,
        Err(why) => {
            wait.why = why;
            return Err(waiting_error(wait));
        }
    };
    let shared = Rc::new(RefCell::new(Shared::default()));
    let (mut client, opts) = client(&board, source, llm, wait.clone(), shared.clone());
    let turned = super::agent_turn(board, &mut client, &opts, clock.as_ref());
    let shared = shared.take();
    if let Some(w) = shared.waiting {
        return Err(waiting_error(w));
    }
    let mut board = turned?;
    if let (Some(asked_at), true) = (asked_at, shared.given_used) {
        let answered = board
            .last_turns
            .iter()
            .any(|t| t.status == crate::model::TurnStatus::Ok);
        if answered {
            note_process(
                &mut board,
                ProcessKind::Waited,
                format!(
                    "The meeting waited for {name}: asked at {asked_at} with no one there to answer, {name} answered at {} (meeting --resume --answer).",
                    clock.now(),
                    name = wait.agent
                ),
            );
        }
    }
    Ok(board)
}

/// What a person's turn shares with its provider: the waiting it ended in, and whether the
/// given answer was used.
#[derive(Default)]
struct Shared {
    waiting: Option<Waiting>,
    given_used: bool,
}

/// The error a turn with no one to answer ends in: its message, and `waiting.json`.
fn waiting_error(w: Waiting) -> Error {
    let fix = if w.problem.is_some() {
        " to fix an unusable answer"
    } else {
        ""
    };
    Error::Waiting {
        message: format!(
            "waiting for {}{fix}: {} (the question: {})",
            w.agent,
            w.why,
            crate::text::cut(&w.question, 200)
        ),
        document: serde_json::to_string_pretty(&w).expect("a Waiting serialises"),
    }
}

/// The `waiting.json` of the board's person's turn, before anyone is asked: the question,
/// the documents, the blank answer in both forms.
pub fn waiting_for(board: &Board, now: &str) -> Result<Waiting> {
    let call = super::single_call(board)
        .cloned()
        .ok_or_else(|| Error::Usage("no call is pending for a person".into()))?;
    let agent = &board.agents[&call.target_agent];
    let screen = request(board, &call)?
        .messages
        .first()
        .map(|m| m.content.clone())
        .unwrap_or_default();
    Ok(Waiting {
        waiting_version: crate::model::WAITING_VERSION,
        agent: agent.name.clone(),
        role: agent.role.clone(),
        question: call.prompt.clone(),
        asked_at: now.to_string(),
        call: board.usage.calls + 1,
        why: String::new(),
        documents: board
            .context_bundle
            .documents
            .iter()
            .map(|d| WaitingDocument {
                document_id: d.document_id.clone(),
                source_path: d.source_path.clone(),
                purpose: d.purpose.clone(),
            })
            .collect(),
        problem: None,
        answer_template: blank_answer(None),
        answer_text: template(&screen, None, None),
        screen,
    })
}

/// The answer to fill in as JSON: the previous one after an unusable answer, else blank.
fn blank_answer(previous: Option<&str>) -> Value {
    let prev: Map<String, Value> = previous
        .and_then(|p| serde_json::from_str(p).ok())
        .unwrap_or_default();
    let mut out = Map::new();
    out.insert(
        "response".into(),
        prev.get("response").cloned().unwrap_or_else(|| json!("")),
    );
    for key in LISTS.iter().map(|(k, _)| *k).chain(["citations"]) {
        out.insert(
            key.into(),
            prev.get(key).cloned().unwrap_or_else(|| json!([])),
        );
    }
    Value::Object(out)
}

/// With `--provider replay`, the cassette when it holds the person's answer to this call: a
/// recorded meeting replays without asking anyone.
fn from_cassette(
    board: &Board,
    llm: &crate::llm::LlmConfig,
) -> Result<Option<crate::llm::replay::Replay>> {
    let Some(agent) = super::single_call(board).and_then(|c| board.agents.get(&c.target_agent))
    else {
        return Ok(None);
    };
    let replaying =
        crate::llm::build::provider_and_model(llm, &board.llm, &agent.name, &agent.metadata)
            .is_ok_and(|(p, _)| p == crate::llm::ProviderName::Replay);
    let (true, Some(path)) = (replaying, &llm.cassette) else {
        return Ok(None);
    };
    let replay = crate::llm::replay::Replay::open(path, llm.strict_replay)?;
    Ok(replay
        .has_entry(board.usage.calls + 1, &agent.name)
        .then_some(replay))
}

/// A client that asks the person through `source`; with `--reuse-log` (a resumed meeting) an
/// answer already in the log is taken from it. The options name the provider as the model
/// (the report then says just `human`). With no one there to answer, the provider leaves
/// `wait` (what it was asked) in `shared`.
fn client(
    board: &Board,
    source: Source,
    llm: &crate::llm::LlmConfig,
    wait: Waiting,
    shared: Rc<RefCell<Shared>>,
) -> (Client, Options) {
    let docs = board
        .context_bundle
        .documents
        .iter()
        .map(|d| (d.document_id.clone(), d.source_path.clone()))
        .collect();
    let mut provider: Box<dyn Provider> = Box::new(Human {
        source,
        docs,
        terminal: None,
        wait,
        shared,
    });
    // `--record`: the person's answers go into the cassette like a model's.
    if let Some(path) = &llm.record {
        provider = Box::new(crate::llm::replay::Recorder::new(provider, path));
    }
    if let (Some(log), true) = (&llm.llm_log, llm.reuse_log) {
        provider = Box::new(crate::llm::resume::FromLog::new(provider, log));
    }
    let client = Client::new(provider, board.usage.calls).with_log(llm.llm_log.clone());
    let opts = Options {
        model: PROVIDER.into(),
        temperature: None,
        max_tokens: None,
    };
    (client, opts)
}

/// What the person is shown (and the log keeps as the request): the PM's question, the
/// citable documents, the whiteboard as an agent sees it.
pub(crate) fn request(board: &Board, call: &PendingCall) -> Result<Request> {
    let agent = &board.agents[&call.target_agent];
    let documents: Vec<Value> = board
        .context_bundle
        .documents
        .iter()
        .map(|d| json!({"id": d.document_id, "purpose": d.purpose}))
        .collect();
    let screen = render(
        "human_turn.j2",
        &json!({
            "name": agent.name,
            "role": agent.role,
            "prompt": call.prompt,
            "documents": documents,
            "whiteboard": super::meeting_summary(board),
        }),
    )?;
    Ok(Request {
        caller: agent.name.clone(),
        system: String::new(),
        messages: vec![crate::llm::Message::user(screen)],
        // Parsed like a model's reply (the person's answer becomes JSON).
        expect: Some(super::agent_expected_json(
            agent,
            &board.context_bundle.documents,
        )),
        facts: Default::default(),
    })
}

/// The person behind an agent, as a provider: each attempt is one answer.
struct Human {
    source: Source,
    /// `(document_id, source_path)` of the citable documents, to fill in a citation's path.
    docs: Vec<(String, String)>,
    /// The terminal's input, kept between an answer and its fix.
    terminal: Option<BufReader<File>>,
    /// What the run folder keeps when no one is there to answer, and where it is left.
    wait: Waiting,
    shared: Rc<RefCell<Shared>>,
}

impl Provider for Human {
    fn name(&self) -> &str {
        PROVIDER
    }

    fn attempt(
        &mut self,
        seq: u64,
        req: &Request,
        opts: &Options,
    ) -> Result<RawReply, AttemptError> {
        let screen = req.messages.first().map_or("", |m| m.content.as_str());
        // After an unusable answer the ask loop appends it and the correction: show the
        // correction's first line (the rest speaks to a model).
        let (previous, problem) = match req.messages.len() {
            n if n >= 3 => (
                Some(req.messages[n - 2].content.as_str()),
                req.messages[n - 1].content.lines().next(),
            ),
            _ => (None, None),
        };
        let text = match &mut self.source {
            Source::Answers { lines, next, file } => match lines.get(*next).cloned() {
                Some(line) => {
                    *next += 1;
                    line
                }
                None => {
                    let why = format!(
                        "no human available: {} has no answer left ({} used)",
                        file.display(),
                        lines.len()
                    );
                    return Err(self.wait(seq, why, screen, previous, problem));
                }
            },
            Source::Editor { command } => {
                let command = command.clone();
                self.by_editor(&command, screen, previous, problem)?
            }
            Source::Terminal { path } => {
                let path = path.clone();
                self.by_terminal(&path, screen, problem)?
            }
            // Only a fix after a logged answer gets here, with no one there to give it.
            Source::Logged => {
                let why = "no human available to fix the answer given".to_string();
                return Err(self.wait(seq, why, screen, previous, problem));
            }
            Source::Cassette(replay) => return replay.attempt(seq, req, opts),
            Source::Given(given) => match given.take() {
                Some(text) => {
                    self.shared.borrow_mut().given_used = true;
                    text
                }
                None => {
                    let why = "the answer given was used; another is needed".to_string();
                    return Err(self.wait(seq, why, screen, previous, problem));
                }
            },
        };
        // A person's answer has its own bound, not a model's `max_tokens`: each of its texts is
        // kept up to `PERSON_CHARS`, a longer one cut with a note saying so. Text that is no
        // answer object yet is bounded like a model's reply and sent back once if cut.
        let (text, answer) = self.complete(&text);
        let most = match answer {
            true => usize::MAX,
            false => opts
                .max_tokens
                .map_or(usize::MAX, |n| n as usize * crate::llm::MAX_CHARS_PER_TOKEN),
        };
        let truncated = text.chars().count() > most;
        let text = match truncated {
            true => text.chars().take(most).collect(),
            false => text,
        };
        Ok(RawReply {
            text,
            // A person costs no tokens.
            usage: Some(TokenUsage::default()),
            truncated,
        })
    }
}

/// The most characters of each text of a person's answer (its response, each point, each
/// quote) that are kept (docs/design/agent-turn.md#waiting-for-a-person).
pub const PERSON_CHARS: usize = 8_000;

/// Each text of a person's answer object cut to [`PERSON_CHARS`], the cut said in the text.
fn cut_person_texts(obj: &mut serde_json::Map<String, Value>) {
    fn cut(v: &mut Value) {
        match v {
            Value::String(s) if s.chars().count() > PERSON_CHARS => {
                let more = s.chars().count() - PERSON_CHARS;
                let kept: String = s.chars().take(PERSON_CHARS).collect();
                *s = format!(
                    "{kept} […{more} more characters not kept: a person's answer keeps {PERSON_CHARS} characters of each text]"
                );
            }
            Value::Array(items) => items.iter_mut().for_each(cut),
            Value::Object(o) => o.values_mut().for_each(cut),
            _ => {}
        }
    }
    obj.values_mut().for_each(cut);
}

/// The list sections of the template and the terminal's questions, in order.
const LISTS: [(&str, &str); 3] = [
    ("key_points", "Key points"),
    ("risks", "Risks"),
    ("recommendations", "Recommendations"),
];

impl Human {
    /// No one is there to answer attempt `seq`: leave what the person is asked (after an
    /// unusable answer, that answer and its problem) for the turn, which ends waiting.
    fn wait(
        &self,
        seq: u64,
        why: String,
        screen: &str,
        previous: Option<&str>,
        problem: Option<&str>,
    ) -> AttemptError {
        let mut w = self.wait.clone();
        w.call = seq;
        w.why = why;
        w.problem = problem.map(str::to_string);
        w.answer_template = blank_answer(previous);
        w.answer_text = template(screen, previous, problem);
        let message = format!(
            "no one is there to answer for {}; the meeting waits",
            w.agent
        );
        self.shared.borrow_mut().waiting = Some(w);
        AttemptError::NoOneThere(message)
    }

    /// Fill in each citation's `source_path` from its document when the person left it out
    /// (an unknown id keeps none, and the answer check names it).
    fn complete(&self, text: &str) -> (String, bool) {
        let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(text) else {
            return (text.to_string(), false);
        };
        cut_person_texts(&mut obj);
        if let Some(Value::Array(cites)) = obj.get_mut("citations") {
            for c in cites.iter_mut().filter_map(Value::as_object_mut) {
                if c.contains_key("source_path") {
                    continue;
                }
                let id = c.get("document_id").and_then(Value::as_str).unwrap_or("");
                let path = self
                    .docs
                    .iter()
                    .find(|(d, _)| d == id)
                    .map_or(id.to_string(), |(_, p)| p.clone());
                c.insert("source_path".into(), Value::String(path));
            }
        }
        (Value::Object(obj).to_string(), true)
    }

    /// Open the template in the editor (stdio on the terminal when there is one) and read
    /// back what the person wrote. An editor that fails gives an empty answer.
    fn by_editor(
        &self,
        command: &str,
        screen: &str,
        previous: Option<&str>,
        problem: Option<&str>,
    ) -> Result<String, AttemptError> {
        let io = |e: std::io::Error| AttemptError::Fatal(format!("answer file: {e}"));
        let mut file = tempfile::Builder::new()
            .prefix("agent-meeting-answer-")
            .suffix(".txt")
            .tempfile()
            .map_err(io)?;
        file.write_all(template(screen, previous, problem).as_bytes())
            .map_err(io)?;
        file.flush().map_err(io)?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("{command} \"$@\""))
            .arg(command)
            .arg(file.path());
        let tty = tty_path();
        match (File::open(&tty), writable_terminal(&tty)) {
            (Ok(input), Some(out)) => {
                let err = out.try_clone().map_err(io)?;
                cmd.stdin(input).stdout(out).stderr(err);
            }
            // No terminal: the editor is a program; keep stdout (the board) clean.
            _ => {
                cmd.stdin(Stdio::null()).stdout(std::io::stderr());
            }
        }
        match cmd.status() {
            Ok(s) if s.success() => {}
            _ => return Ok(String::new()),
        }
        let text = std::fs::read_to_string(file.path()).map_err(io)?;
        Ok(answer_from_template(&text, &self.docs))
    }

    /// Ask on the terminal, section by section; an empty line ends a section.
    fn by_terminal(
        &mut self,
        path: &Path,
        screen: &str,
        problem: Option<&str>,
    ) -> Result<String, AttemptError> {
        let io = |e: std::io::Error| AttemptError::Fatal(format!("{}: {e}", path.display()));
        if self.terminal.is_none() {
            self.terminal = Some(BufReader::new(File::open(path).map_err(io)?));
        }
        let mut out: Box<dyn Write> = match writable_terminal(path) {
            Some(f) => Box::new(f),
            None => Box::new(std::io::stderr()),
        };
        // The PM's question and the whiteboard reach the terminal here, beside `note!`:
        // sanitised the same way (docs/design/report.md#sanitising).
        let (screen, problem) = (
            crate::text::sanitise_for_terminal(screen),
            problem.map(crate::text::sanitise_for_terminal),
        );
        match problem {
            Some(p) => writeln!(out, "\n{p}\nPlease answer again.\n").map_err(io)?,
            None => writeln!(out, "\n{screen}").map_err(io)?,
        }
        let input = self.terminal.as_mut().expect("opened above");
        let mut text = String::new();
        let sections = [("response", "Your answer")]
            .into_iter()
            .chain(LISTS)
            .chain([(
                "citations",
                "Citations, as DOCUMENT_ID | exact quote | what it supports",
            )]);
        for (key, label) in sections {
            let note = if key == "response" {
                ""
            } else {
                ", one per line"
            };
            write!(out, "{label}{note} (an empty line ends it):\n> ").map_err(io)?;
            out.flush().map_err(io)?;
            text.push_str(&format!("[{key}]\n"));
            loop {
                let mut line = String::new();
                if input.read_line(&mut line).map_err(io)? == 0 || line.trim().is_empty() {
                    break;
                }
                text.push_str(&line);
                write!(out, "> ").map_err(io)?;
                out.flush().map_err(io)?;
            }
        }
        writeln!(out).map_err(io)?;
        Ok(answer_from_template(&text, &self.docs))
    }
}

/// The terminal to write to when `path` is one (a character device), else `None` (stderr).
fn writable_terminal(path: &Path) -> Option<File> {
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.file_type().is_char_device() {
        return None;
    }
    std::fs::OpenOptions::new().write(true).open(path).ok()
}

/// The file the editor opens: the sections to fill (the previous answer in them after an
/// unusable one), then the screen and the rules as comment lines.
fn template(screen: &str, previous: Option<&str>, problem: Option<&str>) -> String {
    let prev: Map<String, Value> = previous
        .and_then(|p| serde_json::from_str(p).ok())
        .unwrap_or_default();
    let mut out = String::new();
    if let Some(p) = problem {
        out.push_str(&format!("# {p}\n# Please fix it below.\n\n"));
    }
    out.push_str("[response]\n");
    if let Some(r) = prev.get("response").and_then(Value::as_str) {
        out.push_str(r);
        out.push('\n');
    }
    out.push('\n');
    for (key, _) in LISTS {
        out.push_str(&format!("[{key}]\n"));
        for item in prev
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.push_str(&format!("- {}\n", item.as_str().unwrap_or_default()));
        }
        out.push('\n');
    }
    out.push_str("[citations]\n");
    for c in prev
        .get("citations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let f = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
        out.push_str(&format!(
            "{} | {} | {}\n",
            f("document_id"),
            f("quote"),
            f("supports")
        ));
    }
    out.push('\n');
    out.push_str(
        "# Write your answer under the headings above; lines starting with '#' are ignored.\n\
         # One item per line in the lists; a citation is: DOCUMENT_ID | exact quote | what it supports.\n\
         # An empty response gives no answer.\n#\n",
    );
    for line in screen.lines() {
        out.push_str(&format!("# {line}\n").replace("# \n", "#\n"));
    }
    out
}

/// The answer (AgentTurnResult JSON) in a filled template: `[section]` headings, comment
/// lines (`#`) ignored, list items one per line (a leading `- ` or `* ` dropped), citations
/// as `DOCUMENT_ID | quote | supports`. `[proposals]` is taken for `[recommendations]`.
pub(crate) fn answer_from_template(text: &str, docs: &[(String, String)]) -> String {
    let mut section = String::new();
    let mut response: Vec<&str> = Vec::new();
    let mut lists: Map<String, Value> = Map::new();
    let mut citations: Vec<Value> = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        let t = line.trim();
        if let Some(name) = t.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            section = name.trim().to_lowercase().replace([' ', '-'], "_");
            if section == "proposals" {
                section = "recommendations".into();
            }
            continue;
        }
        match section.as_str() {
            "response" => response.push(line.trim_end()),
            _ if t.is_empty() => {}
            "citations" => {
                let mut parts = t.splitn(3, '|').map(str::trim);
                let id = parts.next().unwrap_or_default();
                let path = docs
                    .iter()
                    .find(|(d, _)| d == id)
                    .map_or(id, |(_, p)| p.as_str());
                let mut c = json!({"document_id": id, "source_path": path,
                    "quote": parts.next().unwrap_or_default()});
                if let Some(s) = parts.next().filter(|s| !s.is_empty()) {
                    c["supports"] = json!(s);
                }
                citations.push(c);
            }
            key if LISTS.iter().any(|(k, _)| *k == key) => {
                let item = t
                    .strip_prefix("- ")
                    .or_else(|| t.strip_prefix("* "))
                    .unwrap_or(t)
                    .trim();
                if !item.is_empty() && item != "-" {
                    lists
                        .entry(key.to_string())
                        .or_insert_with(|| json!([]))
                        .as_array_mut()
                        .expect("a list")
                        .push(json!(item));
                }
            }
            _ => {}
        }
    }
    let mut answer = Map::new();
    answer.insert("response".into(), json!(response.join("\n").trim()));
    for (key, _) in LISTS {
        answer.insert(key.into(), lists.remove(key).unwrap_or_else(|| json!([])));
    }
    answer.insert("citations".into(), Value::Array(citations));
    Value::Object(answer).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The template round-trips: comments ignored, lists one per line, citations split on
    /// `|` with the document's path filled in, `[proposals]` read as recommendations.
    #[test]
    fn a_filled_template_is_an_answer() {
        let docs = vec![("docs/a.md".to_string(), "docs/a.md".to_string())];
        let text = "# the PM asks\n[response]\nWe can ship.\nSecond line.\n\n[key_points]\n- one\n* two\n-\n\n\
                    [risks]\n\n[proposals]\nship it\n[citations]\ndocs/a.md | the quote | one\n# ignored | x\n";
        let v: Value = serde_json::from_str(&answer_from_template(text, &docs)).unwrap();
        assert_eq!(v["response"], "We can ship.\nSecond line.");
        assert_eq!(v["key_points"], json!(["one", "two"]));
        assert_eq!(v["risks"], json!([]));
        assert_eq!(v["recommendations"], json!(["ship it"]));
        assert_eq!(
            v["citations"],
            json!([{"document_id": "docs/a.md", "source_path": "docs/a.md", "quote": "the quote", "supports": "one"}])
        );
        // The template the editor opens, filled back from a previous answer, reads the same.
        let again = template(
            "Q?\n\nmore",
            Some(&v.to_string()),
            Some("Your previous reply could not be used: x"),
        );
        assert!(again.starts_with("# Your previous reply could not be used: x\n"));
        let w: Value = serde_json::from_str(&answer_from_template(&again, &docs)).unwrap();
        assert_eq!(v, w);
        let empty: Value =
            serde_json::from_str(&answer_from_template(&template("Q?", None, None), &docs))
                .unwrap();
        assert_eq!(empty["response"], "");
    }
}
