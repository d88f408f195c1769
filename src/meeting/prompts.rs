//! The prompt templates (embedded from `share/prompts/`, overridable from a folder) and the
//! pieces every model-facing stage shares: rendering, the retry correction, how an unusable
//! reply is echoed back, and how whiteboard items are cut for a prompt
//! (docs/design/prompts.md#prompt-layout).

use std::sync::OnceLock;

use serde::Serialize;
use serde_json::json;

use crate::error::{Error, Result};
use crate::llm::{FactDocument, Facts, Message};
use crate::meeting::whiteboard::{open_with_ids, summary_for_prompt, SUMMARY_MAX_CHARS};
use crate::model::{Board, LIST_CAP};
use crate::text::{cut, fold_ws, fold_ws_keep_lines};

/// Every whiteboard item a model sees is cut to this many characters, so prompts stay flat
/// over many loops.
pub(crate) const ITEM_CHARS: usize = 500;

/// The prompt templates by name (docs/design/prompts.md#prompt-layout): the system message and the
/// meeting's stable block shared by the PM and every agent, the whiteboard, each caller's own
/// part (role, rules, the question or the mode), the PM's built-in role, and the retry
/// correction.
pub(crate) const TEMPLATES: [(&str, &str); 10] = [
    (
        "meeting_system.j2",
        include_str!("../../share/prompts/meeting_system.j2"),
    ),
    (
        "meeting_brief.j2",
        include_str!("../../share/prompts/meeting_brief.j2"),
    ),
    (
        "whiteboard.j2",
        include_str!("../../share/prompts/whiteboard.j2"),
    ),
    (
        "pm_system.j2",
        include_str!("../../share/prompts/pm_system.j2"),
    ),
    ("pm_user.j2", include_str!("../../share/prompts/pm_user.j2")),
    (
        "agent_user.j2",
        include_str!("../../share/prompts/agent_user.j2"),
    ),
    ("retry.j2", include_str!("../../share/prompts/retry.j2")),
    (
        "human_turn.j2",
        include_str!("../../share/prompts/human_turn.j2"),
    ),
    ("review.j2", include_str!("../../share/prompts/review.j2")),
    ("council.j2", include_str!("../../share/prompts/council.j2")),
];

/// Folder whose `<name>.j2` files replace the embedded prompt templates of the same name.
pub(crate) const PROMPTS_ENV: &str = "AGENT_MEETING_PROMPTS";

/// The prompt templates: embedded, each overridable by a file in `$AGENT_MEETING_PROMPTS`.
fn env() -> Result<&'static minijinja::Environment<'static>> {
    static ENV: OnceLock<std::result::Result<minijinja::Environment<'static>, Error>> =
        OnceLock::new();
    let built = ENV.get_or_init(|| {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .build()
                .expect("default delimiters are valid"),
        );
        let dir = std::env::var_os(PROMPTS_ENV).map(std::path::PathBuf::from);
        for (name, src) in TEMPLATES {
            let user = dir.as_ref().map(|d| d.join(name)).filter(|p| p.is_file());
            match user {
                Some(path) => {
                    let label = path.display().to_string();
                    let text = crate::io::read_text_file(&path)?;
                    env.add_template_owned(name, text).map_err(|e| {
                        Error::input(&label, "", format!("template does not compile: {e}"))
                    })?;
                }
                None => env
                    .add_template(name, src)
                    .expect("embedded prompt templates compile"),
            }
        }
        Ok(env)
    });
    built.as_ref().map_err(Clone::clone)
}

/// Render one prompt template; a failure in an embedded template is a bug, in a user's
/// override it is bad input.
pub(crate) fn render<S: Serialize>(name: &str, ctx: &S) -> Result<String> {
    let tmpl = env()?
        .get_template(name)
        .map_err(|e| Error::Runtime(format!("prompt template {name}: {e}")))?;
    let mut s = tmpl.render(minijinja::value::Serde(ctx)).map_err(|e| {
        let msg = format!("prompt template {name}: {e:#}").replace('\n', " ");
        if std::env::var_os(PROMPTS_ENV).is_some() {
            Error::Usage(msg)
        } else {
            Error::Runtime(msg)
        }
    })?;
    if !s.ends_with('\n') {
        s.push('\n');
    }
    Ok(s)
}

