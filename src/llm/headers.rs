//! Extra HTTP headers for a gateway in front of the provider (docs/design/llm.md#gateways):
//! `--header 'Name: value'` (repeatable) or `AGENT_MEETING_HEADERS` (one header per line),
//! sent on every request of the HTTP providers. A value may read the environment with
//! `${VAR}`, so no secret needs to go on a command line; an unset (or empty) variable is a
//! usage error naming the header and the variable, never an empty header.
//!
//! Header values are credentials: they are never shown. `--show-config` and `--dry-run` name
//! each header with `***` for its value (and the variables it reads), errors name the header
//! only, and the transport scrubs every expanded value from what a server says back.
//! `meeting.json` does not keep them: like keys, they come from the command line or the
//! environment of every start and resume.

use crate::error::Error;

/// The variable `--header` reads when no flag is given; one header per line, because a header
/// value may hold commas but never a line break.
pub const HEADERS_VAR: &str = "AGENT_MEETING_HEADERS";

/// What is shown instead of a header's value.
pub const MASK: &str = "***";

/// One header as given: its name and its value before `${VAR}` is expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderSpec {
    pub name: String,
    template: String,
}

impl HeaderSpec {
    /// `Name: value`. The error never repeats the value (it may be a secret).
    pub fn parse(spec: &str) -> Result<HeaderSpec, Error> {
        let bad = |what: String| Error::Usage(format!("--header: {what}"));
        let Some((name, value)) = spec.split_once(':') else {
            return Err(bad(
                "expected 'Name: value' (a header name, a colon, its value)".into(),
            ));
        };
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            // The name is not repeated either: a mistyped header may put a value before the colon.
            return Err(bad(
                "expected a header name of letters, digits and !#$%&'*+-.^_`|~ before the colon"
                    .into(),
            ));
        }
        let template = value.trim();
        if template.chars().any(|c| c.is_control() && c != '\t') {
            return Err(bad(format!(
                "header {name}: a value may not hold a line break or control character"
            )));
        }
        // Fails now, not at the first call, when a `${` is not closed.
        vars(template).map_err(|e| bad(format!("header {name}: {e}")))?;
        Ok(HeaderSpec {
            name: name.to_string(),
            template: template.to_string(),
        })
    }

    /// The environment variables the value reads, in order.
    pub fn reads(&self) -> Vec<String> {
        vars(&self.template).unwrap_or_default()
    }

    /// The value as sent: every `${VAR}` replaced by the variable's value.
    pub fn value(&self, env: impl Fn(&str) -> Option<String>) -> Result<String, Error> {
        let mut out = String::new();
        let mut rest = self.template.as_str();
        while let Some(at) = rest.find("${") {
            out.push_str(&rest[..at]);
            let after = &rest[at + 2..];
            let end = after.find('}').unwrap_or(after.len());
            let var = &after[..end];
            match env(var).filter(|v| !v.is_empty()) {
                Some(v) => out.push_str(&v),
                None => {
                    return Err(Error::Usage(format!(
                        "--header {}: reads ${{{var}}}, but {var} is not set (or is empty) in the environment",
                        self.name
                    )))
                }
            }
            rest = &after[(end + 1).min(after.len())..];
        }
        out.push_str(rest);
        if out.contains(['\r', '\n']) {
            return Err(Error::Usage(format!(
                "--header {}: the value read from the environment holds a line break",
                self.name
            )));
        }
        Ok(out)
    }

    /// The header as it may be shown: `Name: ***`, with the variables it reads.
    pub fn shown(&self) -> String {
        format!("{}: {}", self.name, self.shown_value())
    }

    /// The value as it may be shown: `***`, with the variables it reads.
    pub fn shown_value(&self) -> String {
        let reads = self.reads();
        if reads.is_empty() {
            MASK.to_string()
        } else {
            let vars: Vec<String> = reads.iter().map(|v| format!("${v}")).collect();
            format!("{MASK} (from {})", vars.join(", "))
        }
    }
}

