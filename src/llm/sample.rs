//! `--provider sample` (docs/design/llm.md#sample-provider): a meeting tried with no key and no
//! server. Every call is answered by the program, not a model, from what the request carries:
//! its [`Facts`] (the brief, the documents and their ids, the whiteboard's open questions, the
//! loops left, the PM's question; never the prompt text, so a template edit changes no answer)
//! and the JSON schema sent, which says what may be answered now.
//! Every answer is deterministic (the same request gives the same bytes) and every free text in
//! it starts with [`MARK`]; ids, names, options and quotes are copied as they are, so routing
//! checks pass and citations verify.
//!
//! The PM asks several participants at once on its first round when the schema offers
//! CALL_AGENTS, then one participant per round in turn (people first, so a person at the table
//! is asked), and FINISHes once the required questions are answered and everyone has been
//! heard, or once nobody has anything left to be asked.

use serde_json::{json, Map, Value};

use super::{AttemptError, FactDocument, Facts, Options, Provider, RawReply, Request, Role};
use crate::text::repeat::repeats;

/// What every free text of a sample answer starts with.
pub const MARK: &str = "[sample]";

/// What the report's header says when every answer came from this provider.
pub const HEADER: &str = "Sample run: no model was called; every answer was made by the program from the meeting's own documents and questions (--provider sample), marked [sample]";

/// The provider's name, as the exchange log and the report's header show it.
pub const NAME: &str = "sample";

/// Answers every call from the request alone; holds no state, so a resumed meeting or a
/// shell pipeline gets the same answers.
#[derive(Debug, Default)]
pub struct Sample;

impl Provider for Sample {
    fn name(&self) -> &str {
        NAME
    }

    fn attempt(
        &mut self,
        seq: u64,
        req: &Request,
        _opts: &Options,
    ) -> Result<RawReply, AttemptError> {
        let prompt = Prompt::read(req);
        let text = match &req.expect {
            None => format!("{MARK} {} (call {seq}), no model was called.", req.caller),
            Some(expect) => {
                // Local `$ref`s (`#/$defs/ParticipantKind`) stand for their definitions: an
                // enum behind one is still an enum.
                let schema = super::json_format::inline_refs(&expect.schema, &expect.schema, 0);
                // A schema with one object per kind of answer (a top-level `anyOf`) is planned
                // against all of them together, then fitted to the one the plan matches.
                let view = merged(&schema);
                let planned = plan(&prompt, &req.caller, &view);
                let shape = matching(&schema, &planned);
                let value = conform(shape, "", Some(&planned));
                serde_json::to_string_pretty(&value).expect("JSON serialises")
            }
        };
        // No usage: the client estimates it from characters, as for a server that sends none.
        Ok(RawReply {
            text,
            usage: None,
            truncated: false,
        })
    }
}

/// What the sample answers are made of: the facts the request's prompt was rendered from
/// (never its text), and how many answers this request already had refused (its retries).
#[derive(Debug)]
struct Prompt<'a> {
    f: &'a Facts,
    retries: u64,
}

impl<'a> Prompt<'a> {
    fn read(req: &'a Request) -> Prompt<'a> {
        Prompt {
            f: &req.facts,
            retries: req
                .messages
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .count() as u64,
        }
    }

    /// The topic, shortened for a sentence.
    fn topic_short(&self) -> String {
        short(&self.f.topic, 80)
    }

    /// A short verbatim quote from document `id`: the start of its first line of prose.
    fn quote(&self, id: &str) -> Option<String> {
        let doc = self.f.documents.iter().find(|d| d.document_id == id)?;
        let line = prose(&doc.excerpt).next()?;
        let words: Vec<&str> = line.split_whitespace().take(16).collect();
        Some(words.join(" "))
    }
}

/// `s` cut to at most `n` characters at a word boundary, with `…` when cut.
fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let cut: String = s.chars().take(n).collect();
    let at = cut.rfind(' ').unwrap_or(cut.len());
    format!("{}…", cut[..at].trim_end())
}

fn mark(s: impl AsRef<str>) -> Value {
    Value::String(format!("{MARK} {}", s.as_ref()))
}

