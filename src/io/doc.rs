//! Reading a document with precise errors (docs/design/flow.md#documents): JSON or YAML, the file label
//! and the field path on one line, versions checked first, duplicate keys refused, and a
//! document of another kind named with the program that takes it.

use std::path::Path;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// Deepest YAML flow nesting (`[[[...`, `{a: {a: ...`) looked at. The parser refuses more than
/// 128 levels anyway, but libyaml's cost grows with depth times tokens: 100,000 levels took two
/// minutes before this guard.
const MAX_YAML_FLOW_DEPTH: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

impl Format {
    /// The format a file name implies: `.json`, `.yaml` or `.yml`.
    pub fn from_path(path: &Path) -> Option<Format> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => Some(Format::Json),
            Some("yaml") | Some("yml") => Some(Format::Yaml),
            _ => None,
        }
    }
}

/// Refuse a leading byte order mark with a message that says so (JSON parsers only report
/// "expected value at line 1 column 1", and YAML reads the rest of the first line oddly).
pub(crate) fn refuse_bom(label: &str, text: &str) -> Result<()> {
    if text.starts_with('\u{feff}') {
        return Err(Error::input(
            label,
            "",
            "starts with a byte order mark (U+FEFF); save the file as UTF-8 without BOM",
        ));
    }
    Ok(())
}

/// Parse a document of type `T`; errors name `label` and the field path. Duplicate keys are
/// refused everywhere, also inside maps (`metadata`, schemas) where serde lets the last win.
pub fn parse_doc<T: DeserializeOwned>(label: &str, text: &str, format: Format) -> Result<T> {
    if text.trim().is_empty() {
        return Err(Error::input(
            label,
            "",
            "empty input (expected a JSON or YAML document)",
        ));
    }
    refuse_bom(label, text)?;
    match format {
        Format::Json => {
            let de = &mut serde_json::Deserializer::from_str(text);
            let v = serde_path_to_error::deserialize(&mut *de).map_err(|e| path_error(label, e))?;
            de.end()
                .map_err(|e| Error::input(label, "", e.to_string()))?;
            let de = &mut serde_json::Deserializer::from_str(text);
            serde_path_to_error::deserialize::<_, NoDuplicateKeys>(de)
                .map_err(|e| path_error(label, e))?;
            Ok(v)
        }
        Format::Yaml => {
            if flow_depth_exceeds(text, MAX_YAML_FLOW_DEPTH) {
                return Err(Error::input(
                    label,
                    "",
                    format!("nested deeper than {MAX_YAML_FLOW_DEPTH} levels"),
                ));
            }
            // Before anything is built: aliases could expand the text without bound.
            super::yaml_budget::check_yaml_budget(label, text)?;
            let de = serde_yaml::Deserializer::from_str(text);
            let v = serde_path_to_error::deserialize(de).map_err(|e| yaml_error(label, text, e))?;
            let de = serde_yaml::Deserializer::from_str(text);
            serde_path_to_error::deserialize::<_, NoDuplicateKeys>(de)
                .map_err(|e| yaml_error(label, text, e))?;
            Ok(v)
        }
    }
}

