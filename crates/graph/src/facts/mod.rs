//! Per-file structural facts: the stored format (this module) and the extractor that fills
//! it from a file's one parse (`facts::extract`).
//!
//! Everything here is resolved as far as one file allows: a name used in the file points at
//! a declaration of the file ([`Target::Local`]), at an import binding ([`Target::Import`]),
//! or at nothing known ([`Target::Global`]). Crossing files is the linker's job
//! ([`crate::ProjectGraph`]), so facts can be cached per file and re-extracted one at a time.

mod extract;
mod symbols;

pub use codectx_parser::SymbolKind;
use serde::{Deserialize, Serialize};

pub use extract::{extract_facts, facts_of};

/// A name as written in one file, resolved as far as that file allows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Target {
    /// A declaration of this file (index into [`FileFacts::decls`]).
    Local { decl: u32 },
    /// An imported binding: `name` is the exported name (`default` for default imports).
    Import { request: u32, name: String },
    /// The namespace object of a module (`import * as ns`, `export * as ns`).
    Namespace { request: u32 },
    /// Not declared in the project as far as this file can tell (globals, lib types).
    Global { name: String },
}

/// The object a member is looked up on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Receiver {
    /// `this` inside the class declaration `class`.
    This { class: u32 },
    /// `super` inside the class declaration `class`.
    Super { class: u32 },
    /// A value whose declared type is `target` (annotated parameter, `new X()` local…).
    Typed { target: Target },
    /// The declared entity itself: a class (static members), an object-literal constant,
    /// a namespace.
    Value { target: Target },
    /// The value of `receiver.name`.
    Member {
        receiver: Box<Receiver>,
        name: String,
    },
    /// The result of calling `receiver.name(…)`.
    Returned {
        receiver: Box<Receiver>,
        name: String,
    },
    /// Parameter `index` of a function expression with no annotation of its own, typed by
    /// its context (TypeScript's contextual typing): [`FileFacts::contexts`]`[context]`.
    Parameter { context: u32, index: u32 },
    /// A local value with no declared type (an untyped variable, a callback parameter whose
    /// context is unknown).
    Untyped,
}

/// Where a function expression written without parameter types takes them from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Contextual {
    /// The function initializes a declaration annotated with the (function) type `target`
    /// (`const h: Handler = (c) => …`), or is returned by a function whose declared return
    /// type it is (`(): Handler => (c) => …`).
    Annotated { target: Target },
    /// The function is argument `arg` of a call of `callee` (`use((c) => …)`): it has the
    /// type of that parameter.
    Argument { callee: Callee, arg: u32 },
}

/// What a call site or reference points at.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Callee {
    /// A plain name: `f()`, `new C()`, `<Comp />`.
    Name { target: Target },
    /// A member: `x.m()`, `this.m`, `ns.f()`.
    Member { receiver: Receiver, name: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SiteKind {
    Call,
    New,
    Jsx,
    /// A member read that is not called (`this.handler` passed along, a getter read).
    Access,
    TaggedTemplate,
    Decorator,
}

/// One call (or call-like access) inside a declaration, or at module level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallSite {
    /// The innermost enclosing function-like or class declaration; `None` = module level.
    pub caller: Option<u32>,
    pub line: u32,
    pub kind: SiteKind,
    pub callee: Callee,
    /// Made inside a named function expression (`return function cors(c) {…}`) within the
    /// caller: TypeScript's call hierarchy makes that expression a node of its own, so the
    /// call is not an outgoing call of the declaration around it, which is still reported
    /// as the caller.
    pub in_named_expression: bool,
}

/// One non-declaration occurrence of a name (identifier, type reference, member name,
/// import/export specifier).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefSite {
    pub line: u32,
    pub to: Callee,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeParam {
    pub name: String,
    pub constraint: Option<String>,
    pub default: Option<String>,
}

/// A parameter or return type as written, with the type names it mentions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypedSlot {
    /// Parameter name; empty for a return type.
    pub name: String,
    /// The annotation's text (`Promise<User>`); empty when unannotated.
    pub type_text: String,
    /// Type names referenced by the annotation, in order.
    pub types: Vec<Target>,
}