/// The answer planned for this caller, before it is fitted to the schema.
fn plan(p: &Prompt, caller: &str, schema: &Value) -> Map<String, Value> {
    let props = schema.get("properties");
    let prop = |k: &str| props.and_then(|ps| ps.get(k));
    let planned = if let Some(example) = &p.f.example {
        marked_example(example)
    } else if prop("verdict").is_some() {
        review_answer(p)
    } else if prop("next_action").is_some() {
        pm_answer(p, schema)
    } else if prop("key_points").is_some() || prop("response").is_some() {
        agent_answer(p, caller, schema)
    } else if prop("ranking").is_some() {
        council_ranking(schema)
    } else if prop("choice").is_some() && prop("reasons").is_some() {
        council_vote(p, schema)
    } else {
        json!({})
    };
    match planned {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A council member's blind vote (docs/design/council.md): the first choice the schema
/// allows (the packet's first option), a reason from the brief.
fn council_vote(p: &Prompt, schema: &Value) -> Value {
    let choices = enum_at(schema, &["choice"]);
    let choice = choices
        .first()
        .cloned()
        .unwrap_or_else(|| format!("{MARK} {}", p.topic_short()));
    json!({"choice": choice, "confidence": "medium",
        "reasons": [mark(format!("{} fits the brief best of the options", plain(&choice)))],
        "citations": []})
}

/// A council member's ranking: every label the schema allows, once each, in its order.
fn council_ranking(schema: &Value) -> Value {
    let labels = schema
        .pointer("/properties/ranking/items")
        .map(branch)
        .map(allowed)
        .unwrap_or_default();
    json!({ "ranking": labels })
}

/// The example answer a call carries, its prose marked as the sample's (a description, a
/// prompt: text with a space), its names and ids kept, so it stays valid.
fn marked_example(example: &Value) -> Value {
    match example {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) if s.contains(' ') && !k.ends_with("schema") => {
                            mark(s.trim())
                        }
                        other => other.clone(),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The string values a schema allows at `key` (through `anyOf` too).
fn enum_at(schema: &Value, path: &[&str]) -> Vec<String> {
    let mut node = schema;
    for k in path {
        node = match node.get("properties").and_then(|p| p.get(*k)) {
            Some(n) => n,
            None => match node.get("items").and_then(|i| i.get("properties")) {
                Some(props) => match props.get(*k) {
                    Some(n) => n,
                    None => return Vec::new(),
                },
                None => return Vec::new(),
            },
        };
        node = branch(node);
    }
    allowed(node)
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// The values a node's `enum` or `const` allows (empty: any).
fn allowed(node: &Value) -> Vec<Value> {
    match (node.get("enum"), node.get("const")) {
        (Some(Value::Array(e)), _) => e.clone(),
        (_, Some(c)) => vec![c.clone()],
        _ => Vec::new(),
    }
}

/// The object alternatives of a top-level `anyOf`/`oneOf` (none for a plain object schema).
fn alternatives(schema: &Value) -> Vec<&Value> {
    ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .filter(|a| a.get("properties").is_some())
        .collect()
}

/// One object schema standing for all the alternatives of a top-level `anyOf`: every property
/// of any of them, an `enum` the union of theirs, else the first definition that says most.
fn merged(schema: &Value) -> Value {
    let alts = alternatives(schema);
    if alts.is_empty() {
        return schema.clone();
    }
    let mut props = Map::new();
    for alt in &alts {
        for (k, def) in alt["properties"].as_object().into_iter().flatten() {
            let def_b = branch(def);
            match props.get_mut(k) {
                None => {
                    props.insert(k.clone(), def_b.clone());
                }
                Some(have) => {
                    let mut values = allowed(have);
                    if !values.is_empty() && !allowed(def_b).is_empty() {
                        for v in allowed(def_b) {
                            if !values.contains(&v) {
                                values.push(v);
                            }
                        }
                        *have = json!({"type": "string", "enum": values});
                    } else if have.get("type") == Some(&json!("null")) {
                        *have = def_b.clone();
                    }
                }
            }
        }
    }
    json!({"type": "object", "properties": props})
}

/// The alternative of a top-level `anyOf` whose properties take every planned value (the
/// schema itself when it has none).
fn matching<'a>(schema: &'a Value, planned: &Map<String, Value>) -> &'a Value {
    let alts = alternatives(schema);
    let fits_all = |alt: &Value| {
        planned
            .iter()
            .all(|(k, v)| alt["properties"].get(k).is_none_or(|d| fits(d, v)))
    };
    alts.iter()
        .copied()
        .find(|a| fits_all(a))
        .or(alts.first().copied())
        .unwrap_or(schema)
}

/// The first alternative of an `anyOf`/`oneOf` that is not `null`, else the node itself.
fn branch(node: &Value) -> &Value {
    for k in ["anyOf", "oneOf"] {
        if let Some(alts) = node.get(k).and_then(Value::as_array) {
            if let Some(a) = alts.iter().find(|a| a.get("type") != Some(&json!("null"))) {
                return a;
            }
        }
    }
    node
}

/// The PM's answer: a fan-out on its first round when offered, then one participant per round
/// in turn, and FINISH only when that is all the schema allows (the closing round).
/// A reviewer's verdict: in the first review round one objection — the whiteboard's first risk
/// (else its first open question), which a decision record should answer — and approval once
/// the PM has answered it, so `--review-by` shows the whole round.
fn review_answer(p: &Prompt) -> Value {
    if !p.f.objections.is_empty() {
        return json!({"verdict": "approve", "objections": []});
    }
    let open = p.f.open_questions.first().map(|(_, q)| q.clone());
    let Some(concern) = p.f.risks.first().cloned().or(open) else {
        return json!({"verdict": "approve", "objections": []});
    };
    json!({"verdict": "object", "objections": [{
        "about": format!("{MARK} the recommendation on \"{}\"", p.topic_short()),
        "why": format!("{MARK} The draft does not say how it deals with: {}", short(&concern, 160)),
        "evidence": [],
    }]})
}

/// The PM's answer to every open objection (the ids its schema offers): the decision stands,
/// since the sample has no model to weigh it with, and the report records why.
fn objection_responses(schema: &Value) -> Vec<Value> {
    let ids = enum_at(schema, &["objection_responses", "id"]);
    let kinds = enum_at(schema, &["objection_responses", "resolution"]);
    let overrule = if kinds.iter().any(|k| k == "overrule") || kinds.is_empty() {
        "overrule"
    } else {
        kinds[0].as_str()
    };
    ids.iter()
        .map(|id| json!({"id": id, "resolution": overrule,
            "reason": format!("{MARK} Kept: the concern is recorded in the report's risks; a meeting with a model would weigh it.")}))
        .collect()
}

fn pm_answer(p: &Prompt, schema: &Value) -> Value {
    let actions = enum_at(schema, &["next_action"]);
    let may = |a: &str| actions.iter().any(|x| x == a);
    let targets = enum_at(schema, &["target_agent"]);
    let answered = answered(p);
    // Every required question answered (now or before), or said by someone to be in no
    // document: the meeting can end, normally; the latter stay open in the report.
    let required_open = p.f.required_questions.iter().any(|q| {
        p.f.open_questions.iter().any(|(id, t)| {
            t == q && !answered.iter().any(|a| a["question"] == id.as_str()) && !unanswerable(p, id)
        })
    });
    // And everyone at the table heard (a person too), so nobody is skipped.
    let all_heard = targets
        .iter()
        .all(|t| p.f.heard.iter().any(|(who, _)| who == t));
    let done = may("FINISH")
        && p.f.spoken
        && all_heard
        && !p.f.required_questions.is_empty()
        && !required_open;
    // Answering a reviewer's objections: the decision stands, the report is written again.
    let reviewing = !enum_at(schema, &["objection_responses", "id"]).is_empty();
    if done || reviewing || !(may("CALL_AGENT") || may("CALL_AGENTS")) || targets.is_empty() {
        return finish(p, schema);
    }
    // The fan-out's targets are the models; the others at the table are people.
    let models = enum_at(schema, &["calls", "target_agent"]);
    let (people, others): (Vec<&String>, Vec<&String>) = targets
        .iter()
        .partition(|t| may("CALL_AGENTS") && !models.contains(t));
    let round = p.f.remaining_loops.unwrap_or(0) + p.retries;
    if may("CALL_AGENTS") && models.len() >= 2 && !p.f.spoken && p.retries == 0 {
        let most = max_items(schema, "calls").unwrap_or(2).max(2);
        // Each call a different open point where there are enough: independent views of the
        // whole decision, and a question no document answers put to one participant only.
        let mut chosen: Vec<String> = Vec::new();
        let calls: Vec<Value> = models
            .iter()
            .take(most)
            .map(|t| {
                let fresh = fresh_questions(p, t);
                let q = fresh
                    .iter()
                    .find(|q| !chosen.contains(q))
                    .or(fresh.first())
                    .cloned()
                    .unwrap_or_else(|| still_missing(p));
                chosen.push(q.clone());
                json!({"target_agent": t, "prompt_for_agent": mark(q)})
            })
            .collect();
        return json!({
            "analysis": format!("{MARK} Nobody has spoken yet: ask {} at once for independent first views.", join(&models[..calls.len()])),
            "answered_questions": answered,
            "next_action": "CALL_AGENTS",
            "target_agent": null,
            "prompt_for_agent": null,
            "calls": calls,
            "final_report": null,
            "decision": null,
        });
    }
    if !may("CALL_AGENT") {
        return finish(p, schema);
    }
    // In turn, from the round's participant, the first who has something left to be asked;
    // nobody has: the PM closes the meeting rather than ask again what it asked. A required
    // question nobody was asked goes first, to whoever's role is closest to it.
    let order: Vec<&String> = people.into_iter().chain(others).collect();
    let first = (round % order.len() as u64) as usize;
    let loops = p.f.remaining_loops.unwrap_or(0);
    let (target, question, why) = match best_placed(p, &order, &answered) {
        Some((t, q)) => (t, q, ", whose role is closest to a required question"),
        None => {
            let fresh = (0..order.len())
                .map(|i| order[(first + i) % order.len()])
                .find_map(|t| fresh_question(p, t).map(|q| (t, q)));
            match fresh {
                Some((t, q)) => (t, q, " next, in turn"),
                None if may("FINISH") => return finish(p, schema),
                None => (order[first], still_missing(p), " next, in turn"),
            }
        }
    };
    json!({
        "analysis": format!("{MARK} {loops} loops left: ask {target}{why}."),
        "answered_questions": answered,
        "next_action": "CALL_AGENT",
        "target_agent": target,
        "prompt_for_agent": mark(question),
        "calls": null,
        "final_report": null,
        "decision": null,
    })
}

/// What the PM asks `target`: the first of the brief's required questions still open, the
/// whiteboard's other open questions, the topic and the documents' lines that `target` has not
/// been asked yet — a question a participant raised, that nobody has been asked — by the
/// circles check's own measure (`text::repeat`), or by the first letters where the whiteboard
/// cut it; none when everything was. (Each sample answer says on the whiteboard what it was
/// asked.)
fn fresh_question(p: &Prompt, target: &str) -> Option<String> {
    fresh_questions(p, target).into_iter().next()
}

/// Every question [`fresh_question`] could ask `target`, in its order.
fn fresh_questions(p: &Prompt, target: &str) -> Vec<String> {
    // The whiteboard's open questions but those this round marks answered: the required ones
    // first, then those a participant raised.
    let now = answered(p);
    let open: Vec<(String, bool)> =
        p.f.open_questions
            .iter()
            .filter(|(id, _)| !now.iter().any(|a| a["question"] == id.as_str()))
            .filter(|(id, _)| !unanswerable(p, id))
            .map(|(_, t)| (plain(t).to_string(), !p.f.required_questions.contains(t)))
            .collect();
    let (mut pool, raised): (Vec<_>, Vec<_>) = open.into_iter().partition(|(_, once)| !once);
    pool.extend(raised);
    pool.push((
        format!("What does the evidence say about \"{}\"?", p.topic_short()),
        false,
    ));
    for d in &p.f.documents {
        pool.extend(prose(&d.excerpt).map(|l| {
            let q = format!("How does \"{}\" bear on the decision?", short(l, 90));
            (q, false)
        }));
    }
    let asked = asked(p);
    // Compared as the check compares them: marked, as the PM sends its questions; and cut as
    // the "was asked" key point cuts them, so a long question is not new for its lost tail.
    let sent = |q: &str| format!("{MARK} {q}");
    let same = |q: &str, a: &str| {
        key(q) == key(a)
            || repeats(&sent(q), &sent(a))
            || repeats(&sent(&short(q, ASKED_CHARS)), &sent(a))
    };
    pool.into_iter()
        .filter(|(q, once)| {
            !asked
                .iter()
                .any(|(who, a)| (*once || *who == target) && same(q, a))
        })
        .map(|(q, _)| q)
        .collect()
}

/// Who was asked what: `(who, question)` from the key points `<name> was asked: "<question>".`
/// each sample answer leaves (the question cut to [`ASKED_CHARS`]).
fn asked<'a>(p: &'a Prompt) -> Vec<(&'a str, &'a str)> {
    p.f.key_points
        .iter()
        .filter_map(|k| plain(k).split_once(&format!(" {ASKED}\"")))
        .map(|(who, q)| (who, q.strip_suffix("\".").unwrap_or(q)))
        .collect()
}

/// Whether a participant said that no document holds the answer to open question `id`.
fn unanswerable(p: &Prompt, id: &str) -> bool {
    let said = format!("{id}: {UNANSWERED}");
    p.f.heard.iter().any(|(_, k)| plain(k) == said)
}

/// The first required question still open that nobody has been asked, for the participant
/// whose role and description share most of its words (the first in `order` on a tie).
fn best_placed<'a>(
    p: &Prompt,
    order: &[&'a String],
    answered: &[Value],
) -> Option<(&'a String, String)> {
    let asked = asked(p);
    let asked_anyone = |q: &str| asked.iter().any(|(_, a)| *a == short(q, ASKED_CHARS));
    let question = p.f.required_questions.iter().find_map(|q| {
        let (id, t) = p.f.open_questions.iter().find(|(_, t)| t == q)?;
        let open = !answered.iter().any(|a| a["question"] == id.as_str()) && !unanswerable(p, id);
        (open && !asked_anyone(plain(t))).then(|| plain(t).to_string())
    })?;
    // Compared by their first five letters: "operates" is "operability"'s business.
    let stems = |s: &str| -> std::collections::BTreeSet<String> {
        words(s)
            .into_iter()
            .map(|w| w.chars().take(5).collect())
            .collect()
    };
    let want = stems(&question);
    let score = |name: &str| {
        p.f.roles
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, about)| stems(about).intersection(&want).count())
    };
    let best = order
        .iter()
        .enumerate()
        .max_by_key(|(i, t)| (score(t), usize::MAX - i))
        .map(|(_, t)| *t)?;
    Some((best, question))
}

