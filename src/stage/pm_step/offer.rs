//! What the PM is offered (docs/design/pm-round.md#pm-round, docs/design/prompts.md#prompt-layout): its input, its
//! messages, the optional PMDecision fields and the fan-out it may use, and the schema its
//! answer must match (docs/design/prompts.md#structured-output).

use serde_json::{json, Value};

use super::{mode, Mode};
use crate::error::Result;
use crate::llm::{ExpectedJson, Message};
use crate::meeting::circles;
use crate::meeting::prompts::{
    checked_quotes, cut_list, decision_packet, item, meeting_system, pm_brief, render, whiteboard,
    PmReads, Reader, ITEM_CHARS,
};
use crate::meeting::whiteboard::{
    numbered_open_questions, summary_for_prompt, RECENT_ERRORS_CAP, SUMMARY_MAX_CHARS,
};
use crate::model::{Board, NextAction};
use crate::text::cut;

/// Everything the PM sees (docs/design/pm-round.md#pm-round), and nothing else: never the event log or raw agent
/// outputs; every list item cut to 500 characters so the prompt stays flat over many loops.
pub fn pm_input(board: &Board) -> Value {
    let participants: Vec<Value> = board
        .participants
        .iter()
        .map(|name| {
            let a = board.agents.get(name);
            json!({
                "name": name,
                "role": cut(a.map_or("", |a| a.role.as_str()), ITEM_CHARS),
                "description": cut(a.map_or("", |a| a.description.as_str()), ITEM_CHARS),
            })
        })
        .collect();
    let skip = board.recent_errors.len().saturating_sub(RECENT_ERRORS_CAP);
    let recent: Vec<String> = board.recent_errors[skip..]
        .iter()
        .map(|s| item(s))
        .collect();
    json!({
        "topic": board.topic.trim(),
        "decision_packet": decision_packet(board),
        "summary": cut(&summary_for_prompt(board), SUMMARY_MAX_CHARS),
        "key_points": cut_list(&board.key_points()),
        "open_questions": cut_list(&numbered_open_questions(board)),
        "decisions": cut_list(&board.decisions()),
        "risks": cut_list(&board.risks()),
        "recent_errors": recent,
        "participants": participants,
        "mode": mode(board).as_str(),
        "remaining_loops": board.max_loops.saturating_sub(board.loop_count),
        "last_error": board.last_error.as_deref().map(item),
        "stalled": circles::stalled(board),
    })
}

/// The PM's system message: the meeting's system message, the same bytes as every agent's
/// (docs/design/prompts.md#prompt-layout), so every call of the meeting shares one prefix. The PM's role
/// and rules are in its own part of the user message ([`pm_user_message`]).
pub fn pm_system_prompt(_board: &Board, _schema_in_prompt: bool) -> Result<String> {
    meeting_system()
}

/// The PM's user message: the meeting block (topic, decision, documents: the same bytes in
/// every call of the meeting, the agents' included, marked as the stable prefix; once someone
/// has answered the PM, an index in place of the documents and their checked quotes), the
/// whiteboard, then the PM's own part: its role (the PM config's `system_prompt`, else the
/// built-in one), the participants, the rules and the reply field guide — left out when the
/// provider appends the schema itself (`schema_in_prompt`), so the format is said once — the
/// recent errors and the mode.
pub fn pm_user_message(board: &Board, schema_in_prompt: bool) -> Result<Message> {
    let mut input = pm_input(board);
    let role = match &board.pm {
        Some(pm) => pm.system_prompt.trim_end().to_string(),
        None => render("pm_system.j2", &json!({}))?.trim_end().to_string(),
    };
    input["role"] = json!(role);
    input["schema_in_prompt"] = json!(schema_in_prompt);
    let offer = Offered::of(board);
    // The rules are said from the round's own offer, the one its schema is built from
    // ([`pm_expected_json`]): the closing round's prompt says what a FINISH adds even when it
    // comes before anyone was asked (docs/design/pm-round.md#closing-round).
    let actions = offer.actions_in(mode(board), board);
    input["offer_call"] = json!(actions.contains(&NextAction::CallAgent));
    input["offer_finish"] = json!(actions.contains(&NextAction::Finish));
    input["council"] = json!(board.council.is_some());
    if mode(board) == Mode::Review {
        input["review"] = crate::meeting::review::for_pm(board);
    }
    input["offer_answered"] = json!(offer.answered > 0);
    // Who is left to hear, once the PM has asked someone (before that, everyone is).
    let unheard = if crate::meeting::final_report::pm_asked_anyone(board) {
        not_asked(board)
    } else {
        Vec::new()
    };
    input["not_asked"] = json!(if actions.iter().any(|a| *a != NextAction::Finish) {
        unheard
    } else {
        Vec::new()
    });
    input["decision_required"] = json!(decision_required(board));
    input["none_of_these"] = json!(crate::model::NONE_OF_THESE);
    input["offer_assessments"] = json!(offer.assessments > 0);
    input["max_calls"] = json!(if offer.actions.contains(&NextAction::CallAgents) {
        offer.fan_out
    } else {
        0
    });
    let reads = PmReads::from_env()?;
    input["quotes"] = json!(if reads.reads_text(board) {
        Vec::new()
    } else {
        checked_quotes(board)
    });
    Ok(Message::user_with_stable_prefix(
        pm_brief(board, reads)?,
        &(whiteboard(board, Reader::Pm)? + &render("pm_user.j2", &input)?),
    ))
}

/// The PM's user message as text, with native structured output (see [`pm_user_message`]).
pub fn render_pm_user(board: &Board) -> Result<String> {
    Ok(pm_user_message(board, false)?.content)
}