/// Whether YAML flow brackets nest deeper than `max` (brackets inside strings count too, which
/// only matters for text with hundreds of unclosed brackets).
fn flow_depth_exceeds(text: &str, max: usize) -> bool {
    let mut depth = 0usize;
    for b in text.bytes() {
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Parse a JSON document that carries an integer `version_field`, refusing unknown major
/// versions before looking at anything else.
pub fn parse_versioned<T: DeserializeOwned>(
    label: &str,
    text: &str,
    version_field: &str,
    supported: u32,
) -> Result<T> {
    // Fast path (most of a stage's CPU on a big board): a document with the supported version
    // deserialises straight from the text, without building a `Value` tree first. Anything
    // else, including every error, takes the path below, so messages stay exactly the same.
    if version_of(text, version_field) == Some(u64::from(supported)) {
        let mut de = serde_json::Deserializer::from_str(text);
        if let Ok(v) = T::deserialize(&mut de) {
            // Maps inside the document (agents, metadata) would keep the last of two equal
            // keys silently; the duplicate-key walk builds no tree, so the path stays fast.
            let mut walk = serde_json::Deserializer::from_str(text);
            if de.end().is_ok() && NoDuplicateKeys::deserialize(&mut walk).is_ok() {
                return Ok(v);
            }
        }
    }
    if text.trim().is_empty() {
        return Err(Error::input(
            label,
            "",
            "empty input (expected a JSON document)",
        ));
    }
    refuse_bom(label, text)?;
    let expected = DocKind::with_version_field(version_field);
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            // A meeting file (YAML) where a packet or board belongs: say what it is.
            if let Some(expected) = expected {
                if let Some(found) = yaml_meeting_input(text) {
                    return Err(Error::input(label, "", found.instead_of(expected)));
                }
            }
            return Err(Error::input(label, "", format!("not valid JSON: {e}")));
        }
    };
    let Some(obj) = value.as_object() else {
        return Err(Error::input(
            label,
            "",
            format!("expected a JSON object, got {}", kind_of(&value)),
        ));
    };
    match obj.get(version_field) {
        None => {
            if let Some(expected) = expected {
                if let Some(found) = DocKind::of(obj).filter(|k| *k != expected) {
                    return Err(Error::input(label, "", found.instead_of(expected)));
                }
            }
            return Err(Error::input(
                label,
                version_field,
                format!("missing (expected {supported})"),
            ));
        }
        Some(v) => match v.as_u64() {
            Some(n) if n == u64::from(supported) => {}
            Some(n) => {
                return Err(Error::input(
                    label,
                    version_field,
                    format!("version {n} is not supported (expected {supported})"),
                ))
            }
            None => {
                return Err(Error::input(
                    label,
                    version_field,
                    format!("expected an integer, got {}", kind_of(v)),
                ))
            }
        },
    }
    let doc = serde_path_to_error::deserialize(value).map_err(|e| path_error(label, e))?;
    // `Value` keeps the last of duplicate keys silently; look at the text once more.
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize::<_, NoDuplicateKeys>(de).map_err(|e| path_error(label, e))?;
    Ok(doc)
}

/// The documents the programs pass along, told apart by their version field or shape, so a
/// document fed to the wrong program is named with the program that takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DocKind {
    MeetingInput,
    MeetingPacket,
    Board,
    ReportResult,
    MeetingResult,
}

impl DocKind {
    /// The kind a version field belongs to (`None` for other versioned files: meeting.json).
    fn with_version_field(field: &str) -> Option<DocKind> {
        match field {
            "packet_version" => Some(DocKind::MeetingPacket),
            "board_version" => Some(DocKind::Board),
            "report_version" => Some(DocKind::ReportResult),
            _ => None,
        }
    }

    /// What a top-level object is: by its version field, else by the fields only it has.
    fn of(obj: &serde_json::Map<String, Value>) -> Option<DocKind> {
        let has = |k: &str| obj.contains_key(k);
        if has("packet_version") {
            Some(DocKind::MeetingPacket)
        } else if has("board_version") {
            Some(DocKind::Board)
        } else if has("report_version") {
            Some(DocKind::ReportResult)
        } else if has("topic") && has("decision_packet") {
            Some(DocKind::MeetingInput)
        } else if has("run_dir") && has("trace_id") && has("status") {
            Some(DocKind::MeetingResult)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            DocKind::MeetingInput => "MeetingInput",
            DocKind::MeetingPacket => "MeetingPacket",
            DocKind::Board => "Board",
            DocKind::ReportResult => "ReportResult",
            DocKind::MeetingResult => "MeetingResult",
        }
    }

