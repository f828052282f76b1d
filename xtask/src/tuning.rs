//! The tuning corpus: self-supervised question → symbol pairs from pinned npm packages
//! (`xtask/tuning-corpus.toml`).
//!
//! A question is the first sentence of a symbol's JSDoc; the target is that symbol. The
//! copy that gets indexed has those doc comments blanked (every character but line breaks
//! becomes a space), so line numbers are kept and the answer is not a word-for-word match of
//! the question. Everything is built at run time into the user cache
//! (`<cache>/codectx/tuning/<package>-<version>-v<BUILDER_VERSION>/`): the questions' text is
//! the packages' own and is never committed.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use codectx_parser::{ParsedSymbol, SymbolKind};
use serde::{Deserialize, Serialize};

/// Bump when the questions or the blanked copy would come out differently: the cache is
/// keyed by it.
const BUILDER_VERSION: u32 = 3;

/// Questions kept per package at most (a deterministic sample by id hash), so that large
/// packages do not take the run time while the macro-average weighs packages equally anyway.
pub const DEFAULT_CAP: usize = 200;

/// Which half of the corpus a package belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Ranking changes may be tuned on these packages.
    Tune,
    /// Judges a change: it is kept only if this half's macro-average improves.
    Test,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Tune => "tune",
            Split::Test => "test",
        }
    }
}

/// One pinned package of the pin list.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    pub name: String,
    pub version: String,
    /// Directory of the package indexed, relative to the package root.
    pub root: String,
    #[serde(default)]
    pub exclude: Vec<String>,
    pub split: Split,
    /// What kind of code it is (documentation only).
    #[allow(dead_code)]
    pub style: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PinList {
    package: Vec<Pin>,
}

/// Reads the pin list.
pub fn read_pins(path: &Path) -> anyhow::Result<Vec<Pin>> {
    Ok(read_toml::<PinList>(path)?.package)
}

/// A TOML file of this workspace's own (a pin list), with its path in any error.
pub fn read_toml<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    toml::from_str(&text).with_context(|| path.display().to_string())
}

/// Writes questions one JSON object per line (what [`read_questions`] reads).
pub fn write_questions(path: &Path, questions: &[Question]) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for q in questions {
        writeln!(out, "{}", serde_json::to_string(q)?)?;
    }
    out.flush()?;
    Ok(())
}

/// The questions of `path`, at most `cap` of them: a deterministic sample, the same ids on
/// every machine whatever the cap, in id order.
pub fn read_questions(path: &Path, cap: usize) -> anyhow::Result<Vec<Question>> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let mut questions: Vec<Question> = text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    questions.sort_by_key(|q| *blake3::hash(q.id.as_bytes()).as_bytes());
    questions.truncate(cap);
    questions.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(questions)
}

/// One question: its text, and the symbol that answers it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Question {
    pub id: String,
    pub query: String,
    /// The question spells out the target's own name.
    pub leaky: bool,
    pub gold: Vec<Gold>,
}

/// A symbol an answer must contain.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Gold {
    pub file: String,
    pub qname: String,
    pub start: u32,
    pub end: u32,
}

/// A built package: the blanked copy to index and its questions.
pub struct BuiltPackage {
    pub pin: Pin,
    /// Root of the blanked copy (index this).
    pub source: PathBuf,
    /// Where the package's index and run files go.
    pub work: PathBuf,
    pub questions: Vec<Question>,
}

/// Fetches (once) and builds (once) every package of the pin list.
pub fn build(pins: &[Pin], cap: usize) -> anyhow::Result<Vec<BuiltPackage>> {
    pins.iter().map(|pin| build_package(pin, cap)).collect()
}

fn build_package(pin: &Pin, cap: usize) -> anyhow::Result<BuiltPackage> {
    let cache = codectx_corpus::cache_dir()
        .parent()
        .context("corpus cache has a parent")?
        .join("tuning");
    let work = cache.join(format!(
        "{}-{}-v{BUILDER_VERSION}",
        pin.name.replace('/', "+"),
        pin.version
    ));
    let source = work.join("src");
    let questions_file = work.join("questions.jsonl");
    let done = work.join(".complete");
    if !done.exists() {
        let package = codectx_corpus::npm_package(&pin.name, &pin.version);
        let root = package.join(&pin.root);
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&source)?;
        let questions = blank_and_ask(pin, &root, &source)?;
        write_questions(&questions_file, &questions)?;
        std::fs::write(&done, "")?;
    }
    // The package's manifest, which says what the project is called (`project_names`):
    // not a source file, so the index is the same with or without it.
    let manifest = source.join("package.json");
    if !manifest.exists() {
        let package = codectx_corpus::try_npm_package(&pin.name, &pin.version)
            .map_err(|e| anyhow::anyhow!(e))?;
        std::fs::copy(package.join("package.json"), &manifest)
            .with_context(|| format!("copying {}'s package.json", pin.name))?;
    }
    Ok(BuiltPackage {
        pin: pin.clone(),
        questions: read_questions(&questions_file, cap)?,
        source,
        work,
    })
}

