//! Reviewer mode (docs/design/review.md): a FINISH goes to the meeting's reviewers before the
//! report is final; their objections go on the board with ids, and the PM must answer every
//! one (revise, overrule with a reason, or ask a participant). The rules pm-step,
//! agent-turn, merge-board and render-report share live here, so no stage imports another.

use serde_json::{json, Value};

use crate::error::Result;
use crate::llm::{ExpectedJson, Message};
use crate::meeting::events::{self, Clock};
use crate::meeting::prompts::{item, meeting_brief, render, whiteboard, Reader};
use crate::model::{
    plain_schema, Board, Evidence, NextAction, Objection, ObjectionResponse, ObjectionStatus,
    PendingCall, PmDecision, Resolution, ReviewVerdict, Status, Verdict, EVIDENCE_CAP,
};
use crate::text::{cut, fold_ws, verify_quote};

/// The question each reviewer is sent (the draft itself is in its prompt).
pub(crate) const REVIEW_QUESTION: &str = "Review the PM's draft decision: approve it, or object.";

/// Most objections one reviewer may raise in one round.
pub(crate) const MAX_OBJECTIONS: usize = 5;

/// Most objections a board keeps (the rest are not filed; a meeting this contested needs a
/// person, not another round).
pub(crate) const OBJECTIONS_CAP: usize = 40;

/// How much of the PM's draft report the PM sees again while it answers the objections.
const DRAFT_CHARS: usize = 3000;

/// Whether a FINISH now goes to the reviewers: the meeting has review and rounds left.
pub(crate) fn wants_review(board: &Board) -> bool {
    board
        .meeting_input
        .review
        .as_ref()
        .is_some_and(|r| board.review_round < r.rounds)
}

/// The objections waiting for the PM's answer.
pub(crate) fn open(board: &Board) -> impl Iterator<Item = &Objection> {
    board
        .objections
        .iter()
        .filter(|o| o.status == ObjectionStatus::Open)
}

/// Send the PM's draft (its FINISH, already on the board) to every reviewer at once: status
/// `reviewing`, one call per reviewer (a fan-out when there are several).
pub(crate) fn start(board: &mut Board, clock: &dyn Clock) {
    board.review_round += 1;
    board.status = Status::Reviewing;
    let calls: Vec<PendingCall> = board
        .reviewers()
        .into_iter()
        .map(|r| PendingCall {
            target_agent: r,
            prompt: REVIEW_QUESTION.into(),
            analysis: String::new(),
            reserve: None,
        })
        .collect();
    for call in &calls {
        events::push(
            board,
            clock,
            events::pm_asks(&call.target_agent, REVIEW_QUESTION),
        );
    }
    board.pending_calls = calls;
}

/// The draft as a reviewer sees it: the decision, the recommendation, the options table, the
/// findings with their evidence marks, the open questions.
fn draft(board: &Board) -> Value {
    let r = &board.record;
    let report = board.final_report.as_deref().unwrap_or_default();
    let (summary, recommendation) = crate::text::markdown::labelled_parts(report);
    let mark = |id: &String| {
        let verified = board.evidence.iter().any(|e| &e.id == id && e.verified);
        format!("{id} {}", if verified { "verified" } else { "unverified" })
    };
    let findings: Vec<Value> = r
        .findings
        .iter()
        .map(|f| {
            json!({"kind": crate::model::wire_name(&f.kind), "text": item(&f.text),
                "by": f.by.join(", "), "evidence": f.evidence.iter().map(mark).collect::<Vec<_>>()})
        })
        .collect();
    let options: Vec<String> = r
        .option_assessments
        .iter()
        .map(|a| item(&format!("{} × {}: {}", a.option, a.dimension, a.assessment)))
        .collect();
    json!({
        "decision": r.decision.as_ref().map(|d| json!({"choice": item(&d.choice),
            "confidence": d.confidence.as_str(), "revisit_if": item(&d.revisit_if)})),
        "summary": cut(&fold_ws(&summary), DRAFT_CHARS),
        "recommendation": cut(&fold_ws(&recommendation), DRAFT_CHARS),
        "options": options,
        "findings": findings,
        "open_questions": crate::meeting::prompts::cut_list(&crate::meeting::whiteboard::numbered_open_questions(board)),
    })
}