    fn source(self) -> &'static str {
        match self {
            DocKind::MeetingInput => "a meeting file",
            DocKind::MeetingPacket => "collect-context's output",
            DocKind::Board => "init-board's output",
            DocKind::ReportResult => "render-report's output",
            DocKind::MeetingResult => "meeting's output",
        }
    }

    /// The one-line message for this kind of document where `expected` belongs.
    fn instead_of(self, expected: DocKind) -> String {
        let what = format!(
            "this is a {} ({}), not a {}",
            self.name(),
            self.source(),
            expected.name()
        );
        let what_to_do = match (self, expected) {
            (DocKind::MeetingInput, DocKind::Board) => {
                ": collect-context --meeting-file m.yaml | init-board --agents a,b makes a board"
            }
            (DocKind::MeetingInput, _) => {
                ": pipe it into collect-context first (collect-context --meeting-file m.yaml | init-board --agents a,b)"
            }
            (DocKind::MeetingPacket, _) => ": pipe it into init-board",
            (DocKind::Board, _) => {
                ": pipe it into the stage it waits for (next-stage prints which)"
            }
            (DocKind::ReportResult, DocKind::Board) => {
                "; its `board` field is the board: jq .board"
            }
            (DocKind::ReportResult, _) => "; its `markdown` field is the report",
            (DocKind::MeetingResult, _) => {
                "; its run_dir holds the boards (NNNN-<stage>.out.json)"
            }
        };
        format!("{what}{what_to_do}")
    }
}

/// Whether `text` (not JSON) is a meeting file in YAML: a mapping with `topic` and
/// `decision_packet`. Only looked at when a JSON document was expected and none came.
fn yaml_meeting_input(text: &str) -> Option<DocKind> {
    if flow_depth_exceeds(text, MAX_YAML_FLOW_DEPTH)
        || super::yaml_budget::check_yaml_budget("", text).is_err()
    {
        return None;
    }
    let v: serde_yaml::Value = serde_yaml::from_str(text).ok()?;
    let m = v.as_mapping()?;
    (m.contains_key("topic") && m.contains_key("decision_packet")).then_some(DocKind::MeetingInput)
}

/// Walks any document and fails on the first mapping that repeats a key.
struct NoDuplicateKeys;

impl<'de> Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeys)
    }
}