/// The correction sent after an unusable reply: the exact error, the allowed values, and a
/// request for corrected JSON only (docs/design/failure-policy.md#ask-loop).
pub(crate) fn retry_message(
    error: &str,
    allowed_field: &str,
    allowed: &[String],
    note: &str,
) -> Result<String> {
    render(
        "retry.j2",
        &json!({"error": error, "allowed_field": allowed_field, "allowed": allowed, "note": note}),
    )
}

/// How much of an unusable reply is sent back with the correction. A runaway reply (a model
/// repeating itself up to megabytes) would otherwise be re-sent whole, costing its size again
/// in prompt tokens or overflowing the context window; real answers are far shorter.
const ECHO_CHARS: usize = 16_000;

/// How much of a reply cut at `max_tokens` is sent back: its head is enough to show the model
/// what it was writing, and the whole of it would push the retry towards the same limit.
const CUT_ECHO_CHARS: usize = 1_000;

/// The model's unusable reply as echoed in the retry conversation: cut to `ECHO_CHARS`, or to
/// `CUT_ECHO_CHARS` when the model was stopped at `max_tokens` (`truncated`).
pub(crate) fn echo_reply(text: String, truncated: bool) -> Message {
    let limit = if truncated {
        CUT_ECHO_CHARS
    } else {
        ECHO_CHARS
    };
    let total = text.chars().count();
    if total <= limit {
        return Message::assistant(text);
    }
    let head: String = text.chars().take(limit).collect();
    let why = if truncated {
        "; the reply was cut off at max_tokens"
    } else {
        ""
    };
    Message::assistant(format!(
        "{head}\n[… reply cut here: {} more characters not shown{why}]",
        total - limit
    ))
}

/// The schema of a `citations` list in a meeting without documents: no item can be sent, so
/// the item's shape is left unsaid (every character of a schema is paid for on every call),
/// and the schema says it once — no rule line repeats it
/// (docs/design/prompts.md#structured-output).
pub(crate) fn no_citations() -> serde_json::Map<String, serde_json::Value> {
    let schema = json!({"type": "array", "items": {"type": "string"}, "maxItems": 0});
    schema.as_object().expect("an object").clone()
}

/// The system message of every call of the meeting, the PM's and every agent's alike
/// (docs/design/prompts.md#prompt-layout): what the meeting is and the rules everyone shares.
pub(crate) fn meeting_system() -> Result<String> {
    render("meeting_system.j2", &json!({}))
}

/// The meeting's stable block, the same bytes in every call of the meeting (the agents', and the
/// PM's until someone has answered it: [`pm_brief`]):
/// topic, decision packet, the context summary (brief and fenced documents, bounded by
/// collect-context's --max-context-chars), the documents everyone may cite, and those only some
/// read — who holds what, not their text. `reader`'s own documents follow, for a participant
/// who reads some (docs/design/context.md#documents-only-some-participants-read): the same
/// bytes in each of its calls.
pub(crate) fn meeting_brief(board: &Board, reader: Option<&str>) -> Result<String> {
    let bundle = &board.context_bundle;
    let cite = |d: &crate::model::ContextDocument| json!({"document_id": d.document_id, "source_path": d.source_path});
    let documents: Vec<serde_json::Value> = bundle
        .documents
        .iter()
        .filter(|d| d.readers.is_empty())
        .map(cite)
        .collect();
    let own: Vec<serde_json::Value> = reader
        .map(|r| {
            bundle
                .documents
                .iter()
                .filter(|d| !d.readers.is_empty() && d.read_by(r))
                .map(cite)
                .collect()
        })
        .unwrap_or_default();
    render(
        "meeting_brief.j2",
        &json!({
            "topic": board.topic.trim(),
            "decision_packet": decision_packet(board),
            "context_summary": bundle.summary.trim(),
            "documents": documents,
            "index": [],
            "held": index_of(bundle, false),
            "own_text": reader.map_or("", |r| bundle.own_documents(r).trim()),
            "own": own,
        }),
    )
}

/// How the PM reads the documents everyone reads (docs/design/context.md#what-the-pm-reads):
/// [`PmReads::First`], chosen by measuring all three; the others stay selectable so the bench
/// can measure them again (`AGENT_MEETING_PM_READS`, [`PM_READS_ENV`]); a user never sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PmReads {
    /// Every round carries the documents' text, as every participant's call does.
    All,
    /// No round carries their text: an index (id, purpose, size), and the quotes the
    /// participants cited that were found in them.
    Index,
    /// The text until a participant has answered the PM (a council's votes and failed turns do
    /// not count: the PM routes, or decides alone, from the text), then the index and the
    /// checked quotes.
    First,
}

