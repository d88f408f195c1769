//! What in a rule's match is the secret: the finders the rules name, and the line helpers
//! they share (each looks at most a bounded window of the text).

use std::ops::Range;

use regex::{Captures, Match};

use super::names::*;

/// The `secret` group (or `text`, its other place), else the whole match.
pub(super) fn secret_of<'t>(c: &Captures<'t>) -> Match<'t> {
    c.name("secret")
        .or_else(|| c.name("text"))
        .or_else(|| c.get(0))
        .expect("a match")
}

pub(super) fn whole(_: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    out.push(secret_of(c).range());
}

pub(super) fn real_value(_: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let m = secret_of(c);
    if is_real_value(m.as_str()) {
        out.push(m.range());
    }
}

/// Bearer tokens are random: a word after "bearer" with no digit is prose.
pub(super) fn letter_and_digit(_: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let m = secret_of(c);
    let v = m.as_str();
    if v.chars().any(|c| c.is_ascii_alphabetic()) && v.chars().any(|c| c.is_ascii_digit()) {
        out.push(m.range());
    }
}

/// A header value or an option's value: only something shaped like a credential, since the
/// same words ("X-Api-Key: required", "--token to pass") are common in prose.
pub(super) fn tokenish_value(_: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let m = secret_of(c);
    let v = m.as_str();
    if is_real_value(v) && !is_reference(v) && tokenish(v) {
        out.push(m.range());
    }
}

/// The secret without the quotes around it, if it has any.
pub(super) fn unquoted(m: Match) -> Range<usize> {
    let v = m.as_str();
    let r = m.range();
    if v.len() >= 2
        && (v.starts_with('"') && v.ends_with('"') || v.starts_with('\'') && v.ends_with('\''))
    {
        r.start + 1..r.end - 1
    } else {
        r
    }
}

pub(super) fn unquoted_real(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let r = unquoted(secret_of(c));
    if is_real_value(&text[r.clone()]) && !is_reference(&text[r.clone()]) {
        out.push(r);
    }
}

/// `--password value`: the option names a secret and the value looks like one.
pub(super) fn option_value(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    if secret_name(&c["name"]).is_none() {
        return;
    }
    let r = unquoted(secret_of(c));
    let v = &text[r.clone()];
    if is_real_value(v) && !is_reference(v) && tokenish(v) {
        out.push(r);
    }
}

/// `user:password` after `curl -u`: the part after the first colon.
pub(super) fn user_password(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let r = unquoted(c.name("cred").expect("cred"));
    let Some(colon) = text[r.clone()].find(':') else {
        return;
    };
    let secret = r.start + colon + 1..r.end;
    if is_real_value(&text[secret.clone()]) && !is_reference(&text[secret.clone()]) {
        out.push(secret);
    }
}

/// `scheme://user:password@`: not a host and its port (`https://host:8080/a@b`).
pub(super) fn url_password(_: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let m = secret_of(c);
    let v = m.as_str();
    let digits = v.bytes().take_while(u8::is_ascii_digit).count();
    let port = digits > 0 && (digits == v.len() || v.as_bytes()[digits] == b'/');
    if !port && is_real_value(v) {
        out.push(m.range());
    }
}

/// A value whose name (the `name` group) says secret.
pub(super) fn named_value(_: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let m = secret_of(c);
    let v = m.as_str();
    if let Some(strength) = secret_name(&c["name"]) {
        if is_real_value(v) && !is_prose_label(v) && strength.accepts(v) {
            out.push(m.range());
        }
    }
}

/// A value, quoted or not, whose name (the `name` group) says secret.
pub(super) fn named_unquoted(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let r = unquoted(secret_of(c));
    let v = trim_value(&text[r.clone()]);
    if let Some(strength) = secret_name(&c["name"]) {
        if is_real_value(v) && !is_reference(v) && strength.accepts(v) {
            out.push(r.start..r.start + v.len());
        }
    }
}

/// PuTTY's key file: from the header to the end of its `Private-MAC` line (or the text's end,
/// when the excerpt cut it), if a `Private-Lines` line comes within the next 40 lines.
pub(super) fn putty_key(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let m = c.get(0).expect("a match");
    let mut pos = m.end();
    let mut private = false;
    for _ in 0..40 {
        let Some(next) = next_line(text, pos) else {
            break;
        };
        if text[next.clone()].starts_with("Private-Lines:") {
            private = true;
        }
        pos = next.end;
        if private && text[next.clone()].starts_with("Private-MAC:") {
            break;
        }
    }
    if private {
        out.push(m.start()..if pos >= text.len() { text.len() } else { pos });
    }
}

