//! The one comment a pull request gets (docs/design/github.md#the-comment): what the meeting
//! came to, in the words its exit code means — decided, no decision, waiting for a person (and
//! how to answer), failed and resumable — then the report's Executive Summary,
//! Recommendation (with the options table), Council and Required Questions, and what it cost.
//! A hidden marker names the pull request, so a re-run finds the comment and updates it.
//! Pure: the report and the result come in, Markdown goes out.

use crate::model::{MeetingResult, MeetingStatus};

/// GitHub's limit on a comment is 65,536 characters; the report's parts are cut to fit well
/// inside it.
const MAX_CHARS: usize = 60_000;

/// The marker of the comment on pull request `number`.
pub fn marker(number: u64) -> String {
    format!("<!-- agent-meeting:pr-{number} -->")
}

/// What a meeting came to, for its comment.
#[derive(Debug, Clone, Copy)]
pub struct Outcome<'a> {
    pub number: u64,
    pub topic: &'a str,
    pub run_id: &'a str,
    /// The MeetingResult `meeting` printed, when it printed one.
    pub result: Option<&'a MeetingResult>,
    /// The report's Markdown (empty when there is none).
    pub report: &'a str,
    /// The person the meeting waits for, and the question.
    pub waiting: Option<(&'a str, &'a str)>,
    /// Why the meeting stopped, when it printed no result.
    pub failure: Option<&'a str>,
    /// How a person answers a waiting meeting on this forge.
    pub answer_hint: &'a str,
    /// Whether the meeting has a run folder (else it stopped before it began: nothing to
    /// resume).
    pub started: bool,
}

/// The comment's Markdown.
pub fn render(o: &Outcome) -> String {
    let mut out = format!("{}\n", marker(o.number));
    let status = o.result.map(|r| r.status);
    let headline = match (o.waiting, status) {
        (Some((who, _)), _) => format!("waiting for {}", quiet(who)),
        (None, Some(MeetingStatus::Finished)) => "decided".into(),
        (None, Some(MeetingStatus::NoDecision)) => "no decision".into(),
        (None, Some(MeetingStatus::Waiting)) => "waiting for a person".into(),
        _ if !o.started => "not started".into(),
        _ => "failed, resumable".into(),
    };
    out.push_str(&format!("### agent-meeting: {headline}\n\n"));
    let topic = crate::text::one_line(o.topic, 300);
    if !topic.trim().is_empty() {
        out.push_str(&format!("**{}**\n\n", quiet(&topic)));
    }
    if let Some((who, question)) = o.waiting {
        out.push_str(&format!(
            "The meeting asks **{}**: {}\n\n{}\n\n",
            quiet(who),
            quiet(&crate::text::one_line(question, 1_000)),
            o.answer_hint
        ));
    }
    if let Some(why) = o.failure.or(o.result.and_then(|r| r.last_error.as_deref())) {
        if status != Some(MeetingStatus::Finished) {
            out.push_str(&format!(
                "> {}\n\n",
                quiet(&crate::text::one_line(why, 1_000))
            ));
        }
    }
    if headline == "not started" {
        out.push_str("No meeting ran and nothing was paid: fix what the error says (the workflow's key, its settings) and run the job again.\n\n");
    }
    if headline == "failed, resumable" {
        out.push_str("Nothing is lost: run the job again (or comment `/decide` with the same topic) and the meeting goes on from where it stopped, without paying again for what it already asked.\n\n");
    }
    let mut room = MAX_CHARS;
    for (title, shown) in [
        ("Executive Summary", "Executive Summary"),
        ("Recommendation", "Recommendation"),
        ("Council", "Council"),
        ("Required Questions", "Open questions"),
    ] {
        let Some(body) = crate::text::markdown::report_section(o.report, title) else {
            continue;
        };
        let body = crate::text::cut(body.trim(), room.min(20_000));
        room = room.saturating_sub(body.len());
        out.push_str(&format!("#### {shown}\n\n{}\n\n", quiet(&demoted(&body))));
    }
    if let Some(r) = o.result {
        out.push_str(&format!("{}\n\n", cost_line(r)));
    }
    out.push_str(&format!(
        "<sub>Advisory: a second opinion, never a gate. Run `{}`; the whole report is in the run folder (the job's artifact).</sub>\n",
        o.run_id
    ));
    out
}

