//! The decision checks of a PM round (docs/design/pm-round.md#pm-round): what makes a PM answer usable,
//! why one is not, and the PM's side of the ask loop (docs/design/failure-policy.md#ask-loop).

use serde_json::{Map, Value};

use super::offer::Offered;
use super::Mode;
use crate::error::Result;
use crate::io::kind_of;
use crate::llm::{ExpectedJson, NoJson, Options, Request};
use crate::meeting::ask::Asker;
use crate::meeting::budget;
use crate::meeting::circles::{self, GOING_IN_CIRCLES};
use crate::meeting::events::{self, Clock};
use crate::meeting::prompts::retry_message;
use crate::meeting::whiteboard::note_process;
use crate::model::{
    decision_shape, AskedQuestion, Board, NextAction, PmDecision, ProcessKind, QuestionOrigin,
};
use crate::schema;
use crate::text::cut;

/// Why a PM answer cannot be used; each kind leaves its own event (docs/design/pm-round.md#pm-round).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Invalid {
    Json(NoJson),
    /// Not a valid decision: what the model is told, and the same in plain words.
    Schema(String, String),
    /// A target that cannot be asked: not a participant, or in a fan-out asked twice or a
    /// person (the name, the error, the same in plain words).
    Routing(String, String, String),
    /// A question that nearly repeats one already asked of the same participant.
    Repeat(AskedQuestion),
}

impl Invalid {
    /// The line stored in `last_error` when this answer ends the round.
    pub(super) fn describe(&self) -> String {
        match self {
            Invalid::Json(e @ (NoJson::CutOff(_) | NoJson::WindowFull { .. })) => {
                format!("PM output was {e}")
            }
            Invalid::Json(e) => format!("PM output was not valid JSON: {e}"),
            Invalid::Schema(e, _) => format!("PM decision invalid: {e}"),
            Invalid::Routing(_, e, _) => format!("PM routing failed: {e}"),
            Invalid::Repeat(a) => format!(
                "PM repeated its loop {} question to {}: {GOING_IN_CIRCLES}",
                a.loop_no, a.agent
            ),
        }
    }

    /// The field the answer got wrong, by its last name (`next_action`, `target_agent`,
    /// `by`), read from the error's path: what the retry offers the allowed values of.
    fn field(&self) -> Option<&str> {
        let e = match self {
            Invalid::Schema(e, _) | Invalid::Routing(_, e, _) => e.as_str(),
            Invalid::Json(_) | Invalid::Repeat(_) => return None,
        };
        let e = e.strip_prefix(CONFIG_MISMATCH).unwrap_or(e);
        let e = e.strip_prefix("at /").unwrap_or(e);
        let end = e
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_[]./".contains(c)))
            .unwrap_or(e.len());
        e[..end]
            .split(['/', '.', '[', ']'])
            .rfind(|s| !s.is_empty() && !s.chars().all(|c| c.is_ascii_digit()))
    }

    /// What the model is told when it is asked again.
    fn for_model(&self) -> String {
        match self {
            Invalid::Json(e) => format!("it was {}", e.what()),
            Invalid::Schema(e, _) | Invalid::Routing(_, e, _) => e.clone(),
            Invalid::Repeat(a) => format!(
                "you asked {} nearly the same in loop {}: {:?}; the answer was: {:?}. Ask something new, or someone else, or FINISH",
                a.agent,
                a.loop_no,
                a.question,
                a.answer.as_deref().unwrap_or("(not answered yet)")
            ),
        }
    }

    /// The same for the report's reader (docs/design/report.md#report: no instruction meant for a model).
    pub(super) fn for_reader(&self) -> String {
        match self {
            Invalid::Json(e) => e.for_reader().into(),
            Invalid::Schema(_, plain) => {
                format!("it was not a valid decision: {plain}")
            }
            Invalid::Routing(_, _, plain) => format!("it addressed {plain}"),
            Invalid::Repeat(a) => format!(
                "it asked {} nearly what it had asked in loop {}",
                a.agent, a.loop_no
            ),
        }
    }
}

/// A decision-shape error whose model text is also fit for the reader.
fn schema_error(e: String) -> Invalid {
    let plain = cut(&e, 160);
    Invalid::Schema(e, plain)
}

/// The PM's side of the ask loop (docs/design/failure-policy.md#ask-loop): the decision checks, the correction
/// offering the participants, and the `pm_invalid_output` / `pm_routing_error` events.
pub(super) struct PmAsk<'a> {
    pub(super) board: &'a mut Board,
    pub(super) clock: &'a dyn Clock,
    pub(super) mode: Mode,
    /// Tokens a normal round keeps for the closing round (0: none, or this is it).
    pub(super) reserve: crate::model::Charge,
    pub(super) limits: &'a budget::AgentLimits,
    /// The action the last answer chose; its retry keeps it when this round offers it.
    pub(super) chosen: Option<NextAction>,
    /// An answer of this round repeated a question (its retry was shown the earlier answer).
    pub(super) repeated: bool,
    /// The answers checked so far this round (the retry's is the second).
    pub(super) answers: u32,
}

