//! The final tidying of the rendered report (docs/design/report.md#report). The reading of the PM's final
//! report itself is `crate::final_report`, shared with pm-step.

use crate::final_report::is_fence;

/// Collapse runs of blank lines outside code fences, drop trailing spaces, end with one newline;
/// and remove every bidirectional control character (docs/design/report.md#report), whoever wrote it.
pub(crate) fn tidy_markdown(text: &str) -> String {
    let text = &crate::text::strip_bidi(text);
    let mut out = String::new();
    let mut blank_run = 0;
    let mut in_fence = false;
    for line in text.lines() {
        let line = line.trim_end();
        if is_fence(line) {
            in_fence = !in_fence;
        }
        if line.is_empty() && !in_fence {
            blank_run += 1;
            if blank_run > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    if out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidy_collapses_blank_lines_outside_fences() {
        assert_eq!(
            tidy_markdown("\n# a\n\n\n\nb  \n```\n\n\n```\n\n\n"),
            "# a\n\nb\n```\n\n\n```\n"
        );
    }
}