/// `password: |` and the lines after it that are indented more than the key, blank lines
/// included.
pub(super) fn yaml_block(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let name = c.name("name").expect("name");
    if secret_name(name.as_str()).is_none() {
        return;
    }
    let key_col = name.start() - line_start(text, name.start());
    let mut pos = c.get(0).expect("a match").end();
    let mut block: Option<Range<usize>> = None;
    while let Some(next) = next_line(text, pos) {
        let line = text[next.clone()].trim_end();
        let content = line.trim_start_matches([' ', '\t']);
        pos = next.end;
        if content.is_empty() {
            continue;
        }
        let indent = line.len() - content.len();
        if indent <= key_col {
            break;
        }
        let end = next.start + line.len();
        block = Some(block.map_or(next.start + indent..end, |b| b.start..end));
    }
    if let Some(b) = block {
        if is_real_value(&text[b.clone()]) {
            out.push(b);
        }
    }
}

/// A key whose name says secret and its value (the assignment rule's groups). Quoted values
/// count anywhere, with any separator (`,` only between quoted key and value, as in
/// `define('DB_PASSWORD', '…')`). A bare value counts after `=`, `:=` or `=>` anywhere (to
/// the next space, `;`, `,` or `&`: `PGPASSWORD=… psql`, connection strings, query strings),
/// and to the end of the line on a config line (`password = …` with spaces, `db.password=…`);
/// after `:` only where a YAML key can be (the line's start, or in `{…}` after `{` or `,`), and
/// then alone on its line or, for an identifier key (`db_password:`), to the end of it, so
/// "Password: ask the on-call engineer" is prose. A bare value at the end of its line takes
/// the continuation lines after it (`\` at the end, or more indented token lines).
pub(super) fn assignment(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let name = c.name("name").expect("name");
    let Some(strength) = secret_name(name.as_str()) else {
        return;
    };
    let sep = &c["sep"];
    let key_start = c.name("kq").map_or(name.start(), |m| m.start());
    let ls = line_start(text, key_start);
    let key_col = name.start() - ls;
    let before = text[ls..key_start].trim_start_matches([' ', '\t', '-']);
    let before = before.strip_prefix("export ").unwrap_or(before).trim();
    let at_line_start = before.is_empty() || before == "$";
    let flow = text[..key_start].trim_end().ends_with(['{', ',']);
    let quoted = ["py", "cat", "tq", "dq", "sq", "edq", "esq", "mdq", "bq"]
        .iter()
        .find_map(|g| c.name(g));
    // Code declares with a keyword (`let secret = …`): only a literal is a value there.
    let code = before
        .split_whitespace()
        .last()
        .is_some_and(|w| DECLARATIONS.contains(&w));
    if let Some(q) = quoted {
        // Backticks quote a value only in an assignment (a JS template string); after `:` they
        // are Markdown's inline code.
        if c.name("bq").is_some() && sep != "=" {
            return;
        }
        // `,` separates a name and its value only as a call's first two arguments.
        if sep == "," && !(c.name("kq").is_some() && text[..key_start].trim_end().ends_with('(')) {
            return;
        }
        let v = q.as_str();
        if is_real_value(v) && !is_prose_label(v) && strength.accepts(v) {
            out.push(q.range());
        }
        return;
    }
    let Some(bare) = c.name("bare") else {
        return;
    };
    // A call or an index (`getpass()`, `os.environ["X"]`) says where the secret comes from,
    // and an operator after the value makes it an expression.
    let next = text[bare.end()..line_end(text, bare.end())].trim_start();
    if sep == ","
        || code
        || text[bare.end()..].starts_with(['(', '['])
        || next.starts_with(['+', '*', '/', '%', '|', '?', '.', '<', '>', '=', '!'])
    {
        return;
    }
    let le = line_end(text, bare.end());
    let after = &text[bare.end()..le];
    let rest = after.trim_start();
    let alone = rest.is_empty() || rest.starts_with('#') && rest.len() < after.len();
    let mut end = bare.end();
    if sep == ":" {
        if !(at_line_start || flow) {
            // In a sentence ("log in with password: …"), only a credential-shaped value alone
            // at the end of its line.
            let v = trim_value(bare.as_str());
            if !(alone && v.len() >= 6 && has_digit_or_symbol(v)) {
                return;
            }
        } else if alone {
        } else if flow && rest.starts_with([',', '}']) {
            // `{password: String, …}` is a type, not a value.
            if !has_digit_or_symbol(bare.as_str()) || bare.as_str().contains(['<', '>']) {
                return;
            }
        } else if at_line_start && words(name.as_str()).len() > 1 {
            end = value_line_end(text, bare.end(), le);
        } else {
            return;
        }
    } else if at_line_start && !alone {
        let spaced = text[name.end()..bare.start()].contains([' ', '\t']);
        if spaced || name.as_str().contains('.') {
            end = value_line_end(text, bare.end(), le);
        }
    }
    let v = trim_value(&text[bare.start()..end]);
    if !is_real_value(v) || is_reference(v) || !strength.accepts(v) {
        return;
    }
    let mut range = bare.start()..bare.start() + v.len();
    if range.end == le || text[range.end..le].trim() == "\\" {
        range.end = continuation(text, key_col, range.end);
    }
    out.push(range);
}