/// What the PM is offered, in its prompt and its schema (docs/design/prompts.md#structured-output):
/// the actions its config and the moment allow, answered questions while the whiteboard has
/// open ones and someone has answered, the options × dimensions assessment when the meeting
/// file names both, and the most items each list may hold.
#[derive(Debug, Clone)]
pub(super) struct Offered {
    /// The actions a normal round may answer with, in `NextAction::ALL` order: those the PM
    /// config's `next_action` enum allows (all without a config), CALL_AGENTS only where a
    /// fan-out can run; FINISH when nothing else is left.
    pub(super) actions: Vec<NextAction>,
    /// Most `answered_questions` in the schema: as many as the whiteboard can hold open (a
    /// bound that stays the same all meeting, see [`pm_expected_json`]); 0 when not offered.
    /// The exact bound, the questions open now, is the check's.
    pub(super) answered: usize,
    /// The participants an answered question may name in `by`: those who answered in this
    /// meeting (docs/design/whiteboard.md#questions); the check's, the schema names every
    /// participant.
    pub(super) answerers: Vec<String>,
    /// Most `option_assessments`: options × dimensions; 0 when not offered.
    pub(super) assessments: usize,
    /// Most calls a CALL_AGENTS may make (docs/design/agent-turn.md#fan-out), 0 when it is not offered: the
    /// board's `max_parallel`, the loops left and the participants who can answer
    /// concurrently (people answer one at a time) all allow 2 or more.
    pub(super) fan_out: u32,
}

impl Offered {
    pub(super) fn of(board: &Board) -> Offered {
        let dp = &board.meeting_input.decision_packet;
        let most = if !pm_config_allows_fan_out(board) {
            0
        } else {
            board.max_parallel
        }
        .min(crate::model::MAX_PARALLEL)
        .min(board.max_loops.saturating_sub(board.loop_count))
        .min(board.models().len() as u32);
        let fan_out = if most >= 2 && mode(board) == Mode::Normal {
            most
        } else {
            0
        };
        let allowed = pm_config_actions(board);
        let mut actions: Vec<NextAction> = NextAction::ALL
            .into_iter()
            .filter(|a| allowed.contains(a))
            .filter(|a| fan_out > 0 || *a != NextAction::CallAgents)
            .collect();
        let answerers = answerers(board);
        // No FINISH before the PM has asked anyone (docs/design/pm-round.md#first-round): a
        // meeting that asks nobody is not one, and a small model offered FINISH at once
        // takes it with a report of nothing. The closing round still only finishes.
        if !crate::meeting::final_report::pm_asked_anyone(board)
            && actions.iter().any(|a| *a != NextAction::Finish)
        {
            actions.retain(|a| *a != NextAction::Finish);
        }
        if actions.is_empty() {
            actions.push(NextAction::Finish);
        }
        Offered {
            actions,
            // Not before someone has answered: no entry could be right then, and a small
            // model offered the list fills it (the one change of the schema in a meeting) —
            // except in a closing round, whose report may settle questions from the documents
            // alone (the one-call baseline's only round: its questions count as a meeting's).
            answered: if board.open_questions().is_empty()
                || (answerers.is_empty() && mode(board) != Mode::ForcedFinish)
            {
                0
            } else {
                crate::model::LIST_CAP
            },
            answerers,
            assessments: dp.options.len() * dp.evaluation_dimensions.len(),
            fan_out,
        }
    }

    /// The actions of a round in `mode`: the closing round may only FINISH; answering
    /// objections, FINISH or, while loops are left, one CALL_AGENT (docs/design/review.md#pm-answer).
    pub(super) fn actions_in(&self, mode: Mode, board: &Board) -> Vec<NextAction> {
        match mode {
            Mode::Normal => self.actions.clone(),
            Mode::ForcedFinish => vec![NextAction::Finish],
            Mode::Review => self
                .actions
                .iter()
                .copied()
                .filter(|a| {
                    *a == NextAction::Finish
                        || (*a == NextAction::CallAgent && board.loop_count < board.max_loops)
                })
                .chain(std::iter::once(NextAction::Finish))
                .fold(Vec::new(), |mut v, a| {
                    if !v.contains(&a) {
                        v.push(a);
                    }
                    v
                }),
        }
    }
}

/// The actions the PM config's `next_action` enum allows (every action without a config or
/// an enum).
fn pm_config_actions(board: &Board) -> Vec<NextAction> {
    let listed = board
        .pm
        .as_ref()
        .and_then(|pm| pm.output_schema.get("properties"))
        .and_then(|p| p.get("next_action"))
        .and_then(|a| a.get("enum"))
        .and_then(Value::as_array);
    match listed {
        None => NextAction::ALL.to_vec(),
        Some(names) => NextAction::ALL
            .into_iter()
            .filter(|a| names.iter().any(|v| v == a.as_str()))
            .collect(),
    }
}

/// Whether the PM config (when there is one) lets a CALL_AGENTS answer through its own
/// `output_schema`: `next_action` allows it, and `calls` is not an unknown key of a closed
/// object. A config written before fan-outs keeps its meeting one call at a time.
fn pm_config_allows_fan_out(board: &Board) -> bool {
    let Some(pm) = &board.pm else { return true };
    let schema = &pm.output_schema;
    let props = schema.get("properties").and_then(Value::as_object);
    let calls_ok = schema.get("additionalProperties") != Some(&Value::Bool(false))
        || props.is_some_and(|p| p.contains_key("calls"));
    pm_config_actions(board).contains(&NextAction::CallAgents) && calls_ok
}

/// The participants who answered in this meeting, in the board's order: they were called
/// (the record keeps who answered for each caller), a turn of theirs was answered (the PM's
/// asked questions keep its headline), or the whiteboard keeps a finding or a question they
/// raised. Only they may be named as having answered a question
/// (docs/design/whiteboard.md#questions).
pub(super) fn answerers(board: &Board) -> Vec<String> {
    let r = &board.record;
    board
        .participants
        .iter()
        .filter(|p| {
            r.callers.contains_key(*p)
                || r.asked.iter().any(|a| &a.agent == *p && a.answer.is_some())
                || r.findings.iter().any(|f| f.by.contains(p))
                || r.questions.iter().any(|q| q.raised_by.as_ref() == Some(*p))
        })
        .cloned()
        .collect()
}

/// The participants the PM has not asked anything yet, in the board's order: no question of
/// its on record for them, and nothing of theirs on the whiteboard (a council vote is no
/// answer to a question). What the PM is shown once it has asked someone ("Not asked yet:
/// biz, security."), and what a FINISH that leaves a required question unasked is told
/// (docs/design/pm-round.md#pm-round).
pub(super) fn not_asked(board: &Board) -> Vec<String> {
    let r = &board.record;
    board
        .participants
        .iter()
        .filter(|p| {
            !(r.asked.iter().any(|a| &a.agent == *p)
                || r.findings.iter().any(|f| f.by.contains(p))
                || r.questions.iter().any(|q| q.raised_by.as_ref() == Some(*p)))
        })
        .cloned()
        .collect()
}

