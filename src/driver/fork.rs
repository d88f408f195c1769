//! `meeting --fork DIR --at-loop N` (docs/design/run-folder.md#fork): a new meeting from a run
//! folder's settings and collected documents, with some of them changed (`--model`,
//! `--agents`, `--max-loops`), whose calls before loop N are answered from the parent's
//! exchange log — no paid call twice, none of them sent — and the rest asked live.
//!
//! How: the fork's `llm.jsonl` starts as a copy of the parent's, so the resume path answers
//! each call it holds by number and caller (`llm::resume::FromLog`). When the fork's board
//! reaches loop N the driver cuts its log back to the calls made so far and builds its
//! clients again (`run_dir::cut_log`): from there nothing is answered from the parent.

use std::path::{Path, PathBuf};

use super::callers::{check_llm_config, models_line};
use super::drive::Run;
use super::progress::Ui;
use super::report_path::{check_report_path, free_report_name, prove_writable};
use super::run_dir::RunDir;
use super::settings::{absolute, RunSettings};
use super::stages::Stages;
use super::start::{create, Checked};
use crate::error::{Error, Result};
use crate::io::to_json_line;
use crate::model::{ForkOf, MeetingPacket, PACKET_VERSION};
use crate::stage::Stage;

/// What a fork changes of its parent's meeting; `None` keeps the parent's.
#[derive(Debug, Clone, Default)]
pub struct ForkChanges {
    /// The first loop asked live (1: every call).
    pub at_loop: u32,
    pub model: Option<String>,
    pub agents: Option<Vec<String>>,
    pub max_loops: Option<u32>,
    pub trace_id: Option<String>,
    /// Default: the parent's report name with `-fork`, the next free number when taken.
    pub report_file: Option<PathBuf>,
    /// The folder holding the fork's run folder (default: the parent's).
    pub run_dir: Option<PathBuf>,
    /// `--trust-run-dir`: use what the parent's folder asks for without it being given again
    /// (docs/design/run-folder.md#a-run-folder-is-input).
    pub trust_run_dir: bool,
}

