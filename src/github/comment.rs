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
    /// Refused because the day's spending cap is spent (`max_cost_per_day`).
    pub day_spent: bool,
    /// What the meeting read of the request, one note a line (which version of the files,
    /// what it could not read).
    pub notes: Option<&'a str>,
}

/// The comment's Markdown.
pub fn render(o: &Outcome) -> String {
    let mut out = format!("{}\n", marker(o.number));
    let status = o.result.map(|r| r.status);
    let headline = match (o.waiting, status) {
        (Some((who, _)), _) => format!("waiting for {}", text(who, 100)),
        (None, Some(MeetingStatus::Finished)) => "decided".into(),
        (None, Some(MeetingStatus::NoDecision)) => "no decision".into(),
        (None, Some(MeetingStatus::Waiting)) => "waiting for a person".into(),
        _ if o.day_spent => "not started: the day's budget is spent".into(),
        _ if !o.started => "not started".into(),
        _ => "failed, resumable".into(),
    };
    out.push_str(&format!("### agent-meeting: {headline}\n\n"));
    let topic = text(&crate::text::one_line(o.topic, 2_000), 300);
    if !topic.trim().is_empty() {
        out.push_str(&format!("**{topic}**\n\n"));
    }
    if let Some((who, question)) = o.waiting {
        out.push_str(&format!(
            "The meeting asks **{}**: {}\n\n{}\n\n",
            text(who, 100),
            text(&crate::text::one_line(question, 4_000), 1_000),
            o.answer_hint
        ));
    }
    if let Some(why) = o.failure.or(o.result.and_then(|r| r.last_error.as_deref())) {
        if status != Some(MeetingStatus::Finished) {
            out.push_str(&format!(
                "> {}\n\n",
                text(&crate::text::one_line(why, 4_000), 1_000)
            ));
        }
    }
    for note in o
        .notes
        .into_iter()
        .flat_map(str::lines)
        .filter(|l| !l.trim().is_empty())
    {
        out.push_str(&format!("{}\n\n", text(note, 800)));
    }
    if o.day_spent {
        out.push_str("The meetings started today (UTC) have spent the repository's daily cap (`max_cost_per_day`): nothing was paid for this one. A `/decide` after 00:00 UTC starts it, or raise the cap.\n\n");
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
        let body = text(&demoted(body.trim()), room.min(20_000));
        room = room.saturating_sub(body.chars().count());
        out.push_str(&format!("#### {shown}\n\n{body}\n\n"));
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

/// Model (or event) text as GitHub shows it, cut last to `max` characters (whatever is added
/// counts): text, not markup — no raw HTML (every `<` escaped, so no tag, comment, `<details>`
/// or marker of ours can be written), no live image or remote link (an image or a link shows
/// its text and its URL as code, a bare URL as code: no tracking pixel loads, no link is made
/// to look like ours), no `@` mention pings anyone (a zero-width space after the `@`).
fn text(s: &str, max: usize) -> String {
    static LINK: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(!?)\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?[^)\n]*\)").expect("a regex")
    });
    static URL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b(?:https?|ftp)://[^\s<>`()]+|\bwww\.[^\s<>`()]+")
            .expect("a regex")
    });
    // Links first, then the URLs they showed and the bare ones, each made code once.
    let unlinked = LINK.replace_all(s, |c: &regex::Captures| {
        let kind = if c[1].is_empty() { "" } else { "image: " };
        format!("{kind}{} ({})", &c[2], &c[3])
    });
    let coded = URL.replace_all(&unlinked, |c: &regex::Captures| format!("`{}`", &c[0]));
    let mut out = String::with_capacity(coded.len());
    let mut chars = coded.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '<' => out.push_str("&lt;"),
            '@' if chars.peek().is_some_and(|n| n.is_alphanumeric()) => out.push_str("@\u{200b}"),
            c => out.push(c),
        }
    }
    crate::text::cut(&out, max)
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
            day_spent: false,
            notes: None,
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
            text("<!-- agent-meeting:pr-1 -->", 100),
            "&lt;!-- agent-meeting:pr-1 -->"
        );
    }

    /// Model text is text: no raw HTML, no live image or remote link, no ping; our own
    /// structure (the marker, `<details>`, `<sub>`) cannot be written by it.
    #[test]
    fn model_text_renders_as_text() {
        let t = text(
            "See ![x](https://t.example/p.gif) and [the docs](https://evil.example/ \"t\") or https://evil.example/x — </sub></details><details open><!-- agent-meeting:pr-7 --> @octocat",
            1_000,
        );
        assert!(!t.contains('<'), "{t}");
        assert!(!t.contains("]("), "{t}");
        assert!(t.contains("image: x (`https://t.example/p.gif`)"), "{t}");
        assert!(t.contains("the docs (`https://evil.example/`)"), "{t}");
        assert!(t.contains("`https://evil.example/x`"), "{t}");
        assert!(t.contains("@\u{200b}octocat"), "{t}");
    }

    /// The whole comment stays inside GitHub's 65,536 characters whatever the text adds in
    /// escaping it (each `@` gains a zero-width space, each `<` three characters).
    #[test]
    fn the_comment_fits_githubs_limit_after_escaping() {
        let noisy = "@a <b> ".repeat(12_000);
        let report = format!(
            "# R\n\n## Executive Summary\n\n{noisy}\n\n## Recommendation\n\n{noisy}\n\n## Council\n\n{noisy}\n\n## Required Questions\n\n{noisy}\n"
        );
        let r = result(MeetingStatus::Failed);
        let mut o = outcome(&r, Some(("ana", &noisy)));
        o.report = &report;
        o.topic = &noisy;
        o.failure = Some(&noisy);
        let md = render(&o);
        assert!(md.chars().count() <= 65_536, "{}", md.chars().count());
    }
}