/// The bench's switch between the ways the PM reads ([`PmReads`]): `all`, `index`, `first`.
pub(crate) const PM_READS_ENV: &str = "AGENT_MEETING_PM_READS";

impl PmReads {
    pub const DEFAULT: PmReads = PmReads::First;

    fn parse(s: &str) -> Option<PmReads> {
        match s {
            "all" => Some(PmReads::All),
            "index" => Some(PmReads::Index),
            "first" => Some(PmReads::First),
            _ => None,
        }
    }

    /// The bench's choice from the environment, else the default; a value of another
    /// spelling is an error naming the variable.
    pub fn from_env() -> Result<PmReads> {
        match std::env::var(PM_READS_ENV) {
            Err(_) => Ok(PmReads::DEFAULT),
            Ok(v) => PmReads::parse(v.trim()).ok_or_else(|| {
                Error::Usage(format!(
                    "{PM_READS_ENV}: {v:?} is not one of all, index, first"
                ))
            }),
        }
    }

    /// Whether this round of the PM carries the documents' text.
    pub fn reads_text(self, board: &Board) -> bool {
        match self {
            PmReads::All => true,
            PmReads::Index => false,
            PmReads::First => !board.record.asked.iter().any(|a| a.answer.is_some()),
        }
    }
}

/// Who holds what, not the text: each document everyone reads (`shared`) or only some read,
/// as id, purpose, readers and size.
fn index_of(bundle: &crate::model::ContextBundle, shared: bool) -> Vec<serde_json::Value> {
    bundle
        .documents
        .iter()
        .filter(|d| d.readers.is_empty() == shared)
        .map(|d| {
            json!({"document_id": d.document_id, "purpose": d.purpose.trim(),
                "readers": d.readers.join(", "), "chars": crate::text::thousands(d.char_count as u64)})
        })
        .collect()
}

/// The PM's stable block: the meeting's block ([`meeting_brief`]) when this round reads the
/// documents' text, else the same block with the brief alone in place of the context summary
/// and an index of the documents everyone reads (docs/design/context.md#what-the-pm-reads).
pub(crate) fn pm_brief(board: &Board, reads: PmReads) -> Result<String> {
    if reads.reads_text(board) {
        meeting_brief(board, None)
    } else {
        pm_index_brief(board)
    }
}

/// The PM's stable block in a round that does not read the documents' text ([`pm_brief`]):
/// the meeting's block itself when every document has readers (nothing to leave out).
pub(crate) fn pm_index_brief(board: &Board) -> Result<String> {
    if !board
        .context_bundle
        .documents
        .iter()
        .any(|d| d.readers.is_empty())
    {
        return meeting_brief(board, None);
    }
    let bundle = &board.context_bundle;
    let brief =
        crate::context::build_summary(&board.meeting_input, &[], bundle.summary.chars().count());
    render(
        "meeting_brief.j2",
        &json!({
            "topic": board.topic.trim(),
            "decision_packet": decision_packet(board),
            "context_summary": brief.trim(),
            "documents": [],
            "index": index_of(bundle, true),
            "held": index_of(bundle, false),
            "own_text": "",
            "own": [],
        }),
    )
}

/// The quotes the participants cited that were found in their documents, for a PM round that
/// does not carry the documents' text ([`PmReads`]): `E1 [doc] "quote" (arch)`, each cut, a
/// quote once (its first citation), the latest `LIST_CAP` — so they never outgrow the lists.
pub(crate) fn checked_quotes(board: &Board) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let quotes: Vec<String> = board
        .evidence
        .iter()
        .filter(|e| e.verified && seen.insert((e.document_id.as_str(), fold_ws(&e.quote))))
        .map(|e| {
            item(&format!(
                "{} [{}] \"{}\" ({})",
                e.id,
                e.document_id,
                fold_ws(&e.quote),
                e.agent
            ))
        })
        .collect();
    let skip = quotes.len().saturating_sub(LIST_CAP);
    quotes[skip..].to_vec()
}

/// The decision packet as the models see it (the meeting's block, and the PM input document):
/// every item cut to `ITEM_CHARS`.
pub(crate) fn decision_packet(board: &Board) -> serde_json::Value {
    let dp = &board.meeting_input.decision_packet;
    json!({
        "decision_to_make": dp.decision_to_make.trim(),
        "options": cut_list(&dp.options),
        "evaluation_dimensions": cut_list(&dp.evaluation_dimensions),
        "required_questions": cut_list(&dp.required_questions),
        "risk_tolerance": cut(&dp.risk_tolerance, ITEM_CHARS),
        "time_horizon": cut(&dp.time_horizon, ITEM_CHARS),
    })
}

