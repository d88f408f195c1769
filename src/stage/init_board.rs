//! The `init-board` stage: a MeetingPacket and the participants' configs → a fresh board.
//! [`init`] is pure (the caller passes the timestamp and the trace id); [`run`], the program,
//! loads the configs and reads the clock first.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::llm::LlmConfig;
use crate::meeting::events;
use crate::meeting::whiteboard::summary_lines;
use crate::model::{AgentConfig, Board, LlmSettings, MeetingPacket, Status, Usage, BOARD_VERSION};

/// What `init-board` needs besides the packet.
#[derive(Debug, Clone)]
pub struct InitOptions {
    pub agents: Vec<AgentConfig>,
    /// The configs of the meeting's reviewers who are not participants (docs/design/review.md#settings).
    pub reviewers: Vec<AgentConfig>,
    pub pm: Option<AgentConfig>,
    /// The LLM configuration the meeting's callers will use: the board's defaults are its
    /// provider, model, temperature and `max_tokens`, and a dollar budget is priced with the
    /// models it gives each caller — once, here (docs/design/pm-round.md#cost-budget).
    pub llm: LlmConfig,
    pub max_loops: u32,
    /// `--max-parallel`: most participants one CALL_AGENTS asks at once (docs/design/agent-turn.md#fan-out).
    pub max_parallel: u32,
    /// The token budget, resolved (`settings::resolve`).
    pub max_total_tokens: Option<u64>,
    /// The dollar budget, resolved (`settings::resolve`): priced here, once.
    pub max_cost_usd: Option<f64>,
    pub trace_id: String,
}

/// What `init-board` is told besides the packet, settled at the edge (`cli::settings`): who
/// takes part, where their configs are, and the resolved limits. No flag, no config file.
#[derive(Debug, Clone)]
pub struct InitArgs {
    pub agents: Vec<String>,
    /// The PM's config name, when one was named (`--pm`).
    pub pm: Option<String>,
    pub agents_dir: Option<PathBuf>,
    /// The user's agents folder (the config file's `agents_dir`, else the config folder's).
    pub user_agents_dir: Option<PathBuf>,
    /// Who reviews the PM's draft (`--review-by` over the meeting file's `review`), resolved
    /// (docs/design/review.md#settings).
    pub review: Option<crate::model::ReviewSettings>,
    /// The council round (`--council*` over the meeting file's `council`), resolved
    /// (docs/design/council.md).
    pub council: Option<crate::model::CouncilSettings>,
    pub trace_id: Option<String>,
    /// The LLM configuration the meeting's callers will use (its flags over the environment
    /// and the config file's defaults): the board's defaults, and the prices of a dollar budget.
    pub llm: LlmConfig,
    pub max_loops: u32,
    pub max_parallel: u32,
    pub max_total_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
}

/// The `init-board` program on a packet (`label` names where it came from in errors): the
/// participants' and the PM's configs looked up, the trace id settled, a fresh board.
pub fn run(mut packet: MeetingPacket, label: &str, args: InitArgs) -> Result<Board> {
    // The board carries the resolved review and council as its meeting input's.
    let input = &mut packet.meeting_input;
    input.review = args.review;
    input.council = args.council.map(crate::model::CouncilSetting::With);
    packet
        .meeting_input
        .validate()
        .map_err(|e| e.under("meeting_input").in_file(label))?;
    let pm_name = args.pm.as_deref().unwrap_or("pm");
    let search = crate::loader::AgentSearch::new(args.agents_dir.as_deref(), args.user_agents_dir);
    let (agents, pm) =
        crate::loader::load_meeting_agents(&search, &args.agents, pm_name, args.pm.is_some())?;
    let reviewers = load_reviewers(&search, &packet.meeting_input, &agents, pm_name)?;
    let now = events::clock_from_env().now();
    let trace_id = args.trace_id.unwrap_or_else(|| new_trace_id(&now));
    let opts = InitOptions {
        agents,
        reviewers,
        pm,
        llm: args.llm,
        max_loops: args.max_loops,
        max_parallel: args.max_parallel,
        max_total_tokens: args.max_total_tokens,
        max_cost_usd: args.max_cost_usd,
        trace_id,
    };
    init(packet, opts, &now)
}

/// The configs of the meeting's reviewers who are not among `participants`, looked up like
/// them; a reviewer must be a model (a person reviews the report itself), not the PM.
fn load_reviewers(
    search: &crate::loader::AgentSearch,
    input: &crate::model::MeetingInput,
    participants: &[AgentConfig],
    pm: &str,
) -> Result<Vec<AgentConfig>> {
    let Some(review) = &input.review else {
        return Ok(Vec::new());
    };
    let mut out: Vec<AgentConfig> = Vec::new();
    for (i, name) in review.reviewers().iter().enumerate() {
        let at = format!("review.by[{i}]");
        if !crate::model::is_safe_name(name) || name == pm {
            return Err(Error::Usage(format!(
                "{at}: {name:?} is not an agent name a reviewer may have (1-64 of A-Z a-z 0-9 _ -, not the PM)"
            )));
        }
        let cfg = match participants.iter().find(|a| &a.name == name) {
            Some(a) => a.clone(),
            None => search
                .load(name, crate::loader::AgentKind::Specialist)?
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "{at}: unknown agent {name:?} (available: {})",
                        search.available().join(", ")
                    ))
                })?,
        };
        if cfg.kind == crate::model::ParticipantKind::Human {
            return Err(Error::Usage(format!(
                "{at}: {name:?} is a person; reviewers are models (a person reviews the report itself)"
            )));
        }
        if !participants.iter().any(|a| &a.name == name) {
            out.push(cfg);
        }
    }
    Ok(out)
}

