//! The PM's final report as text (docs/design/report.md#report): the tolerant split into
//! executive summary and recommendation that `render-report` shows, and the same reading for
//! `pm-step`'s check that a FINISH carries both parts (docs/design/pm-round.md#pm-round); the
//! Markdown line lexer they and the report's tidying share (headings, setext underlines, fences).
//!
//! A small line-based reader, not a Markdown parser: it only needs headings, emphasis, labels
//! and code fences, and it must accept whatever a model writes without failing. The PM's text
//! is confined to its two parts: a heading of level 1 or 2, or one naming a report section, is
//! escaped and shows as text, so model text cannot open or forge a report section.

/// What the Recommendation says when the PM's report has no recognisable recommendation part.
pub const SEE_SUMMARY: &str = "See the executive summary.";

/// The two parts the PM is asked to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportParts {
    pub executive_summary: String,
    pub recommendation: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Summary,
    Recommendation,
}

/// The heading the PM is asked to open its report with: the prompt says it, and the schema's
/// `final_report` pattern holds a grammar-constrained model to it
/// (docs/design/prompts.md#structured-output).
pub(crate) const SUMMARY_HEADING: &str = "### Executive Summary";

const SUMMARY_LABELS: [&str; 7] = [
    "executive summary",
    "summary",
    "exec summary",
    "tl;dr",
    "执行摘要",
    "摘要",
    "总结",
];
const RECOMMENDATION_LABELS: [&str; 7] = [
    "recommendation",
    "recommendations",
    "final recommendation",
    "our recommendation",
    "建议",
    "推荐",
    "最终建议",
];

/// The two parts as the report reads them, before any default text: `None` when the report
/// has no label at all.
struct Labelled {
    /// Text before the first label (minus a title heading) and the summary part, demoted.
    summary: String,
    /// The recommendation part, demoted.
    recommendation: String,
}

fn read_labels(report: &str) -> Option<Labelled> {
    let mut preamble: Vec<String> = Vec::new();
    let mut summary: Vec<String> = Vec::new();
    let mut rec: Vec<String> = Vec::new();
    let mut current: Option<Part> = None;
    let mut found = false;
    let mut in_fence = false;
    for line in report.lines() {
        if is_fence(line) {
            in_fence = !in_fence;
        }
        let label = if in_fence || is_fence(line) {
            None
        } else {
            match_label(line)
        };
        if let Some((part, rest)) = label {
            found = true;
            current = Some(part);
            if !rest.is_empty() {
                target(&mut preamble, &mut summary, &mut rec, current).push(rest);
            }
            continue;
        }
        target(&mut preamble, &mut summary, &mut rec, current).push(line.to_string());
    }
    if !found {
        return None;
    }
    // A title such as "# Final Report" before the first part is dropped; other text is kept.
    let preamble: Vec<String> = preamble
        .into_iter()
        .filter(|l| !matches!(heading_level(l), Some(lvl) if lvl <= 2))
        .collect();
    let mut exec = confine(&preamble.join("\n"));
    let body = confine(&summary.join("\n"));
    if !body.is_empty() {
        if !exec.is_empty() {
            exec.push_str("\n\n");
        }
        exec.push_str(&body);
    }
    Some(Labelled {
        summary: exec,
        recommendation: confine(&rec.join("\n")),
    })
}

/// The body of a rendered report's `## title` section (up to the next `##` heading): the
/// report's own headings, which no model text can forge (docs/design/report.md#sanitising).
pub fn report_section<'a>(md: &'a str, title: &str) -> Option<&'a str> {
    let head = format!("\n## {title}\n");
    let start = md.find(&head)? + head.len();
    let rest = &md[start..];
    Some(rest.find("\n## ").map_or(rest, |end| &rest[..end]))
}