/// `schema` as an array of at most `most` items, or null: a list the answer may leave out
/// (OpenAI strict mode wants every property, so optional is nullable; llama.cpp's grammar
/// bounds the list, so a small model cannot run on to `max_tokens` inside it).
fn bounded_or_null(mut schema: Value, least: usize, most: usize) -> Value {
    if least > 0 {
        schema["minItems"] = json!(least);
    }
    schema["maxItems"] = json!(most);
    json!({"anyOf": [schema, {"type": "null"}]})
}

/// The JSON the PM must return, sent to providers with native structured output: the
/// meeting's own (docs/design/prompts.md#structured-output), made from PMDecision's one definition
/// (`model::decision_shape`, strict-friendly: OpenAI strict mode wants every property required,
/// nullable ones typed `[T, "null"]` or `anyOf` with null, no extra properties) and narrowed to
/// this board and mode: `next_action` one of the actions [`Offered`] allows (the closing
/// round: FINISH only), `target_agent` and `prompt_for_agent` null unless CALL_AGENT is one,
/// every list bounded (`maxItems`) and nullable, and present only where offered — so a
/// schema-constrained server can neither mis-route nor run on inside a list. The bounds are
/// the ones that hold all meeting (the calls' changes only in the last loops): the schema is
/// part of the cached prompt prefix (an Anthropic tool comes first, OpenAI caches the schema
/// with the system message, and without native output it is in the system message), so one
/// that changed every round would leave the documents uncached on every call
/// (docs/design/prompts.md#structured-output). The bounds that change by the round (questions
/// open now, who answered) are the checks'. The answer itself is still checked by
/// `check_decision`, which also accepts omitted nullable fields.
pub(crate) fn pm_expected_json(board: &Board, mode: Mode) -> ExpectedJson {
    let shape = &crate::model::decision_shape().schema;
    let mut properties = shape["properties"].clone();
    let offer = Offered::of(board);
    let actions = offer.actions_in(mode, board);
    let names: Vec<&str> = actions.iter().map(|a| a.as_str()).collect();
    properties["next_action"]["enum"] = json!(names);
    if actions.contains(&NextAction::CallAgent) {
        // `anyOf` rather than `"type": ["string", "null"]` with the enum: grammar-constrained
        // local servers (llama.cpp's schema-to-grammar) read a type list before an enum and
        // would let any string through; OpenAI strict mode takes both forms.
        properties["target_agent"] = json!({"anyOf": [
            {"type": "string", "enum": board.participants},
            {"type": "null"},
        ]});
    } else {
        properties["target_agent"] = json!({"type": "null"});
        properties["prompt_for_agent"] = json!({"type": "null"});
    }
    let finish = actions.contains(&NextAction::Finish);
    if actions == [NextAction::Finish] {
        // A round that may only FINISH must write the report: a string, never null; and, in a
        // meeting with options, the decision among them.
        properties["final_report"] = report_schema();
        if decision_required(board) {
            not_null(&mut properties["decision"]);
        }
    } else if !finish {
        // Before the PM has asked anyone: nothing of a FINISH, which a small model would fill.
        properties["final_report"] = json!({"type": "null"});
        properties["decision"] = json!({"type": "null"});
    }
    if finish && actions != [NextAction::Finish] {
        properties["final_report"] = json!({"anyOf": [report_schema(), {"type": "null"}]});
    }
    if finish && decision_required(board) {
        // The choice is one of the options as written, or none of them (the report says why):
        // a grammar-constrained model then names an option the grader and the council's vote
        // read exactly, not a paraphrase (seen with Qwen2.5-Coder-1.5B: "Use Amazon SQS to
        // send invoice emails …" for "Use a managed queue (Amazon SQS) with workers").
        choice_among_options(&mut properties["decision"], board);
    }
    let fan_out = actions.contains(&NextAction::CallAgents);
    // A fan-out's calls go to the participants who are models; null when not CALL_AGENTS.
    let mut calls = properties["calls"].take();
    calls["items"]["properties"]["target_agent"]["enum"] = json!(board.models());
    properties["calls"] = bounded_or_null(calls, 2, offer.fan_out as usize);
    let mut answered = properties["answered_questions"].take();
    let by = &mut answered["items"]["properties"]["by"];
    by["items"]["enum"] = json!(board.participants);
    by["maxItems"] = json!(board.participants.len());
    properties["answered_questions"] = bounded_or_null(answered, 0, offer.answered);
    let assessments = properties["option_assessments"].take();
    properties["option_assessments"] = bounded_or_null(assessments, 0, offer.assessments);
    // Answering objections: one response per open objection, by id; offered only then, so
    // the schema (part of the cached prefix) of a meeting without review never changes.
    let review_ids = match mode {
        Mode::Review => crate::meeting::review::open_ids(board),
        _ => Vec::new(),
    };
    let mut responses = properties["objection_responses"].take();
    responses["items"]["properties"]["id"]["enum"] = json!(review_ids);
    responses["minItems"] = json!(review_ids.len());
    responses["maxItems"] = json!(review_ids.len());
    properties["objection_responses"] = responses;
    // Offered only where they apply (docs/design/prompts.md#prompt-layout): every field is paid for on
    // every call, and a field with nothing to say invites filler.
    let props = properties
        .as_object_mut()
        .expect("PMDecision has properties");
    for (name, offered) in [
        ("calls", fan_out),
        ("answered_questions", offer.answered > 0),
        ("option_assessments", finish && offer.assessments > 0),
        ("objection_responses", !review_ids.is_empty()),
    ] {
        if !offered {
            props.shift_remove(name);
        }
    }
    if let Some(decision) = props.get_mut("decision") {
        // Why a decision departs from the council's vote: offered only with a council, so a
        // meeting without one sends the schema it always did (docs/design/council.md#report).
        if board.council.is_none() {
            without_field(decision, "against_council");
        }
        // Why none of the options can work: only where there are options to choose among.
        if !decision_required(board) {
            without_field(decision, "why_none");
        }
    }
    let required: Vec<String> = props.keys().cloned().collect();
    ExpectedJson {
        name: "pm_decision".into(),
        schema: json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }),
    }
}

