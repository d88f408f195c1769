//! What changed between two meetings (`meeting --compare A B`, docs/design/run-folder.md#fork):
//! the decision, its confidence, the findings, the questions answered, the loops, calls and
//! cost, from each meeting's final board — typically a fork and its parent
//! (docs/design/run-folder.md#fork). Plain Markdown, one line per fact that differs or holds.

use std::collections::BTreeMap;

use crate::model::{Board, Cost, ForkOf};

/// One side of a comparison: its label (the run folder as given), final board, cost and parent.
pub struct Side<'a> {
    pub label: &'a str,
    pub board: &'a Board,
    pub cost: Option<Cost>,
    pub fork: Option<&'a ForkOf>,
}

/// The comparison as Markdown, cleaned as the report is (docs/design/report.md#sanitising): the
/// boards are run folders' text, and a hand-edited one may hold terminal escapes (OSC 52 writes
/// the clipboard) that would reach the terminal raw.
pub fn compare(a: &Side, b: &Side) -> String {
    let mut out = format!("# What changed: {} → {}\n\n", a.label, b.label);
    let decision = |s: &Side| {
        s.board
            .record
            .decision
            .as_ref()
            .map(|d| (d.choice.clone(), d.confidence.as_str().to_string()))
    };
    let (da, db) = (decision(a), decision(b));
    let none = || "none".to_string();
    let text = |d: &Option<(String, String)>, f: fn(&(String, String)) -> String| {
        d.as_ref().map_or_else(none, f)
    };
    line(
        &mut out,
        "Decision",
        &text(&da, |d| d.0.clone()),
        &text(&db, |d| d.0.clone()),
    );
    line(
        &mut out,
        "Confidence",
        &text(&da, |d| d.1.clone()),
        &text(&db, |d| d.1.clone()),
    );
    line(
        &mut out,
        "Loops",
        &a.board.loop_count.to_string(),
        &b.board.loop_count.to_string(),
    );
    line(
        &mut out,
        "LLM calls",
        &a.board.usage.attempts().to_string(),
        &b.board.usage.attempts().to_string(),
    );
    let cost = |s: &Side| {
        s.cost
            .as_ref()
            .map_or("not priced".to_string(), crate::llm::prices::cost_phrase)
    };
    line(&mut out, "Cost", &cost(a), &cost(b));
    for s in [a, b] {
        if let Some(f) = s.fork {
            out.push_str(&format!(
                "- Forked from {} at loop {} ({}): its calls before that loop were answered from the parent's log\n",
                f.trace_id, f.at_loop, s.label
            ));
        }
    }
    let findings = |s: &Side| -> Vec<String> {
        s.board
            .record
            .findings
            .iter()
            .map(|f| f.text.clone())
            .collect()
    };
    section(
        &mut out,
        "Findings",
        a.label,
        &findings(a),
        b.label,
        &findings(b),
    );
    let answered = |s: &Side| -> BTreeMap<String, String> {
        s.board
            .record
            .questions
            .iter()
            .filter_map(|q| {
                q.answer
                    .as_ref()
                    .map(|ans| (q.text.clone(), ans.text.clone()))
            })
            .collect()
    };
    let (qa, qb) = (answered(a), answered(b));
    let mut q = String::new();
    for (question, ans) in &qa {
        match qb.get(question) {
            None => q.push_str(&format!(
                "- Answered only in {}: {question} — {ans}\n",
                a.label
            )),
            Some(other) if other != ans => q.push_str(&format!(
                "- Answered differently: {question} — {ans} → {other}\n"
            )),
            Some(_) => {}
        }
    }
    for (question, ans) in qb.iter().filter(|(k, _)| !qa.contains_key(*k)) {
        q.push_str(&format!(
            "- Answered only in {}: {question} — {ans}\n",
            b.label
        ));
    }
    out.push_str("\n## Questions answered\n\n");
    out.push_str(if q.is_empty() { "- The same.\n" } else { &q });
    crate::text::sanitise(&out).into_owned()
}

/// `- Name: a → b`, or `- Name: a (the same)`.
fn line(out: &mut String, name: &str, a: &str, b: &str) {
    if a == b {
        out.push_str(&format!("- {name}: {a} (the same)\n"));
    } else {
        out.push_str(&format!("- {name}: {a} → {b}\n"));
    }
}

/// The items only one side holds.
fn section(out: &mut String, name: &str, la: &str, a: &[String], lb: &str, b: &[String]) {
    out.push_str(&format!("\n## {name}\n\n"));
    let mut any = false;
    for (label, mine, theirs) in [(la, a, b), (lb, b, a)] {
        for item in mine.iter().filter(|i| !theirs.contains(i)) {
            out.push_str(&format!("- Only in {label}: {item}\n"));
            any = true;
        }
    }
    if !any {
        out.push_str("- The same.\n");
    }
}