/// A mapping key as text; keys that are themselves collections are only walked.
struct Key(Option<String>);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Key, E> {
                Ok(Key(Some(v.to_string())))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Key, E> {
                Ok(Key(Some(v.to_string())))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Key, E> {
                Ok(Key(Some(v.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Key, E> {
                Ok(Key(Some(v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Key, E> {
                Ok(Key(Some(v.to_string())))
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Key, E> {
                Ok(Key(Some("null".into())))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, a: A) -> std::result::Result<Key, A::Error> {
                NoDuplicateKeys.visit_seq(a).map(|_| Key(None))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, a: A) -> std::result::Result<Key, A::Error> {
                NoDuplicateKeys.visit_map(a).map(|_| Key(None))
            }
            fn visit_enum<A: de::EnumAccess<'de>>(
                self,
                a: A,
            ) -> std::result::Result<Key, A::Error> {
                NoDuplicateKeys.visit_enum(a).map(|_| Key(None))
            }
        }
        d.deserialize_any(KeyVisitor)
    }
}

impl<'de> Visitor<'de> for NoDuplicateKeys {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_none<E: de::Error>(self) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self, D::Error> {
        NoDuplicateKeys::deserialize(d)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Self, D::Error> {
        NoDuplicateKeys::deserialize(d)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> std::result::Result<Self, A::Error> {
        while a.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(self)
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut a: A) -> std::result::Result<Self, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(Key(key)) = a.next_key::<Key>()? {
            if let Some(k) = key {
                if !seen.insert(k.clone()) {
                    return Err(de::Error::custom(format!("duplicate key {k:?}")));
                }
            }
            a.next_value::<NoDuplicateKeys>()?;
        }
        Ok(self)
    }
    // YAML tagged values (`!tag x`) arrive as enums.
    fn visit_enum<A: de::EnumAccess<'de>>(self, a: A) -> std::result::Result<Self, A::Error> {
        use de::VariantAccess;
        let (_, variant) = a.variant::<de::IgnoredAny>()?;
        variant.newtype_variant::<NoDuplicateKeys>()
    }
}

/// Parse a Board (refusing other major `board_version`s first); errors name `label`.
pub(crate) fn parse_board(label: &str, text: &str) -> Result<crate::model::Board> {
    // An earlier version is refused, not converted: its run folder follows the old layout
    // too (docs/design/run-folder.md#events).
    let version = version_of(text, "board_version");
    if let Some((v, before)) = crate::model::OLDER_BOARDS
        .iter()
        .find(|(v, _)| Some(u64::from(*v)) == version)
    {
        return Err(Error::input(
            label,
            "board_version",
            format!(
                "version {v} is not supported (expected {}): a board from before {before}; \
                 finish that meeting with the release that started it, or start it again",
                crate::model::BOARD_VERSION
            ),
        ));
    }
    parse_versioned(label, text, "board_version", crate::model::BOARD_VERSION)
}

/// The integer at the top-level key `field` of a JSON object, scanning the text without
/// keeping anything else; `None` for anything unusual (the slow path then explains it).
fn version_of(text: &str, field: &str) -> Option<u64> {
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
    use std::borrow::Cow;
    use std::fmt;

    struct Probe<'f>(&'f str);
    impl<'de> DeserializeSeed<'de> for Probe<'_> {
        type Value = Option<u64>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Probe<'_> {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                if key == self.0 && found.is_none() {
                    found = Some(map.next_value::<Value>()?.as_u64());
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found.flatten())
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let v = Probe(field).deserialize(&mut de).ok()?;
    de.end().ok()?;
    v
}

/// A short name of a JSON value's type, for messages.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn path_error<E: std::fmt::Display>(label: &str, e: serde_path_to_error::Error<E>) -> Error {
    path_error_in(label, e, None)
}

/// [`path_error`] for a YAML `text`: a tab where YAML wants spaces is named as the cause.
fn yaml_error<E: std::fmt::Display>(
    label: &str,
    text: &str,
    e: serde_path_to_error::Error<E>,
) -> Error {
    path_error_in(label, e, Some(text))
}

fn path_error_in<E: std::fmt::Display>(
    label: &str,
    e: serde_path_to_error::Error<E>,
    yaml: Option<&str>,
) -> Error {
    let path = e.path().to_string();
    // `?` stands for a place the parser could not name (a syntax error inside a mapping).
    let path = path
        .trim_end_matches(".?")
        .trim_end_matches('?')
        .to_string();
    let mut path = if path == "." { String::new() } else { path };
    // Deep nesting gives paths of hundreds of `[0]`; the start says where it went wrong.
    if path.len() > 120 {
        let mut cut = 100;
        while !path.is_char_boundary(cut) {
            cut -= 1;
        }
        path = format!("{}…", &path[..cut]);
    }
    let mut message = e.inner().to_string().replace('\n', " ");
    // serde_yaml already prefixes the path; keep it once.
    if let Some(rest) = message.strip_prefix(&format!("{path}: ")) {
        message = rest.to_string();
    }
    if path.is_empty() {
        message = without_value(&message);
    }
    if let Some(hint) = did_you_mean(&message) {
        message.push_str(&hint);
    }
    if let Some(hint) = yaml.and_then(|text| tab_at(&message, text)) {
        message.push_str(&hint);
    }
    Error::input(label, path, message)
}

/// `; did you mean `topic`?` for serde's "unknown field `topik`, expected one of `topic`, …".
fn did_you_mean(message: &str) -> Option<String> {
    let rest = message.split("unknown field `").nth(1)?;
    let (given, rest) = rest.split_once('`')?;
    let expected = rest.split_once("expected")?.1;
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let best = crate::text::closest(given, names.iter().copied())?;
    Some(format!("; did you mean `{best}`?"))
}

/// `; line 3 starts with a tab: YAML indents with spaces only` when the error's line (`at line
/// N column M`) holds a tab before that column.
fn tab_at(message: &str, text: &str) -> Option<String> {
    let at = message.split("at line ").nth(1)?;
    let (line, rest) = at.split_once(" column ")?;
    let line: usize = line.trim().parse().ok()?;
    let column: usize = rest
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    let l = text.lines().nth(line.checked_sub(1)?)?;
    l.chars()
        .take(column.max(1))
        .any(|c| c == '\t')
        .then(|| format!("; line {line} has a tab: YAML indents with spaces only"))
}

/// A whole document of the wrong type is no document of ours (a token file where a config
/// belongs): say what type it is, never what it says (`invalid type: string "sk-…", expected
/// struct AgentConfig` → `invalid type: string, expected struct AgentConfig`).
fn without_value(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        let Some(rest) = message.strip_prefix(prefix) else {
            continue;
        };
        let Some(end) = rest.rfind(", expected ") else {
            continue;
        };
        let kind = rest.split([' ', ',']).next().unwrap_or_default();
        return format!("{prefix}{kind}{}", &rest[end..]);
    }
    message.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MeetingInput;

    /// A misspelt field gets the closest name; a tab where YAML wants spaces is named; a
    /// place the parser could not name is no `.?` in the path.
    #[test]
    fn yaml_mistakes_are_explained() {
        let e = parse_doc::<MeetingInput>("m.yaml", "topik: x\n", Format::Yaml)
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("; did you mean `topic`?"), "{e}");
        let e = parse_doc::<MeetingInput>("m.yaml", "zzzzzzzzzz: x\n", Format::Yaml)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("did you mean"), "{e}");
        let tab = "topic: x\ndecision_packet:\n\tdecision_to_make: y\n";
        let e = parse_doc::<MeetingInput>("m.yaml", tab, Format::Yaml)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 3 has a tab: YAML indents with spaces only"),
            "{e}"
        );
        let bad = "topic: x\ndecision_packet:\n  options:\n    - a\n   - b\n";
        let e = parse_doc::<MeetingInput>("m.yaml", bad, Format::Yaml)
            .unwrap_err()
            .to_string();
        assert!(!e.contains(".?") && !e.contains("tab"), "{e}");
    }