/// The question of a PM that has nothing left to ask but may not close yet.
fn still_missing(p: &Prompt) -> String {
    format!(
        "With {} loops left, what is still missing before \"{}\" can be decided?",
        p.f.remaining_loops.unwrap_or(0),
        p.topic_short()
    )
}

/// The open questions a participant has answered with a document's words: its key point
/// `[sample] Q2: <doc> says "<quote>"` (see [`agent_answer`]), by whoever said it first.
fn answered(p: &Prompt) -> Vec<Value> {
    p.f.open_questions
        .iter()
        .filter_map(|(id, _)| {
            let prefix = format!("{id}: ");
            let (who, said) = p.f.heard.iter().find(|(_, k)| {
                plain(k)
                    .strip_prefix(&prefix)
                    .is_some_and(|rest| rest != UNANSWERED)
            })?;
            let answer = plain(said).strip_prefix(&prefix)?;
            Some(json!({"question": id, "answer": mark(answer), "by": [who]}))
        })
        .collect()
}

/// The words of a text that carry its meaning: four letters or more, lower case, the
/// commonest question words left out.
fn words(s: &str) -> std::collections::BTreeSet<String> {
    const COMMON: [&str; 12] = [
        "what", "would", "does", "should", "which", "there", "their", "about", "this", "that",
        "with", "from",
    ];
    s.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 4 && !COMMON.contains(&w.as_str()))
        .collect()
}