/// One declaration: the nodes of the structural graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decl {
    pub name: String,
    /// The parser's symbol for this declaration ([`codectx_parser::ParsedSymbol::index`]),
    /// which its chunk names too; `None` for what the parser does not make a symbol of
    /// (constructor parameter properties, one-line callbacks).
    pub symbol: Option<u32>,
    /// `Class.member` inside a class or interface, else the name.
    pub qualified_name: String,
    pub kind: SymbolKind,
    pub start_line: u32,
    pub end_line: u32,
    pub span: (u32, u32),
    /// Enclosing class or interface.
    pub container: Option<u32>,
    /// The object-literal constant that owns this method (`const api = { get() {} }`).
    pub owner: Option<u32>,
    pub exported: bool,
    pub is_static: bool,
    pub is_abstract: bool,
    /// Head of the declaration, whitespace-normalized, without its body.
    pub signature: String,
    pub type_params: Vec<TypeParam>,
    pub extends: Vec<Target>,
    pub implements: Vec<Target>,
    pub params: Vec<TypedSlot>,
    pub returns: Option<TypedSlot>,
    /// Declared or constructed type of a property, variable or accessor; the aliased type of
    /// a type alias.
    pub value_type: Option<Target>,
    /// Members of a class or interface, in source order.
    pub members: Vec<u32>,
    /// Parameter slots of an interface's call signatures (`(path: string, h: H): R`), in
    /// source order: what a callback passed to a value of the interface is typed by.
    pub call_signatures: Vec<Vec<TypedSlot>>,
    /// The named members of a type alias of a union (`type H = Handler | Middleware`).
    pub alternatives: Vec<Target>,
    /// Declaration keyword, type and short initializer of a variable.
    pub constant: Option<ConstantInfo>,
}

impl Decl {
    /// A declaration as both extractors start one: named, placed and signed, with no
    /// container, owner, modifiers, types or members, not exported. `qualified_name` is the
    /// name until a container says otherwise.
    pub(crate) fn new(
        name: String,
        symbol: Option<u32>,
        kind: SymbolKind,
        (start_line, end_line): (u32, u32),
        span: (u32, u32),
        signature: String,
    ) -> Self {
        Decl {
            qualified_name: name.clone(),
            name,
            symbol,
            kind,
            start_line,
            end_line,
            span,
            container: None,
            owner: None,
            exported: false,
            is_static: false,
            is_abstract: false,
            signature,
            type_params: Vec::new(),
            extends: Vec::new(),
            implements: Vec::new(),
            params: Vec::new(),
            returns: None,
            value_type: None,
            members: Vec::new(),
            call_signatures: Vec::new(),
            alternatives: Vec::new(),
            constant: None,
        }
    }
}

/// What the connection graph's "Type: number (value: 3600)" line needs about a variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConstantInfo {
    /// `const`, `let`, `var`, `using`…
    pub keyword: String,
    /// The annotation as written, else the type of a literal initializer.
    pub type_text: Option<String>,
    /// The initializer as written, when it is at most [`MAX_CONSTANT_VALUE`] bytes.
    pub value: Option<String>,
}

/// Longest initializer kept as a constant's value.
pub const MAX_CONSTANT_VALUE: usize = 80;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RequestKind {
    Import,
    TypeImport,
    ReExport,
    Dynamic,
    Require,
}

/// One module specifier written in the file, with the names it brings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleRequest {
    pub specifier: String,
    pub line: u32,
    pub kind: RequestKind,
    /// Imported or re-exported names (`default`, `*` for namespaces and star re-exports).
    pub names: Vec<String>,
    /// The modules declared inside the file around the statement, outermost first: Rust's
    /// `mod tests { use super::*; }`, whose `super` is the file's own module. Empty elsewhere.
    pub scope: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ExportTarget {
    Local {
        decl: u32,
    },
    Reexport {
        request: u32,
        name: String,
    },
    Namespace {
        request: u32,
    },
    /// `export default <expression>` and other exports with no declaration to point at.
    Expression,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Export {
    pub name: String,
    pub line: u32,
    pub target: ExportTarget,
}

/// Everything the graph knows about one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileFacts {
    pub path: String,
    pub line_count: u32,
    pub decls: Vec<Decl>,
    pub requests: Vec<ModuleRequest>,
    pub exports: Vec<Export>,
    /// `export * from` requests.
    pub star_exports: Vec<u32>,
    pub calls: Vec<CallSite>,
    pub refs: Vec<RefSite>,
    /// Contexts of callback parameters ([`Receiver::Parameter`]).
    pub contexts: Vec<Contextual>,
    /// [`FACTS_VERSION`] of the extractor that wrote these facts.
    pub version: u32,
    /// oxc diagnostics; facts of a file with errors are what oxc recovered.
    pub syntax_errors: u32,
}