/// Copies every source file of `root` into `dest` with the doc comments that become
/// questions blanked, and returns the questions.
fn blank_and_ask(pin: &Pin, root: &Path, dest: &Path) -> anyhow::Result<Vec<Question>> {
    let files = crate::source_files(&[root.to_path_buf()])?;
    let mut questions = Vec::new();
    for (path, relative) in files {
        if pin.exclude.iter().any(|e| relative.contains(e.as_str()))
            || codectx_files::is_declaration_file(&relative)
        {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let target = dest.join(&relative);
        std::fs::create_dir_all(target.parent().context("file has a parent")?)?;
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let mut out = text.clone();
        if !codectx_retrieval::is_test_file(&relative) {
            let parsed = codectx_parser::parse_source(&relative, &text);
            let mut seen: HashSet<String> = HashSet::new();
            for (symbol, qname) in qualified(&parsed.symbols) {
                if !is_target(symbol.kind) || !seen.insert(qname.clone()) {
                    continue;
                }
                let (_, code_start) = leading_comments(&text, symbol.span.start as usize);
                let Some((doc_start, doc_end)) = jsdoc_before(&text, code_start) else {
                    continue;
                };
                let jsdoc = codectx_parser::clean_jsdoc(&text[doc_start..doc_end]);
                let Some(query) = first_sentence(&jsdoc) else {
                    continue;
                };
                blank(&mut out, doc_start, doc_end);
                let leaky = mentions(&query, &symbol.name);
                questions.push(Question {
                    id: format!("{}:{relative}:{qname}", pin.name),
                    query,
                    leaky,
                    gold: vec![Gold {
                        file: relative.clone(),
                        qname,
                        start: parsed.lines.line_of(code_start as u32),
                        end: symbol.range.end,
                    }],
                });
            }
        }
        std::fs::write(&target, out)?;
    }
    // A question asked twice in a package (overloads, copied docs) has no single answer.
    let mut count: HashMap<String, usize> = HashMap::new();
    for q in &questions {
        *count.entry(q.query.to_lowercase()).or_default() += 1;
    }
    questions.retain(|q| count[&q.query.to_lowercase()] == 1);
    Ok(questions)
}

/// Function-level targets, and the documents of the BM25 baseline: functions, methods,
/// accessors, classes, components, and variables (ramda's `var add = _curry2(function …)`
/// is a function in all but syntax).
pub fn is_target(kind: SymbolKind) -> bool {
    matches!(
        kind,
        SymbolKind::Function
            | SymbolKind::Method
            | SymbolKind::Getter
            | SymbolKind::Setter
            | SymbolKind::Class
            | SymbolKind::Component
            | SymbolKind::Variable
            | SymbolKind::Const
    )
}

/// Every named symbol with its qualified name (`Class.method`), parents first. Unnamed
/// functions and root items are skipped but their children keep the named path.
pub fn qualified(symbols: &[ParsedSymbol]) -> Vec<(&ParsedSymbol, String)> {
    fn walk<'s>(
        symbols: &'s [ParsedSymbol],
        prefix: &str,
        out: &mut Vec<(&'s ParsedSymbol, String)>,
    ) {
        for s in symbols {
            let named = !s.kind.is_root_item() && !s.naming.is_made_up();
            let qname = if !named {
                prefix.to_string()
            } else if prefix.is_empty() {
                s.name.clone()
            } else {
                format!("{prefix}.{}", s.name)
            };
            if named {
                out.push((s, qname.clone()));
            }
            walk(&s.children, &qname, out);
        }
    }
    let mut out = Vec::new();
    walk(symbols, "", &mut out);
    out
}

/// The comments leading a declaration whose extent starts at `from`: the byte range of the
/// JSDoc comment nearest the code, if any, and where the code starts.
pub fn leading_comments(text: &str, from: usize) -> (Option<(usize, usize)>, usize) {
    let bytes = text.as_bytes();
    let mut i = from;
    let mut jsdoc = None;
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let rest = &text[i..];
        if let Some(body) = rest.strip_prefix("/*") {
            let Some(close) = body.find("*/") else {
                return (jsdoc, i);
            };
            let end = i + 2 + close + 2;
            if rest.starts_with("/**") && !rest.starts_with("/**/") {
                jsdoc = Some((i, end));
            }
            i = end;
        } else if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else {
            return (jsdoc, i);
        }
    }
}

/// The JSDoc comment right before the code at `code_start`, with only whitespace between —
/// blank lines included, as TypeScript attaches JSDoc (koa separates each comment from its
/// member by a blank line). `(start, end)` of the comment.
pub(crate) fn jsdoc_before(text: &str, code_start: usize) -> Option<(usize, usize)> {
    let before = text[..code_start].trim_end();
    let end = before.len();
    if !before.ends_with("*/") {
        return None;
    }
    let start = before[..end - 2].rfind("/*")?;
    let comment = &text[start..end];
    (comment.starts_with("/**") && !comment.starts_with("/**/")).then_some((start, end))
}