/// The sentence of the documents `ids` allows that shares most words with `question` (at
/// least one), as a short verbatim quote: `(document, quote)`.
fn best_quote<'a>(
    p: &'a Prompt,
    question: &str,
    ids: &[String],
) -> Option<(&'a FactDocument, String)> {
    let asked = words(question);
    p.f.documents
        .iter()
        .filter(|d| ids.is_empty() || ids.contains(&d.document_id))
        .flat_map(|d| prose(&d.excerpt).map(move |s| (d, s)))
        .map(|(d, s)| (words(s).intersection(&asked).count(), d, s))
        .filter(|(n, _, _)| *n > 0)
        // The first of the best: documents and sentences in their order.
        .fold(
            None,
            |best: Option<(usize, &FactDocument, &str)>, c| match best {
                Some(b) if b.0 >= c.0 => Some(b),
                _ => Some(c),
            },
        )
        .map(|(_, d, s)| {
            let quote: Vec<&str> = s.split_whitespace().take(16).collect();
            (d, quote.join(" "))
        })
}

/// What a sample agent's key point says before the question it was asked.
const ASKED: &str = "was asked: ";

/// What a participant says of an open question no document answers (after `Qn: `).
const UNANSWERED: &str = "no document holds the answer; it stays open.";

/// How much of a question the "was asked" key point keeps.
const ASKED_CHARS: usize = 120;