/// The end of a value that runs to the end of its line: before a ` #` comment and trailing
/// blanks.
pub(super) fn value_line_end(text: &str, from: usize, le: usize) -> usize {
    let line = &text[from..le];
    let cut = line
        .find(" #")
        .or_else(|| line.find("\t#"))
        .unwrap_or(line.len());
    from + line[..cut].trim_end().len()
}

/// A bare value without the `;`, `,` or closing brackets that end a statement.
pub(super) fn trim_value(v: &str) -> &str {
    let mut v = v.trim_end().trim_end_matches([';', ',']);
    for (open, close) in [('(', ')'), ('[', ']'), ('{', '}')] {
        while v.ends_with(close) && !v.contains(open) {
            v = &v[..v.len() - 1];
        }
    }
    v
}

/// Line-split values: after a value that ends its line, the lines that continue it, either
/// because the line ends in `\` or because they are indented more than the key (a YAML plain
/// scalar) and hold one token of base64-like characters.
pub(super) fn continuation(text: &str, key_col: usize, mut end: usize) -> usize {
    loop {
        let le = line_end(text, end);
        let backslash = text[end..le].trim() == "\\";
        let Some(next) = next_line(text, le) else {
            return end;
        };
        let line = text[next.clone()].trim_end();
        let content = line.trim_start_matches([' ', '\t']);
        let indent = line.len() - content.len();
        let token = content.trim_end_matches('\\').trim_end();
        if !(backslash || indent > key_col)
            || token.is_empty()
            || !token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+/=_.~-".contains(&b))
        {
            return end;
        }
        end = next.start + indent + token.len();
    }
}

/// Rows looked at under one CSV header.
pub(super) const CSV_ROWS: usize = 1000;

/// A CSV header line (two or more short column names, one of them a secret's name) and the
/// rows under it: the fields of the secret columns, up to a blank line or a row with another
/// number of fields.
pub(super) fn csv_columns(text: &str, c: &Captures, out: &mut Vec<Range<usize>>) {
    let header = c.name("header").expect("header");
    let columns: Vec<&str> = header
        .as_str()
        .split(',')
        .map(|h| h.trim().trim_matches('"').trim())
        .collect();
    if columns.len() < 2
        || !columns.iter().all(|h| {
            !h.is_empty()
                && h.len() <= 40
                && h.split_whitespace().count() <= 4
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b" _-.".contains(&b))
        })
    {
        return;
    }
    let secret: Vec<usize> = (0..columns.len())
        .filter(|&i| secret_name(columns[i]).is_some())
        .collect();
    if secret.is_empty() {
        return;
    }
    let mut pos = header.end();
    // At most `CSV_ROWS` rows per header, so a file whose rows look like headers costs a
    // bounded amount per row.
    for _ in 0..CSV_ROWS {
        let Some(row) = next_line(text, pos) else {
            break;
        };
        pos = row.end;
        let line = text[row.clone()].trim_end_matches('\r');
        if line.trim().is_empty() || line.split(',').count() != columns.len() {
            break;
        }
        let mut at = row.start;
        for (i, field) in line.split(',').enumerate() {
            let value = field.trim().trim_matches('"');
            if secret.contains(&i)
                && !value.is_empty()
                && !value.contains(char::is_whitespace)
                && is_real_value(value)
                && !is_reference(value)
            {
                let start = at + field.find(value).unwrap_or(0);
                out.push(start..start + value.len());
            }
            at += field.len() + 1;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Lines

pub(super) fn line_start(text: &str, i: usize) -> usize {
    let from = i.saturating_sub(LINE_WINDOW);
    match text.as_bytes()[from..i].iter().rposition(|&b| b == b'\n') {
        Some(p) => from + p + 1,
        None if from == 0 => 0,
        None => ceil_char_boundary(text, from),
    }
}

/// The end of the line holding `i`, before its `\n` (and a `\r` before that).
pub(super) fn line_end(text: &str, i: usize) -> usize {
    let e = newline_after(text, i).unwrap_or_else(|| {
        let to = i.saturating_add(LINE_WINDOW);
        if to >= text.len() {
            text.len()
        } else {
            ceil_char_boundary(text, to)
        }
    });
    if e > i && text.as_bytes()[e - 1] == b'\r' {
        e - 1
    } else {
        e
    }
}

/// The line after the one that ends at or holds `pos`, without its line break.
pub(super) fn next_line(text: &str, pos: usize) -> Option<Range<usize>> {
    let start = newline_after(text, pos)? + 1;
    if start >= text.len() {
        return None;
    }
    Some(start..line_end(text, start))
}

/// Lines are looked at up to this many bytes around a match, so that the checks on a match
/// cost a bounded amount even in a text of one huge line (minified JSON, a log without line
/// breaks), and redaction stays linear in the text.
pub(super) const LINE_WINDOW: usize = 4096;

/// The first `\n` at or after `i`, within the window.
pub(super) fn newline_after(text: &str, i: usize) -> Option<usize> {
    let to = i.saturating_add(LINE_WINDOW).min(text.len());
    text.as_bytes()[i..to]
        .iter()
        .position(|&b| b == b'\n')
        .map(|p| i + p)
}

pub(super) fn ceil_char_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}
