//! The library's layers (src/lib.rs, docs/ARCHITECTURE.md#module-map-where-each-rule-lives):
//! no module imports from a layer above its own, and no two files of a folder import each
//! other round in a circle. Read from the source: every `crate::…` and `super::…` path outside
//! comments and test modules, `use` groups expanded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::harness::root;

/// The layers, bottom to top; a module may import its own layer and those below.
const LAYERS: [&[&str]; 8] = [
    &["text", "error"],
    &["schema", "model", "io"],
    &["llm"],
    &["loader", "context"],
    &["meeting"],
    &["stage", "otlp"],
    &["cli"],
    &["driver"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The library's source files (the programs in `src/bin/` are above every layer).
fn sources() -> Vec<PathBuf> {
    let src = root().join("src");
    walkdir::WalkDir::new(&src)
        .into_iter()
        .flatten()
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter(|p| !p.starts_with(src.join("bin")) && p != &src.join("lib.rs"))
        .collect()
}

/// The code of a file that ships: line comments and the test module left out (tests may reach
/// for fixtures anywhere).
fn shipped_code(text: &str) -> String {
    let tests = regex::Regex::new(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))? )?mod tests").unwrap();
    let text = match tests.find(text) {
        Some(m) => &text[..m.start()],
        None => text,
    };
    text.lines()
        .map(|l| l.split_once("//").map_or(l, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path a file names from `crate::` or `super::`, groups expanded: `crate::a::{b, c::d}`
/// gives `crate::a::b` and `crate::a::c::d`.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let re = regex::Regex::new(r"\b(crate|super)((?:::(?:\w+|\{))*)").unwrap();
    for m in re.find_iter(code) {
        let text = m.as_str();
        match text.strip_suffix('{') {
            Some(prefix) => {
                let body = group_body(&code[m.end()..]);
                expand(prefix.trim_end_matches(':'), body, &mut out);
            }
            None => out.push(text.to_string()),
        }
    }
    out
}

/// The text up to the `}` closing a group whose `{` was just read.
fn group_body(rest: &str) -> &str {
    let mut depth = 1;
    for (i, c) in rest.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &rest[..i];
                }
            }
            _ => {}
        }
    }
    rest
}

fn expand(prefix: &str, body: &str, out: &mut Vec<String>) {
    let (mut depth, mut start) = (0, 0);
    let mut items = Vec::new();
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&body[start..]);
    for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        let item = item.split(" as ").next().unwrap_or(item).trim();
        match item.split_once('{') {
            Some((head, rest)) => {
                let rest = rest.strip_suffix('}').unwrap_or(rest);
                expand(
                    &format!("{prefix}::{}", head.trim_end_matches(':')),
                    rest,
                    out,
                );
            }
            None if item == "self" => out.push(prefix.to_string()),
            None => out.push(format!("{prefix}::{item}")),
        }
    }
}

/// The module folder a file's `super` names, and its own module path under `src/`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root().join("src")).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The source file a module path (`["llm", "resolve", "Setting"]`) lives in: the longest
/// prefix that is a file.
fn file_of(segments: &[String]) -> Option<PathBuf> {
    let src = root().join("src");
    (1..=segments.len()).rev().find_map(|n| {
        let base = segments[..n].iter().fold(src.clone(), |p, s| p.join(s));
        let file = base.with_extension("rs");
        let module = base.join("mod.rs");
        [file, module].into_iter().find(|f| f.is_file())
    })
}

/// Each file's imports of other files.
type FileGraph = BTreeMap<PathBuf, BTreeSet<PathBuf>>;
/// Each import of a top-level module, by the file that makes it.
type ModuleImports = Vec<(PathBuf, String)>;

/// The file-to-file imports and the module-level imports of the library.
fn graph() -> (FileGraph, ModuleImports) {
    let mut files: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    let mut modules = Vec::new();
    for file in sources() {
        let code = shipped_code(&std::fs::read_to_string(&file).unwrap());
        let here = module_of(&file);
        let is_mod = file.ends_with("mod.rs");
        let edges = files.entry(file.clone()).or_default();
        for path in paths(&code) {
            let mut segs: Vec<String> = path.split("::").map(str::to_string).collect();
            let absolute: Vec<String> = match segs[0].as_str() {
                "crate" => segs.split_off(1),
                _ => {
                    // `super` from a mod.rs is the folder's parent; from a file, its folder.
                    let mut base = here.clone();
                    if !is_mod {
                        base.pop();
                    }
                    let mut rest = segs.as_slice();
                    while rest.first().is_some_and(|s| s == "super") {
                        rest = &rest[1..];
                        if rest.first().is_some_and(|s| s == "super") {
                            base.pop();
                        }
                    }
                    if is_mod {
                        base.pop();
                    }
                    base.extend(rest.iter().cloned());
                    base
                }
            };
            let Some(top) = absolute.first() else {
                continue;
            };
            modules.push((file.clone(), top.clone()));
            if let Some(target) = file_of(&absolute) {
                // A folder's mod.rs is its re-export hub, not a rule a child depends on.
                let hub = target.ends_with("mod.rs") && file.starts_with(target.parent().unwrap());
                if target != file && !hub {
                    edges.insert(target);
                }
            }
        }
    }
    (files, modules)
}

/// No module imports from a layer above its own; every module is in a layer.
#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let (_, modules) = graph();
    let mut wrong = BTreeSet::new();
    for (file, target) in &modules {
        let here = &module_of(file)[0];
        let from = layer(here).unwrap_or_else(|| {
            panic!("src/{here} is in no layer: add it to LAYERS and src/lib.rs's map")
        });
        // Macros exported at the crate root (`note!`) are io's.
        let Some(to) = layer(target) else {
            continue;
        };
        if to > from {
            let shown = file.strip_prefix(root()).unwrap().display().to_string();
            wrong.insert(format!(
                "{shown} imports crate::{target} (layer {to} above {from})"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "upward imports:\n{}",
        Vec::from_iter(wrong).join("\n")
    );
}

/// No circle of imports between files: each file's rules can be read bottom-up.
#[test]
fn no_circle_of_imports_between_files() {
    let (files, _) = graph();
    let mut circles = BTreeSet::new();
    for start in files.keys() {
        // Depth-first from `start`: a path back to it is a circle.
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for next in files.get(&at).into_iter().flatten() {
                if next == start {
                    let mut names: Vec<String> = path
                        .iter()
                        .map(|p| p.strip_prefix(root()).unwrap().display().to_string())
                        .collect();
                    let min = names
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, n)| (*n).clone())
                        .unwrap()
                        .0;
                    names.rotate_left(min);
                    circles.insert(names.join(" → "));
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        Vec::from_iter(circles).join("\n")
    );
}

/// The reader itself: groups, `self`, renames and `super` resolve as the compiler reads them.
#[test]
fn the_import_reader_expands_groups() {
    let code = "use crate::meeting::{ask, events::{self, Clock}, review as r};\nlet x = super::outcome::plural(1);";
    assert_eq!(
        paths(code),
        [
            "crate::meeting::ask",
            "crate::meeting::events",
            "crate::meeting::events::Clock",
            "crate::meeting::review",
            "super::outcome::plural"
        ]
    );
}
