//! The YAML budget (docs/design/flow.md#yaml-budget): a YAML document is walked once, its
//! aliases replayed as any reader would replay them, and refused above a bound before anything
//! is built from it. An alias repeats its anchor's whole node, so a small file of nested
//! aliases ("billion laughs") expands to more nodes than memory holds; the walk stops counting
//! at the bound, so its cost is bounded whatever the file says.

use std::cell::Cell;

use serde::de::{self, DeserializeSeed, Deserializer, Visitor};

use crate::error::{Error, Result};

/// Largest YAML document read (meeting files, agent configs, the config file): far above any
/// real one, far below what the parser's event list costs in memory.
pub(crate) const MAX_YAML_BYTES: usize = 4 * 1024 * 1024;

/// Most nodes (scalars, sequences, mappings, keys included) a YAML document may hold with its
/// aliases expanded. A meeting file or agent config holds hundreds.
pub(crate) const MAX_YAML_NODES: u64 = 100_000;

/// Most text (keys and values) a YAML document may hold with its aliases expanded: twice the
/// largest file, so a document without aliases never reaches it.
pub(crate) const MAX_YAML_TEXT: u64 = 2 * MAX_YAML_BYTES as u64;

/// Refuse (exit 2, naming `label`) a YAML document above the budget. A document the walk cannot
/// read passes: the parse that follows reports what is wrong with it, as it always did.
pub(crate) fn check_yaml_budget(label: &str, text: &str) -> Result<()> {
    if text.len() > MAX_YAML_BYTES {
        return Err(Error::input(
            label,
            "",
            format!(
                "YAML document of {} bytes is larger than the {} MiB a YAML input may be",
                text.len(),
                MAX_YAML_BYTES >> 20
            ),
        ));
    }
    if exceeds_budget(text) {
        return Err(Error::input(
            label,
            "",
            format!(
                "more than {MAX_YAML_NODES} YAML nodes or {} MiB of text once its aliases are \
                 expanded, the most a YAML input may hold (an alias bomb?)",
                MAX_YAML_TEXT >> 20
            ),
        ));
    }
    Ok(())
}

/// Whether `text` expands to more than the budget; `false` also when it is not readable YAML.
/// The parser's own guard (alias jumps above a hundred times the document's events) counts as
/// over the budget too: it is the same attack, seen earlier in a small file.
pub(crate) fn exceeds_budget(text: &str) -> bool {
    let spent = Spent::default();
    let walked = Walk(&spent).deserialize(serde_yaml::Deserializer::from_str(text));
    spent.over.get() || walked.is_err_and(|e| e.to_string().contains("repetition limit exceeded"))
}

/// What the walk has counted so far.
#[derive(Default)]
struct Spent {
    nodes: Cell<u64>,
    text: Cell<u64>,
    over: Cell<bool>,
}

impl Spent {
    /// Count one node of `bytes` bytes of text; an error (which stops the walk) above the budget.
    fn add<E: de::Error>(&self, bytes: usize) -> std::result::Result<(), E> {
        self.nodes.set(self.nodes.get() + 1);
        self.text.set(self.text.get().saturating_add(bytes as u64));
        if self.nodes.get() > MAX_YAML_NODES || self.text.get() > MAX_YAML_TEXT {
            self.over.set(true);
            return Err(E::custom("over the YAML budget"));
        }
        Ok(())
    }
}

/// Walks any node, counting it and everything under it.
#[derive(Clone, Copy)]
struct Walk<'s>(&'s Spent);

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML node")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<(), E> {
        self.0.add(1)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<(), E> {
        self.0.add(8)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<(), E> {
        self.0.add(8)
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> std::result::Result<(), E> {
        self.0.add(16)
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> std::result::Result<(), E> {
        self.0.add(16)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<(), E> {
        self.0.add(8)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<(), E> {
        self.0.add(v.len())
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> std::result::Result<(), E> {
        self.0.add(v.len())
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
        self.0.add(0)
    }
    fn visit_none<E: de::Error>(self) -> std::result::Result<(), E> {
        self.0.add(0)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        self.deserialize(d)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> std::result::Result<(), A::Error> {
        self.0.add(0)?;
        while a.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut a: A) -> std::result::Result<(), A::Error> {
        self.0.add(0)?;
        while a.next_key_seed(self)?.is_some() {
            a.next_value_seed(self)?;
        }
        Ok(())
    }
    // YAML tagged values (`!tag x`) arrive as enums.
    fn visit_enum<A: de::EnumAccess<'de>>(self, a: A) -> std::result::Result<(), A::Error> {
        use de::VariantAccess;
        let (_, variant) = a.variant_seed(self)?;
        variant.newtype_variant_seed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `levels` anchors, each a list of ten aliases of the one before: 10^levels nodes.
    fn laughs(levels: usize) -> String {
        let mut t = String::from("a0: &a0 \"lol\"\n");
        for i in 1..=levels {
            let items = vec![format!("*a{}", i - 1); 10].join(", ");
            t.push_str(&format!("a{i}: &a{i} [{items}]\n"));
        }
        t
    }

    #[test]
    fn nested_aliases_over_the_budget_are_refused_small_ones_pass() {
        assert!(!exceeds_budget(&laughs(3)), "a thousand nodes");
        assert!(exceeds_budget(&laughs(9)), "a billion nodes");
        let e = check_yaml_budget("m.yaml", &laughs(9))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m.yaml: more than 100000 YAML nodes"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn long_text_repeated_by_aliases_counts_by_its_length() {
        let long = "x".repeat(1 << 20);
        let mut t = format!("s: &s \"{long}\"\nl: [");
        t.push_str(&vec!["*s"; 20].join(", "));
        t.push_str("]\n");
        assert!(exceeds_budget(&t), "20 MiB of text from 1 MiB");
        let t = format!("s: &s \"{long}\"\nl: [*s, *s]\n");
        assert!(!exceeds_budget(&t), "3 MiB of text");
    }

    #[test]
    fn a_file_above_the_size_bound_is_refused_and_bad_yaml_is_left_to_the_parser() {
        let big = format!("k: \"{}\"\n", "x".repeat(MAX_YAML_BYTES));
        let e = check_yaml_budget("c.yaml", &big).unwrap_err().to_string();
        assert!(e.contains("larger than the 4 MiB"), "{e}");
        assert!(check_yaml_budget("c.yaml", "a: [\n").is_ok());
        assert!(check_yaml_budget("c.yaml", "a: *nowhere\n").is_ok());
    }
}