/// A FINISH's report as the schema holds it: at least as long as the summary's heading, so
/// never empty (docs/design/prompts.md#structured-output): a grammar-constrained model
/// offered any string closed it at once, and its retry did the same. A length, not a
/// `pattern`: schema-to-grammar converters (llama.cpp's) apply a pattern to the string's raw
/// characters, so an open tail let the model write unescaped quotes and line breaks — invalid
/// JSON, and a report that ran on to the token limit (a live run, 2026-12-07).
fn report_schema() -> Value {
    json!({"type": "string", "minLength": REPORT_MIN_CHARS})
}

/// The shortest report a FINISH may carry: as long as the summary's heading it starts with.
const REPORT_MIN_CHARS: usize = crate::text::markdown::SUMMARY_HEADING.len();

/// `field` taken out of an object schema, or out of each object branch of an `anyOf`.
fn without_field(schema: &mut Value, field: &str) {
    if let Some(branches) = schema.get_mut("anyOf").and_then(Value::as_array_mut) {
        branches.iter_mut().for_each(|b| without_field(b, field));
        return;
    }
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.shift_remove(field);
    }
    if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| r != field);
    }
}

/// Whether a FINISH must carry a `decision`: the meeting has options to choose among (a choice
/// may still say that none fits, and why). Without options, a decision is the PM's to give.
pub(super) fn decision_required(board: &Board) -> bool {
    !board.meeting_input.decision_packet.options.is_empty()
}

/// The schema of a retry that keeps `action` (`PmAsk::narrow`, docs/design/failure-policy.md#ask-loop):
/// `next_action` that action alone, and the fields it needs no longer nullable — CALL_AGENT's
/// target and question, CALL_AGENTS' calls, FINISH's report (and its decision, when
/// `decision_required`). The rest stays as sent.
pub(super) fn narrow_to(schema: &mut Value, action: NextAction, decision_required: bool) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    props.insert(
        "next_action".into(),
        json!({"type": "string", "enum": [action.as_str()]}),
    );
    let needed: &[&str] = match action {
        NextAction::CallAgent => &["target_agent", "prompt_for_agent"],
        NextAction::CallAgents => &["calls"],
        NextAction::Finish if decision_required => &["final_report", "decision"],
        NextAction::Finish => &["final_report"],
    };
    for field in needed {
        if let Some(v) = props.get_mut(*field) {
            not_null(v);
        }
    }
}

/// A nullable schema without its null: the other branch of `anyOf: [X, {"type": "null"}]`, or
/// `"type": [T, "null"]` as `T`.
/// The decision's `choice` in `decision` (an object, or an `anyOf` with null) held to the
/// meeting's options and [`NONE_OF_THESE`](crate::model::NONE_OF_THESE).
fn choice_among_options(decision: &mut Value, board: &Board) {
    let mut options: Vec<&str> = board
        .meeting_input
        .decision_packet
        .options
        .iter()
        .map(String::as_str)
        .collect();
    options.push(crate::model::NONE_OF_THESE);
    let objects: Vec<&mut Value> = match decision.get_mut("anyOf").and_then(Value::as_array_mut) {
        Some(branches) => branches.iter_mut().collect(),
        None => vec![decision],
    };
    for o in objects {
        if let Some(choice) = o.pointer_mut("/properties/choice") {
            choice["enum"] = json!(options);
        }
    }
}

