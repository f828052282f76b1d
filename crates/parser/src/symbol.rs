//! The owned output of the parser: a `ParsedSymbol` tree per file.

use serde::{Deserialize, Serialize};

/// A half-open byte range `[start, end)` into the file's source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ByteSpan {
    pub start: u32,
    pub end: u32,
}

impl ByteSpan {
    pub fn new(start: u32, end: u32) -> Self {
        Self { start, end }
    }
    pub fn contains(&self, offset: u32) -> bool {
        self.start <= offset && offset < self.end
    }
}

/// An inclusive, 1-indexed line range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LineRange {
    pub start: u32,
    pub end: u32,
}

impl LineRange {
    pub fn overlaps(&self, other: &LineRange) -> bool {
        self.start <= other.end && other.start <= self.end
    }
    pub fn line_count(&self) -> u32 {
        self.end - self.start + 1
    }
}

/// Where a symbol's name comes from: the source, or the parser when nothing in the source
/// names it. A made-up name is a detail of the named declaration around it (retrieval
/// counts a hit on a callback for its enclosing function).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Naming {
    /// Written in the source: a declaration, a variable, a property, an assignment target,
    /// `function id`.
    #[default]
    Source,
    /// A function passed as an argument, named after its callee: `items.forEach callback`,
    /// `new Promise callback`.
    Callback,
    /// Nothing names it: `anonymous`, `anonymous class`.
    Anonymous,
}

impl Naming {
    /// Every naming, in declaration order.
    pub const ALL: [Naming; 3] = [Naming::Source, Naming::Callback, Naming::Anonymous];

    /// How indexes store it.
    pub fn as_str(self) -> &'static str {
        match self {
            Naming::Source => "source",
            Naming::Callback => "callback",
            Naming::Anonymous => "anonymous",
        }
    }

    /// Whether the parser made the name up.
    pub fn is_made_up(self) -> bool {
        self != Naming::Source
    }

    /// For serde's `skip_serializing_if`: a name from the source is not worth a field.
    pub fn is_source(&self) -> bool {
        *self == Naming::Source
    }
}

impl std::str::FromStr for Naming {
    type Err = String;

    /// The naming [`Naming::as_str`] spells `s`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Naming::ALL
            .into_iter()
            .find(|n| n.as_str() == s)
            .ok_or_else(|| format!("unknown naming {s:?}"))
    }
}

/// What a symbol or root item is. The names are the blueprint's `nodeKind` values, extended
/// with the member kinds a TypeScript file needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SymbolKind {
    Function,
    Method,
    Constructor,
    Getter,
    Setter,
    Property,
    IndexSignature,
    CallSignature,
    ConstructSignature,
    StaticBlock,
    Class,
    Interface,
    Type,
    Enum,
    Component,
    Variable,
    Const,
    Namespace,
    /// `declare module 'x' { … }` and `declare global { … }`; in a call tree, a file's
    /// top-level code.
    Module,
    Import,
    Expression,
    ReExport,
    /// A local export list, `export default <expr>`, `export =`, `module.exports = {…}`.
    Export,
    /// Top-level control flow: `if`, `for`, `try`, blocks…
    Statement,
    Comment,
    /// A file oxc could not recover anything from; covers the whole file.
    Unparsed,
    /// A Rust or Go `struct` (and a Rust `union`).
    Struct,
    /// A Rust `trait`.
    Trait,
    /// A Rust `impl` block, named by its type.
    Impl,
    /// A Rust `macro_rules!`.
    Macro,
}

impl std::fmt::Display for SymbolKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SymbolKind {
    type Err = String;

    /// The kind [`SymbolKind::as_str`] spells `s` (how indexes store it).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SymbolKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown symbol kind {s:?}"))
    }
}