    #[test]
    fn versioned_fast_path_agrees_with_the_checked_path() {
        #[derive(Debug, PartialEq, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Doc {
            v: u32,
            name: String,
        }
        let parse = |t: &str| parse_versioned::<Doc>("x", t, "v", 1);
        let ok = Doc {
            v: 1,
            name: "a\"b".into(),
        };
        assert_eq!(parse(r#"{"name": "a\"b", "v": 1}"#).unwrap(), ok);
        // A duplicate key is refused on both paths.
        let e = parse(r#"{"v": 2, "name": "a\"b", "v": 1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("duplicate key \"v\""), "{e}");
        let e = parse(r#"{"v": 1, "name": "a", "v": 2}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("version 2 is not supported"), "{e}");
        let e = parse(r#"{"v": 1, "name": "a", "extra": 0}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("extra"), "{e}");
        let e = parse(r#"{"v": 1, "name": "a"} trailing"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not valid JSON"), "{e}");
        assert!(parse("[1]")
            .unwrap_err()
            .to_string()
            .contains("expected a JSON object"));
    }

    #[test]
    fn yaml_error_names_field_path() {
        let e = parse_doc::<MeetingInput>(
            "m.yaml",
            "topic: t\ndecision_packet: {decision_to_make: d}\ncontext_sources: [{type: file, path: a, max_files: x}]\n",
            Format::Yaml,
        )
        .unwrap_err();
        let s = e.to_string();
        assert!(
            s.starts_with("m.yaml: context_sources[0].max_files: "),
            "{s}"
        );
    }

    #[test]
    fn unknown_field_refused() {
        let e = parse_doc::<MeetingInput>(
            "m.json",
            r#"{"topic":"t","decision_packet":{"decision_to_make":"d"},"topik":1}"#,
            Format::Json,
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `topik`"), "{e}");
    }

    #[test]
    fn version_checked_first() {
        let e = parse_versioned::<crate::model::MeetingPacket>(
            "p",
            r#"{"packet_version":2}"#,
            "packet_version",
            1,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "p: packet_version: version 2 is not supported (expected 1)"
        );
    }
    #[test]
    fn a_document_of_another_kind_is_named() {
        let e = parse_board("<stdin>", r#"{"packet_version": 1}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "<stdin>: this is a MeetingPacket (collect-context's output), not a Board: pipe it into init-board"
        );
        // Versioned files that are not passed between programs keep the version message.
        let e = parse_versioned::<crate::model::Board>(
            "m",
            r#"{"board_version": 1}"#,
            "settings_version",
            2,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "m: settings_version: missing (expected 2)");
    }
}
