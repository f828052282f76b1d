//! Phase 1 of the pipeline (files → **parser** → chunker → graph → store → retrieval → mcp):
//! turn one source file into a hierarchical [`ParsedSymbol`] tree: TypeScript and
//! JavaScript with oxc, Rust, Python and Go with tree-sitter's grammars (`grammars`).
//!
//! The tree has one root item per top-level statement (declarations, imports, expressions,
//! re-exports, control flow) and per standalone comment block, so that every non-blank line
//! of the file belongs to exactly one root item. Declarations nest: class → method → nested
//! function → callback. Each symbol carries its kind, modifiers, signature as written,
//! JSDoc, 1-indexed line range and byte span. Import bindings come with the offsets of the
//! references oxc_semantic resolved to them, so later phases can tell which imports a
//! symbol really uses.
//!
//! The parser never fails on source text: syntax errors yield what oxc recovered plus
//! [`Diagnostic`]s. Only reading a file can fail ([`read_source`]).
//!
//! ```
//! let parsed = codectx_parser::parse_source(
//!     "src/auth.ts",
//!     "import jwt from 'jsonwebtoken';\nexport async function verify(t: string): Promise<boolean> {\n  return !!jwt.decode(t);\n}\n",
//! );
//! let verify = &parsed.symbols[1];
//! assert_eq!(verify.name, "verify");
//! assert_eq!(verify.signature, "async function verify(t: string): Promise<boolean>");
//! assert_eq!((verify.range.start, verify.range.end), (2, 4));
//! assert_eq!(parsed.imports[0].reference_offsets.len(), 1);
//! ```

mod comments;
pub mod commonjs;
mod extract;
mod grammars;
mod lines;
mod symbol;

use std::path::Path;

use oxc_allocator::Allocator;
use oxc_parser::{ParseOptions, Parser};
use oxc_semantic::SemanticBuilder;
use oxc_span::SourceType;
use serde::{Deserialize, Serialize};

pub use comments::clean_jsdoc;
pub use extract::{one_line, property_key_name};
pub use lines::LineIndex;
pub use symbol::{
    ByteSpan, CallHead, CallSyntax, Diagnostic, ImportInfo, LineRange, Modifier, Naming,
    ParseStatus, ParsedFile, ParsedSymbol, SymbolKind,
};

/// The name of a function nothing names: neither a declaration, a variable, a property nor
/// its own `function id` ([`Naming::Anonymous`]).
pub const ANONYMOUS: &str = "anonymous";

/// What ends the name of a function passed as an argument ([`Naming::Callback`]):
/// `items.forEach callback`, `new Promise callback`.
pub const CALLBACK_SUFFIX: &str = " callback";

/// File extensions the parser accepts.
pub const EXTENSIONS: &[&str] = &[
    "ts", "tsx", "js", "jsx", "mts", "mjs", "cts", "cjs", "rs", "py", "go",
];

/// The language (for TS/JS, the dialect) of a file, from its extension. TS/JS is parsed by
/// oxc; Rust, Python and Go by tree-sitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    TypeScript,
    Tsx,
    JavaScript,
    Jsx,
    Rust,
    Python,
    Go,
}

impl Language {
    /// The language of `path` by extension, or `None` if the parser does not handle it.
    pub fn from_path(path: impl AsRef<Path>) -> Option<Language> {
        let ext = path.as_ref().extension()?.to_str()?;
        Some(match ext {
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "js" | "mjs" | "cjs" => Language::JavaScript,
            "jsx" => Language::Jsx,
            "rs" => Language::Rust,
            "py" => Language::Python,
            "go" => Language::Go,
            _ => return None,
        })
    }

    pub fn is_typescript(self) -> bool {
        matches!(self, Language::TypeScript | Language::Tsx)
    }

    /// Whether oxc parses it (TS/JS), so that a parse has an oxc program.
    pub fn is_oxc(self) -> bool {
        !grammars::handles(self)
    }

    /// Whether one function may be declared several times in one scope as overloads: TS's
    /// overload signatures, Python's `@typing.overload` stubs. In Rust and Go two functions
    /// of one name in one file are always two (a `fmt` per `impl` block).
    pub fn has_overloads(self) -> bool {
        !matches!(self, Language::Rust | Language::Go)
    }
}