/// A fresh board: status `running`, loop 0, `required_questions` seeding `open_questions`.
pub fn init(packet: MeetingPacket, opts: InitOptions, now: &str) -> Result<Board> {
    if opts.max_loops < 1 {
        return Err(Error::Usage("--max-loops: must be at least 1".into()));
    }
    if opts.agents.is_empty() {
        return Err(Error::Usage(
            "--agents: at least one agent is required".into(),
        ));
    }
    let participants: Vec<String> = opts.agents.iter().map(|a| a.name.clone()).collect();
    // A document only someone absent reads would reach no one.
    for (i, d) in packet.context_bundle.documents.iter().enumerate() {
        if let Some(r) = d.readers.iter().find(|r| !participants.contains(r)) {
            return Err(Error::input(
                "",
                format!("context_bundle.documents[{i}].readers"),
                format!(
                    "{r:?} reads {} but is not a participant (participants: {})",
                    d.document_id,
                    participants.join(", ")
                ),
            ));
        }
    }
    let topic = packet.meeting_input.topic.clone();
    let max_total_tokens = opts.max_total_tokens;
    if max_total_tokens == Some(0) {
        return Err(Error::Usage(
            "--max-total-tokens: must be at least 1".into(),
        ));
    }
    let mut board = Board {
        board_version: BOARD_VERSION,
        trace_id: opts.trace_id,
        topic: topic.clone(),
        participants: participants.clone(),
        agents: opts
            .agents
            .into_iter()
            .chain(opts.reviewers)
            .map(|a| (a.name.clone(), a))
            .collect(),
        pm: opts.pm,
        llm: LlmSettings::from_config(&opts.llm),
        loop_count: 0,
        max_loops: opts.max_loops,
        max_parallel: opts.max_parallel,
        max_total_tokens,
        max_cost: None,
        status: Status::Running,
        summary: String::new(),
        latest_agent_outputs: BTreeMap::new(),
        evidence: Vec::new(),
        pending_calls: Vec::new(),
        last_turns: Vec::new(),
        last_error: None,
        recent_errors: Vec::new(),
        final_report: None,
        process_note: None,
        review_round: 0,
        objections: Vec::new(),
        council: None,
        record: Default::default(),
        new_events: Vec::new(),
        event_count: 0,
        flow: Default::default(),
        usage: Usage::default(),
        meeting_input: packet.meeting_input,
        context_bundle: packet.context_bundle,
    };
    if let Some(usd) = opts.max_cost_usd {
        let prices = crate::llm::prices::Prices::current();
        board.max_cost = Some(crate::meeting::budget::cost_limit(
            &board, &opts.llm, usd, prices,
        )?);
    }
    crate::meeting::whiteboard::seed_questions(&mut board);
    board.summary = summary_lines(&board, "No participant has spoken yet.");
    let event = events::meeting_started(format!(
        "participants: {}; max loops: {}{}{}; documents: {}",
        participants.join(", "),
        board.max_loops,
        board
            .max_total_tokens
            .map(|n| format!("; max total tokens: {n}"))
            .unwrap_or_default(),
        board
            .max_cost
            .map(|c| format!("; max cost: {}", crate::llm::prices::dollars(c.usd)))
            .unwrap_or_default(),
        board.context_bundle.documents.len()
    ));
    events::push_at(&mut board, now, event);
    if let Some(settings) = crate::meeting::council::settings(&board) {
        crate::meeting::council::start(&mut board, &settings, now)?;
    }
    Ok(board)
}

/// A fresh trace id: UTC time (sortable, so `runs/` lists in order) and 32 random bits. Made in
/// one place: `meeting` makes it and hands it to `init-board`, which makes one only when run
/// by hand without `--trace-id`.
pub fn new_trace_id(now_rfc3339: &str) -> String {
    let stamp: String = now_rfc3339
        .chars()
        .filter(|c| c.is_ascii_digit())
        .take(14)
        .collect();
    format!("{stamp}-{:08x}", fastrand::u32(..))
}

#[cfg(test)]
mod tests {
    use crate::model::{EventType, Status};
    use crate::stage::fixtures::board;

    #[test]
    fn init_seeds_open_questions_and_starts_running() {
        let b = board(&["Is it cheaper?", "Is it cheaper?", "Who runs it?"]);
        assert_eq!(b.status, Status::Running);
        assert_eq!(b.loop_count, 0);
        assert_eq!(b.open_questions(), vec!["Is it cheaper?", "Who runs it?"]);
        assert_eq!(b.participants, vec!["arch", "biz"]);
        assert_eq!(b.new_events[0].event_type, EventType::MeetingStarted);
        assert_eq!(b.summary.lines().count(), 3);
    }

    #[test]
    fn trace_ids_are_stamped_random_and_checked() {
        let a = super::new_trace_id("2026-11-30T12:34:56.789Z");
        let b = super::new_trace_id("2026-11-30T12:34:56.789Z");
        assert!(a.starts_with("20261130123456-") && a.len() == 23, "{a}");
        assert_ne!(a, b);
        assert!(crate::model::check_trace_id(&a).is_ok());
        assert!(crate::model::check_trace_id("../x").is_err());
    }
}