/// Make the fork's run folder and hand it to the driver.
pub fn fork(parent: &Path, changes: ForkChanges, ui: Ui) -> Result<Run> {
    let folder = super::trust::Folder::open(parent, "--fork")?;
    let mut settings = folder.settings.clone();
    // What the parent resolved is the parent's: the fork changes some of it.
    settings.resolved.clear();
    let parent_board = super::final_board(parent)?;
    let most = parent_board.loop_count + 1;
    if changes.at_loop == 0 || changes.at_loop > most {
        return Err(Error::Usage(format!(
            "--at-loop: {} is not a loop of the meeting in {} (1 to {most}: it ran {} loops)",
            changes.at_loop,
            parent.display(),
            parent_board.loop_count
        )));
    }
    if let Some(m) = changes.model {
        settings.llm.model = Some(m);
    }
    if let Some(a) = changes.agents {
        settings.board.options.agents = a;
    }
    if let Some(n) = changes.max_loops {
        settings.board.options.max_loops = Some(n);
    }
    let now = crate::meeting::events::clock_from_env().now();
    let trace_id = changes
        .trace_id
        .unwrap_or_else(|| crate::stage::init_board::new_trace_id(&now));
    settings.board.trace_id = Some(trace_id.clone());
    settings.report_file = match changes.report_file {
        Some(f) => absolute(&f),
        None => free_report_name(&absolute(&forked_name(&settings.report_file))),
    };
    settings.fork = Some(ForkOf {
        run_dir: absolute(parent).display().to_string(),
        trace_id: parent_board.trace_id.clone(),
        at_loop: changes.at_loop,
        from_parent: None,
    });
    // A fork is a resume of the parent's folder for what it may ask (docs/design/run-folder.md#fork):
    // what runs a command, writes a file elsewhere, sends the traces or the key elsewhere is
    // refused, naming it, unless the folder is trusted — then the fork takes it as its parent
    // had it. Its report is its own (a new free name, or the one given); every stage is still
    // to run.
    let given = super::trust::GivenAgain {
        report_file: true,
        ..Default::default()
    };
    folder.gate(
        &settings,
        Some(Stage::PmStep),
        &given,
        changes.trust_run_dir,
    )?;
    // The parent's collected documents, as its meeting saw them.
    let packet_file = RunDir {
        path: parent.to_path_buf(),
    }
    .file(1, Stage::CollectContext, "out");
    let packet_text = crate::io::read_text_file(&packet_file)?;
    let packet: MeetingPacket = crate::io::parse_versioned(
        &packet_file.display().to_string(),
        &packet_text,
        "packet_version",
        PACKET_VERSION,
    )?;
    let holder = match changes.run_dir {
        Some(d) => d,
        None => parent
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    // A fork is a meeting started today: under the day's cap as any other, not its parent's.
    settings.board.day_left_usd = None;
    // The user's own command, as a new meeting's (the parent's folder holds none).
    settings.on_waiting = crate::settings::on_waiting(None);
    let config = crate::settings::config::load_file(settings.config_file.as_deref())?.config;
    let day_lock = super::start::day_cap(&mut settings, &holder, &config, true, ui)?;
    let board = Stages::new(&settings).init(packet)?;
    let board_text = to_json_line(&board, false);
    check_llm_config(&settings.llm, &board, false)?;
    let models = models_line(&settings.llm, &board)?;
    let dir = RunDir {
        path: holder.join(&trace_id),
    };
    check_report_path(&settings, &board, &dir.path)?;
    prove_writable(&settings.report_file)?;
    let run = create(
        Checked {
            settings,
            packet_text,
            board_text,
            board,
            models,
            dir,
            numbered_from: None,
            default_report: None,
            day_lock,
        },
        ui,
    )?;
    // The parent's answers, for the calls before loop N (cut when the fork gets there).
    let log = run.dir.path.join("llm.jsonl");
    copy_log(&parent.join("llm.jsonl"), &log)?;
    if !ui.quiet {
        crate::note!(
            "fork of {} at loop {}: the calls before it are answered from {}",
            parent_board.trace_id,
            run.settings.fork.as_ref().map_or(0, |f| f.at_loop),
            parent.join("llm.jsonl").display()
        );
    }
    let mut run = run;
    run.fork_at = pending(&run.settings, &run.board);
    Ok(run)
}

/// The loop a fork's log is still to be cut at: its `at_loop` while the board is before that
/// loop's first PM round (a resumed fork killed before it cuts then).
pub(super) fn pending(settings: &RunSettings, board: &crate::model::Board) -> Option<u32> {
    let at_start = |n: u32| {
        board.current_loop() == n
            && board.pending_calls.is_empty()
            && board.last_turns.is_empty()
            && board.next_stage() == Some(Stage::PmStep)
    };
    settings
        .fork
        .as_ref()
        .map(|f| f.at_loop)
        .filter(|&n| board.current_loop() < n || at_start(n))
}

/// A fork made by a build that kept its parent's share in `meeting.json`'s fork record rather
/// than on the board (`record.from_parent`): the share moved onto the board, so the fork's
/// cost still leaves it out when it is resumed or compared.
pub(super) fn parent_share(board: &mut crate::model::Board, settings: &RunSettings) {
    if board.record.from_parent.is_none() {
        board.record.from_parent = settings.fork.as_ref().and_then(|f| f.from_parent.clone());
    }
}

/// The parent's `<folder>/x.md` → `reports/x-fork.md` under the current folder.
fn forked_name(report: &Path) -> PathBuf {
    // The parent's report names the fork's, never its place or kind: the folder is input.
    let stem = report
        .file_stem()
        .map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
    PathBuf::from(format!("reports/{}-fork.md", crate::text::slug(&stem)))
}

/// The parent's exchange log copied whole (its whole lines) as the fork's first lines.
fn copy_log(parent: &Path, fork: &Path) -> Result<()> {
    let Some(bytes) = crate::io::read_if_exists(parent)? else {
        return Ok(());
    };
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    crate::io::write_atomic(fork, &bytes[..whole])
}

/// `meeting --compare A B`: what changed between two run folders' meetings, as Markdown
/// (`stage::render_report::compare`).
pub fn compare(a: &Path, b: &Path) -> Result<String> {
    let read = |dir: &Path| -> Result<(crate::model::Board, Option<ForkOf>)> {
        let settings = super::trust::Folder::open(dir, "--compare")?.settings;
        let mut board = super::final_board(dir)?;
        parent_share(&mut board, &settings);
        Ok((board, settings.fork))
    };
    let ((ba, fa), (bb, fb)) = (read(a)?, read(b)?);
    let (la, lb) = (a.display().to_string(), b.display().to_string());
    use crate::stage::render_report::compare::{compare, Side};
    Ok(compare(
        &Side {
            label: &la,
            board: &ba,
            cost: crate::meeting::budget::live_cost(&ba),
            fork: fa.as_ref(),
        },
        &Side {
            label: &lb,
            board: &bb,
            cost: crate::meeting::budget::live_cost(&bb),
            fork: fb.as_ref(),
        },
    ))
}