/// A text without the sample mark.
fn plain(s: &str) -> &str {
    s.strip_prefix(MARK).map(str::trim_start).unwrap_or(s)
}

/// How two questions are compared: their first 40 letters and digits, lower case (the
/// whiteboard may cut a long one).
fn key(q: &str) -> String {
    q.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .take(40)
        .collect()
}

/// A document's sentences of prose, as fenced in the prompt (whitespace folded): pieces between
/// sentence ends with enough letters and no heading, table or code mark, so a quote cut from
/// one is the document's own text.
fn prose(text: &str) -> impl Iterator<Item = &str> {
    text.split(['\n'])
        .flat_map(|l| l.split(". "))
        .flat_map(|l| l.split("? "))
        .map(|s| s.trim().trim_start_matches("- ").trim_end_matches('.'))
        .filter(|s| {
            s.chars().filter(|c| c.is_alphabetic()).count() >= 20
                && s.chars().next().is_some_and(char::is_uppercase)
                && !s.contains(['#', '|', '`', '[', '‹', '*', '"'])
        })
}

fn join(names: &[String]) -> String {
    names.join(" and ")
}

/// The `maxItems` of a top-level array property, when the schema sets one.
fn max_items(schema: &Value, key: &str) -> Option<usize> {
    let node = branch(schema.get("properties")?.get(key)?);
    node.get("maxItems")?.as_u64().map(|n| n as usize)
}

/// The closing FINISH: a report in the two labelled parts, a low-confidence decision, every
/// option × dimension marked as not assessed.
fn finish(p: &Prompt, schema: &Value) -> Value {
    let points: Vec<String> =
        p.f.key_points
            .iter()
            .take(3)
            .map(|k| format!("- {k}"))
            .collect();
    let heard = if points.is_empty() {
        "Nothing reached the whiteboard.".to_string()
    } else {
        format!("On the whiteboard:\n{}", points.join("\n"))
    };
    let report = format!(
        "### Executive Summary\n{MARK} Sample run on \"{}\": no model was called, so nothing here is a judgement. {heard}\n\n\
### Recommendation\n{MARK} Run this meeting with a model (--provider openai, anthropic, or a local OpenAI-compatible server) before deciding anything.",
        p.topic_short()
    );
    let choice = match p.f.options.first() {
        Some(o) => format!("none yet (sample run; first option listed: {o})"),
        None => "none yet (sample run)".to_string(),
    };
    let mut assessments = Vec::new();
    for o in &p.f.options {
        for d in &p.f.dimensions {
            assessments.push(json!({"option": o, "dimension": d,
                "assessment": format!("{MARK} not assessed: no model was called")}));
        }
    }
    if let Some(n) = max_items(schema, "option_assessments") {
        assessments.truncate(n);
    }
    json!({
        "analysis": format!("{MARK} No loops left: write the report from the whiteboard."),
        "next_action": "FINISH",
        "target_agent": null,
        "prompt_for_agent": null,
        "calls": null,
        "final_report": report,
        // Those a participant answered with a quote of a document (see `agent_answer`).
        "answered_questions": answered(p),
        "decision": {"choice": format!("{MARK} {choice}"), "confidence": "low",
            "revisit_if": format!("{MARK} a run with a model answers the open questions")},
        "option_assessments": assessments,
        "objection_responses": objection_responses(schema),
    })
}