/// The `${VAR}` names of a value, or what is wrong with one.
fn vars(template: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(at) = rest.find("${") {
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err("a ${ with no closing }".into());
        };
        let var = &after[..end];
        let ok = var
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(format!(
                "expected a variable name (letters, digits, _) in ${{...}}, got {var:?}"
            ));
        }
        out.push(var.to_string());
        rest = &after[end + 1..];
    }
    Ok(out)
}

/// RFC 9110's `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The headers as given (a flag or a line of `AGENT_MEETING_HEADERS` each; blank ones skipped).
pub fn specs(given: &[String]) -> Result<Vec<HeaderSpec>, Error> {
    given
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| HeaderSpec::parse(s))
        .collect()
}

/// `--dry-run`'s line naming the headers every request carries, values masked; `None` without
/// headers or with one that does not parse (refused elsewhere, naming it).
pub fn shown_line(given: &[String]) -> Option<String> {
    let specs = specs(given).ok().filter(|s| !s.is_empty())?;
    let shown: Vec<String> = specs.iter().map(HeaderSpec::shown).collect();
    Some(format!("headers: {}", shown.join("; ")))
}

/// The headers as sent, and what the transport scrubs from what servers say back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expanded {
    /// Names and values, read from this process's environment.
    pub sent: Vec<(String, String)>,
    /// Every value and every variable's value read into one, longest first (a server may
    /// echo the token without its `Bearer `).
    pub secrets: Vec<String>,
}

/// The headers as sent (see [`Expanded`]).
pub fn expanded(given: &[String]) -> Result<Expanded, Error> {
    let env = |var: &str| std::env::var(var).ok();
    let mut out = Expanded::default();
    for h in specs(given)? {
        let value = h.value(env)?;
        out.secrets.push(value.clone());
        out.secrets.extend(h.reads().iter().filter_map(|v| env(v)));
        out.sent.push((h.name, value));
    }
    out.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.secrets.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(var: &str) -> Option<String> {
        match var {
            "GW_KEY" => Some("k-123".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn a_header_is_a_name_a_colon_and_a_value() {
        let h = HeaderSpec::parse("X-Team:  blue ").unwrap();
        assert_eq!(
            (h.name.as_str(), h.value(env).unwrap()),
            ("X-Team", "blue".into())
        );
        let h = HeaderSpec::parse("Authorization: Bearer ${GW_KEY}").unwrap();
        assert_eq!(h.value(env).unwrap(), "Bearer k-123");
        assert_eq!(h.reads(), vec!["GW_KEY".to_string()]);
        assert_eq!(h.shown(), "Authorization: *** (from $GW_KEY)");
        assert_eq!(
            HeaderSpec::parse("A: x:y").unwrap().value(env).unwrap(),
            "x:y"
        );
        for bad in [
            "no colon here",
            ": v",
            "Bad Name: v",
            "X: ${GW_KEY",
            "X: ${1X}",
            "X: a\u{7}b",
        ] {
            let e = HeaderSpec::parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn an_unset_or_empty_variable_is_an_error_naming_header_and_variable() {
        for var in ["NOPE", "EMPTY"] {
            let h = HeaderSpec::parse(&format!("X-Key: pre-${{{var}}}")).unwrap();
            let e = h.value(env).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            let said = e.to_string();
            assert!(said.contains("X-Key") && said.contains(var), "{said}");
        }
    }

    #[test]
    fn errors_and_the_shown_form_never_repeat_a_value() {
        let e = HeaderSpec::parse("X-Key sk-secret-value").unwrap_err();
        assert!(!e.to_string().contains("sk-secret"), "{e}");
        let h = HeaderSpec::parse("X-Key: sk-secret-value").unwrap();
        assert_eq!(h.shown(), "X-Key: ***");
    }
}