impl SymbolKind {
    /// Every kind, in declaration order.
    pub const ALL: [SymbolKind; 30] = [
        SymbolKind::Function,
        SymbolKind::Method,
        SymbolKind::Constructor,
        SymbolKind::Getter,
        SymbolKind::Setter,
        SymbolKind::Property,
        SymbolKind::IndexSignature,
        SymbolKind::CallSignature,
        SymbolKind::ConstructSignature,
        SymbolKind::StaticBlock,
        SymbolKind::Class,
        SymbolKind::Interface,
        SymbolKind::Type,
        SymbolKind::Enum,
        SymbolKind::Component,
        SymbolKind::Variable,
        SymbolKind::Const,
        SymbolKind::Namespace,
        SymbolKind::Module,
        SymbolKind::Import,
        SymbolKind::Expression,
        SymbolKind::ReExport,
        SymbolKind::Export,
        SymbolKind::Statement,
        SymbolKind::Comment,
        SymbolKind::Unparsed,
        SymbolKind::Struct,
        SymbolKind::Trait,
        SymbolKind::Impl,
        SymbolKind::Macro,
    ];

    /// The blueprint's `nodeKind` string.
    pub fn as_str(self) -> &'static str {
        match self {
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
            SymbolKind::Constructor => "constructor",
            SymbolKind::Getter => "getter",
            SymbolKind::Setter => "setter",
            SymbolKind::Property => "property",
            SymbolKind::IndexSignature => "index-signature",
            SymbolKind::CallSignature => "call-signature",
            SymbolKind::ConstructSignature => "construct-signature",
            SymbolKind::StaticBlock => "static-block",
            SymbolKind::Class => "class",
            SymbolKind::Interface => "interface",
            SymbolKind::Type => "type",
            SymbolKind::Enum => "enum",
            SymbolKind::Component => "component",
            SymbolKind::Variable => "variable",
            SymbolKind::Const => "const",
            SymbolKind::Namespace => "namespace",
            SymbolKind::Module => "module",
            SymbolKind::Import => "import",
            SymbolKind::Expression => "expression",
            SymbolKind::ReExport => "re-export",
            SymbolKind::Export => "export",
            SymbolKind::Statement => "statement",
            SymbolKind::Comment => "comment",
            SymbolKind::Unparsed => "unparsed",
            SymbolKind::Struct => "struct",
            SymbolKind::Trait => "trait",
            SymbolKind::Impl => "impl",
            SymbolKind::Macro => "macro",
        }
    }

    /// Declarations that run code: the nodes of call trees.
    pub fn is_callable(self) -> bool {
        matches!(
            self,
            SymbolKind::Function
                | SymbolKind::Method
                | SymbolKind::Constructor
                | SymbolKind::Getter
                | SymbolKind::Setter
        )
    }

    /// Declarations that own members and take part in type hierarchies.
    pub fn is_type(self) -> bool {
        matches!(
            self,
            SymbolKind::Class
                | SymbolKind::Interface
                | SymbolKind::Type
                | SymbolKind::Enum
                | SymbolKind::Struct
                | SymbolKind::Trait
        )
    }

    /// Kinds that are root-level content rather than named declarations.
    pub fn is_root_item(self) -> bool {
        matches!(
            self,
            SymbolKind::Import
                | SymbolKind::Expression
                | SymbolKind::ReExport
                | SymbolKind::Export
                | SymbolKind::Statement
                | SymbolKind::Comment
                | SymbolKind::Unparsed
        )
    }
}

/// A declaration modifier, as written (or implied: `exported`, `generator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Modifier {
    Exported,
    Default,
    Declare,
    Abstract,
    Public,
    Protected,
    Private,
    Static,
    Override,
    Readonly,
    Async,
    Generator,
    Get,
    Set,
    Const,
    Optional,
    Accessor,
}

impl Modifier {
    pub fn as_str(self) -> &'static str {
        match self {
            Modifier::Exported => "exported",
            Modifier::Default => "default",
            Modifier::Declare => "declare",
            Modifier::Abstract => "abstract",
            Modifier::Public => "public",
            Modifier::Protected => "protected",
            Modifier::Private => "private",
            Modifier::Static => "static",
            Modifier::Override => "override",
            Modifier::Readonly => "readonly",
            Modifier::Async => "async",
            Modifier::Generator => "generator",
            Modifier::Get => "get",
            Modifier::Set => "set",
            Modifier::Const => "const",
            Modifier::Optional => "optional",
            Modifier::Accessor => "accessor",
        }
    }
}