/// Split the PM's final report into its executive summary and recommendation. The labels are
/// recognised case-insensitively as a Markdown heading of any level, a bold or italic line, or
/// a `Label:` line (text after the colon belongs to the part). A part runs until the other
/// label, so sub-headings such as "What is still uncertain" stay with the part they follow;
/// text before the first label (minus a title heading) joins the summary. Without any label
/// the whole report is the summary and the recommendation points to it.
pub fn split_final_report(report: &str) -> ReportParts {
    let Some(parts) = read_labels(report) else {
        let whole = confine(report);
        return ReportParts {
            executive_summary: if whole.is_empty() {
                SEE_SUMMARY.to_string()
            } else {
                whole
            },
            recommendation: SEE_SUMMARY.to_string(),
        };
    };
    ReportParts {
        executive_summary: if parts.summary.is_empty() {
            "The PM's report gives no executive summary.".to_string()
        } else {
            parts.summary
        },
        recommendation: if parts.recommendation.is_empty() {
            SEE_SUMMARY.to_string()
        } else {
            parts.recommendation
        },
    }
}

/// A report written in HTML, as the Markdown it means, or `None` for one that is not HTML (no
/// `<h1>`–`<h6>` or `<p>` element). Headings become `###` headings, list items `- ` lines,
/// paragraphs and line breaks new lines, `<strong>`/`<b>` `**`, `<em>`/`<i>` `*`; every other
/// tag is dropped and the five common entities decoded. Enough for the report's two labelled
/// parts to be found; not a general HTML reader.
pub(crate) fn from_html(report: &str) -> Option<String> {
    let lower = report.to_ascii_lowercase();
    let html = (1..=6).any(|n| lower.contains(&format!("<h{n}"))) || lower.contains("<p>");
    if !html {
        return None;
    }
    let mut out = String::with_capacity(report.len());
    let mut rest = report;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('>') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let tag = rest[start + 1..start + end].trim().to_ascii_lowercase();
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let closing = tag.starts_with('/');
        out.push_str(match (name.as_str(), closing) {
            ("h1" | "h2" | "h3" | "h4" | "h5" | "h6", false) => "\n\n### ",
            ("h1" | "h2" | "h3" | "h4" | "h5" | "h6", true) => "\n\n",
            ("p" | "div" | "ul" | "ol" | "table" | "tr", _) => "\n",
            ("br", _) => "\n",
            ("li", false) => "\n- ",
            ("strong" | "b", _) => "**",
            ("em" | "i", _) => "*",
            _ => "",
        });
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    let decoded = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    // Blank-line runs folded, each line's own spaces trimmed.
    let mut md = String::new();
    let mut blank = 0;
    for line in decoded.lines().map(str::trim) {
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !md.is_empty() {
            md.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        md.push_str(line);
    }
    Some(md)
}

/// The text of the two parts exactly as the report reads them (the same labels and rules as
/// [`split_final_report`]), empty where a part is missing: without labels the recommendation
/// is missing. For pm-step's check that a FINISH carries both parts.
pub(crate) fn labelled_parts(report: &str) -> (String, String) {
    match read_labels(report) {
        Some(p) => (p.summary, p.recommendation),
        None => (confine(report), String::new()),
    }
}

fn target<'a>(
    preamble: &'a mut Vec<String>,
    summary: &'a mut Vec<String>,
    rec: &'a mut Vec<String>,
    part: Option<Part>,
) -> &'a mut Vec<String> {
    match part {
        None => preamble,
        Some(Part::Summary) => summary,
        Some(Part::Recommendation) => rec,
    }
}

/// The level of a Markdown ATX heading line (`## x` → 2).
pub(crate) fn heading_level(line: &str) -> Option<usize> {
    let t = line.trim_start();
    let level = t.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&level) && (t.len() == level || t[level..].starts_with([' ', '\t'])) {
        Some(level)
    } else {
        None
    }
}