impl FileFacts {
    /// The stored form: compact binary (postcard), which [`FileFacts::decode`] reads back.
    /// Every field is always written (no field is skipped when empty), since a binary
    /// format has no names to tell a missing field by. Loading a large project is mostly
    /// reading facts: on babel (17,500 files) this form is read in a fraction of the time
    /// JSON took.
    pub fn encode(&self) -> Vec<u8> {
        // Writing owned data into a `Vec` fails only on allocation failure.
        postcard::to_stdvec(self).expect("facts serialise")
    }

    /// Reads what [`FileFacts::encode`] wrote; an error (damaged bytes, or facts of another
    /// [`FACTS_VERSION`]) says why.
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        postcard::from_bytes(bytes).map_err(|e| e.to_string())
    }

    /// Facts with nothing found yet (also what a file oxc cannot parse at all gives).
    pub(crate) fn empty(path: &str, line_count: u32, syntax_errors: u32) -> Self {
        FileFacts {
            path: path.to_string(),
            line_count,
            decls: Vec::new(),
            requests: Vec::new(),
            exports: Vec::new(),
            star_exports: Vec::new(),
            calls: Vec::new(),
            refs: Vec::new(),
            contexts: Vec::new(),
            version: FACTS_VERSION,
            syntax_errors,
        }
    }
}

impl FileFacts {
    /// Whether `self` and `other` show other files the same thing: the same declarations,
    /// exports and requests, wherever they sit in the file. Linking reads nothing else of
    /// a file from elsewhere (call and reference sites are the file's own), so an edit that
    /// keeps this re-links only the edited file.
    pub fn same_outward_facts(&self, other: &FileFacts) -> bool {
        let decl = |d: &Decl| Decl {
            start_line: 0,
            end_line: 0,
            span: (0, 0),
            ..d.clone()
        };
        self.path == other.path
            && self.star_exports == other.star_exports
            && self.contexts == other.contexts
            && self.decls.len() == other.decls.len()
            && self
                .decls
                .iter()
                .zip(&other.decls)
                .all(|(a, b)| decl(a) == decl(b))
            && self.exports.len() == other.exports.len()
            && self
                .exports
                .iter()
                .zip(&other.exports)
                .all(|(a, b)| a.name == b.name && a.target == b.target)
            && self.requests.len() == other.requests.len()
            && self
                .requests
                .iter()
                .zip(&other.requests)
                .all(|(a, b)| a.specifier == b.specifier && a.kind == b.kind && a.names == b.names)
    }
}

/// Version of what [`extract_facts`] finds and how it is stored: caches of facts written by
/// another version are stale even when the file did not change. 4: taken from the parser's
/// one parse (`syntax_errors` counts its first attempt's diagnostics). 6: enums are
/// externally tagged (`{"local": {"decl": 0}}`), which serde reads in one pass (an
/// internally tagged enum is buffered whole before its tag is looked at). 7: stored as
/// postcard ([`FileFacts::encode`]) instead of JSON. 8: kinds are the parser's `SymbolKind`
/// (`type`, not `type-alias`). 9: each declaration names its parser symbol (`Decl::symbol`).
/// 10: only a declaration, function or class is a default export's declaration, not the
/// first function inside its expression. 11: signatures and type texts cut at 400
/// characters by the parser's `one_line`. 12: a default-exported function expression is
/// declared where it begins, as the parser has it (`codectx_parser::declared_at`). 13: Rust,
/// Python and Go files have facts (declarations, exports, module requests). 14: a Go
/// method's qualified name names its receiver type wherever the type is declared. 15: Rust,
/// Python and Go calls (by the languages' scoping of names), Python's module-level imports
/// as exports, a Rust `impl`'s methods as members of its type. 16: calls on a parameter of a
/// declared type, and on a Go receiver whose type another file declares. 17: a Python class
/// extends the bases its head names. 18: items declared in a Rust function's body are its
/// members. 19: a Rust `use` inside an inline module resolves from that module. 20: the body
/// of a Rust macro invoked in item position is read as items when it parses as items. 21: a
/// function assigned to a property at the top level (`A.prototype.m = function`) is the
/// method `A.m`, not an expression named by its text. 22: such a method is declared, a
/// member of `A` (or owned by the value `app` in `app.m = function`), its calls its own. 23: a
/// named class or function given to `module.exports` whole is declared by its own name
/// (`codectx_parser::commonjs::declared_name`). 24: a method with a computed key
/// (`[kGetDispatcher] () {…}`) is declared, named as the parser names it. 25: build output (a
/// file naming its source map, `codectx_files::Generated`) holds no facts; the bump makes an
/// index read every file once, so the bundles it held go.
pub const FACTS_VERSION: u32 = 25;