impl PmAsk<'_> {
    /// A CALL_AGENT repeated again after its retry saw the earlier answer goes to a model
    /// participant not yet asked it ([`circles::second_view`]), said in the Process Note;
    /// with none left, or in a fan-out, it stays a repeat (the meeting is going in circles).
    fn second_view(&mut self, value: &Value, a: AskedQuestion) -> Result<PmDecision, Invalid> {
        let question = value.get("prompt_for_agent").and_then(Value::as_str);
        let single = value.get("target_agent").and_then(Value::as_str) == Some(a.agent.as_str());
        let Some(other) = question
            .filter(|_| single)
            .and_then(|q| circles::second_view(self.board, q))
        else {
            return Err(Invalid::Repeat(a));
        };
        let mut value = value.clone();
        value["target_agent"] = Value::String(other.to_string());
        let d = check_decision(self.board, self.mode, &value)?;
        note_process(
            self.board,
            ProcessKind::Circles,
            format!(
                "The PM asked {} again what it had asked in loop {}, after seeing the answer; the question went to {other}, who had not been asked it.",
                a.agent, a.loop_no
            ),
        );
        Ok(d)
    }
}

impl Asker for PmAsk<'_> {
    type Answer = PmDecision;
    type Invalid = Invalid;

    fn check(&mut self, json: Result<&Value, &NoJson>) -> Result<PmDecision, Invalid> {
        self.answers += 1;
        let checked = self.check_answer(json);
        // A first FINISH refused for another reason while document holders are unheard: its
        // correction names them too, and the retry may call one. Else its retry's FINISH,
        // usable, would be taken with them unheard (live, 2026-12-07: a FINISH without its
        // decision, then one with it, closed meetings after one of three holders). A refusal
        // that already sends it back to ask someone has left `chosen` unset.
        match checked {
            Err(Invalid::Schema(why, plain))
                if self.answers == 1
                    && self.mode == Mode::Normal
                    && self.chosen == Some(NextAction::Finish) =>
            {
                let holders = unheard_holders(self.board);
                if holders.is_empty() {
                    return Err(Invalid::Schema(why, plain));
                }
                self.chosen = None;
                Err(Invalid::Schema(
                    format!(
                        "{why}; and before a FINISH ask {}, who hold documents no one who has spoken has read (CALL_AGENT)",
                        holders.join(", ")
                    ),
                    plain,
                ))
            }
            checked => checked,
        }
    }

    /// The correction names the field that was wrong and its allowed values: the actions
    /// offered for `next_action`, the participants for a target (none in forced_finish mode,
    /// where no target is allowed and the note says FINISH), those who answered for `by`.
    fn correction(&self, invalid: &Invalid) -> Result<String> {
        let error = invalid.for_model();
        let note = match self.mode {
            Mode::Normal => "",
            Mode::ForcedFinish => {
                "The meeting is in forced_finish mode: next_action must be \"FINISH\" with a final_report."
            }
            Mode::Review => "",
        };
        let offer = Offered::of(self.board);
        let field = invalid.field().unwrap_or_default();
        let allowed: Vec<String> = match (field, self.mode) {
            // The closing round's note says it already.
            ("next_action", Mode::Normal) => offer
                .actions
                .iter()
                .map(|a| a.as_str().to_string())
                .collect(),
            ("target_agent", Mode::Normal) => self.board.participants.clone(),
            ("by", _) => offer.answerers.clone(),
            _ => Vec::new(),
        };
        retry_message(&error, field, &allowed, note)
    }

    /// The retry of an answer that chose an action this round offers keeps that action, its
    /// fields required (docs/design/failure-policy.md#ask-loop): a grammar-constrained small model
    /// that answered CALL_AGENTS with `calls: null` cannot do it again.
    fn narrow(&self, expect: &mut ExpectedJson) {
        let offered = || Offered::of(self.board).actions_in(self.mode, self.board);
        if let Some(action) = self.chosen.filter(|a| offered().contains(a)) {
            let required = super::offer::decision_required(self.board);
            super::offer::narrow_to(&mut expect.schema, action, required);
        }
    }

    fn ledger(&mut self) -> Option<(&mut Board, &dyn Clock)> {
        Some((&mut *self.board, self.clock))
    }

    fn refuse(&self, request: &Request, opts: &Options) -> Option<String> {
        budget::refuse(self.board, request, opts, self.reserve)
    }

    fn rejected(&mut self, attempt: u32, invalid: &Invalid, retried: bool) {
        if let Invalid::Repeat(a) = invalid {
            self.repeated = true;
            note_process(
                self.board,
                ProcessKind::Circles,
                format!(
                    "The PM asked {} nearly what it had asked in loop {}; {}.",
                    a.agent,
                    a.loop_no,
                    if retried {
                        "it was shown the earlier question and answer and asked again"
                    } else {
                        "it did so again after seeing the earlier answer"
                    }
                ),
            );
        } else if retried {
            note_process(
                self.board,
                ProcessKind::Retried,
                format!(
                    "The PM's answer was unusable ({}); it was asked again.",
                    invalid.for_reader()
                ),
            );
        }
        let ev = match invalid {
            Invalid::Json(e) => events::pm_invalid_output(attempt, &e.to_string()),
            Invalid::Schema(e, _) => events::pm_invalid_output(attempt, e),
            Invalid::Repeat(a) => {
                events::pm_repeated_question(attempt, &a.agent, &invalid.describe())
            }
            Invalid::Routing(target, e, _) => events::pm_routing_error(attempt, target, e),
        };
        events::push(self.board, self.clock, ev);
    }
}