/// What every call of a meeting round is rendered from, as [`Facts`] for `--provider sample`
/// (docs/design/llm.md#sample-provider): the brief, the documents and the whiteboard as the PM
/// sees them. The stage adds what only it knows (the loops left, the PM's question).
pub(crate) fn facts(board: &Board) -> Facts {
    let dp = &board.meeting_input.decision_packet;
    Facts {
        topic: board.topic.trim().to_string(),
        options: cut_list(&dp.options),
        dimensions: cut_list(&dp.evaluation_dimensions),
        required_questions: cut_list(&dp.required_questions),
        open_questions: open_with_ids(board)
            .take(LIST_CAP)
            .map(|(id, text)| (id.to_string(), item(text)))
            .collect(),
        key_points: cut_list(&board.key_points()),
        heard: board
            .record
            .findings
            .iter()
            .filter(|f| f.kind == crate::model::FindingKind::KeyPoint)
            .filter_map(|f| Some((f.by.first()?.clone(), item(&f.text))))
            .collect(),
        documents: board
            .context_bundle
            .documents
            .iter()
            .map(|d| FactDocument {
                document_id: d.document_id.clone(),
                source_path: d.source_path.clone(),
                excerpt: fold_ws_keep_lines(&d.excerpt),
            })
            .collect(),
        spoken: board.loop_count > 0,
        remaining_loops: None,
        question: None,
        risks: cut_list(&board.risks()),
        roles: board
            .participants
            .iter()
            .map(|name| {
                let a = board.agents.get(name);
                let about = a.map_or(String::new(), |a| format!("{} {}", a.role, a.description));
                (name.clone(), item(&about))
            })
            .collect(),
        objections: board.objections.iter().map(|o| item(&o.about)).collect(),
        example: None,
    }
}

/// Who reads the whiteboard: the PM sees all of it; an agent sees the first
/// `AGENT_LIST_ITEMS` of each list and not the latest answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    Pm,
    Agent,
}

/// The whiteboard as a caller sees it, after the meeting's block: the append-only lists first
/// (items in arrival order, so a call extends the previous call's prefix), then, for the PM,
/// the latest answer (the summary without what the header already says). An agent answers the
/// PM's question, which carries what it needs of the answer before, and needs less of the
/// lists than the PM that routes by them: the first items, which the PM's most important
/// questions produced (docs/design/prompts.md#prompt-layout).
pub(crate) fn whiteboard(board: &Board, reader: Reader) -> Result<String> {
    let items = match reader {
        Reader::Pm => LIST_CAP,
        Reader::Agent => AGENT_LIST_ITEMS,
    };
    let list = |l: &[String]| cut_list(&l[..l.len().min(items)]);
    render(
        "whiteboard.j2",
        &json!({
            "latest": reader == Reader::Pm,
            "summary": cut(&summary_for_prompt(board), SUMMARY_MAX_CHARS),
            "key_points": list(&board.key_points()),
            "open_questions": list(&crate::meeting::whiteboard::numbered_open_questions(board)),
            "decisions": list(&board.decisions()),
            "risks": list(&board.risks()),
            "council": match reader {
                Reader::Pm => council_for_pm(board),
                Reader::Agent => None,
            },
        }),
    )
}

/// The council's aggregate as the PM's whiteboard shows it (docs/design/council.md#aggregate), a few lines said once (folded: a member's
/// text enters the PM's prompt only so); nothing before the council is done.
fn council_for_pm(board: &Board) -> Option<Vec<String>> {
    let c = board
        .council
        .as_ref()
        .filter(|c| c.phase == crate::model::CouncilPhase::Done)?;
    let a = c.aggregate.as_ref()?;
    let mut lines = vec![format!("Votes: {}.", item(&a.votes_line()))];
    if a.borda.iter().any(|b| !b.places.is_empty()) {
        let points: Vec<String> = a
            .borda
            .iter()
            .map(|b| format!("{} {}", b.member, b.points))
            .collect();
        lines.push(format!(
            "Peer ranking (Borda points): {}.",
            points.join(", ")
        ));
    }
    lines.push(format!("Leading: {}.", a.leading_line()));
    for d in &a.dissent {
        lines.push(item(&format!(
            "Dissent: {} chose {}: {}",
            d.member, d.choice, d.reason
        )));
    }
    if !a.dissent.is_empty() || (a.leading.is_none() && a.voters > 1) {
        lines.push("Where members disagree, ask them before you decide.".into());
    }
    Some(lines)
}