/// The languages a `languages` filter can name, each with its file extensions.
pub const LANGUAGE_FILTERS: &[(&str, &[&str])] = &[
    ("typescript", &["ts", "tsx", "mts", "cts"]),
    ("javascript", &["js", "jsx", "mjs", "cjs"]),
    ("rust", &["rs"]),
    ("python", &["py"]),
    ("go", &["go"]),
];

/// The file extensions of the language a filter names (`typescript` or `ts`, `python` or
/// `py`…, any case); `None` for a language the parser does not read.
pub fn extensions_named(name: &str) -> Option<&'static [&'static str]> {
    let name = name.to_ascii_lowercase();
    let name = match name.as_str() {
        "ts" => "typescript",
        "js" => "javascript",
        "rs" => "rust",
        "py" => "python",
        "golang" => "go",
        other => other,
    };
    LANGUAGE_FILTERS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, extensions)| *extensions)
}

/// Why a file could not be read as source text.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a supported source file (supported extensions: {})", EXTENSIONS.join(", "))]
    UnsupportedExtension { path: String },
    #[error("{path}: binary file (NUL byte at offset {offset})")]
    Binary { path: String, offset: usize },
    #[error("{path}: not valid UTF-8 (first bad byte at offset {offset})")]
    NotUtf8 { path: String, offset: usize },
    #[error("{path}: {size} bytes is over the 4 GiB limit of byte offsets")]
    TooLarge { path: String, size: u64 },
}

/// Reads a source file, rejecting unsupported extensions, binary content and invalid UTF-8
/// with an error that names the file.
pub fn read_source(path: &Path) -> Result<String, ParseError> {
    let shown = path.display().to_string();
    if Language::from_path(path).is_none() {
        return Err(ParseError::UnsupportedExtension { path: shown });
    }
    let bytes = std::fs::read(path).map_err(|source| ParseError::Io {
        path: shown.clone(),
        source,
    })?;
    decode_source(bytes, &shown)
}

