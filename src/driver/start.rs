//! Starting a meeting (docs/design/run-folder.md#run-folder): the run settings from the flags and the config
//! file, collect-context and init-board in memory, every check a real start makes before the
//! first model call, then the run folder — or, for `--dry-run`, the PM's first prompt.
//!
//! Beside them, grouped at the end: how each caller's provider and model are resolved for the
//! start line, the key check and the dry run's prompt.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::callers::{check_llm_config, models_line, replay_from_env_warning};
use super::drive::Run;
use super::outcome::Tally;
use super::progress::Ui;
use super::report_path::{
    check_report_path, claim_report_name, default_report_file, free_report_name, prove_writable,
    release_claim,
};
use super::run_dir::open_append;
use super::run_dir::RunDir;
use super::settings::{absolute, MeetingSource, RunSettings, SETTINGS_VERSION};
use super::stages::{self, Stages};
use crate::error::{Error, Result};
use crate::io::{os_error, to_json_line};
use crate::llm::LlmConfig;
use crate::model::Board;
use crate::settings::MeetingSettings;
use crate::stage::Stage;

/// What `meeting` was asked to start: its flags, before the config file fills the gaps.
pub struct NewMeeting {
    pub source: MeetingSource,
    /// collect-context's flags, passed on.
    pub context: crate::context::ContextSettings,
    /// `--share-docs`: no division of the documents among the participants.
    pub share_docs: bool,
    /// render-report's `--template`.
    pub template: Option<PathBuf>,
    /// The meeting's options as given (`max_loops`: given, it wins over the config file's).
    pub board: MeetingSettings,
    /// The LLM flags; the config file's defaults are added below them (docs/design/agents-and-config.md#config).
    pub llm: LlmConfig,
    /// Default: `reports/<meeting stem>.md` or `reports/<topic slug>.md`.
    pub report_file: Option<PathBuf>,
    /// `--run-dir`, the folder holding run folders (else the config file's, else `runs`).
    pub run_dir: Option<PathBuf>,
    pub stage_overrides: BTreeMap<Stage, String>,
    /// The environment variables that set an LLM flag (`AGENT_MEETING_PROVIDER`,
    /// agent-turn's `--human-answers`.
    pub human_answers: Option<PathBuf>,
    /// Where the traces go (`--otlp-endpoint`, docs/design/otel.md#traces).
    pub otlp: Option<crate::otlp::OtlpSettings>,
    /// `--adr` (and `--supersedes`): the decision record to write once the report is saved.
    pub adr: Option<super::settings::AdrSettings>,
    /// `--on-waiting CMD` (else the config file's `on_waiting`).
    pub on_waiting: Option<String>,
}

/// What `--dry-run` prints: the PM's first prompt as it would be sent, and its input
/// document (`--json`).
pub struct DryRun {
    pub pm_input: serde_json::Value,
    /// The system message, then the user message, each under a marker line.
    pub prompt: String,
}

/// A meeting checked and ready to start: everything but the run folder.
pub(super) struct Checked {
    pub(super) settings: RunSettings,
    pub(super) packet_text: String,
    pub(super) board_text: String,
    pub(super) board: Board,
    /// The start line's models line.
    pub(super) models: String,
    pub(super) dir: RunDir,
    /// The report already at the default path, kept (this meeting's goes to a numbered name).
    pub(super) numbered_from: Option<PathBuf>,
    /// The default report path, when `--report-file` was not given: the start claims it or
    /// the next free numbered name.
    pub(super) default_report: Option<PathBuf>,
    /// With a day's spending cap: the run folders' lock, held until this meeting's folder
    /// is filled, so that meetings started together count each other.
    pub(super) day_lock: Option<std::fs::File>,
}

/// Start a new meeting: collect, init (in memory, so bad input leaves no run folder), check
/// every caller's provider configuration, then create and fill the run folder.
pub fn start(new: NewMeeting, ui: Ui) -> Result<Run> {
    let mut checked = check(new, false, ui)?;
    // Before any model call: the report's folder exists and takes a file, and the user's
    // exchange log opens (docs/design/run-folder.md#run-folder).
    prove_writable(&checked.settings.report_file)?;
    if let Some(user) = &checked.settings.user_llm_log {
        open_append(user).map_err(|e| {
            Error::Usage(format!("--llm-log: {}: {}", user.display(), os_error(&e)))
        })?;
    }
    let Some(default) = checked.default_report.clone() else {
        return create(checked, ui);
    };
    // A default name is claimed now, exclusively: another meeting may have taken the one
    // checked above since.
    let claimed = claim_report_name(&default)?;
    checked.numbered_from = (claimed != default).then_some(default);
    checked.settings.report_file = claimed.clone();
    let started = check_report_path(&checked.settings, &checked.board, &checked.dir.path)
        .and_then(|()| create(checked, ui));
    if started.is_err() {
        release_claim(&claimed);
    }
    started
}