/// What the meeting cost: dollars when a live model was priced, calls and tokens always.
fn cost_line(r: &MeetingResult) -> String {
    let tokens = r.usage.tokens.prompt_tokens + r.usage.tokens.completion_tokens;
    let dollars = r
        .cost
        .as_ref()
        .and_then(|c| c.usd)
        .map(|usd| format!("${usd:.4}, "))
        .unwrap_or_default();
    format!(
        "**Cost:** {dollars}{}, {} tokens; {}",
        crate::text::plural(r.usage.calls, "call"),
        tokens,
        crate::text::plural(r.loops, "loop")
    )
}

/// The report's headings one level down, under the comment's own.
fn demoted(md: &str) -> String {
    md.lines()
        .map(|l| match l.strip_prefix("###") {
            Some(rest) if rest.starts_with(' ') || rest.starts_with('#') => format!("#####{rest}"),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Model text made quiet on GitHub: no `@` mention pings anyone (a zero-width space after the
/// `@`), and no text can pass for this comment's marker.
fn quiet(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '@' && chars.peek().is_some_and(|n| n.is_alphanumeric()) {
            out.push('\u{200b}');
        }
    }
    out.replace("<!-- agent-meeting", "&lt;!-- agent-meeting")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(status: MeetingStatus) -> MeetingResult {
        serde_json::from_value(serde_json::json!({
            "status": status, "report_file": null, "run_dir": null, "trace_id": "pr-7-x",
            "loops": 3, "forced": false,
            "usage": {"calls": 5, "prompt_tokens": 1000, "completion_tokens": 200, "by_caller": {}}
        }))
        .unwrap()
    }

    const REPORT: &str = "# Meeting Report\n\n## Executive Summary\n\nMove it, @octocat says.\n\n## Recommendation\n\n**Decision:** Use arm64 (confidence: high)\n\n### Options assessed\n\n| Option | Cost |\n|---|---|\n| arm64 | low |\n\n## Required Questions\n\n- What breaks? (not answered)\n\n## Evidence\n\nlong\n";

    fn outcome<'a>(r: &'a MeetingResult, waiting: Option<(&'a str, &'a str)>) -> Outcome<'a> {
        Outcome {
            number: 7,
            topic: "Move CI to arm64?",
            run_id: "pr-7-x",
            result: Some(r),
            report: REPORT,
            waiting,
            failure: None,
            answer_hint: crate::github::api::ANSWER_HINT,
            started: true,
        }
    }

    #[test]
    fn each_ending_has_its_words() {
        for (status, words) in [
            (MeetingStatus::Finished, "agent-meeting: decided"),
            (MeetingStatus::NoDecision, "agent-meeting: no decision"),
            (MeetingStatus::Failed, "agent-meeting: failed, resumable"),
        ] {
            let r = result(status);
            let md = render(&outcome(&r, None));
            assert!(md.starts_with("<!-- agent-meeting:pr-7 -->\n"), "{md}");
            assert!(md.contains(words), "{status:?}: {md}");
        }
        let r = result(MeetingStatus::Waiting);
        let md = render(&outcome(&r, Some(("ana", "Who is paged?"))));
        assert!(md.contains("agent-meeting: waiting for ana"), "{md}");
        assert!(md.contains("`/answer`"), "{md}");
    }

    #[test]
    fn the_report_parts_come_quiet_and_the_rest_stays_out() {
        let r = result(MeetingStatus::Finished);
        let md = render(&outcome(&r, None));
        assert!(md.contains("#### Executive Summary\n\nMove it, @\u{200b}octocat says."));
        assert!(md.contains("**Decision:** Use arm64"));
        assert!(md.contains("##### Options assessed"), "{md}");
        assert!(md.contains("#### Open questions\n\n- What breaks? (not answered)"));
        assert!(!md.contains("## Evidence"), "{md}");
        assert!(
            md.contains("**Cost:** 5 calls, 1200 tokens; 3 loops"),
            "{md}"
        );
        assert_eq!(
            quiet("<!-- agent-meeting:pr-1 -->"),
            "&lt;!-- agent-meeting:pr-1 -->"
        );
    }
}