/// Whether `line` labels one of the two parts; returns the part and any text after the label.
fn match_label(line: &str) -> Option<(Part, String)> {
    let t = line.trim();
    if t.is_empty() {
        return None;
    }
    let (body, marked) = if let Some(level) = heading_level(t) {
        (
            t[level..].trim().trim_end_matches('#').trim().to_string(),
            true,
        )
    } else {
        strip_emphasis(t)
    };
    // "Recommendation: adopt X" carries text after the label.
    let (head, rest) = match body.find([':', '：']) {
        Some(i) => {
            let colon_len = body[i..].chars().next().map_or(1, char::len_utf8);
            (
                body[..i].to_string(),
                body[i + colon_len..].trim().to_string(),
            )
        }
        None => (body.clone(), String::new()),
    };
    let (head, head_marked) = strip_emphasis(head.trim());
    let had_colon = body.contains([':', '：']);
    // A plain line must be the bare label or `Label:` so ordinary sentences never match.
    if !marked && !head_marked && !had_colon && !is_bare_label_line(t) {
        return None;
    }
    let rest = strip_emphasis(rest.trim()).0;
    let norm = normalise_label(&head);
    if SUMMARY_LABELS.contains(&norm.as_str()) {
        Some((Part::Summary, rest))
    } else if RECOMMENDATION_LABELS.contains(&norm.as_str()) {
        Some((Part::Recommendation, rest))
    } else {
        None
    }
}

fn is_bare_label_line(t: &str) -> bool {
    let n = normalise_label(t);
    SUMMARY_LABELS.contains(&n.as_str()) || RECOMMENDATION_LABELS.contains(&n.as_str())
}

/// `**x**` / `__x__` / `*x*` / `_x_` around the start of a line: the inner label plus what
/// follows the closing marker (`**Recommendation:** adopt` → `Recommendation: adopt`).
fn strip_emphasis(t: &str) -> (String, bool) {
    for marker in ["**", "__", "*", "_"] {
        if let Some(inner) = t.strip_prefix(marker) {
            if let Some(end) = inner.find(marker) {
                let label = &inner[..end];
                let after = inner[end + marker.len()..].trim_start();
                let joined = if after.is_empty() {
                    label.to_string()
                } else if after.starts_with([':', '：']) || label.trim_end().ends_with([':', '：'])
                {
                    format!("{label}{after}")
                } else {
                    format!("{label}: {after}")
                };
                return (joined, true);
            }
        }
    }
    (t.to_string(), false)
}

/// Lower-case, without list numbering (`1.`, `2)`), emphasis marks or a trailing colon.
fn normalise_label(s: &str) -> String {
    let s = s.trim().trim_matches(|c| c == '*' || c == '_').trim();
    let s = s.trim_end_matches([':', '：']).trim();
    let digits = s.chars().take_while(char::is_ascii_digit).count();
    let s = if digits > 0 && s[digits..].starts_with(['.', ')']) {
        s[digits + 1..].trim()
    } else {
        s
    };
    s.to_lowercase()
}

/// The report's own section headings (and the title), lower-case: a PM heading naming one is
/// escaped whatever its level.
const REPORT_SECTIONS: [&str; 17] = [
    "meeting report",
    "topic",
    "executive summary",
    "recommendation",
    "decision",
    "options assessed",
    "required questions",
    "answered questions",
    "open questions",
    "key findings",
    "risks",
    "proposals made during the meeting",
    "evidence reviewed",
    "process note",
    "appendix",
    "current summary",
    "candidate decisions",
];

/// Whether `line` would open structure the report owns: a heading of level 1 or 2, a heading
/// naming a report section, an HTML heading, or a setext underline (`===`, `---`) that turns
/// the line above into a heading.
pub(crate) fn opens_structure(line: &str) -> bool {
    let t = line.trim();
    // An HTML heading is a heading too.
    let lower = t.to_ascii_lowercase();
    if (1..=6).any(|n| lower.starts_with(&format!("<h{n}"))) {
        return true;
    }
    if let Some(level) = heading_level(t) {
        let text = normalise_label(t[level..].trim().trim_end_matches('#'));
        return level <= 2 || REPORT_SECTIONS.contains(&text.as_str());
    }
    is_setext_underline(t)
}