/// `--dry-run`: every check of a real start but the keys (a missing one is a warning), the
/// models line, and the PM's first prompt; no call, no folder.
pub fn dry_run(new: NewMeeting, ui: Ui) -> Result<DryRun> {
    let checked = check(new, true, ui)?;
    dry_run_prompt(&checked.settings.llm, &checked.board, ui)
}

/// The settings, the first board and every check before the run folder is made. A dry run
/// prints the models line and only warns of a missing key (docs/design/run-folder.md#run-folder).
fn check(new: NewMeeting, dry_run: bool, ui: Ui) -> Result<Checked> {
    let (mut settings, run_dir, numbered_from, default_report, mut shown) = settings_of(new)?;
    let day_lock = day_cap(&mut settings, &run_dir, &shown.loaded.config, !dry_run, ui)?;
    if let Some(adr) = &settings.adr {
        if settings.llm.provider.as_deref() == Some(crate::llm::sample::NAME) {
            return Err(crate::stage::render_report::sample_refusal());
        }
        // A folder the record cannot go to, or a wrong number, is found before any call.
        super::record::check(adr)?;
    }
    if let Some(file) = &settings.human_answers {
        // Read now, not at the person's turn after paid calls.
        crate::stage::agent_turn::human::answer_lines(file)?;
    }
    let (packet_text, board_text, board) = first_board(&settings, ui)?;
    // Every setting as this meeting resolves it, with its source, kept in meeting.json.
    shown.given.callers = super::callers::callers(&board);
    // Not the headers: given again to every resume, like keys, they are kept nowhere.
    settings.resolved =
        crate::settings::resolve_all(&shown.given, &shown.loaded, Some(&board.meeting_input))?
            .into_iter()
            .filter(|r| !r.name.starts_with("header "))
            .collect();
    // A missing key or a broken cassette is found now, before any run folder exists.
    let missing = check_llm_config(&settings.llm, &board, dry_run)?;
    let models = models_line(&settings.llm, &board)?;
    if dry_run {
        if !ui.quiet {
            crate::note!("{models}");
            if let Some(h) = crate::llm::headers::shown_line(&settings.llm.headers) {
                crate::note!("{h}");
            }
        }
        for m in &missing {
            crate::note!("meeting: warning: {m}");
        }
    }
    if let Some(w) = replay_from_env_warning(&settings.llm) {
        crate::note!("{w}");
    }
    let dir = RunDir {
        path: run_dir.join(&board.trace_id),
    };
    check_report_path(&settings, &board, &dir.path)?;
    Ok(Checked {
        settings,
        packet_text,
        board_text,
        board,
        models,
        dir,
        numbered_from,
        default_report,
        day_lock,
    })
}

/// The least a meeting may be left by the day's spending cap: under a cent, it cannot pay for
/// a call.
const LEAST_DAY_LEFT_USD: f64 = 0.01;

/// The day's spending cap (docs/design/run-folder.md#a-spending-cap-per-day): what the meetings
/// started today (UTC) in the run folders spent or may still spend is summed — under the run
/// folders' lock when `lock`, held by the caller until this meeting's folder is filled, so
/// that meetings started together count each other — and this meeting may spend what is left.
/// None left refuses it (exit 5).
pub(super) fn day_cap(
    settings: &mut RunSettings,
    runs: &Path,
    config: &crate::settings::config::Config,
    lock: bool,
    ui: Ui,
) -> Result<Option<std::fs::File>> {
    let cap = crate::settings::resolve(&settings.board.options, None, config).max_cost_per_day;
    let Some(cap) = cap.value else {
        return Ok(None);
    };
    let guard = lock.then(|| lock_runs(runs)).transpose()?;
    let now = crate::meeting::events::clock_from_env().now();
    let day = now.get(..10).unwrap_or(&now);
    let spent = super::history::spent_on(runs, day)?;
    let left = cap - spent.usd;
    let dollars = crate::llm::prices::dollars;
    if left < LEAST_DAY_LEFT_USD {
        return Err(Error::DaySpent(format!(
            "the day's spending cap is spent: {} of {} by {} started {day} (UTC) in {}; \
             a meeting can start after 00:00 UTC, or with a higher --max-cost-per-day",
            dollars(spent.usd),
            dollars(cap),
            crate::text::plural(spent.meetings as u64, "meeting"),
            runs.display()
        )));
    }
    let own = settings.board.options.max_cost;
    if own.is_none_or(|own| own > left) && !ui.quiet {
        crate::note!(
            "meeting: the day's spending cap leaves {} of {} for this meeting (--max-cost-per-day)",
            dollars(left),
            dollars(cap)
        );
    }
    settings.board.day_left_usd = Some(left);
    Ok(guard)
}