impl PmAsk<'_> {
    /// [`Asker::check`] for one answer.
    fn check_answer(&mut self, json: Result<&Value, &NoJson>) -> Result<PmDecision, Invalid> {
        let value = json.map_err(|e| Invalid::Json(e.clone()))?;
        self.chosen = value
            .get("next_action")
            .and_then(Value::as_str)
            .and_then(|a| NextAction::ALL.into_iter().find(|o| o.as_str() == a));
        // After the one retry a credit that cannot stand costs only itself, not the round
        // (docs/design/whiteboard.md#questions): it is dropped, never recorded.
        let (value, dropped) = if self.answers > 1 {
            drop_credits(self.board, value)
        } else {
            (value.clone(), Vec::new())
        };
        let value = &value;
        let mut d = match check_decision(self.board, self.mode, value) {
            Err(Invalid::Repeat(a)) if self.repeated => self.second_view(value, a)?,
            checked => checked?,
        };
        // "none of these" without its reason is sent back; given so again, the report is kept
        // but not the choice, so the meeting decides nothing (docs/design/pm-round.md#closing-round).
        let mut choice_dropped = false;
        if let Err(invalid) = check_why_none(self.board, &d) {
            if self.answers == 1 {
                return Err(invalid);
            }
            d.decision = None;
            choice_dropped = true;
        }
        let n = d.calls.len();
        if d.next_action == NextAction::CallAgents
            && !budget::fan_out_fits(self.board, self.limits, self.reserve, n)
        {
            return Err(Invalid::Schema(
                format!("calls: the token budget has no room for {n} calls at once: ask fewer participants"),
                format!("its {n} calls at once did not fit the token budget"),
            ));
        }
        // A FINISH with loops left that leaves a required question open, asked of no one,
        // goes back once (docs/design/pm-round.md#pm-round); the retry's FINISH is taken.
        if self.answers == 1 && self.mode == Mode::Normal && d.next_action == NextAction::Finish {
            if let Some(invalid) =
                unasked_required(self.board, &d).or_else(|| unasked_holder(self.board))
            {
                // Its retry may call someone: not narrowed to the FINISH.
                self.chosen = None;
                return Err(invalid);
            }
        }
        // A call to someone heard already, when the loops left would no longer reach every
        // holder not yet heard, goes back once naming them; the retry's call is taken.
        if self.answers == 1 && self.mode == Mode::Normal && d.next_action == NextAction::CallAgent
        {
            if let Some(invalid) = d
                .target_agent
                .as_deref()
                .and_then(|t| holder_passed_over(self.board, t))
            {
                self.chosen = None;
                return Err(invalid);
            }
        }
        // A report that recommends one option while the decision says another goes back
        // once, in any round (docs/design/pm-round.md#closing-round).
        if self.answers == 1 && d.next_action == NextAction::Finish {
            if let Some(invalid) = report_disagrees(self.board, &d) {
                return Err(invalid);
            }
        }
        if choice_dropped {
            note_process(
                self.board,
                ProcessKind::Retried,
                "The PM chose \"none of these\" without saying why, again after being asked to; the report is kept, not the choice, so it decides nothing.",
            );
        }
        for (question, names, open) in dropped {
            note_process(
                self.board,
                ProcessKind::UnknownQuestion,
                format!(
                    "The PM credited {} with answering {question:?}, who had not answered in this meeting, again after being asked to correct it; the credit was dropped{}.",
                    names.join(" and "),
                    if open { " and the question stays open" } else { "" }
                ),
            );
        }
        Ok(d)
    }
}

/// How an answer outside the PM config's `output_schema` is described (its path follows).
const CONFIG_MISMATCH: &str = "does not match the PM output schema: ";