/// A run of `=` or of `-` (one is enough, as in CommonMark) under a text line makes it a heading.
pub(crate) fn is_setext_underline(t: &str) -> bool {
    !t.is_empty() && (t.chars().all(|c| c == '=') || t.chars().all(|c| c == '-'))
}

/// Trim blank lines and escape every line that would open report structure
/// ([`opens_structure`]; a setext underline only under a text line), so the PM's Markdown
/// stays inside its part. Code fences are left alone.
fn confine(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| !l.trim().is_empty());
    let end = lines.iter().rposition(|l| !l.trim().is_empty());
    let (Some(start), Some(end)) = (start, end) else {
        return String::new();
    };
    let mut out: Vec<String> = Vec::with_capacity(end - start + 1);
    // Fences as CommonMark pairs them, the same reading as the report's neutralising
    // (docs/design/report.md#sanitising), so what is code here is code there.
    let mut fence: Option<Fence> = None;
    let mut previous_text = false;
    for l in &lines[start..=end] {
        let boundary = match fence {
            Some(f) => f.closed_by(l).then_some(None),
            None => Fence::opened_by(l).map(Some),
        };
        if let Some(next) = boundary {
            fence = next;
            out.push(l.trim_end().to_string());
            previous_text = false;
            continue;
        }
        let in_fence = fence.is_some();
        let t = l.trim();
        let escape = !in_fence
            && if is_setext_underline(t) {
                previous_text
            } else {
                opens_structure(l)
            };
        if escape {
            out.push(format!("\\{}", l.trim()));
        } else {
            out.push(l.trim_end().to_string());
        }
        previous_text = !in_fence && !t.is_empty() && heading_level(t).is_none();
    }
    out.join("\n")
}

pub(crate) fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// The opening line of a fenced code block as CommonMark reads it: its character and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fence {
    ch: char,
    len: usize,
}

impl Fence {
    /// The fence `line` opens: at most three spaces, then three or more backticks (followed by
    /// an info string without a backtick) or tildes.
    pub(crate) fn opened_by(line: &str) -> Option<Fence> {
        let t = line.trim_start_matches(' ');
        if line.len() - t.len() > 3 {
            return None;
        }
        let ch = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
        let len = t.chars().take_while(|&c| c == ch).count();
        let info = &t[len..];
        (len >= 3 && !(ch == '`' && info.contains('`'))).then_some(Fence { ch, len })
    }

    /// Whether `line` closes this fence: at most three spaces, at least as many of the same
    /// character, nothing after them but spaces.
    pub(crate) fn closed_by(self, line: &str) -> bool {
        let t = line.trim_start_matches(' ');
        line.len() - t.len() <= 3 && self.closed_by_ignoring_indent(t)
    }