/// One node of the hierarchical symbol tree (blueprint Phase 1 `ParsedSymbol`).
///
/// Root items (imports, expressions, re-exports, comments, control flow) are `ParsedSymbol`s
/// at depth 0 too, so one tree covers every line of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParsedSymbol {
    /// The symbol's number in its file: pre-order from 0, as [`ParsedFile::walk`] visits
    /// it. Chunks and graph declarations name the symbol they come from by it.
    #[serde(default)]
    pub index: u32,
    pub name: String,
    /// Where the declared name is written: the identifier or property key (`exports.x = …`:
    /// the assignment's start; an anonymous `export default`: the declaration's start).
    /// `None` when no single name is declared (statements, imports, destructuring). The
    /// graph's extractor finds a declaration's symbol by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_at: Option<u32>,
    /// Whether `name` is written in the source or made up by the parser.
    #[serde(default, skip_serializing_if = "Naming::is_source")]
    pub naming: Naming,
    pub kind: SymbolKind,
    /// 0 for root items, 1 for their members, and so on.
    pub depth: u32,
    pub parent_name: Option<String>,
    /// Lines the symbol occupies, including its attached JSDoc / leading comments and decorators.
    pub range: LineRange,
    /// Byte range of the same extent as `range` starts and ends (not whole lines).
    pub span: ByteSpan,
    /// The body collapsed to a stub in a parent's embedding text (`{ … }` of a function,
    /// class, namespace; the expression of an arrow). `None` for symbols without a body.
    pub body: Option<ByteSpan>,
    /// Parameters and return type (or heritage, or declared type) as written, whitespace-normalized.
    pub signature: String,
    pub modifiers: Vec<Modifier>,
    /// Text of the attached doc comment without its markers: JSDoc `/** … */`, Rust's
    /// `///`, a Go doc comment, a Python docstring.
    pub jsdoc: Option<String>,
    pub exported: bool,
    pub children: Vec<ParsedSymbol>,
}

impl ParsedSymbol {
    /// Whether the symbol has a body that collapses to `signature;` in its parent.
    pub fn is_body_bearing(&self) -> bool {
        self.body.is_some()
    }

    /// Pre-order iterator over this symbol and all its descendants.
    pub fn walk(&self) -> impl Iterator<Item = &ParsedSymbol> {
        let mut stack = vec![self];
        std::iter::from_fn(move || {
            let next = stack.pop()?;
            stack.extend(next.children.iter().rev());
            Some(next)
        })
    }
}

/// A call written in a Rust, Python or Go file, as its syntax spells it: the callee as a
/// path of names and what the path's first name is bound to in the file. The graph resolves
/// it ([`CallHead`] says how far the file alone goes). TS/JS files list none: the graph reads
/// their calls from oxc's semantic model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallSyntax {
    /// Byte offset where the call begins.
    pub at: u32,
    /// The callee's names in order: `["helper"]`, `["self", "validate"]`,
    /// `["Claims", "new"]`, `["http", "ListenAndServe"]`.
    pub path: Vec<String>,
    pub head: CallHead,
}

/// What the first name of a [`CallSyntax`] path denotes, as far as the file's syntax tells.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CallHead {
    /// The value a method runs on: Rust's `self` and `Self`, a Python method's first
    /// parameter, a Go method's receiver.
    Receiver,
    /// A parameter whose declared type is the one name `type_name` (`cmd *Command`,
    /// `cart: &Cart`, `user: User`).
    Typed { type_name: String },
    /// Binding `binding` of import `import` ([`ParsedFile::imports`]; what it names there is
    /// [`ImportInfo::imported`]).
    Import { import: u32, binding: u32 },
    /// Any other name: a declaration of the file (or of the Go package), a local, a builtin.
    Name,
}