/// The lock of the folder holding run folders, for the day's spending cap: one start at a time
/// counts what the day spent and makes its folder.
fn lock_runs(runs: &Path) -> Result<std::fs::File> {
    let fail = |e: std::io::Error| {
        Error::Runtime(format!("{}: cannot lock: {}", runs.display(), os_error(&e)))
    };
    std::fs::create_dir_all(runs).map_err(fail)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(runs.join(".day.lock"))
        .map_err(fail)?;
    file.lock().map_err(fail)?;
    Ok(file)
}

/// The run settings of a new meeting: the flags over the config file, absolute paths, the
/// trace id and the report path settled; with the folder holding run folders, the report
/// kept at the default path, if any, and the default path when no report path was given.
#[allow(clippy::type_complexity)]
fn settings_of(
    new: NewMeeting,
) -> Result<(
    RunSettings,
    PathBuf,
    Option<PathBuf>,
    Option<PathBuf>,
    Shown,
)> {
    let loaded = crate::settings::config::load()?;
    let mut board_args = new.board;
    // What show-config would be given for these flags: the run keeps what it resolves.
    let shown = Shown {
        given: crate::settings::Given {
            llm: new.llm.clone(),
            board: board_args.clone(),
            run_dir: new.run_dir.clone(),
            callers: Vec::new(),
        },
        loaded: loaded.clone(),
    };
    // Settled as the meeting starts (the config file's then, not a resume's): the board's
    // settings carry the panel and the loop limit, as given.
    let resolved = crate::settings::resolve(&board_args.options, None, &loaded.config);
    if resolved.agents.source == crate::llm::Source::Default {
        crate::note!(
            "meeting: no --agents given: the default panel, {} (--agents names others; meeting list-agents lists them)",
            resolved.agents.value.join(", ")
        );
    }
    board_args.options.agents = resolved.agents.value;
    board_args.options.max_loops = Some(resolved.max_loops.value);
    if board_args
        .options
        .agents
        .iter()
        .all(|a| a.trim().is_empty())
    {
        return Err(Error::Usage(
            "--agents: at least one agent is required (e.g. --agents arch,biz)".into(),
        ));
    }
    let now = crate::meeting::events::clock_from_env().now();
    board_args.agents_dir = board_args.agents_dir.as_deref().map(absolute);
    let source = match new.source {
        MeetingSource::MeetingFile(f) => MeetingSource::MeetingFile(absolute(&f)),
        topic => topic,
    };
    board_args.trace_id = Some(
        board_args
            .trace_id
            .unwrap_or_else(|| crate::stage::init_board::new_trace_id(&now)),
    );
    // meeting.json keeps absolute paths, so `--resume` works from any folder. A report already
    // at the default path is kept: this meeting's gets the next free numbered name. A path the
    // user named is theirs to replace.
    let (report_file, numbered_from, default_report) = match new.report_file {
        Some(f) => (absolute(&f), None, None),
        None => {
            let default = absolute(Path::new(&default_report_file(&source)));
            let free = free_report_name(&default);
            let kept = (free != default).then(|| default.clone());
            (free, kept, Some(default))
        }
    };
    let mut llm = crate::settings::config::with_config(new.llm)?;
    // The stages log into the run folder; the user's own log gets a copy of every line.
    let user_llm_log = llm.llm_log.take().map(|l| absolute(&l));
    let settings = RunSettings {
        settings_version: SETTINGS_VERSION,
        source,
        allow_sensitive: new.context.allow_sensitive,
        no_redact: new.context.no_redact,
        context_root: new.context.context_root.as_deref().map(absolute),
        docs: new.context.docs.clone(),
        share_docs: new.share_docs,
        max_context_chars: new
            .context
            .max_context_chars
            .or_else(|| window_budget(&llm, &board_args)),
        template: new.template.as_deref().map(absolute),
        board: board_args,
        llm,
        report_file,
        stage_overrides: new.stage_overrides,
        config_file: loaded.file.as_deref().map(absolute),
        user_llm_log,
        human_answers: new.human_answers.as_deref().map(absolute),
        otlp: new.otlp,
        adr: new.adr.map(|a| super::settings::AdrSettings {
            dir: absolute(&a.dir),
            ..a
        }),
        fork: None,
        resolved: Vec::new(),
        on_waiting: crate::settings::on_waiting(new.on_waiting),
    };
    let run_dir = crate::settings::run_dir(new.run_dir, &loaded.config).0;
    Ok((settings, run_dir, numbered_from, default_report, shown))
}