/// Check one parsed PM answer: an action this round offers, the PM config's output schema
/// (if any), the PMDecision structure and its conditional rules, who answered the questions
/// it marks answered, the forced-finish rule, then the routing target and the question.
pub(super) fn check_decision(
    board: &Board,
    mode: Mode,
    value: &Value,
) -> Result<PmDecision, Invalid> {
    check_action(board, mode, value)?;
    if let Some(pm) = &board.pm {
        // The meeting's schema has every field, null when unused (strict structured output
        // sends them all): a null field the config does not require is an absent one to it,
        // so a config that leaves out `decision` or types `calls` as an array still takes a
        // CALL_AGENT.
        let required = |k: &str| {
            let req = pm.output_schema.get("required").and_then(Value::as_array);
            req.is_some_and(|r| r.iter().any(|f| f == k))
        };
        let value = match value {
            Value::Object(obj) => Value::Object(
                obj.iter()
                    .filter(|(k, v)| !v.is_null() || required(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            other => other.clone(),
        };
        schema::validate(&value, &Value::Object(pm.output_schema.clone())).map_err(|e| {
            Invalid::Schema(
                format!("{CONFIG_MISMATCH}{e}"),
                "it did not match the PM's output schema".into(),
            )
        })?;
    }
    let Value::Object(obj) = value else {
        return Err(schema_error(format!(
            "expected a JSON object, got {}",
            kind_of(value)
        )));
    };
    // Keys outside PMDecision are dropped rather than refused: the PM config's own schema
    // decides whether extra keys matter, and a retry for a stray key wastes a call.
    // A null optional field is an absent one (structured output sends every field).
    let obj: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| decision_shape().fields.contains(k))
        .filter(|(k, v)| !(v.is_null() && k.as_str() != "next_action"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut decision: PmDecision =
        crate::schema::shaped(Value::Object(obj)).map_err(schema_error)?;
    // A report written in HTML (a small model's habit) is read as the Markdown it means, so a
    // usable FINISH — its decision with it — is not refused for its markup.
    if let Some(report) = decision.final_report.as_mut() {
        if let Some(md) = crate::text::markdown::from_html(report) {
            *report = md;
        }
    }
    // A CALL_AGENT that names a participant but no question (a small model's habit, 5 of 12
    // such replies from Qwen2.5-Coder-1.5B), or one that only stands in for a question (`:)`,
    // `Q2`, the participant's name): the question it names, else the first open one the
    // participant was not asked — required ones come first — is what the meeting needs asked,
    // so it is asked, not refused for a call (docs/design/pm-round.md#pm-round).
    if decision.next_action == NextAction::CallAgent {
        if let Some(target) = decision
            .target_agent
            .as_deref()
            .filter(|t| board.participants.iter().any(|p| p == t))
        {
            let q = decision.prompt_for_agent.as_deref().unwrap_or_default();
            if let Some(q) = stand_in_question(board, target, q) {
                decision.prompt_for_agent = Some(q);
            }
        }
    }
    decision.validate().map_err(|e| {
        let plain = format!("its {} was missing or unusable", e.path);
        Invalid::Schema(e.to_string(), plain)
    })?;
    check_answered_by(board, &decision)?;
    if mode == Mode::Review {
        crate::meeting::review::check_responses(board, &decision)
            .map_err(|(e, p)| Invalid::Schema(e, p))?;
    } else if !decision.objection_responses.is_empty() {
        return Err(schema_error(
            "objection_responses: there are no open objections: leave it null".into(),
        ));
    }
    if decision.next_action == NextAction::Finish {
        if decision.decision.is_none() && super::offer::decision_required(board) {
            return Err(Invalid::Schema(
                format!(
                    "decision: a FINISH in a meeting with options needs a decision: {}",
                    choice_rule(board)
                ),
                "its FINISH left the decision out".into(),
            ));
        }
        return Ok(decision);
    }
    if mode == Mode::ForcedFinish {
        let action = decision.next_action.as_str();
        return Err(Invalid::Schema(
            format!(
                "next_action {action} is not allowed in forced_finish mode: the meeting must end now, \
                 so reply with next_action \"FINISH\" and a final_report"
            ),
            "it asked for another agent call when no loops were left".into(),
        ));
    }
    match decision.next_action {
        NextAction::CallAgents => check_fan_out(board, decision),
        _ => check_call(board, decision),
    }
}

/// What a decision in a meeting with options holds, for the correction: the options as
/// written first, "none of these" last and only with its reason
/// (docs/design/pm-round.md#closing-round).
fn choice_rule(board: &Board) -> String {
    let options: Vec<String> = board
        .meeting_input
        .decision_packet
        .options
        .iter()
        .map(|o| format!("{:?}", o.trim()))
        .collect();
    format!(
        "choice, one of the options as written: {}; or, only when none of them can work, {:?} with why_none saying why; confidence (low, medium or high); revisit_if",
        options.join(", "),
        crate::model::NONE_OF_THESE
    )
}

/// "none of these" needs its reason in the decision (`why_none`, content), else it is no
/// decision a reader can weigh (docs/design/pm-round.md#closing-round).
fn check_why_none(board: &Board, d: &PmDecision) -> Result<(), Invalid> {
    let Some(decision) = d.decision.as_ref() else {
        return Ok(());
    };
    if !crate::model::is_none_of_these(&decision.choice) {
        return Ok(());
    }
    let why = decision.why_none.as_deref().unwrap_or_default();
    let missing = match crate::model::not_content(why, &board.participants) {
        _ if why.trim().is_empty() => "is missing".to_string(),
        Some(why) => why,
        None => return Ok(()),
    };
    Err(Invalid::Schema(
        format!(
            "decision.why_none: {missing}: the choice \"none of these\" needs why none of the options can work, in a sentence; or choose one ({})",
            choice_rule(board)
        ),
        "it chose none of the options without saying why".into(),
    ))
}

/// A FINISH whose report's Recommendation names one option while its decision chooses another
/// option, or "none of these": why it goes back (once, docs/design/pm-round.md#closing-round),
/// naming both. A Recommendation naming several options, or none, or a choice that is no
/// option as written (a paraphrase) is not compared.
fn report_disagrees(board: &Board, d: &PmDecision) -> Option<Invalid> {
    let choice = d.decision.as_ref()?.choice.as_str();
    let report = d.final_report.as_deref()?;
    let (_, recommendation) = crate::text::markdown::labelled_parts(report);
    let norm = |s: &str| crate::text::fold_ws(s).trim_end_matches('.').to_lowercase();
    let options = &board.meeting_input.decision_packet.options;
    let chosen = options.iter().find(|o| norm(o) == norm(choice));
    if chosen.is_none() && !crate::model::is_none_of_these(choice) {
        return None;
    }
    let said = norm(&recommendation);
    let mut named = options
        .iter()
        .filter(|o| !norm(o).is_empty() && said.contains(&norm(o)));
    let (Some(named), None) = (named.next(), named.next()) else {
        return None;
    };
    if Some(named) == chosen {
        return None;
    }
    Some(Invalid::Schema(
        format!(
            "decision.choice: {:?}, but the report's Recommendation names {:?}: make the decision and the report agree ({})",
            cut(choice.trim(), 120),
            cut(named.trim(), 120),
            choice_rule(board)
        ),
        format!(
            "its decision ({}) and its Recommendation ({}) disagreed",
            cut(choice.trim(), 80),
            cut(named.trim(), 80)
        ),
    ))
}

/// An action this round does not offer (the PM config's or the moment's): refused, the retry
/// naming the actions that are. The closing round and a
/// fan-out that cannot run keep their own words below.
fn check_action(board: &Board, mode: Mode, value: &Value) -> Result<(), Invalid> {
    let Some(action) = value.get("next_action").and_then(Value::as_str) else {
        return Ok(());
    };
    let offer = Offered::of(board);
    let Some(a) = NextAction::ALL.into_iter().find(|a| a.as_str() == action) else {
        return Ok(());
    };
    if mode == Mode::ForcedFinish || offer.actions.contains(&a) || a == NextAction::CallAgents {
        return Ok(());
    }
    // The retry lists the allowed actions (`correction`).
    Err(Invalid::Schema(
        format!("next_action: {action:?} is not allowed in this meeting"),
        format!("it chose {action}, which this meeting does not allow"),
    ))
}

/// The participants an answered question names in `by` must have answered in this meeting
/// (docs/design/whiteboard.md#questions): a name the PM invents, or a participant never asked,
/// is refused like any invalid answer. More entries than open questions are not refused: the
/// schema allows as many as the whiteboard can hold open (a bound that stays the same all
/// meeting, for the cached prefix), so a reply that follows it is taken, and an entry that names
/// no open question is noted and ignored when it is applied (`whiteboard::apply_answers`).
fn check_answered_by(board: &Board, d: &PmDecision) -> Result<(), Invalid> {
    let answerers = super::offer::answerers(board);
    for (i, a) in d.answered_questions.iter().enumerate() {
        for (j, name) in a.by.iter().enumerate() {
            if answerers.contains(name) {
                continue;
            }
            let who = if answerers.is_empty() {
                "nobody has answered yet, so leave answered_questions empty".to_string()
            } else {
                format!("answered so far: {}", answerers.join(", "))
            };
            return Err(Invalid::Schema(
                format!(
                    "answered_questions[{i}].by[{j}]: {:?} has not answered in this meeting ({who})",
                    cut(name, 60)
                ),
                format!(
                    "it said {:?} answered a question, who had not answered in this meeting",
                    cut(name, 60)
                ),
            ));
        }
    }
    Ok(())
}

/// A FINISH that leaves a required question open after its own `answered_questions` (an
/// answer by no one: the documents answer it) when no participant was asked it, while someone
/// has not been asked anything yet: why it goes back, naming the question and who that is.
fn unasked_required(board: &Board, d: &PmDecision) -> Option<Invalid> {
    let unheard = super::offer::not_asked(board);
    if unheard.is_empty() {
        return None;
    }
    let mut after = board.clone();
    crate::meeting::whiteboard::apply_answers(&mut after, &d.answered_questions);
    let q = after.record.questions.iter().find(|q| {
        q.origin == QuestionOrigin::Required
            && q.answer.is_none()
            && !board
                .record
                .asked
                .iter()
                .any(|a| crate::meeting::whiteboard::asks(&a.question, q))
    })?;
    Some(Invalid::Schema(
        format!(
            "next_action: FINISH leaves required question {} ({:?}) open, and no participant was asked it; not asked yet: {}. Ask it with CALL_AGENT, or put it in answered_questions (by none) if the documents answer it; a FINISH again is taken",
            q.id,
            cut(&q.text, 120),
            unheard.join(", ")
        ),
        format!(
            "it finished with required question {} open, asked of no one",
            q.id
        ),
    ))
}

/// The participants not asked anything yet who read a document only some read, none of whose
/// readers has spoken (docs/design/context.md#documents-only-some-participants-read): what only
/// they know is not on the whiteboard. Each as `name (document, ...)`.
fn unheard_holders(board: &Board) -> Vec<String> {
    let unheard = super::offer::not_asked(board);
    let unread: Vec<&crate::model::ContextDocument> = board
        .context_bundle
        .documents
        .iter()
        .filter(|d| !d.readers.is_empty() && d.readers.iter().all(|r| unheard.contains(r)))
        .collect();
    unheard
        .iter()
        .filter_map(|p| {
            let theirs: Vec<&str> = unread
                .iter()
                .filter(|d| d.readers.contains(p))
                .map(|d| d.document_id.as_str())
                .collect();
            (!theirs.is_empty()).then(|| format!("{p} ({})", theirs.join(", ")))
        })
        .collect()
}

/// A FINISH while [`unheard_holders`] are left: why it goes back, naming them. Seen live:
/// meetings of hidden-profile cases closed after one of three holders (2026-12-07).
fn unasked_holder(board: &Board) -> Option<Invalid> {
    let holders = unheard_holders(board);
    if holders.is_empty() {
        return None;
    }
    Some(Invalid::Schema(
        format!(
            "next_action: FINISH before asking {}, who hold documents no one who has spoken has read; ask them with CALL_AGENT (what only they know decides too); a FINISH again is taken",
            holders.join(", ")
        ),
        format!(
            "it finished before asking {}, who hold documents no one else read",
            holders.join(", ")
        ),
    ))
}

/// A call to `target`, heard already, when the loops left are no more than the
/// [`unheard_holders`]: each further call to someone heard leaves a holder unheard. Why it
/// goes back, naming them. Seen live: a PM asked the first participant four times running
/// while two holders were never asked (2026-12-07).
fn holder_passed_over(board: &Board, target: &str) -> Option<Invalid> {
    let holders = unheard_holders(board);
    let left = board.max_loops.saturating_sub(board.loop_count) as usize;
    let heard = !super::offer::not_asked(board).iter().any(|p| p == target);
    if holders.is_empty() || !heard || holders.len() < left {
        return None;
    }
    Some(Invalid::Schema(
        format!(
            "target_agent: {target} has spoken already, and {left} loop(s) are left for {}, who hold documents no one who has spoken has read; ask one of them (a call to {target} again is taken)",
            holders.join(", ")
        ),
        format!(
            "it asked {target} again while {} had not been asked",
            holders.join(", ")
        ),
    ))
}

/// `value` without the credits `answered_questions[].by` gives to someone who has not
/// answered in this meeting (see [`check_answered_by`]), and what was dropped: each entry's
/// question as given, the names, and whether the entry went too (no one left to credit, so the
/// question stays open).
fn drop_credits(board: &Board, value: &Value) -> (Value, Vec<(String, Vec<String>, bool)>) {
    let answerers = super::offer::answerers(board);
    let mut value = value.clone();
    let mut dropped = Vec::new();
    let Some(entries) = value
        .get_mut("answered_questions")
        .and_then(Value::as_array_mut)
    else {
        return (value, dropped);
    };
    entries.retain_mut(|entry| {
        let question = entry.get("question").and_then(Value::as_str);
        let question = cut(question.unwrap_or_default(), 80);
        let Some(by) = entry.get_mut("by").and_then(Value::as_array_mut) else {
            return true;
        };
        let named = by.len();
        let mut names = Vec::new();
        by.retain(|b| {
            let stands = b.as_str().is_some_and(|n| answerers.iter().any(|a| a == n));
            if !stands {
                names.push(cut(b.as_str().unwrap_or_default(), 60));
            }
            stands
        });
        let keep = !by.is_empty() || named == 0;
        if !names.is_empty() {
            dropped.push((question, names, !keep));
        }
        keep
    });
    (value, dropped)
}

/// The PM's question to a participant must be content (`model::not_content`: not an id, a
/// yes/no or a participant's name): else the retry says why.
fn check_question(board: &Board, at: &str, question: &str) -> Result<(), Invalid> {
    match crate::model::not_content(question, &board.participants) {
        None => Ok(()),
        Some(why) => Err(Invalid::Schema(
            format!("{at}: {why}"),
            format!("its question {:?} was not a question", cut(question, 60)),
        )),
    }
}

/// The question a CALL_AGENT's empty or stand-in `question` to `target` asks (see
/// [`check_decision`]): the open question a bare id names, else the first open question not
/// yet asked of `target`, else — no open question left, as in a meeting with no required
/// questions — the decision to make, when `target` was not asked it; `None` for a real
/// question, or when nothing is left to ask.
fn stand_in_question(board: &Board, target: &str, question: &str) -> Option<String> {
    if !question.trim().is_empty()
        && crate::model::not_content(question, &board.participants).is_none()
    {
        return None;
    }
    let open: Vec<(&str, &str)> = crate::meeting::whiteboard::open_with_ids(board).collect();
    let id = question.trim().trim_end_matches(['.', '?', ':']);
    let named = open.iter().find(|(q, _)| q.eq_ignore_ascii_case(id));
    named
        .or_else(|| {
            open.iter()
                .find(|(_, text)| circles::earlier_ask(board, target, text).is_none())
        })
        .map(|(_, text)| text.to_string())
        .or_else(|| {
            // Never empty on a board (`MeetingInput::settled`, then `validate`).
            let decision = board.meeting_input.decision_packet.decision_to_make.trim();
            circles::earlier_ask(board, target, decision)
                .is_none()
                .then(|| decision.to_string())
        })
}

/// A `target_agent` must name a participant (else a routing error).
fn check_target(board: &Board, at: &str, target: &str) -> Result<(), Invalid> {
    if board.participants.iter().any(|p| p == target) {
        return Ok(());
    }
    Err(Invalid::Routing(
        target.to_string(),
        format!(
            "{at} {target:?} is not a participant (allowed: {})",
            board.participants.join(", ")
        ),
        format!("{:?}, who is not a participant", cut(target, 60)),
    ))
}

/// The fan-out rules (docs/design/agent-turn.md#fan-out): CALL_AGENTS only where it is offered, at most the
/// offered number of calls, each to a different participant who is a model, none repeating an
/// earlier question. One call is taken as the CALL_AGENT it is.
fn check_fan_out(board: &Board, mut d: PmDecision) -> Result<PmDecision, Invalid> {
    let most = Offered::of(board).fan_out;
    if most == 0 {
        return Err(Invalid::Schema(
            "next_action CALL_AGENTS is not available in this meeting: ask one participant with CALL_AGENT".into(),
            "it asked several participants at once, which this meeting does not allow".into(),
        ));
    }
    if d.calls.len() == 1 {
        let call = d.calls.remove(0);
        d.next_action = NextAction::CallAgent;
        d.target_agent = Some(call.target_agent);
        d.prompt_for_agent = Some(call.prompt_for_agent);
        return check_call(board, d);
    }
    if d.calls.len() > most as usize {
        return Err(Invalid::Schema(
            format!(
                "calls: {} calls, but at most {most} are allowed now (each call uses one loop)",
                d.calls.len()
            ),
            format!("it made {} calls where {most} were allowed", d.calls.len()),
        ));
    }
    for (i, call) in d.calls.iter().enumerate() {
        let at = format!("calls[{i}].target_agent");
        let target = call.target_agent.as_str();
        check_target(board, &at, target)?;
        if d.calls[..i].iter().any(|c| c.target_agent == target) {
            return Err(Invalid::Routing(
                target.to_string(),
                format!(
                    "{at} {target:?} is asked twice: each call goes to a different participant"
                ),
                format!("{target} twice in one round"),
            ));
        }
        if !board.models().iter().any(|p| *p == target) {
            return Err(Invalid::Routing(
                target.to_string(),
                format!("{at} {target:?} is a person, who answers one question at a time: ask them with CALL_AGENT"),
                format!("{target}, a person, among parallel calls"),
            ));
        }
        check_question(
            board,
            &format!("calls[{i}].prompt_for_agent"),
            &call.prompt_for_agent,
        )?;
        if let Some(earlier) = circles::earlier_ask(board, target, &call.prompt_for_agent) {
            return Err(Invalid::Repeat(earlier.clone()));
        }
    }
    Ok(d)
}

/// A CALL_AGENT's routing: a participant, and not a question asked of them before.
fn check_call(board: &Board, d: PmDecision) -> Result<PmDecision, Invalid> {
    let target = d.target_agent.as_deref().unwrap_or_default();
    check_target(board, "target_agent", target)?;
    let question = d.prompt_for_agent.as_deref().unwrap_or_default();
    check_question(board, "prompt_for_agent", question)?;
    if let Some(earlier) = circles::earlier_ask(board, target, question) {
        return Err(Invalid::Repeat(earlier.clone()));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A PM config closed to extra keys takes the null fields the meeting's own schema adds
    /// (`calls`, `decision`), as long as it does not require them; a null it requires as a
    /// string is still refused.
    #[test]
    fn a_closed_pm_config_takes_the_null_fields_the_meeting_adds() {
        let mut b = crate::stage::fixtures::board(&[]);
        let mut pm = crate::stage::fixtures::agent("pm");
        let maybe = json!({"type": ["string", "null"]});
        pm.output_schema = json!({"type": "object", "additionalProperties": false,
            "properties": {"analysis": {"type": "string"},
                "next_action": {"type": "string", "enum": ["CALL_AGENT", "CALL_AGENTS", "FINISH"]},
                "target_agent": maybe, "prompt_for_agent": maybe, "final_report": maybe,
                "calls": {"type": "array", "items": {"type": "object"}}},
            "required": ["analysis", "next_action", "target_agent", "prompt_for_agent", "final_report"]})
        .as_object()
        .unwrap()
        .clone();
        b.pm = Some(pm);
        let mut answer = json!({"analysis": "a", "next_action": "CALL_AGENT",
            "target_agent": "arch", "prompt_for_agent": "What does the nightly run cost?",
            "final_report": null, "calls": null, "decision": null});
        assert!(check_decision(&b, Mode::Normal, &answer).is_ok());
        answer["analysis"] = Value::Null;
        assert!(check_decision(&b, Mode::Normal, &answer).is_err());
    }

    /// An answered question names only participants who answered in this meeting; the retry
    /// says who did, and names `by` as the field.
    #[test]
    fn answered_by_names_only_who_answered() {
        let mut b = crate::stage::fixtures::board(&["Which is cheaper?"]);
        b.record.asked.push(crate::model::AskedQuestion {
            agent: "arch".into(),
            question: "What does it cost?".into(),
            loop_no: 0,
            answer: Some("Little.".into()),
        });
        let answer = |by: Value| {
            json!({"analysis": "a", "next_action": "CALL_AGENT", "target_agent": "biz",
                "prompt_for_agent": "What is the risk of moving?", "final_report": null,
                "answered_questions": [{"question": "Q1", "answer": "A is cheaper.", "by": by}]})
        };
        assert!(check_decision(&b, Mode::Normal, &answer(json!(["arch"]))).is_ok());
        for who in ["ceo", "biz"] {
            let e = check_decision(&b, Mode::Normal, &answer(json!(["arch", who]))).unwrap_err();
            assert!(
                e.describe().contains(&format!("answered_questions[0].by[1]: \"{who}\" has not answered in this meeting (answered so far: arch)")),
                "{}",
                e.describe()
            );
            assert_eq!(e.field(), Some("by"));
        }
    }

    /// The retry names the field that was wrong and its allowed values: the actions for
    /// `next_action`, the participants for a target, nothing for other fields.
    #[test]
    fn the_retry_names_the_field_that_was_wrong() {
        let mut b = crate::stage::fixtures::board(&[]);
        b.max_parallel = 2;
        let mut pm = crate::stage::fixtures::agent("pm");
        pm.output_schema = json!({"type": "object", "properties": {"next_action":
            {"type": "string", "enum": ["CALL_AGENTS", "FINISH"]}}})
        .as_object()
        .unwrap()
        .clone();
        b.pm = Some(pm);
        crate::stage::pm_step::offer::tests::answered(&mut b, "biz");
        let limits = budget::AgentLimits::resolve(&b, &crate::llm::LlmConfig::default());
        let clock = crate::meeting::events::FixedClock(crate::stage::fixtures::NOW.into());
        let call = json!({"analysis": "a", "next_action": "CALL_AGENT", "target_agent": "arch",
            "prompt_for_agent": "What does the nightly run cost?"});
        let bad_target = json!({"analysis": "a", "next_action": "CALL_AGENTS", "calls": [
            {"target_agent": "arch", "prompt_for_agent": "What does it cost?"},
            {"target_agent": "ceo", "prompt_for_agent": "What is the risk?"}]});
        let id_only = json!({"analysis": "a", "next_action": "CALL_AGENTS", "calls": [
            {"target_agent": "arch", "prompt_for_agent": "What does it cost?"},
            {"target_agent": "biz", "prompt_for_agent": "Q1"}]});
        let ask = PmAsk {
            board: &mut b.clone(),
            clock: &clock,
            mode: Mode::Normal,
            reserve: Default::default(),
            limits: &limits,
            chosen: None,
            repeated: false,
            answers: 0,
        };
        for (answer, field, allowed) in [
            (call, "next_action", Some("CALL_AGENTS, FINISH")),
            (bad_target, "target_agent", Some("arch, biz")),
            (id_only, "prompt_for_agent", None),
        ] {
            let e = check_decision(&*ask.board, Mode::Normal, &answer).unwrap_err();
            assert_eq!(e.field(), Some(field), "{}", e.describe());
            let text = ask.correction(&e).unwrap();
            match allowed {
                Some(v) => assert!(
                    text.contains(&format!("Allowed values for {field}: {v}.")),
                    "{text}"
                ),
                None => assert!(!text.contains("Allowed values"), "{text}"),
            }
        }
    }
}