/// A reviewer's user message: the meeting's stable block (the same bytes as every call's),
/// the whiteboard as an agent sees it, then the reviewer's role, the rules and the draft
/// (`share/prompts/review.j2`).
pub(crate) fn reviewer_message(
    board: &Board,
    reviewer: &str,
    schema_in_prompt: bool,
) -> Result<Message> {
    let agent = board.agents.get(reviewer);
    let rest = render(
        "review.j2",
        &json!({
            "role_prompt": agent.map_or("", |a| a.system_prompt.trim()),
            "has_documents": !board.context_bundle.documents.is_empty(),
            "schema_in_prompt": schema_in_prompt,
            "max_objections": MAX_OBJECTIONS,
            "draft": draft(board),
        }),
    )?;
    Ok(Message::user_with_stable_prefix(
        meeting_brief(board, Some(reviewer))?,
        &(whiteboard(board, Reader::Agent)? + &rest),
    ))
}

/// The JSON a reviewer must return: ReviewVerdict's one definition in the plain form every
/// model is sent, objections bounded, citations kept to the collected documents (none when
/// there are none), as an agent's are.
/// `reader`: the reviewer, whose documents its evidence may name
/// (docs/design/context.md#documents-only-some-participants-read).
pub(crate) fn verdict_expected_json(board: &Board, reader: &str) -> ExpectedJson {
    let generated = serde_json::to_value(schemars::schema_for!(ReviewVerdict))
        .expect("the ReviewVerdict schema serialises");
    let mut schema = plain_schema(&generated);
    schema["properties"]["objections"]["maxItems"] = json!(MAX_OBJECTIONS);
    let evidence = &mut schema["properties"]["objections"]["items"]["properties"]["evidence"];
    let docs: Vec<crate::model::ContextDocument> =
        board.context_bundle.readable_by(reader).cloned().collect();
    let docs = &docs;
    if docs.is_empty() {
        evidence["maxItems"] = json!(0);
    } else {
        let props = &mut evidence["items"]["properties"];
        props["document_id"]["enum"] =
            json!(docs.iter().map(|d| &d.document_id).collect::<Vec<_>>());
        props["source_path"]["enum"] = json!(crate::model::source_paths(docs.iter()));
    }
    ExpectedJson {
        name: "review_verdict".into(),
        schema,
    }
}

/// Check a reviewer's parsed answer: the ReviewVerdict structure, an `object` with at least
/// one objection (an `approve` keeps none), each objection's `about` and `why` content, and
/// every citation naming a collected document under its own path (docs/design/review.md#verdict).
/// The error is what the model is told.
pub(crate) fn check_verdict(
    board: &Board,
    reader: &str,
    value: &Value,
) -> std::result::Result<ReviewVerdict, String> {
    // A null list is an empty one (small models write null where nothing is to say).
    let mut value = value.clone();
    drop_nulls(&mut value);
    if let Some(items) = value.get_mut("objections").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(drop_nulls);
    }
    let mut v: ReviewVerdict = crate::schema::shaped(value)?;
    match v.verdict {
        Verdict::Approve => v.objections.clear(),
        Verdict::Object if v.objections.is_empty() => {
            return Err("objections: an \"object\" verdict needs at least one objection".into())
        }
        Verdict::Object => {}
    }
    if v.objections.len() > MAX_OBJECTIONS {
        return Err(format!(
            "objections: {} objections; raise at most {MAX_OBJECTIONS}, the ones that matter most",
            v.objections.len()
        ));
    }
    let docs: Vec<crate::model::ContextDocument> =
        board.context_bundle.readable_by(reader).cloned().collect();
    let docs = &docs;
    for (i, o) in v.objections.iter().enumerate() {
        for (field, text) in [("about", &o.about), ("why", &o.why)] {
            if let Some(why) = crate::model::not_content(text, &board.participants) {
                return Err(format!("objections[{i}].{field}: {why}"));
            }
        }
        for (j, c) in o.evidence.iter().enumerate() {
            let at = format!("objections[{i}].evidence[{j}]");
            let Some(doc) = docs.iter().find(|d| d.document_id == c.document_id) else {
                let allowed: Vec<&str> = docs.iter().map(|d| d.document_id.as_str()).collect();
                return Err(format!(
                    "{at}.document_id: {:?} is not one of the collected documents (allowed: {})",
                    c.document_id,
                    if allowed.is_empty() {
                        "none: leave evidence empty".into()
                    } else {
                        allowed.join(", ")
                    }
                ));
            };
            if c.source_path != doc.source_path {
                return Err(format!(
                    "{at}.source_path: {:?} does not match document {:?} (expected {:?})",
                    c.source_path, doc.document_id, doc.source_path
                ));
            }
        }
    }
    Ok(v)
}