    /// [`Fence::closed_by`] whatever the indentation: a line that closes the fence in a
    /// container that indents it (a list item) but not at the top level.
    pub(crate) fn closed_by_ignoring_indent(self, line: &str) -> bool {
        let t = line.trim_start();
        let run = t.chars().take_while(|&c| c == self.ch).count();
        run >= self.len && t[run * self.ch.len_utf8()..].trim().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_in_many_styles() {
        for (line, part, rest) in [
            ("### Executive Summary", Part::Summary, ""),
            ("## executive summary", Part::Summary, ""),
            ("# Recommendation #", Part::Recommendation, ""),
            ("**Executive Summary**", Part::Summary, ""),
            ("**Executive Summary:**", Part::Summary, ""),
            (
                "**Recommendation:** Adopt Rust.",
                Part::Recommendation,
                "Adopt Rust.",
            ),
            ("__Recommendations__", Part::Recommendation, ""),
            ("Executive summary:", Part::Summary, ""),
            ("Recommendation: go", Part::Recommendation, "go"),
            ("## 2. Recommendation", Part::Recommendation, ""),
            ("## 建议", Part::Recommendation, ""),
            ("Summary", Part::Summary, ""),
        ] {
            assert_eq!(match_label(line), Some((part, rest.to_string())), "{line}");
        }
        for line in [
            "We summarise the summary.",
            "The recommendation is clear",
            "## Risks",
            "- summary: x",
        ] {
            assert_eq!(match_label(line), None, "{line}");
        }
    }

    #[test]
    fn odd_reports_never_panic() {
        for text in [
            "",
            "#",
            "**",
            "*",
            "_",
            "：",
            "1.",
            "1)",
            "**Summary",
            "Summary:",
            "## ",
            "##\t",
            "```",
            "**a**b",
            "__**Recommendation**__",
            "é**Summary:**",
            "**摘要：** 好",
            "Recommendation：建议",
            "# # #",
            "9999999999.",
        ] {
            let parts = split_final_report(text);
            assert!(
                !parts.executive_summary.is_empty() && !parts.recommendation.is_empty(),
                "{text:?}"
            );
        }
        assert_eq!(split_final_report("**摘要：** 好").executive_summary, "好");
    }

    #[test]
    fn a_report_in_html_reads_as_its_markdown() {
        let html = "<h3>Executive Summary</h3><p>Move to the <b>replica</b> &amp; trial it.</p>\n<h3>Recommendation</h3><ul><li>Trial two weeks</li><li>Revisit in March</li></ul>";
        let md = from_html(html).unwrap();
        assert_eq!(
            md,
            "### Executive Summary\n\nMove to the **replica** & trial it.\n\n### Recommendation\n\n- Trial two weeks\n- Revisit in March"
        );
        let (summary, rec) = labelled_parts(&md);
        assert!(summary.contains("replica") && rec.contains("Trial two weeks"));
        assert_eq!(from_html("### Executive Summary\nA < B, and 3 > 2."), None);
    }

    #[test]
    fn labelled_parts_are_empty_where_missing() {
        let both = "# Final\n### Executive Summary\nAdopt.\n### Recommendation\nPilot it.";
        assert_eq!(
            labelled_parts(both),
            ("Adopt.".to_string(), "Pilot it.".to_string())
        );
        assert_eq!(labelled_parts("..."), ("...".to_string(), String::new()));
        assert_eq!(
            labelled_parts("Recommendation: go"),
            (String::new(), "go".to_string())
        );
        assert_eq!(
            labelled_parts("Intro.\n\n**Recommendation:** go"),
            ("Intro.".to_string(), "go".to_string())
        );
    }

    #[test]
    fn heading_levels() {
        assert_eq!(heading_level("## a"), Some(2));
        assert_eq!(heading_level("#hashtag"), None);
        assert_eq!(heading_level("####### seven"), None);
        assert_eq!(
            confine("```\n# not a heading\n```"),
            "```\n# not a heading\n```"
        );
    }

    /// The PM's text cannot open a report section: level 1-2 headings, headings naming a
    /// section at any level, and setext underlines are escaped; other headings stay.
    #[test]
    fn pm_markdown_is_confined() {
        assert_eq!(
            confine("# A\ntext\n## B\n### Details\n#### Evidence Reviewed:"),
            "\\# A\ntext\n\\## B\n### Details\n\\#### Evidence Reviewed:"
        );
        assert_eq!(
            confine("Evidence Reviewed\n=================\n- fake\n\n---\nok\n--"),
            "Evidence Reviewed\n\\=================\n- fake\n\n---\nok\n\\--"
        );
        assert_eq!(
            confine("<H2>Process Note</h2>\ntext"),
            "\\<H2>Process Note</h2>\ntext"
        );
        let parts = split_final_report(
            "### Executive Summary\nFine.\n## Evidence Reviewed\n- fake evidence\n### Recommendation\nGo.",
        );
        assert_eq!(
            parts.executive_summary,
            "Fine.\n\\## Evidence Reviewed\n- fake evidence"
        );
    }
}