/// One import statement (ESM `import`, `import x = require()`, or a root-level CommonJS
/// `require`) and where its bindings are used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportInfo {
    /// Byte range of the import statement.
    pub span: ByteSpan,
    /// The module specifier, e.g. `./auth` or `jsonwebtoken`.
    pub source: String,
    /// Local names the statement binds.
    pub local_names: Vec<String>,
    /// What each of `local_names` names in the imported module, in the same order: an item
    /// (`validate_token` for `from m import validate_token as check`), or `None` for the
    /// module itself (`import os`, a Go package). Rust, Python and Go only: the graph reads
    /// TS/JS bindings from oxc's semantic model.
    #[serde(default)]
    pub imported: Vec<Option<String>>,
    /// Start offsets, ascending, of every reference that oxc_semantic resolved to one of those
    /// bindings. A shadowing local of the same name is a different symbol and never appears here.
    pub reference_offsets: Vec<u32>,
}

/// A syntax error (or recovery note) reported by oxc.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub message: String,
    /// 1-indexed line of the first label, when oxc gave one.
    pub line: Option<u32>,
}

/// How much of the file the parser understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParseStatus {
    /// No syntax errors.
    Clean,
    /// Syntax errors; the tree holds what oxc recovered.
    Recovered,
    /// oxc gave up; the whole file is one `unparsed` item.
    Failed,
}

impl ParseStatus {
    /// `Clean` without diagnostics, else `Recovered`: a parse that gave a tree.
    pub fn of_tree(diagnostics: &[Diagnostic]) -> Self {
        if diagnostics.is_empty() {
            ParseStatus::Clean
        } else {
            ParseStatus::Recovered
        }
    }
}

/// The parser's hand-off: everything later phases need from one file, owned and serializable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParsedFile {
    /// The path the caller gave (used for breadcrumbs and ids downstream).
    pub path: String,
    pub language: crate::Language,
    pub line_count: u32,
    pub status: ParseStatus,
    /// Root items in source order, each with its nested symbols.
    pub symbols: Vec<ParsedSymbol>,
    pub imports: Vec<ImportInfo>,
    /// Calls of a Rust, Python or Go file, in source order (none for TS/JS).
    #[serde(default)]
    pub calls: Vec<CallSyntax>,
    pub diagnostics: Vec<Diagnostic>,
    /// Line starts of the parsed text, kept so later phases need not rebuild them. Not
    /// serialized: after a round trip it is empty and consumers rebuild it (see
    /// [`crate::LineIndex::fits`]).
    #[serde(skip)]
    pub lines: crate::LineIndex,
}

impl ParsedFile {
    /// The line index of `source`: the parser's own when it was built from that text
    /// (the common case), else a new one (after a serde round trip, or for another text).
    pub fn line_index(&self, source: &str) -> std::borrow::Cow<'_, crate::LineIndex> {
        if self.lines.fits(source) {
            std::borrow::Cow::Borrowed(&self.lines)
        } else {
            std::borrow::Cow::Owned(crate::LineIndex::new(source))
        }
    }

    /// Pre-order iterator over every symbol of the file.
    pub fn walk(&self) -> impl Iterator<Item = &ParsedSymbol> {
        self.symbols.iter().flat_map(ParsedSymbol::walk)
    }

    /// Numbers every symbol in [`ParsedFile::walk`] order ([`ParsedSymbol::index`]).
    pub(crate) fn number_symbols(&mut self) {
        fn number(symbols: &mut [ParsedSymbol], next: &mut u32) {
            for s in symbols {
                s.index = *next;
                *next += 1;
                number(&mut s.children, next);
            }
        }
        number(&mut self.symbols, &mut 0);
    }
}

#[cfg(test)]
mod tests {
    use super::SymbolKind;

    /// Indexes store kinds as these strings, and answers print them: `as_str`, serde and
    /// `FromStr` must agree on every kind.
    #[test]
    fn every_kind_round_trips_through_its_stored_string() {
        for kind in SymbolKind::ALL {
            let serialized = serde_json::to_string(&kind).unwrap();
            assert_eq!(serialized, format!("\"{}\"", kind.as_str()));
            assert_eq!(kind.as_str().parse::<SymbolKind>(), Ok(kind));
        }
        assert!("lambda".parse::<SymbolKind>().is_err());
    }
}