/// An agent's turn: a response naming the question, a key point quoting one listed document
/// (its citation copies the ids and the quote exactly), a question for the whiteboard.
fn agent_answer(p: &Prompt, caller: &str, schema: &Value) -> Value {
    let question = p.f.question.as_deref().unwrap_or("the topic");
    let question = question
        .strip_prefix(MARK)
        .map(str::trim)
        .unwrap_or(question);
    let ids = enum_at(schema, &["citations", "document_id"]);
    let mut key_points = Vec::new();
    let mut citations = Vec::new();
    // Asked one of the whiteboard's open questions: answer it with the document sentence
    // that shares most of its words, quoted, cited, and marked with the question's id.
    let asked =
        p.f.open_questions
            .iter()
            .find(|(_, t)| plain(t) == question)
            .and_then(|(id, _)| Some((id, best_quote(p, question, &ids)?)));
    if let Some((id, (doc, quote))) = asked {
        let point = format!("{MARK} {id}: {} says \"{quote}\"", doc.document_id);
        citations.push(
            json!({"document_id": doc.document_id, "source_path": doc.source_path,
            "quote": quote, "supports": point}),
        );
        key_points.push(Value::String(point));
    } else if let Some((id, _)) =
        p.f.open_questions
            .iter()
            .find(|(_, t)| plain(t) == question)
    {
        // An open question no document answers: said once, so it is asked of nobody else and
        // stays open in the report, with why.
        key_points.push(mark(format!("{id}: {UNANSWERED}")));
    }
    let docs: Vec<&FactDocument> =
        p.f.documents
            .iter()
            .filter(|d| ids.is_empty() || ids.contains(&d.document_id))
            .collect();
    if !docs.is_empty() && citations.is_empty() {
        // Participants start from different documents, and move on as the whiteboard grows.
        let at = caller.bytes().map(usize::from).sum::<usize>() + p.f.key_points.len();
        let d = docs[at % docs.len()];
        let (id, path) = (&d.document_id, &d.source_path);
        if let Some(quote) = p.quote(id) {
            let point = format!("{MARK} {id} says: \"{quote}\"");
            citations.push(json!({"document_id": id, "source_path": path,
                "quote": quote, "supports": point}));
            key_points.push(Value::String(point));
        }
    }
    // Says what was asked, so the PM does not ask it again (see `fresh_question`). It raises
    // no question of its own: a question about a question nests for ever (the PM asks what
    // arch must measure to settle what biz was asked ...).
    key_points.push(mark(format!(
        "{caller} {ASKED}\"{}\".",
        short(question, ASKED_CHARS)
    )));
    json!({
        "response": format!("{MARK} {caller} was asked \"{}\"; this answer was made by the program from the meeting's documents, not by a model.", short(question, 100)),
        "key_points": key_points,
        "risks": [format!("{MARK} A sample answer carries no judgement: decide only after a run with a model.")],
        "recommendations": [format!("{MARK} Run this meeting with a model before acting on \"{}\".", p.topic_short())],
        "citations": citations,
    })
}

/// `planned` fitted to `schema`: every property the schema has (required ones, and the rest
/// too: strict schemas require them all), from the plan where it has a value the schema can
/// take, else the simplest valid value; arrays within `minItems`/`maxItems`.
fn conform(schema: &Value, key: &str, planned: Option<&Map<String, Value>>) -> Value {
    let node = schema;
    if let Some(alts) = node
        .get("anyOf")
        .or_else(|| node.get("oneOf"))
        .and_then(Value::as_array)
    {
        return match alts.iter().find(|a| a.get("type") != Some(&json!("null"))) {
            Some(a) => conform(a, key, planned),
            None => Value::Null,
        };
    }
    if let Some(v) = allowed(node).into_iter().next() {
        return v;
    }
    let ty = match node.get("type") {
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        Some(Value::String(t)) => t.as_str(),
        _ if node.get("properties").is_some() => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut out = Map::new();
            let props = node.get("properties").and_then(Value::as_object);
            for (k, sub) in props.into_iter().flatten() {
                let v = match planned.and_then(|m| m.get(k)) {
                    Some(v) if fits(sub, v) => fit_array(sub, v.clone()),
                    _ => conform(sub, k, None),
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        "array" => {
            let min = node.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = node.get("items").cloned().unwrap_or(json!({}));
            Value::Array((0..min).map(|_| conform(&item, key, None)).collect())
        }
        "integer" | "number" => node.get("minimum").cloned().unwrap_or(json!(0)),
        "boolean" => Value::Bool(false),
        "null" => Value::Null,
        _ => mark(if key.is_empty() { "text" } else { key }),
    }
}

/// Whether a planned value can stand where `schema` is (its type, or any alternative's).
fn fits(schema: &Value, v: &Value) -> bool {
    if let Some(alts) = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array)
    {
        return alts.iter().any(|a| fits(a, v));
    }
    let values = allowed(schema);
    if !values.is_empty() {
        return values.contains(v);
    }
    let ok = |t: &str| match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => true,
    };
    match schema.get("type") {
        Some(Value::String(t)) => ok(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).any(ok),
        _ => true,
    }
}