/// An object's null fields left out (they are absent, as the PM's are).
fn drop_nulls(v: &mut Value) {
    if let Value::Object(obj) = v {
        obj.retain(|_, v| !v.is_null());
    }
}

/// A verdict's line for the events and the diagram.
pub(crate) fn verdict_headline(v: &ReviewVerdict) -> String {
    match v.verdict {
        Verdict::Approve => "approve".into(),
        Verdict::Object => format!(
            "object: {}",
            v.objections
                .iter()
                .map(|o| fold_ws(&o.about))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}

/// File a reviewer's objections on the board (merge-board): each with the next id, its
/// citations kept as evidence (numbered like any agent's, verified against the excerpt).
/// Returns how many were filed.
pub(crate) fn file_objections(board: &mut Board, reviewer: &str, v: &ReviewVerdict) -> usize {
    let mut filed = 0;
    for o in &v.objections {
        if board.objections.len() >= OBJECTIONS_CAP {
            break;
        }
        let evidence = o
            .evidence
            .iter()
            .filter_map(|c| keep_citation(board, reviewer, c))
            .collect();
        let id = format!("O{}", board.objections.len() + 1);
        board.objections.push(Objection {
            id,
            by: reviewer.to_string(),
            about: o.about.trim().to_string(),
            why: o.why.trim().to_string(),
            evidence,
            round: board.review_round,
            status: ObjectionStatus::Open,
            resolution: None,
            asked: None,
            answer: None,
        });
        filed += 1;
    }
    filed
}

/// Keep one checked citation of a reviewer as evidence; its id (an equal one already kept
/// keeps its id).
fn keep_citation(
    board: &mut Board,
    reviewer: &str,
    c: &crate::model::ReviewCitation,
) -> Option<String> {
    if let Some(e) = board
        .evidence
        .iter()
        .find(|e| e.agent == reviewer && e.document_id == c.document_id && e.quote == c.quote)
    {
        return Some(e.id.clone());
    }
    if board.evidence.len() >= EVIDENCE_CAP {
        return None;
    }
    let doc = board
        .context_bundle
        .documents
        .iter()
        .find(|d| d.document_id == c.document_id)?;
    let id = format!("E{}", board.evidence.len() + 1);
    let verified = verify_quote(&doc.excerpt, &c.quote);
    let loop_no = board.current_loop();
    board.evidence.push(Evidence {
        id: id.clone(),
        agent: reviewer.to_string(),
        loop_no,
        document_id: c.document_id.clone(),
        source_path: c.source_path.clone(),
        quote: c.quote.clone(),
        verified,
    });
    Some(id)
}

/// After the reviewers' turns are merged: the PM answers the open objections (the board stays
/// `reviewing`), or, with none, the draft is the report (`finishing`).
pub(crate) fn after_reviews(board: &mut Board) {
    if open(board).next().is_none() {
        board.status = Status::Finishing;
    }
}

/// A participant the PM asked about an objection answered: the objection keeps the answer's
/// headline (merge-board).
pub(crate) fn note_answer(board: &mut Board, agent: &str, headline: &str) {
    for o in &mut board.objections {
        if o.status == ObjectionStatus::Addressed
            && o.asked.as_deref() == Some(agent)
            && o.answer.is_none()
        {
            o.answer = Some(headline.to_string());
        }
    }
}

/// The open objections as the PM sees them, one line each (folded: a reviewer's text enters
/// the PM's prompt only so), and its draft.
pub(crate) fn for_pm(board: &Board) -> Value {
    let objections: Vec<String> = open(board)
        .map(|o| {
            let evidence = if o.evidence.is_empty() {
                String::new()
            } else {
                format!(" (evidence {})", o.evidence.join(", "))
            };
            item(&format!(
                "{} by {}, about {}: {}{evidence}",
                o.id, o.by, o.about, o.why
            ))
        })
        .collect();
    let report = board.final_report.as_deref().unwrap_or_default();
    json!({
        "objections": objections,
        "draft_decision": board.record.decision.as_ref().map(|d| item(&format!("{} ({})", d.choice, d.confidence.as_str()))),
        "draft_report": cut(&fold_ws(report), DRAFT_CHARS),
    })
}

/// The ids of the open objections, in order (the PM schema's `objection_responses[].id`).
pub(crate) fn open_ids(board: &Board) -> Vec<String> {
    open(board).map(|o| o.id.clone()).collect()
}

/// Check the PM's answer to the objections (docs/design/review.md#pm-answer): every open
/// objection answered exactly once, by id, with a reason; `ask` only with CALL_AGENT (while
/// loops are left), `revise` only with FINISH, `overrule` with either; no fan-out. The error
/// for the model, and the same in plain words.
pub(crate) fn check_responses(
    board: &Board,
    d: &PmDecision,
) -> std::result::Result<(), (String, String)> {
    let ids = open_ids(board);
    let plain = |s: &str| s.to_string();
    if d.next_action == NextAction::CallAgents {
        return Err((
            "next_action: CALL_AGENTS is not allowed while answering objections: ask one participant (CALL_AGENT) or FINISH".into(),
            plain("it asked several participants while answering the objections"),
        ));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, r) in d.objection_responses.iter().enumerate() {
        if !ids.contains(&r.id) {
            return Err((
                format!(
                    "objection_responses[{i}].id: {:?} is not an open objection (open: {})",
                    r.id,
                    ids.join(", ")
                ),
                plain("it answered an objection that is not open"),
            ));
        }
        if seen.contains(&r.id.as_str()) {
            return Err((
                format!("objection_responses[{i}].id: {:?} is answered twice", r.id),
                plain("it answered an objection twice"),
            ));
        }
        seen.push(&r.id);
        if crate::model::is_placeholder(&r.reason) {
            return Err((
                format!("objection_responses[{i}].reason: write why, in a sentence or two"),
                plain("it gave no reason for its answer to an objection"),
            ));
        }
        let finish = d.next_action == NextAction::Finish;
        let needs = match r.resolution {
            Resolution::Ask if finish => Some("CALL_AGENT (ask needs a question)"),
            Resolution::Revise if !finish => Some("FINISH (the revised decision and report)"),
            _ => None,
        };
        if let Some(needs) = needs {
            return Err((
                format!(
                    "objection_responses[{i}].resolution: {:?} goes with {needs}",
                    crate::model::wire_name(&r.resolution),
                ),
                plain("its answer to an objection did not match its action"),
            ));
        }
    }
    let missing: Vec<&String> = ids
        .iter()
        .filter(|id| !seen.contains(&id.as_str()))
        .collect();
    if !missing.is_empty() {
        let missing: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        return Err((
            format!(
                "objection_responses: answer every open objection; missing {}",
                missing.join(", ")
            ),
            plain("it left an objection unanswered"),
        ));
    }
    if d.next_action == NextAction::CallAgent && board.loop_count >= board.max_loops {
        return Err((
            "next_action: no loops are left to ask: FINISH, revising or overruling each objection"
                .into(),
            plain("it asked a participant when no loops were left"),
        ));
    }
    Ok(())
}

/// Apply the PM's checked answers to the open objections; `asked` is the participant a
/// CALL_AGENT asks.
pub(crate) fn apply_responses(
    board: &mut Board,
    responses: &[ObjectionResponse],
    asked: Option<&str>,
) {
    for r in responses {
        let Some(o) = board.objections.iter_mut().find(|o| o.id == r.id) else {
            continue;
        };
        o.status = match r.resolution {
            Resolution::Revise => ObjectionStatus::Revised,
            Resolution::Overrule => ObjectionStatus::Overruled,
            Resolution::Ask => ObjectionStatus::Addressed,
        };
        o.resolution = Some(r.reason.trim().to_string());
        if r.resolution == Resolution::Ask {
            o.asked = asked.map(str::to_string);
        }
    }
}

/// One objection as the report's Challenges section shows it (docs/design/review.md#report).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Challenge {
    pub id: String,
    /// The reviewer who raised it.
    pub by: String,
    pub round: u32,
    pub about: String,
    pub why: String,
    /// Its evidence ids (`E3, E4`), or empty.
    pub evidence: String,
    /// `open`, `addressed`, `revised` or `overruled`.
    pub status: String,
    /// How it was resolved, in words: the PM's reason, who was asked and what they answered,
    /// or "left open".
    pub outcome: String,
}

/// Every objection of the meeting, for the report (empty without review: no section).
pub(crate) fn challenges(board: &Board) -> Vec<Challenge> {
    board
        .objections
        .iter()
        .map(|o| {
            let reason = o.resolution.as_deref().map(fold_ws).unwrap_or_default();
            let outcome = match o.status {
                ObjectionStatus::Open => {
                    "left open: the PM did not answer it before the meeting closed".to_string()
                }
                ObjectionStatus::Revised => format!("decision revised by the PM: {reason}"),
                ObjectionStatus::Overruled => format!("overruled by the PM: {reason}"),
                ObjectionStatus::Addressed => {
                    let who = o.asked.as_deref().unwrap_or("a participant");
                    match &o.answer {
                        Some(a) => format!(
                            "addressed: the PM asked {who} ({reason}); {who} answered: {}",
                            fold_ws(a)
                        ),
                        None => format!("addressed: the PM asked {who} ({reason}); no answer came"),
                    }
                }
            };
            Challenge {
                id: o.id.clone(),
                by: o.by.clone(),
                round: o.round,
                about: fold_ws(&o.about),
                why: fold_ws(&o.why),
                evidence: o.evidence.join(", "),
                status: o.status.as_str().to_string(),
                outcome,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ObjectionResponse, ReviewSettings};
    use crate::stage::fixtures::board;

    fn reviewing() -> Board {
        let mut b = board(&[]);
        b.meeting_input.review = Some(ReviewSettings {
            by: vec!["biz".into()],
            rounds: 1,
        });
        b.status = Status::Reviewing;
        b.review_round = 1;
        for (id, status) in [("O1", ObjectionStatus::Open), ("O2", ObjectionStatus::Open)] {
            b.objections.push(Objection {
                id: id.into(),
                by: "biz".into(),
                about: "the decision".into(),
                why: "No cost figure backs it.".into(),
                evidence: vec![],
                round: 1,
                status,
                resolution: None,
                asked: None,
                answer: None,
            });
        }
        b
    }

    fn decision(action: NextAction, responses: &[(&str, Resolution)]) -> PmDecision {
        let mut d: PmDecision = serde_json::from_value(json!({
            "next_action": action, "final_report": "r", "target_agent": "arch",
            "prompt_for_agent": "What does it cost?"}))
        .unwrap();
        d.objection_responses = responses
            .iter()
            .map(|(id, r)| ObjectionResponse {
                id: id.to_string(),
                resolution: *r,
                reason: "Because the cost table says so.".into(),
            })
            .collect();
        d
    }

    /// Every open objection answered once, by id; `ask` only with CALL_AGENT while loops are
    /// left, `revise` only with FINISH, `overrule` with either; no fan-out.
    #[test]
    fn the_pm_must_answer_every_open_objection_the_way_its_action_allows() {
        use NextAction::*;
        use Resolution::*;
        let b = reviewing();
        let ok = |a, r: &[(&str, Resolution)]| check_responses(&b, &decision(a, r));
        assert!(ok(Finish, &[("O1", Revise), ("O2", Overrule)]).is_ok());
        assert!(ok(CallAgent, &[("O1", Ask), ("O2", Overrule)]).is_ok());
        for (action, responses, says) in [
            (Finish, vec![("O1", Revise)], "missing O2"),
            (
                Finish,
                vec![("O1", Revise), ("O1", Overrule)],
                "answered twice",
            ),
            (
                Finish,
                vec![("O1", Revise), ("O3", Overrule)],
                "not an open objection",
            ),
            (
                Finish,
                vec![("O1", Ask), ("O2", Overrule)],
                "goes with CALL_AGENT",
            ),
            (
                CallAgent,
                vec![("O1", Revise), ("O2", Ask)],
                "goes with FINISH",
            ),
            (
                CallAgents,
                vec![("O1", Ask), ("O2", Ask)],
                "CALL_AGENTS is not allowed",
            ),
        ] {
            let (e, _) = ok(action, &responses).unwrap_err();
            assert!(e.contains(says), "{responses:?}: {e}");
        }
        let mut spent = reviewing();
        spent.loop_count = spent.max_loops;
        let e = check_responses(&spent, &decision(CallAgent, &[("O1", Ask), ("O2", Ask)]));
        assert!(e.unwrap_err().0.contains("no loops are left"));
    }

    /// Resolutions land on the objections; an asked one keeps the answer of the participant
    /// asked, once merged; the report's words follow.
    #[test]
    fn resolutions_and_answers_reach_the_report() {
        let mut b = reviewing();
        let d = decision(
            NextAction::CallAgent,
            &[("O1", Resolution::Ask), ("O2", Resolution::Overrule)],
        );
        apply_responses(&mut b, &d.objection_responses, Some("arch"));
        note_answer(&mut b, "biz", "Not asked.");
        note_answer(&mut b, "arch", "It costs 1,240 USD a month.");
        let c = challenges(&b);
        assert_eq!(c[0].status, "addressed");
        assert_eq!(
            c[0].outcome,
            "addressed: the PM asked arch (Because the cost table says so.); arch answered: It costs 1,240 USD a month."
        );
        assert_eq!(
            c[1].outcome,
            "overruled by the PM: Because the cost table says so."
        );
        assert!(open(&b).next().is_none());
    }

    /// A reviewer's verdict: an objection needs content and known documents; an approval
    /// keeps no objection.
    #[test]
    fn verdicts_are_checked_like_answers() {
        let b = reviewing();
        let v = check_verdict(
            &b,
            "devils-advocate",
            &json!({"verdict": "approve", "objections": [
            {"about": "x", "why": "y", "evidence": []}]}),
        )
        .unwrap();
        assert!(v.objections.is_empty());
        for (value, says) in [
            (
                json!({"verdict": "object", "objections": []}),
                "at least one",
            ),
            (
                json!({"verdict": "object", "objections": [{"about": "TBD", "why": "Costs are unknown."}]}),
                "about",
            ),
            (
                json!({"verdict": "object", "objections": [{"about": "the cost", "why": "Nobody priced the replica.",
                "evidence": [{"document_id": "nope.md", "source_path": "nope.md", "quote": "q"}]}]}),
                "not one of the collected documents",
            ),
            (json!({"verdict": "maybe"}), "verdict"),
        ] {
            let e = check_verdict(&b, "devils-advocate", &value).unwrap_err();
            assert!(e.contains(says), "{value}: {e}");
        }
    }

    /// Without review, nothing of it reaches the PM's prompt or schema: the cached prefix of
    /// such a meeting is the same bytes as before (docs/design/review.md#prompt).
    #[test]
    fn a_meeting_without_review_sees_nothing_of_it() {
        let b = board(&["Is it cheaper?"]);
        let text = crate::stage::pm_step::render_pm_user(&b).unwrap();
        assert!(!text.contains("objection"), "{text}");
        let schema =
            crate::stage::pm_step::pm_expected_json(&b, crate::stage::pm_step::Mode::Normal);
        assert!(schema.schema["properties"]
            .get("objection_responses")
            .is_none());
        let r = reviewing();
        let text = crate::stage::pm_step::render_pm_user(&r).unwrap();
        assert!(
            text.contains("Mode: review.") && text.contains("- O1 by biz, about the decision"),
            "{text}"
        );
    }
}

#[cfg(test)]
mod draft_tests {
    use super::*;
    use crate::model::{Confidence, Decision, Finding, FindingKind, OptionAssessment};

    /// The reviewer gets the draft: the decision, the recommendation, the options table, the
    /// findings with their evidence marks and the open questions.
    #[test]
    fn the_reviewer_sees_the_whole_draft() {
        let mut b = crate::stage::fixtures::board(&["Who runs it?"]);
        b.status = Status::Reviewing;
        b.final_report =
            Some("### Executive Summary\nAdopt it.\n### Recommendation\nStart in May.".into());
        b.record.decision = Some(Decision {
            choice: "Adopt the warehouse".into(),
            confidence: Confidence::Medium,
            revisit_if: "costs double".into(),
            against_council: None,
            why_none: None,
        });
        b.record.option_assessments.push(OptionAssessment {
            option: "Warehouse".into(),
            dimension: "Cost".into(),
            assessment: "1,200 USD a month".into(),
        });
        b.record.findings.push(Finding {
            kind: FindingKind::Risk,
            text: "Loading lags a day".into(),
            by: vec!["arch".into()],
            loop_no: 1,
            evidence: vec!["E1".into()],
        });
        b.evidence.push(Evidence {
            id: "E1".into(),
            agent: "arch".into(),
            loop_no: 1,
            document_id: "d".into(),
            source_path: "d".into(),
            quote: "q".into(),
            verified: true,
        });
        let text = reviewer_message(&b, "biz", false).unwrap().content;
        for part in [
            "Decision: Adopt the warehouse (confidence medium); revisit if costs double",
            "Recommendation: Start in May.",
            "- Warehouse × Cost: 1,200 USD a month",
            "- [risk] Loading lags a day (by arch; E1 verified)",
            "Who runs it?",
            "Reply fields: verdict",
        ] {
            assert!(text.contains(part), "{part:?} in {text}");
        }
    }
}