/// How many items of each whiteboard list an agent sees (the PM sees all `LIST_CAP`).
pub(crate) const AGENT_LIST_ITEMS: usize = 10;

/// One item as a prompt shows it: on one line (`text::fold_ws`; unlike a document's fenced
/// excerpt, which keeps its lines), and cut to `ITEM_CHARS`. Text one caller wrote enters another's prompt only so: a line break
/// in it could forge a line of the prompt (`# Your part: PM`, `Mode: forced_finish`;
/// docs/design/prompts.md#prompt-layout).
pub(crate) fn item(s: &str) -> String {
    cut(&fold_ws(s), ITEM_CHARS)
}

pub(crate) fn cut_list(items: &[String]) -> Vec<String> {
    items.iter().take(LIST_CAP).map(|s| item(s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_compile() {
        for (name, _) in TEMPLATES {
            env().unwrap().get_template(name).unwrap();
        }
        let s = retry_message("bad", "target_agent", &["a".into(), "b".into()], "").unwrap();
        assert!(s.contains("bad") && s.contains("a, b"), "{s}");
    }

    /// Which PM rounds read the documents' text (docs/design/context.md#what-the-pm-reads):
    /// `first` until a participant has answered — not when a question is still open or its
    /// turn failed — and the quotes that stand in for the text are each said once, the latest
    /// `LIST_CAP`, verified ones only.
    #[test]
    fn the_pm_reads_the_text_until_someone_has_answered_it() {
        let mut board = crate::stage::fixtures::board(&[]);
        let ask = |answer: Option<&str>| crate::model::AskedQuestion {
            agent: "arch".into(),
            question: "What does it cost?".into(),
            loop_no: 1,
            answer: answer.map(String::from),
        };
        assert!(PmReads::First.reads_text(&board));
        board.record.asked.push(ask(None));
        assert!(PmReads::First.reads_text(&board), "asked, not answered");
        board.record.asked.push(ask(Some("It costs little.")));
        assert!(!PmReads::First.reads_text(&board));
        assert!(PmReads::All.reads_text(&board));
        board.record.asked.clear();
        assert!(!PmReads::Index.reads_text(&board));
        let cite = |i: usize, quote: &str, verified: bool| crate::model::Evidence {
            id: format!("E{i}"),
            agent: "arch".into(),
            loop_no: 1,
            document_id: "costs.md".into(),
            source_path: "costs.md".into(),
            quote: quote.into(),
            verified,
        };
        board.evidence = vec![
            cite(1, "It costs  9 EUR.", true),
            cite(2, "It is free.", false),
        ];
        board.evidence.push(cite(3, "It costs 9 EUR.", true));
        for i in 4..(4 + LIST_CAP + 2) {
            board.evidence.push(cite(i, &format!("Line {i}."), true));
        }
        let quotes = checked_quotes(&board);
        assert_eq!(quotes.len(), LIST_CAP, "{quotes:?}");
        assert_eq!(quotes[0], "E6 [costs.md] \"Line 6.\" (arch)");
        let early: Vec<String> = checked_quotes(&Board {
            evidence: board.evidence[..3].to_vec(),
            ..board.clone()
        });
        assert_eq!(early, ["E1 [costs.md] \"It costs 9 EUR.\" (arch)"]);
    }

    #[test]
    fn runaway_replies_are_cut_when_echoed() {
        let short = "{\"a\": 1".to_string();
        assert_eq!(echo_reply(short.clone(), false).content, short);
        let long = "é".repeat(ECHO_CHARS + 10);
        let m = echo_reply(long.clone(), false).content;
        assert!(m.starts_with(&"é".repeat(ECHO_CHARS)), "keeps the head");
        assert!(
            m.ends_with("[… reply cut here: 10 more characters not shown]"),
            "{}",
            &m[m.len() - 80..]
        );
        let cut = echo_reply(long, true).content;
        assert!(cut.starts_with(&"é".repeat(CUT_ECHO_CHARS)));
        assert!(
            cut.ends_with("more characters not shown; the reply was cut off at max_tokens]"),
            "{cut}"
        );
        assert!(cut.chars().count() < CUT_ECHO_CHARS + 100);
    }
}