/// A planned array cut to the schema's `maxItems`, each object item fitted to `items`.
fn fit_array(schema: &Value, v: Value) -> Value {
    let node = branch(schema);
    let Value::Array(items) = v else { return v };
    let max = node
        .get("maxItems")
        .and_then(Value::as_u64)
        .map_or(usize::MAX, |n| n as usize);
    let item_schema = node.get("items");
    Value::Array(
        items
            .into_iter()
            .take(max)
            .map(|item| match (item_schema, &item) {
                (Some(s), Value::Object(m)) if branch(s).get("properties").is_some() => {
                    conform(branch(s), "", Some(m))
                }
                _ => item,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ExpectedJson, Message};

    /// The sample's answer to `facts` with a prompt text that says nothing it could read back.
    fn ask(caller: &str, facts: Facts, schema: &Value) -> Value {
        let req = Request {
            caller: caller.into(),
            system: String::new(),
            messages: vec![Message::user(
                "# Meeting: not this\nMode: normal. Remaining loops: 99.\n",
            )],
            expect: Some(ExpectedJson {
                name: "x".into(),
                schema: schema.clone(),
            }),
            facts,
        };
        let opts = Options {
            model: "m".into(),
            temperature: None,
            max_tokens: None,
        };
        let text = Sample.attempt(1, &req, &opts).unwrap().text;
        let again = Sample.attempt(1, &req, &opts).unwrap().text;
        assert_eq!(text, again, "the same request, the same bytes");
        let v: Value = serde_json::from_str(&text).unwrap();
        // The schema module is above this layer; a test may use it to check the answer.
        crate::schema::validate(&v, schema).unwrap_or_else(|e| panic!("{e}: {v:#}"));
        v
    }

    fn pm_schema(actions: &[&str], fan_out: bool) -> Value {
        let mut props = json!({
            "analysis": {"type": "string"},
            "next_action": {"type": "string", "enum": actions},
            "target_agent": {"anyOf": [{"type": "string", "enum": ["arch", "biz", "pat"]}, {"type": "null"}]},
            "prompt_for_agent": {"type": ["string", "null"]},
            "final_report": {"type": ["string", "null"]},
        });
        if fan_out {
            props["calls"] = json!({"anyOf": [{"type": "array", "maxItems": 2, "items": {
                "type": "object",
                "properties": {"target_agent": {"type": "string", "enum": ["arch", "biz"]},
                               "prompt_for_agent": {"type": "string"}},
                "required": ["target_agent", "prompt_for_agent"], "additionalProperties": false}},
                {"type": "null"}]});
        }
        let required: Vec<String> = props.as_object().unwrap().keys().cloned().collect();
        json!({"type": "object", "properties": props, "required": required,
            "additionalProperties": false})
    }

    /// An agent's reply schema, its citations' ids (`document_id`, `source_path`) as `id`.
    fn agent_schema(id: Value) -> Value {
        json!({"type": "object", "properties": {
            "response": {"type": "string"},
            "key_points": {"type": "array", "items": {"type": "string"}},
            "citations": {"type": "array", "items": {"type": "object", "properties": {
                "document_id": id, "source_path": id,
                "quote": {"type": "string"}, "supports": {"type": "string"}},
                "required": ["document_id", "source_path", "quote"]}}},
            "required": ["response", "key_points", "citations"]})
    }

    /// The brief of the tests' meeting, in the PM's round `remaining` loops before the end
    /// (`None`: the closing round), after someone spoke or not.
    fn brief(remaining: Option<u64>, spoken: bool) -> Facts {
        Facts {
            topic: "Adopt Rust for ingest?".into(),
            required_questions: vec!["What would a rewrite cost?".into()],
            open_questions: vec![("Q1".into(), "What would a rewrite cost?".into())],
            remaining_loops: remaining,
            spoken,
            ..Facts::default()
        }
    }

    /// A fan-out first, then people first in turn, then the closing round's FINISH.
    #[test]
    fn the_pm_fans_out_then_asks_in_turn_then_finishes() {
        let all = pm_schema(&["CALL_AGENT", "CALL_AGENTS", "FINISH"], true);
        let v = ask("pm", brief(Some(6), false), &all);
        assert_eq!(v["next_action"], "CALL_AGENTS");
        assert_eq!(v["calls"].as_array().unwrap().len(), 2);
        assert!(v["analysis"].as_str().unwrap().starts_with(MARK));
        let v = ask("pm", brief(Some(3), true), &all);
        assert_eq!(
            (&v["next_action"], &v["target_agent"]),
            (&json!("CALL_AGENT"), &json!("pat"))
        );
        assert_eq!(v["prompt_for_agent"], "[sample] What would a rewrite cost?");
        assert!(v["analysis"].as_str().unwrap().contains("3 loops left"));
        let v = ask("pm", brief(None, true), &pm_schema(&["FINISH"], false));
        let report = v["final_report"].as_str().unwrap();
        assert!(
            report.contains("### Executive Summary\n[sample]")
                && report.contains("### Recommendation\n[sample]")
                && report.contains("Adopt Rust for ingest?")
                && !report.contains("not this"),
            "{report}"
        );
    }

    /// A schema of one object per action is answered with the object of the planned action.
    #[test]
    fn one_object_per_action_is_answered_with_the_planned_ones() {
        let alt = |action: &str, extra: Value| {
            let mut props = json!({"analysis": {"type": "string"},
                "next_action": {"type": "string", "const": action}});
            for (k, v) in extra.as_object().unwrap() {
                props[k] = v.clone();
            }
            let required: Vec<String> = props.as_object().unwrap().keys().cloned().collect();
            json!({"type": "object", "properties": props, "required": required,
                "additionalProperties": false})
        };
        let schema = json!({"anyOf": [
            alt("CALL_AGENT", json!({"target_agent": {"type": "string", "enum": ["arch", "biz"]},
                "prompt_for_agent": {"type": "string"}})),
            alt("CALL_AGENTS", json!({"calls": {"type": "array", "minItems": 2, "maxItems": 2,
                "items": {"type": "object", "properties": {
                    "target_agent": {"type": "string", "enum": ["arch", "biz"]},
                    "prompt_for_agent": {"type": "string"}},
                    "required": ["target_agent", "prompt_for_agent"], "additionalProperties": false}}})),
            alt("FINISH", json!({"final_report": {"type": "string"}})),
        ]});
        let v = ask("pm", brief(Some(4), false), &schema);
        assert_eq!(v["next_action"], "CALL_AGENTS");
        let v = ask("pm", brief(Some(4), true), &schema);
        assert_eq!(v["next_action"], "CALL_AGENT");
    }

    /// The good path: asked a required question, an agent answers it with the document
    /// sentence that shares its words, marked with the question's id; the PM then marks the
    /// question answered by that agent and, every required question answered, FINISHes.
    #[test]
    fn a_required_question_is_answered_from_the_documents_then_the_pm_finishes() {
        let facts = Facts {
            topic: "Adopt Rust for ingest?".into(),
            open_questions: vec![("Q1".into(), "What would a rewrite cost?".into())],
            documents: vec![FactDocument {
                document_id: "docs/a.md".into(),
                source_path: "docs/a.md".into(),
                excerpt: "The service drops two percent of events at peak load.\nA rewrite would cost two engineers a full quarter of work.".into(),
            }],
            question: Some("[sample] What would a rewrite cost?".into()),
            ..Facts::default()
        };
        let v = ask("arch", facts, &agent_schema(json!({"type": "string"})));
        let point = v["key_points"][0].as_str().unwrap().to_string();
        assert_eq!(
            point,
            "[sample] Q1: docs/a.md says \"A rewrite would cost two engineers a full quarter of work\""
        );
        assert_eq!(v["citations"][0]["supports"], point.as_str());
        let mut pm = brief(Some(3), true);
        pm.heard = ["arch", "biz", "pat"]
            .iter()
            .map(|who| (who.to_string(), point.clone()))
            .collect();
        let mut schema = pm_schema(&["CALL_AGENT", "FINISH"], false);
        schema["properties"]["answered_questions"] = json!({"type": "array"});
        let v = ask("pm", pm, &schema);
        assert_eq!(v["next_action"], "FINISH", "{v}");
        assert_eq!(v["answered_questions"][0]["question"], "Q1");
        assert_eq!(v["answered_questions"][0]["by"], json!(["arch"]));
    }

    /// An enum behind a local `$ref` is still an enum: the answer takes one of its values.
    #[test]
    fn a_referenced_enum_is_answered_with_one_of_its_values() {
        let schema = json!({"type": "object",
            "properties": {"kind": {"$ref": "#/$defs/Kind"}, "note": {"type": "string"}},
            "required": ["kind", "note"],
            "$defs": {"Kind": {"type": "string", "enum": ["llm", "human"]}}});
        let v = ask("builder", Facts::default(), &schema);
        assert_eq!(v["kind"], "llm", "{v}");
    }

    /// An agent quotes a listed document verbatim and cites it with its ids.
    #[test]
    fn an_agent_cites_a_document_verbatim() {
        let excerpt = "# Notes The ingest service drops about two percent of events at peak load. Every retry doubles the queue depth within minutes.";
        let facts = Facts {
            topic: "Adopt Rust for ingest?".into(),
            documents: vec![FactDocument {
                document_id: "docs/a.md".into(),
                source_path: "docs/a.md".into(),
                excerpt: excerpt.into(),
            }],
            question: Some("[sample] What would a rewrite cost?".into()),
            ..Facts::default()
        };
        let v = ask(
            "arch",
            facts,
            &agent_schema(json!({"type": "string", "enum": ["docs/a.md"]})),
        );
        let c = &v["citations"][0];
        assert_eq!(c["document_id"], "docs/a.md");
        let quote = c["quote"].as_str().unwrap();
        assert!(
            excerpt.contains(quote)
                && quote == "Every retry doubles the queue depth within minutes",
            "{quote}"
        );
        let response = v["response"].as_str().unwrap();
        assert!(
            response.starts_with(MARK) && response.contains("What would a rewrite cost?"),
            "{response}"
        );
        assert!(v["key_points"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| k.as_str().unwrap().starts_with(MARK)));
    }
}