/// Checks bytes already read from `shown` the way [`read_source`] does: size, binary
/// content (a NUL byte early on) and UTF-8.
pub fn decode_source(bytes: Vec<u8>, shown: &str) -> Result<String, ParseError> {
    if bytes.len() as u64 >= u32::MAX as u64 {
        return Err(ParseError::TooLarge {
            path: shown.into(),
            size: bytes.len() as u64,
        });
    }
    // Binary files usually show a NUL early; scanning the head is enough and cheap.
    if let Some(offset) = bytes.iter().take(8192).position(|&b| b == 0) {
        return Err(ParseError::Binary {
            path: shown.into(),
            offset,
        });
    }
    String::from_utf8(bytes).map_err(|e| ParseError::NotUtf8 {
        path: shown.into(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// Reads and parses one file. See [`parse_source`].
pub fn parse_path(path: &Path, display_path: &str) -> Result<(String, ParsedFile), ParseError> {
    let source = read_source(path)?;
    let parsed = parse_source(display_path, &source);
    Ok((source, parsed))
}

/// How many times a failing line is blanked out before the file is given up as unparsed.
/// How many failing lines are blanked before a file is given up on (see [`blank_line`]).
pub const MAX_RECOVERY_ATTEMPTS: usize = 8;

/// Parses `source` as the file `path` (whose extension picks the dialect; unknown
/// extensions are parsed as TypeScript). Never panics on any input text.
///
/// When oxc gives up on a file (its recovery is weak: one bad token can empty the whole
/// program), the line it reported is blanked out — byte offsets unchanged — and the file is
/// parsed again, a few times at most. The blanked lines become `unparsed` root items, so
/// everything else in the file is still found; the diagnostics are those of the first try.
pub fn parse_source(path: &str, source: &str) -> ParsedFile {
    parse_with(path, source, |parsed, _| parsed)
}

/// One parse of a TS/JS file as later phases see it: oxc's program and semantic model of the
/// text that parsed (the file, or the file with failing lines blanked: same offsets).
pub struct ParsedProgram<'p, 'a> {
    pub program: &'p oxc_ast::ast::Program<'a>,
    pub semantic: &'p oxc_semantic::Semantic<'a>,
    /// The text oxc parsed: the source, or the source with failing lines blanked.
    pub text: &'p str,
}

/// Files parsed by [`parse_with`] in this process (each may take several recovery attempts).
/// Tests read it to prove that a sync parses each changed file once.
static PARSES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many files [`parse_with`] (and so [`parse_source`]) has parsed in this process.
pub fn parse_count() -> usize {
    PARSES.load(std::sync::atomic::Ordering::Relaxed)
}

/// The one parse of a file: [`parse_source`]'s recovery, options and arena, handing `f`
/// the [`ParsedFile`] and, for TS/JS unless every attempt failed, oxc's program and
/// semantic model (alive only inside `f`). Every phase that reads a file's syntax (symbols,
/// chunks, graph facts) takes it from here, so a file is parsed once per sync.
///
/// Rust, Python and Go files are parsed by tree-sitter; `f` gets their `ParsedFile` and no
/// program, as for a TS/JS file oxc could not parse.
pub fn parse_with<R>(
    path: &str,
    source: &str,
    f: impl FnOnce(ParsedFile, Option<&ParsedProgram<'_, '_>>) -> R,
) -> R {
    PARSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let language = Language::from_path(path).unwrap_or(Language::TypeScript);
    if let Some(mut parsed) = grammars::parse(path, source, language) {
        parsed.number_symbols();
        return f(parsed, None);
    }
    let mut lines = LineIndex::new(source);
    let mut text = std::borrow::Cow::Borrowed(source);
    let mut blanked: Vec<u32> = Vec::new();
    let mut first_diagnostics: Option<Vec<Diagnostic>> = None;
    let mut f = Some(f);
    for _ in 0..MAX_RECOVERY_ATTEMPTS {
        let step = with_arena(|allocator| {
            // oxc can panic on text it misreads (0.146 asserts on a pure annotation before
            // a line comment): that is a file oxc could not parse, never a lost sync.
            let ret = catch_panic(|| {
                Parser::new(allocator, &text, source_type_for(path))
                    .with_options(ParseOptions {
                        preserve_parens: false,
                        ..ParseOptions::default()
                    })
                    .parse()
            })?;
            let diagnostics: Vec<Diagnostic> = ret
                .diagnostics
                .iter()
                .map(|d| Diagnostic {
                    message: d.message.to_string(),
                    line: d.labels.first().map(|l| lines.line_of(l.offset())),
                })
                .collect();
            if ret.panicked || (ret.program.body.is_empty() && !diagnostics.is_empty()) {
                return Err(diagnostics);
            }
            let semantic = catch_panic(|| SemanticBuilder::new().build(&ret.program).semantic)?;
            let (symbols, imports) =
                extract::extract(&ret.program, semantic.scoping(), &text, &lines);
            let diagnostics = first_diagnostics.take().unwrap_or(diagnostics);
            // After an error oxc may skip text without panicking (an invalid character
            // ends the program early): what no item covers is unparsed, never lost.
            let symbols = if blanked.is_empty() && diagnostics.is_empty() {
                symbols
            } else {
                extract::add_unparsed_lines(symbols, source, &lines)
            };
            let mut parsed = ParsedFile {
                path: path.to_string(),
                language,
                line_count: lines.line_count(),
                status: ParseStatus::of_tree(&diagnostics),
                symbols,
                imports,
                calls: Vec::new(),
                diagnostics,
                // Not needed by later attempts: this one returns.
                lines: std::mem::take(&mut lines),
            };
            parsed.number_symbols();
            let program = ParsedProgram {
                program: &ret.program,
                semantic: &semantic,
                text: &text,
            };
            let f = f.take().expect("the parse succeeds once");
            Ok(f(parsed, Some(&program)))
        });
        match step {
            Ok(result) => return result,
            Err(diagnostics) => {
                let line = diagnostics.iter().find_map(|d| d.line);
                first_diagnostics.get_or_insert(diagnostics);
                match line {
                    Some(line) if !blanked.contains(&line) => {
                        text = std::borrow::Cow::Owned(blank_line(&text, &lines, line));
                        blanked.push(line);
                    }
                    _ => break,
                }
            }
        }
    }
    let mut parsed = ParsedFile {
        path: path.to_string(),
        language,
        line_count: lines.line_count(),
        status: ParseStatus::Failed,
        symbols: extract::unparsed_item(source, &lines),
        imports: Vec::new(),
        calls: Vec::new(),
        diagnostics: first_diagnostics.unwrap_or_default(),
        lines,
    };
    parsed.number_symbols();
    let f = f.take().expect("no attempt succeeded");
    f(parsed, None)
}

/// `f`'s result, or (when oxc panicked inside it) the diagnostic of a parse that failed with
/// no line to blank: the file is then one unparsed item.
fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, Vec<Diagnostic>> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| {
        vec![Diagnostic {
            message: "the parser failed on this file (an internal error of oxc)".into(),
            line: None,
        }]
    })
}

/// Where a function or class declares its name ([`ParsedSymbol::declared_at`]): at its
/// identifier, or where it begins when it has none (`export default function () {}`). Both
/// walks of a parse call this, so the graph's declarations find the parser's symbols.
pub fn declared_at(id: Option<&oxc_ast::ast::BindingIdentifier<'_>>, node: oxc_span::Span) -> u32 {
    id.map_or(node.start, |id| id.span.start)
}

/// Arenas above this size are dropped after use instead of reset and kept.
const MAX_RETAINED_ARENA_BYTES: usize = 16 << 20;

thread_local! {
    /// One arena per thread, reset between files: a fresh arena per file costs a round of
    /// large mallocs and cold pages that on small files rivals the parse itself.
    static ARENA: std::cell::RefCell<Allocator> = std::cell::RefCell::new(Allocator::default());
}

/// Runs `f` with this thread's oxc arena, reset first. Other parses (the chunker's
/// validation, the snapshot's refs) share it rather than paying for a fresh arena per file.
pub fn with_arena<R>(f: impl FnOnce(&Allocator) -> R) -> R {
    ARENA.with(|arena| match arena.try_borrow_mut() {
        Ok(mut allocator) => {
            allocator.reset();
            let result = f(&allocator);
            // Don't let one huge file pin its arena for the life of the thread.
            if allocator.capacity() > MAX_RETAINED_ARENA_BYTES {
                *allocator = Allocator::default();
            }
            result
        }
        // Reached when `f` itself parses with the arena: a private arena is then correct.
        Err(_) => f(&Allocator::default()),
    })
}

/// `text` with every byte of 1-indexed `line` except its terminator replaced by a space:
/// same length, same offsets, still UTF-8.
pub fn blank_line(text: &str, lines: &LineIndex, line: u32) -> String {
    let (from, to) = (
        lines.line_start(line) as usize,
        lines.line_end(line, text) as usize,
    );
    let mut bytes = text.as_bytes().to_vec();
    bytes[from..to].fill(b' ');
    String::from_utf8(bytes).unwrap_or_else(|_| text.to_string())
}

/// The top-level statements of the file `path` as a fresh parse of `source` finds them
/// (directives included, comments left out; a tree-sitter language's attributes with the
/// item they precede): what the chunker's validation checks root items against. `None`
/// when the parser gave up on the file (oxc reported a panic, or panicked).
pub fn top_level_statements(path: &str, source: &str) -> Option<Vec<ByteSpan>> {
    let language = Language::from_path(path).unwrap_or(Language::TypeScript);
    if let Some(spans) = grammars::top_level_statements(source, language) {
        return Some(spans);
    }
    catch_panic(|| {
        use oxc_span::GetSpan;
        let allocator = Allocator::default();
        let parsed = Parser::new(&allocator, source, source_type_for(path)).parse();
        (!parsed.panicked).then(|| {
            let directives = parsed.program.directives.iter().map(|d| d.span);
            let statements = parsed.program.body.iter().map(|s| s.span());
            directives
                .chain(statements)
                .map(|s| ByteSpan::new(s.start, s.end))
                .collect()
        })
    })
    .ok()
    .flatten()
}

/// The oxc source type for a path; JSX is accepted in `.js` as bundlers do.
pub fn source_type_for(path: &str) -> SourceType {
    let st = SourceType::from_path(path).unwrap_or_else(|_| SourceType::ts());
    // oxc never turns on JSX for .js by itself; React code in .js files is common.
    if st.is_javascript() {
        st.with_jsx(true)
    } else {
        st
    }
}