fn not_null(v: &mut Value) {
    let null = json!({"type": "null"});
    if let Some(branches) = v.get("anyOf").and_then(Value::as_array) {
        let rest: Vec<Value> = branches.iter().filter(|b| **b != null).cloned().collect();
        if rest.len() == 1 {
            *v = rest[0].clone();
        }
    } else if let Some(types) = v.get("type").and_then(Value::as_array) {
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if rest.len() == 1 {
            v["type"] = rest[0].clone();
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::stage::pm_step::checks::check_decision;

    /// A CALL_AGENT naming a participant but no question asks the first open question
    /// instead of being refused; with no open question, the decision to make; with nothing
    /// left to ask it is refused as before.
    #[test]
    fn a_call_without_a_question_asks_the_first_open_one() {
        let board = crate::stage::fixtures::board(&["Which is cheaper?", "How fast?"]);
        let reply = json!({"analysis": "a", "next_action": "CALL_AGENT", "target_agent": "arch",
            "prompt_for_agent": null, "final_report": null});
        let d = check_decision(&board, Mode::Normal, &reply).expect("asked");
        assert_eq!(d.prompt_for_agent.as_deref(), Some("Which is cheaper?"));
        let mut none = crate::stage::fixtures::board(&[]);
        let decision = none.meeting_input.decision_packet.decision_to_make.clone();
        let d = check_decision(&none, Mode::Normal, &reply).expect("asked the decision");
        assert_eq!(d.prompt_for_agent.as_deref(), Some(decision.as_str()));
        none.record.asked.push(crate::model::AskedQuestion {
            agent: "arch".into(),
            question: decision,
            loop_no: 1,
            answer: None,
        });
        assert!(check_decision(&none, Mode::Normal, &reply).is_err());
    }

    /// A FINISH whose report came as HTML (seen with Qwen2.5-Coder-1.5B) is kept, read as the
    /// Markdown it means, its decision with it — not refused for its markup.
    #[test]
    fn a_finish_with_an_html_report_is_kept() {
        let mut board = crate::stage::fixtures::board(&["Which is cheaper?"]);
        board.meeting_input.decision_packet.options = vec!["Keep".into(), "Rewrite".into()];
        answered(&mut board, "arch");
        let reply = json!({"analysis": "a", "next_action": "FINISH", "target_agent": null,
            "prompt_for_agent": null, "calls": null,
            "final_report": "<h3>Executive Summary</h3><p>Keep it.</p><h3>Recommendation</h3><p>Tune the jobs.</p>",
            "decision": {"choice": "Keep", "confidence": "high", "revisit_if": ""}});
        let d = check_decision(&board, Mode::Normal, &reply).expect("kept");
        assert_eq!(
            d.final_report.as_deref(),
            Some("### Executive Summary\n\nKeep it.\n\n### Recommendation\n\nTune the jobs.")
        );
        assert_eq!(d.decision.unwrap().choice, "Keep");
    }

    /// A closing round reached before anyone was asked (docs/design/pm-round.md#closing-round:
    /// the one-call baseline, a meeting out of loops or budget at once): its prompt and its
    /// schema are built from the same offer — the prompt says what a FINISH adds and no
    /// "No FINISH before a participant has been asked", the schema allows FINISH alone with
    /// the report and, in a meeting with options, the decision required.
    #[test]
    fn a_closing_round_before_any_answer_says_what_it_asks() {
        let mut board = crate::stage::fixtures::board(&["Which is cheaper?"]);
        board.meeting_input.decision_packet.options = vec!["Keep".into(), "Rewrite".into()];
        board.loop_count = board.max_loops;
        assert_eq!(mode(&board), Mode::ForcedFinish);
        assert!(!crate::meeting::final_report::pm_asked_anyone(&board));
        let prompt = render_pm_user(&board).unwrap();
        assert!(!prompt.contains("No FINISH before"), "{prompt}");
        assert!(
            prompt.contains("A FINISH adds decision (required: choice is one of the options"),
            "{prompt}"
        );
        assert!(prompt.contains("`### Executive Summary`"), "{prompt}");
        let schema = pm_expected_json(&board, Mode::ForcedFinish).schema;
        let p = &schema["properties"];
        assert_eq!(p["next_action"]["enum"], json!(["FINISH"]));
        assert_eq!(p["final_report"], report_schema());
        assert_eq!(p["decision"]["type"], "object", "{}", p["decision"]);
        // The choice is one of the options as written, or none of them.
        assert_eq!(
            p["decision"]["properties"]["choice"]["enum"],
            json!(["Keep", "Rewrite", crate::model::NONE_OF_THESE]),
            "{}",
            p["decision"]
        );
        assert!(
            prompt.contains("only when none can work, \"none of these\" with why_none saying why"),
            "{prompt}"
        );
        // The questions it settles from the documents count, as a meeting's do.
        assert!(p.get("answered_questions").is_some(), "{p}");
        assert!(
            prompt.contains("In answered_questions put each open question"),
            "{prompt}"
        );
        crate::llm::json_format::to_strict(&schema).expect("strict-able");
        // Without options the decision stays the PM's to give.
        board.meeting_input.decision_packet.options.clear();
        let schema = pm_expected_json(&board, Mode::ForcedFinish).schema;
        assert!(schema["properties"]["decision"].get("anyOf").is_some());
        let decision = schema["properties"]["decision"]["anyOf"][0].clone();
        assert_eq!(
            decision["properties"]["choice"],
            json!({"type": "string"}),
            "{decision}"
        );
        assert!(!render_pm_user(&board)
            .unwrap()
            .contains("(required: choice"));
    }

    /// Every schema that offers a FINISH holds its report to a length, so an empty one is out
    /// of reach of a grammar-constrained model (which closed the string at once, then again in
    /// its retry: issue #58), and the notation says it in words. No `pattern`: a converter's
    /// grammar reads it over the raw JSON characters and let quotes and line breaks through
    /// unescaped (llama-cpp-python 0.3.36, a live run).
    #[test]
    fn a_finish_report_can_never_be_empty() {
        let mut board = crate::stage::fixtures::board(&["Which is cheaper?"]);
        answered(&mut board, "arch");
        let report = "### Executive Summary\nKeep it.\n\n### Recommendation\nTune \"it\".";
        let mut closing = board.clone();
        closing.loop_count = closing.max_loops;
        let normal = pm_expected_json(&board, Mode::Normal).schema;
        let mut retry = normal.clone();
        narrow_to(&mut retry, NextAction::Finish, false);
        for (what, schema) in [
            (
                "closing",
                pm_expected_json(&closing, Mode::ForcedFinish).schema,
            ),
            ("normal", normal),
            ("retry", retry),
        ] {
            let field = &schema["properties"]["final_report"];
            assert!(field.get("pattern").is_none(), "{what}: {field}");
            let v = jsonschema::validator_for(field).unwrap();
            assert!(!v.is_valid(&json!("")), "{what}: {field}");
            assert!(!v.is_valid(&json!("Keep it.")), "{what}");
            assert!(v.is_valid(&json!(report)), "{what}");
            crate::llm::json_format::to_strict(&schema).expect("strict-able");
        }
        let closing = pm_expected_json(&closing, Mode::ForcedFinish).schema;
        let words = crate::llm::notation::type_notation(&closing).expect("said in words");
        assert!(
            words.contains("\"final_report\": string (21 characters or more)"),
            "{words}"
        );
    }

    /// `who` answered a question of the PM's in this meeting.
    pub(crate) fn answered(board: &mut Board, who: &str) {
        board.record.asked.push(crate::model::AskedQuestion {
            agent: who.into(),
            question: "What does it cost?".into(),
            loop_no: 0,
            answer: Some("It costs little.".into()),
        });
    }

    /// The schema sent is the meeting's own: the participants (or null) as targets, and only
    /// FINISH with no target or question in forced-finish mode. OpenAI's strict conversion
    /// keeps the enums, and both forms compile as JSON Schema (Anthropic's tool input).
    #[test]
    fn the_schema_sent_names_the_participants_and_the_mode() {
        let mut board = crate::stage::fixtures::board(&["Which is cheaper?"]);
        answered(&mut board, "arch");
        let dp = &mut board.meeting_input.decision_packet;
        dp.options = vec!["A".into(), "B".into()];
        dp.evaluation_dimensions = vec!["Cost".into()];
        let normal = pm_expected_json(&board, Mode::Normal).schema;
        assert_eq!(
            normal["properties"]["target_agent"],
            json!({"anyOf": [{"type": "string", "enum": ["arch", "biz"]}, {"type": "null"}]})
        );
        assert_eq!(
            normal["properties"]["next_action"]["enum"],
            json!(["CALL_AGENT", "FINISH"])
        );
        let forced = pm_expected_json(&board, Mode::ForcedFinish).schema;
        assert_eq!(
            forced["properties"]["next_action"]["enum"],
            json!(["FINISH"])
        );
        assert_eq!(
            forced["properties"]["target_agent"],
            json!({"type": "null"})
        );
        assert_eq!(forced["properties"]["final_report"], report_schema());
        for schema in [normal, forced] {
            let strict = crate::llm::json_format::to_strict(&schema).expect("strict-able");
            assert_eq!(
                strict["properties"]["next_action"]["enum"],
                schema["properties"]["next_action"]["enum"]
            );
            assert_eq!(
                strict["properties"]["target_agent"],
                schema["properties"]["target_agent"]
            );
            for s in [&schema, &strict] {
                let v = jsonschema::validator_for(s).unwrap();
                let finish = json!({"analysis": "a", "next_action": "FINISH", "target_agent": null,
                    "prompt_for_agent": null, "final_report": "### Executive Summary\nKeep.",
                    "answered_questions": [{"question": "Q1", "answer": "Yes.", "by": ["arch"]}],
                    "decision": {"choice": "B", "confidence": "high", "revisit_if": "x",
                        "why_none": null},
                    "option_assessments": [{"option": "B", "dimension": "Cost", "assessment": "ok"}]});
                assert!(v.is_valid(&finish));
                let mut bad = finish.clone();
                bad["decision"]["confidence"] = json!("certain");
                assert!(!v.is_valid(&bad), "confidence is one of low, medium, high");
                let misrouted = json!({"analysis": "a", "next_action": "CALL_AGENT",
                    "target_agent": "...", "prompt_for_agent": "q", "final_report": null,
                    "answered_questions": [], "decision": null, "option_assessments": []});
                assert!(!v.is_valid(&misrouted));
            }
        }
    }

    /// A fan-out is offered with 2 or more participants who are models, `max_parallel` of 2
    /// or more and 2 or more loops left; its schema stays strict-able and takes a CALL_AGENTS.
    #[test]
    fn call_agents_is_offered_where_it_can_run() {
        let mut board = crate::stage::fixtures::board(&[]);
        let offered = |b: &Board| Offered::of(b).fan_out;
        assert_eq!(offered(&board), 0, "max_parallel 1");
        board.max_parallel = 3;
        assert_eq!(offered(&board), 2, "two participants");
        board.loop_count = 5;
        assert_eq!(offered(&board), 0, "one loop left");
        board.loop_count = 0;
        let mut many = board.clone();
        (many.max_parallel, many.max_loops) = (50, 50);
        for i in 0..10 {
            let name = format!("a{i}");
            many.agents
                .insert(name.clone(), crate::stage::fixtures::agent(&name));
            many.participants.push(name);
        }
        assert_eq!(
            offered(&many),
            crate::model::MAX_PARALLEL,
            "a hand-edited max_parallel"
        );
        board.agents.get_mut("biz").unwrap().kind = crate::model::ParticipantKind::Human;
        assert_eq!(offered(&board), 0, "one model: biz is a person");
        board.agents.get_mut("biz").unwrap().kind = crate::model::ParticipantKind::Llm;
        let mut pm = crate::stage::fixtures::agent("pm");
        pm.output_schema = json!({"type": "object", "properties": {"next_action":
            {"type": "string", "enum": ["CALL_AGENT", "FINISH"]}}})
        .as_object()
        .unwrap()
        .clone();
        board.pm = Some(pm);
        assert_eq!(offered(&board), 0, "the PM config predates fan-outs");
        board.pm = None;
        let schema = pm_expected_json(&board, Mode::Normal).schema;
        let strict = crate::llm::json_format::to_strict(&schema).expect("strict-able");
        let fan = json!({"analysis": "a", "next_action": "CALL_AGENTS", "target_agent": null,
            "prompt_for_agent": null, "final_report": null, "decision": null,
            "calls": [{"target_agent": "arch", "prompt_for_agent": "Cost?"},
                      {"target_agent": "biz", "prompt_for_agent": "Risk?"}]});
        for s in [&schema, &strict] {
            assert!(jsonschema::validator_for(s).unwrap().is_valid(&fan), "{s}");
        }
        let d = check_decision(&board, Mode::Normal, &fan).unwrap();
        assert_eq!(d.calls.len(), 2);
        assert!(
            pm_expected_json(&board, Mode::ForcedFinish).schema["properties"]
                .get("calls")
                .is_none()
        );
    }

    /// A narrowed retry schema stays one OpenAI's strict mode and a validator take, for every
    /// action.
    #[test]
    fn a_narrowed_schema_is_still_strict() {
        let mut board = crate::stage::fixtures::board(&["Which is cheaper?"]);
        board.max_parallel = 3;
        answered(&mut board, "arch");
        for action in NextAction::ALL {
            let mut schema = pm_expected_json(&board, Mode::Normal).schema;
            narrow_to(&mut schema, action, false);
            assert_eq!(
                schema["properties"]["next_action"]["enum"],
                json!([action.as_str()])
            );
            crate::llm::json_format::to_strict(&schema).expect("strict-able");
            jsonschema::validator_for(&schema).expect("a schema");
        }
    }

    /// The optional fields are offered where they apply, in the schema and the rules alike.
    #[test]
    fn answered_questions_and_assessments_are_offered_where_they_apply() {
        let fields = |b: &Board| -> Vec<String> {
            let s = pm_expected_json(b, Mode::Normal).schema;
            let keys: Vec<String> = s["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            assert_eq!(
                s["required"],
                json!(keys),
                "strict: every property required"
            );
            keys
        };
        let mut bare = crate::stage::fixtures::board(&[]);
        answered(&mut bare, "arch");
        assert_eq!(
            fields(&bare),
            [
                "analysis",
                "next_action",
                "target_agent",
                "prompt_for_agent",
                "final_report",
                "decision"
            ]
        );
        let text = render_pm_user(&bare).unwrap();
        assert!(!text.contains("answered_questions") && !text.contains("option_assessments"));
        assert!(
            text.contains("A FINISH adds decision and final_report:"),
            "{text}"
        );
        let mut full = crate::stage::fixtures::board(&["Which is cheaper?"]);
        full.meeting_input.decision_packet.options = vec!["A".into(), "B".into()];
        assert!(
            !fields(&full).contains(&"answered_questions".to_string()),
            "nobody has answered yet"
        );
        answered(&mut full, "arch");
        let dims_only = fields(&full);
        assert!(dims_only.contains(&"answered_questions".to_string()));
        assert!(
            !dims_only.contains(&"option_assessments".to_string()),
            "options need dimensions"
        );
        full.meeting_input.decision_packet.evaluation_dimensions = vec!["Cost".into()];
        assert!(fields(&full).contains(&"option_assessments".to_string()));
        let text = render_pm_user(&full).unwrap();
        assert!(
            text.contains("In answered_questions put") && text.contains("option_assessments (each")
        );
    }

    /// PMDecision is defined once: the schema sent to the model, the struct's serde fields,
    /// the decision checks and the loader's PM config rules all read the same shape.
    #[test]
    fn the_schema_sent_the_loader_rules_and_the_struct_agree() {
        use crate::model::{decision_shape, AgentCall, AnsweredQuestion, Confidence, Decision};
        use crate::model::{OptionAssessment, PmDecision};
        let shape = decision_shape();
        // The struct: every field serde writes, in order, is a field of the shape.
        let full = PmDecision {
            analysis: "a".into(),
            next_action: NextAction::Finish,
            target_agent: Some("arch".into()),
            prompt_for_agent: Some("q".into()),
            final_report: Some("r".into()),
            calls: vec![AgentCall {
                target_agent: "arch".into(),
                prompt_for_agent: "q".into(),
            }],
            answered_questions: vec![AnsweredQuestion {
                question: "Q1".into(),
                answer: "Yes.".into(),
                by: vec!["arch".into()],
            }],
            decision: Some(Decision {
                choice: "B".into(),
                confidence: Confidence::High,
                revisit_if: "x".into(),
                against_council: None,
                why_none: Some("x".into()),
            }),
            option_assessments: vec![OptionAssessment {
                option: "B".into(),
                dimension: "Cost".into(),
                assessment: "ok".into(),
            }],
            objection_responses: vec![crate::model::ObjectionResponse {
                id: "O1".into(),
                resolution: crate::model::Resolution::Overrule,
                reason: "It stands.".into(),
            }],
        };
        let written = serde_json::to_value(&full).unwrap();
        let keys: Vec<&String> = written.as_object().unwrap().keys().collect();
        assert_eq!(keys, shape.fields.iter().collect::<Vec<_>>());
        assert_eq!(
            shape.text_fields,
            [
                "analysis",
                "next_action",
                "target_agent",
                "prompt_for_agent",
                "final_report"
            ]
        );
        // The schema sent, with everything offered: the shape's fields, and what it admits
        // the struct reads back through the decision checks.
        let mut board = crate::stage::fixtures::board(&["Which is cheaper?"]);
        board.max_parallel = 2;
        answered(&mut board, "arch");
        let dp = &mut board.meeting_input.decision_packet;
        dp.options = vec!["A".into(), "B".into()];
        dp.evaluation_dimensions = vec!["Cost".into()];
        let sent = pm_expected_json(&board, Mode::Normal).schema;
        let sent_keys: Vec<&String> = sent["properties"].as_object().unwrap().keys().collect();
        // Every field but the answers to objections, offered only while some are open
        // (docs/design/review.md#pm-answer).
        let normal: Vec<&String> = shape
            .fields
            .iter()
            .filter(|f| *f != "objection_responses")
            .collect();
        assert_eq!(sent_keys, normal);
        let mut reviewing = board.clone();
        reviewing.status = crate::model::Status::Reviewing;
        reviewing.objections.push(crate::model::Objection {
            id: "O1".into(),
            by: "biz".into(),
            about: "the decision".into(),
            why: "No cost figure.".into(),
            evidence: vec![],
            round: 1,
            status: crate::model::ObjectionStatus::Open,
            resolution: None,
            asked: None,
            answer: None,
        });
        let review = pm_expected_json(&reviewing, Mode::Review).schema;
        let o = &review["properties"]["objection_responses"];
        assert_eq!(o["items"]["properties"]["id"]["enum"], json!(["O1"]));
        assert_eq!(
            (o["minItems"].clone(), o["maxItems"].clone()),
            (json!(1), json!(1))
        );
        let mut answer = written.clone();
        answer
            .as_object_mut()
            .unwrap()
            .remove("objection_responses");
        answer["calls"] = json!([{"target_agent": "arch", "prompt_for_agent": "Cost?"},
            {"target_agent": "biz", "prompt_for_agent": "Risk?"}]);
        answer["final_report"] =
            json!("### Executive Summary\nKeep it.\n### Recommendation\nTune it.");
        assert!(jsonschema::validator_for(&sent).unwrap().is_valid(&answer));
        let d = check_decision(&board, Mode::Normal, &answer).expect("a valid FINISH");
        assert_eq!(d.decision, full.decision);
        // The loader: a PM config whose output schema is the one sent is a valid PM config;
        // it may require every text field and no other.
        let mut pm = crate::stage::fixtures::agent("pm");
        let required_text = json!({"required": shape.text_fields});
        let mut schema = sent.as_object().unwrap().clone();
        schema.insert("required".into(), required_text["required"].clone());
        pm.output_schema = schema.clone();
        crate::loader::validate_agent(&pm, crate::loader::AgentKind::Pm).unwrap();
        for field in shape
            .fields
            .iter()
            .filter(|f| !shape.text_fields.contains(f))
        {
            schema.insert("required".into(), json!([field]));
            pm.output_schema = schema.clone();
            let e = crate::loader::validate_agent(&pm, crate::loader::AgentKind::Pm).unwrap_err();
            assert_eq!(e.path, "output_schema.required", "{field}");
        }
    }

    /// The schema offers what this PM may answer now: a PM config that allows only
    /// CALL_AGENTS and FINISH gets no CALL_AGENT (its target and question are null), the
    /// closing round only FINISH, and when no fan-out can run, FINISH alone.
    #[test]
    fn the_actions_offered_follow_the_pm_config_and_the_moment() {
        let mut board = crate::stage::fixtures::board(&["Which is cheaper?"]);
        board.max_parallel = 3;
        let mut pm = crate::stage::fixtures::agent("pm");
        pm.output_schema = json!({"type": "object", "properties": {"next_action":
            {"type": "string", "enum": ["CALL_AGENTS", "FINISH"]}}})
        .as_object()
        .unwrap()
        .clone();
        board.pm = Some(pm);
        let actions = |b: &Board, m: Mode| {
            pm_expected_json(b, m).schema["properties"]["next_action"]["enum"].clone()
        };
        assert_eq!(
            actions(&board, Mode::Normal),
            json!(["CALL_AGENTS"]),
            "no FINISH before anyone has been asked"
        );
        answered(&mut board, "biz");
        let actions = |b: &Board, m: Mode| {
            pm_expected_json(b, m).schema["properties"]["next_action"]["enum"].clone()
        };
        assert_eq!(
            actions(&board, Mode::Normal),
            json!(["CALL_AGENTS", "FINISH"])
        );
        let normal = pm_expected_json(&board, Mode::Normal).schema;
        assert_eq!(
            normal["properties"]["target_agent"],
            json!({"type": "null"})
        );
        assert_eq!(
            normal["properties"]["prompt_for_agent"],
            json!({"type": "null"})
        );
        let call = json!({"analysis": "a", "next_action": "CALL_AGENT", "target_agent": "arch",
            "prompt_for_agent": "What does the nightly run cost?", "final_report": null,
            "decision": null});
        let e = check_decision(&board, Mode::Normal, &call).unwrap_err();
        assert!(
            e.describe()
                .contains("next_action: \"CALL_AGENT\" is not allowed in this meeting"),
            "{}",
            e.describe()
        );
        assert_eq!(actions(&board, Mode::ForcedFinish), json!(["FINISH"]));
        board.loop_count = board.max_loops - 1;
        assert_eq!(
            actions(&board, Mode::Normal),
            json!(["FINISH"]),
            "one loop left: no fan-out"
        );
        assert_eq!(
            pm_expected_json(&board, Mode::Normal).schema["properties"]["final_report"],
            report_schema()
        );
        let guide = render_pm_user(&board).unwrap();
        assert!(
            guide.contains("Reply fields: analysis (1-3 sentences); final_report only with FINISH"),
            "no CALL_AGENT in the field guide when it is not offered: {guide}"
        );
        board.pm = None;
        assert_eq!(
            actions(&board, Mode::Normal),
            json!(["CALL_AGENT", "FINISH"])
        );
    }

    /// Every list is bounded and may be null: calls by the fan-out, answered questions by the
    /// open questions (naming only who answered), assessments by options × dimensions. Both
    /// OpenAI's strict form and the validator keep the bounds.
    #[test]
    fn every_list_is_bounded_and_nullable() {
        let mut board = crate::stage::fixtures::board(&["Which is cheaper?", "How fast?"]);
        (board.max_parallel, board.max_loops, board.loop_count) = (8, 6, 3);
        answered(&mut board, "biz");
        let dp = &mut board.meeting_input.decision_packet;
        dp.options = vec!["A".into(), "B".into(), "C".into()];
        dp.evaluation_dimensions = vec!["Cost".into(), "Speed".into()];
        let schema = pm_expected_json(&board, Mode::Normal).schema;
        let p = &schema["properties"];
        let list = |name: &str| p[name]["anyOf"][0].clone();
        assert_eq!(p["calls"]["anyOf"][1], json!({"type": "null"}));
        assert_eq!(
            (
                list("calls")["minItems"].clone(),
                list("calls")["maxItems"].clone()
            ),
            (json!(2), json!(2)),
            "two participants"
        );
        // The same all meeting: as many as can be open, the participants as names.
        assert_eq!(list("answered_questions")["maxItems"], json!(20));
        let by = &list("answered_questions")["items"]["properties"]["by"];
        assert_eq!(by["items"]["enum"], json!(["arch", "biz"]));
        assert_eq!(by["maxItems"], json!(2));
        assert_eq!(list("option_assessments")["maxItems"], json!(6));
        let strict = crate::llm::json_format::to_strict(&schema).expect("strict-able");
        assert_eq!(strict["properties"]["calls"], p["calls"]);
        let too_many = json!({"analysis": "a", "next_action": "FINISH", "target_agent": null,
            "prompt_for_agent": null, "final_report": "### Executive Summary\nKeep.",
            "decision": null, "calls": null,
            "answered_questions": null,
            "option_assessments": vec![json!({"option": "A", "dimension": "Cost",
                "assessment": "ok"}); 7]});
        for s in [&schema, &strict] {
            let v = jsonschema::validator_for(s).unwrap();
            assert!(!v.is_valid(&too_many));
            let mut ok = too_many.clone();
            ok["option_assessments"].as_array_mut().unwrap().pop();
            assert!(v.is_valid(&ok), "{s}");
            ok["answered_questions"] = json!([{"question": "Q1", "answer": "A.", "by": ["ceo"]}]);
            assert!(!v.is_valid(&ok), "ceo is not a participant");
        }
        // More answers than questions open now: the schema allows them, so the check takes
        // them (applying them notes and ignores the extra, whiteboard::apply_answers).
        let mut more = too_many.clone();
        more["option_assessments"] = Value::Null;
        more["final_report"] =
            json!("### Executive Summary\nKeep it.\n### Recommendation\nTune it.");
        more["decision"] = json!({"choice": "A", "confidence": "high", "revisit_if": ""});
        more["answered_questions"] = json!([{"question": "Q1", "answer": "A.", "by": ["biz"]},
            {"question": "Q2", "answer": "B.", "by": ["biz"]},
            {"question": "Q2", "answer": "B.", "by": ["biz"]}]);
        check_decision(&board, Mode::Normal, &more).expect("a reply the schema allows");
        // A FINISH in a meeting with options needs its decision.
        more["decision"] = Value::Null;
        let e = check_decision(&board, Mode::Normal, &more).unwrap_err();
        assert!(
            e.describe()
                .contains("decision: a FINISH in a meeting with options needs a decision"),
            "{}",
            e.describe()
        );
    }
}