/// Replaces `text[start..end]` with spaces, keeping its line breaks and its length in bytes
/// (a character becomes as many spaces as it has bytes): the other comments of the file are
/// blanked at offsets taken from the original text.
fn blank(text: &mut String, start: usize, end: usize) {
    let mut blanked = String::with_capacity(end - start);
    for c in text[start..end].chars() {
        if c == '\n' || c == '\r' {
            blanked.push(c);
        } else {
            blanked.extend(std::iter::repeat_n(' ', c.len_utf8()));
        }
    }
    text.replace_range(start..end, &blanked);
}

/// Whether `question` spells out `name` as a word (case-insensitive), or quotes code.
fn mentions(question: &str, name: &str) -> bool {
    question.contains('`')
        || (name.len() >= 3
            && question
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                .any(|w| w.eq_ignore_ascii_case(name)))
}

/// The first sentence of a cleaned JSDoc text (the description before any tag, else the
/// `@summary` or `@description` tag's), with inline `{@link X}` written as `X`. `None` when
/// it is too short or too long to be a question.
pub fn first_sentence(jsdoc: &str) -> Option<String> {
    let mut description = String::new();
    for line in jsdoc.lines() {
        if line.trim_start().starts_with('@') {
            break;
        }
        description.push_str(line);
        description.push('\n');
    }
    if description.trim().is_empty() {
        description = ["@summary", "@description"].iter().find_map(|tag| {
            let at = jsdoc.find(tag)?;
            let rest = &jsdoc[at + tag.len()..];
            let end = rest.find("\n@").unwrap_or(rest.len());
            Some(rest[..end].to_string())
        })?;
    }
    // The first paragraph, then its first sentence.
    let paragraph = description
        .trim()
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .to_string();
    let paragraph = inline_links(&paragraph);
    let words: Vec<&str> = paragraph.split_whitespace().collect();
    let mut sentence = Vec::new();
    for word in &words {
        sentence.push(*word);
        let abbreviation = matches!(
            word.to_lowercase().as_str(),
            "e.g." | "i.e." | "etc." | "vs." | "cf." | "approx."
        );
        if !abbreviation && (word.ends_with('.') || word.ends_with('?') || word.ends_with('!')) {
            break;
        }
    }
    let sentence = sentence.join(" ");
    let sentence = sentence.trim_end_matches(['.', ':']).trim().to_string();
    let n = sentence.split_whitespace().count();
    let letters = sentence.chars().filter(|c| c.is_alphabetic()).count();
    let boilerplate = [
        "todo",
        "fixme",
        "eslint",
        "istanbul",
        "copyright",
        "@",
        "http",
    ]
    .iter()
    .any(|b| sentence.to_lowercase().starts_with(b));
    (3..=40).contains(&n).then_some(())?;
    (letters >= 10 && !boilerplate).then_some(sentence)
}

/// `{@link X}`, `{@link X text}`, `{@link X|text}`, `{@linkcode X}` → the link's text or X.
fn inline_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("{@link") {
        out.push_str(&rest[..at]);
        let Some(close) = rest[at..].find('}') else {
            rest = &rest[at..];
            break;
        };
        let inner = rest[at + 1..at + close]
            .split_once(char::is_whitespace)
            .map(|x| x.1);
        let inner = inner.unwrap_or("").trim();
        let shown = match inner.split_once('|').or_else(|| inner.split_once(' ')) {
            Some((_, label)) => label.trim(),
            None => inner,
        };
        out.push_str(shown);
        rest = &rest[at + close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentence_of_a_description() {
        assert_eq!(
            first_sentence("Creates an array of elements split into groups. If array can't be split.\n\n@param x").as_deref(),
            Some("Creates an array of elements split into groups")
        );
        assert_eq!(
            first_sentence("@name addDays\n@summary Add the specified number of days to the given date.\n\n@description more").as_deref(),
            Some("Add the specified number of days to the given date")
        );
        assert_eq!(
            first_sentence("Returns the {@link Observable} as a promise, e.g. for await. More.")
                .as_deref(),
            Some("Returns the Observable as a promise, e.g. for await")
        );
        assert_eq!(first_sentence("The id."), None);
        assert_eq!(first_sentence("@param a"), None);
    }

    #[test]
    fn nearest_jsdoc_is_blanked_keeping_lines() {
        let text = "/** Header. */\n// eslint-disable\n/**\n * Adds.\n */\n\nfunction add() {}\n";
        let (_, code) = leading_comments(text, 0);
        let (s, e) = jsdoc_before(text, code).unwrap();
        assert_eq!(&text[code..code + 8], "function");
        let mut out = text.to_string();
        blank(&mut out, s, e);
        assert_eq!(out.lines().count(), text.lines().count());
        assert!(!out.contains("Adds"));
        assert!(out.contains("Header"));
        // Multi-byte characters keep their width in bytes: later offsets stay valid.
        let text = "/** Café… */\nfunction a() {}\n/** B. */\nfunction b() {}\n";
        let mut out = text.to_string();
        blank(&mut out, 0, "/** Café… */".len());
        assert_eq!(out.len(), text.len());
        let b = text.find("/** B").unwrap();
        blank(&mut out, b, b + 9);
        assert!(out.contains("function a() {}\n") && out.contains("\nfunction b() {}"));
        assert!(!out.contains("/*"));
    }
}