/// What `show-config` is given for a new meeting's flags, and the config file it read: the
/// start resolves every setting with them once the meeting file is read.
struct Shown {
    given: crate::settings::Given,
    loaded: crate::settings::config::Loaded,
}

/// Create and fill the run folder of a checked meeting: its settings (pointed at the folder's
/// exchange log and config copy), the packet and the first board, and its first events.
pub(super) fn create(checked: Checked, ui: Ui) -> Result<Run> {
    let Checked {
        mut settings,
        packet_text,
        board_text,
        board,
        models,
        dir,
        numbered_from,
        day_lock: _day_lock,
        ..
    } = checked;
    let lock = dir.lock()?;
    if dir.path.join("meeting.json").exists() {
        return Err(Error::Usage(format!(
            "{} already holds a meeting; use meeting resume {} or another --trace-id",
            dir.path.display(),
            dir.path.display()
        )));
    }
    settings
        .stage_overrides
        .retain(|k, _| !matches!(k, Stage::CollectContext | Stage::InitBoard));
    // The run's exchange log doubles as a cache of completed calls, so a resumed meeting
    // repeats none of them.
    let llm = &mut settings.llm;
    llm.llm_log = Some(absolute(&dir.path.join("llm.jsonl")));
    llm.reuse_log = true;
    llm.cassette = llm.cassette.as_deref().map(absolute);
    llm.record = llm.record.as_deref().map(absolute);
    if settings.config_file.is_some() {
        // The stages of this run read the settings as they were at its start.
        let copy = dir.path.join("config.yaml");
        // The file the settings name: the user's for a new meeting, a parent's copy for a fork.
        let config = crate::settings::config::Config {
            // A command stays with the user: the copy is read by the stages, and a folder
            // restores no command.
            on_waiting: None,
            ..crate::settings::config::load_file(settings.config_file.as_deref())?.config
        };
        let text = serde_yaml::to_string(&config)
            .map_err(|e| Error::Runtime(format!("config.yaml: {e}")))?;
        dir.write(&copy, text.as_bytes())?;
        settings.config_file = Some(absolute(&copy));
    }
    dir.write(
        &dir.path.join("meeting.json"),
        to_json_line(&settings, true).as_bytes(),
    )?;
    dir.write(
        &dir.file(1, Stage::CollectContext, "out"),
        packet_text.as_bytes(),
    )?;
    dir.write(&dir.file(2, Stage::InitBoard, "out"), board_text.as_bytes())?;
    // A folder that held a meeting had a meeting.json (refused above): this file is new.
    let _ = std::fs::remove_file(dir.path.join("events.jsonl"));
    // Synced, with the checkpoints above: init-board's is where `--resume` can always go on
    // from (docs/design/run-folder.md#resume).
    dir.append_events(&board.new_events, true)?;
    let mut tally = Tally::default();
    tally.add(&board.new_events);
    if let (Some(kept), false) = (&numbered_from, ui.quiet) {
        crate::note!(
            "{} exists and is kept; this meeting's report goes to {}",
            kept.display(),
            settings.report_file.display()
        );
    }
    if !ui.quiet {
        crate::note!(
            "meeting {}: {} documents, participants {}, max {} loops, run folder {}",
            board.trace_id,
            board.context_bundle.documents.len(),
            board.participants.join(", "),
            board.max_loops,
            dir.path.display()
        );
        crate::note!("{models}");
    }
    Ok(Run::new(dir, settings, board, 3, tally, lock))
}

/// collect-context, then init-board, in memory (nothing is written yet): the packet and the
/// first board as their checkpoints will hold them, and the board.
fn first_board(settings: &RunSettings, ui: Ui) -> Result<(String, String, Board)> {
    crate::io::hold_stage_warnings(ui.quiet);
    let stages = Stages::new(settings);
    let quiet_ui = Ui {
        ticker: false,
        ..ui
    };
    let overrides = &settings.stage_overrides;
    let (packet, packet_text) = match overrides.get(&Stage::CollectContext) {
        None => {
            let (packet, notes) = stages.collect()?;
            if !ui.quiet {
                notes.iter().for_each(|l| crate::note!("{l}"));
            }
            let text = to_json_line(&packet, false);
            (packet, text)
        }
        Some(command) => {
            let text =
                stages::run_first_command(Stage::CollectContext, command, settings, b"", quiet_ui)?;
            (stages::parse_packet(&text)?, text)
        }
    };
    let (board, board_text) = match overrides.get(&Stage::InitBoard) {
        None => {
            let board = stages.init(packet)?;
            let text = to_json_line(&board, false);
            (board, text)
        }
        Some(command) => {
            let input = packet_text.as_bytes();
            let text =
                stages::run_first_command(Stage::InitBoard, command, settings, input, quiet_ui)?;
            (crate::io::parse_board("init-board output", &text)?, text)
        }
    };
    Ok((packet_text, board_text, board))
}

/// The PM's first prompt exactly as the PM's provider would be sent it (the reply schema in
/// the prompt or not, as that provider takes it), and its input document; for Ollama, the
/// context its first call asks for.
fn dry_run_prompt(llm: &LlmConfig, board: &Board, ui: Ui) -> Result<DryRun> {
    let pm_meta = board
        .pm
        .as_ref()
        .map(|p| p.metadata.clone())
        .unwrap_or_default();
    let resolved = crate::llm::resolve(llm, &board.llm, crate::model::PM_CALLER, &pm_meta).ok();
    let in_prompt = resolved
        .as_ref()
        .is_some_and(|r| crate::llm::build::schema_in_prompt(llm, r.provider.value));
    if let (Some(_), false) = (&board.council, ui.quiet) {
        // The council's calls come before the PM's (docs/design/council.md#flow).
        let members: Vec<&str> = board
            .pending_calls
            .iter()
            .map(|c| c.target_agent.as_str())
            .collect();
        crate::note!(
            "council: the meeting opens with the members' blind votes and rankings (first: {}); the PM's first prompt below comes after them, with their aggregate",
            members.join(", ")
        );
    }
    use crate::stage::pm_step;
    let request = pm_step::pm_request(board, pm_step::mode(board), in_prompt)?;
    if let Some(r) = resolved.filter(|r| r.provider.value == crate::llm::ProviderName::Ollama) {
        let reply = r
            .max_tokens
            .value
            .unwrap_or(crate::llm::default_max_tokens::PM_STEP);
        if !ui.quiet {
            crate::note!("{}", crate::llm::ollama::context_line(&request, reply));
        }
    }
    // The system message as the provider sends it: with the schema in words when it is not
    // sent natively.
    let system = crate::llm::system_text(&request, in_prompt);
    let user = &request.messages[0];
    Ok(DryRun {
        pm_input: crate::stage::pm_step::pm_input(board),
        prompt: format!(
            "----- system -----\n{}\n----- user -----\n{}\n",
            system.trim_end(),
            user.content.trim_end()
        ),
    })
}

/// The context budget a meeting gets without `--max-context-chars`
/// (docs/design/context.md#context-budget): sized to the smallest input window the price table
/// knows among its model callers; `None` (the fixed default) when one of them has no known
/// window (a local model, a model the table does not list) or the agents cannot be read yet.
fn window_budget(
    llm: &crate::llm::LlmConfig,
    b: &crate::settings::MeetingSettings,
) -> Option<usize> {
    let callers = super::callers::callers_of_agents(b).ok()?;
    let prices = crate::llm::prices::Prices::current();
    let board_llm = crate::model::LlmSettings::default();
    let mut smallest: Option<u64> = None;
    for (name, metadata) in &callers {
        let r = crate::llm::resolve::resolve(llm, &board_llm, name, metadata).ok()?;
        let window = prices
            .of(r.provider.value.as_str(), &r.model.value)?
            .max_input_tokens?;
        smallest = Some(smallest.map_or(window, |s| s.min(window)));
    }
    smallest.map(crate::context::budget_for_window)
}
