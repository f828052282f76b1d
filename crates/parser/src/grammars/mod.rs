//! Rust, Python and Go through tree-sitter's grammars, into the same [`ParsedSymbol`] tree
//! that oxc's walk gives TS/JS.
//!
//! One walk serves the three languages; each grammar module only says what its nodes are
//! ([`Grammar`]): which declare a symbol, of what kind, where its name and body are, which
//! are imports, and how its doc comments read. The walk does the rest the TS/JS way:
//!
//! - one root item per top-level node, and per standalone comment block, so every
//!   non-blank line lies in exactly one root item;
//! - a comment block (and, in Rust, attributes) directly above a declaration, with no blank
//!   line between, belongs to it;
//! - containers (a class, an `impl` or `trait` block, a `mod`, a function holding nested
//!   functions) nest their members;
//! - an import's bindings are found where the file uses them *by name*: there is no semantic
//!   model here, so a shadowing local counts as a use.
//!
//! tree-sitter recovers from syntax errors by itself: an `ERROR` node becomes part of a
//! root item (a statement when it stands alone) and a [`Diagnostic`].

mod go;
mod python;
mod rust;

use tree_sitter::{Node, Parser, Tree};

use crate::Language;
use crate::extract::{
    MAX_INLINE_SIGNATURE, MAX_NAME, MAX_SIGNATURE, comment_name, leaf_item, merge_overlapping,
    one_line, set_hierarchy,
};
use crate::lines::LineIndex;
use crate::symbol::{
    ByteSpan, CallHead, CallSyntax, Diagnostic, ImportInfo, LineRange, Modifier, ParseStatus,
    ParsedFile, ParsedSymbol, SymbolKind,
};

/// At most this many syntax errors are reported per file.
const MAX_DIAGNOSTICS: usize = 20;

/// What one language's nodes mean.
trait Grammar {
    fn language(&self) -> tree_sitter::Language;

    /// The declaration `node` makes, if any. `container` is the kind of the symbol whose
    /// members are walked (`None` at the top level): a function inside an `impl` or a
    /// class is a method.
    fn declaration<'t>(
        &self,
        node: Node<'t>,
        src: &str,
        container: Option<SymbolKind>,
    ) -> Option<Declaration<'t>>;

    /// The kind of a top-level node that declares nothing: an import, an expression or a
    /// statement.
    fn item_kind(&self, node: Node<'_>) -> SymbolKind;

    /// The modules an import statement names, each with the names it binds and the node it
    /// is written in (the statement, or one line of a grouped Go import): `import os, sys`
    /// is two imports of one statement. Empty for anything else.
    fn imports<'t>(&self, node: Node<'t>, src: &str) -> Vec<(Node<'t>, String, Vec<Bound>)>;

    /// The callee of `node` as a path of names, when `node` is a call whose callee is one
    /// (`f()`, `self.m()`, `Type::new()`, `pkg.Func()`); `None` for anything else, and for
    /// callees no path spells (`f()()`, `xs[0]()`).
    fn call_path(&self, node: Node<'_>, src: &str) -> Option<Vec<String>>;

    /// The name a method calls the value it runs on, when `node` is a method (a Python
    /// method's first parameter, a Go method's receiver). Inside it, and in the functions
    /// nested in it, that name is the [`CallHead::Receiver`].
    fn receiver_name(&self, _node: Node<'_>, _src: &str) -> Option<String> {
        None
    }

    /// Whether a path starting with `name` starts at the receiver wherever it is written
    /// (Rust's `self` and `Self`).
    fn is_receiver_word(&self, _name: &str) -> bool {
        false
    }

    /// The parameters of `node`, when it is a function, whose declared type is one name
    /// (behind pointers and references, without type arguments): `(cmd, Command)` for
    /// `cmd *Command`, `(cart, Cart)` for `cart: &mut Cart<T>`. Inside it, a call on such a
    /// parameter is a [`CallHead::Typed`] one.
    fn typed_parameters(&self, _node: Node<'_>, _src: &str) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The node kinds at which [`Grammar::call_path`], [`Grammar::receiver_name`] and
    /// [`Grammar::typed_parameters`] can answer: the walk asks them nowhere else (a node's
    /// kind name costs a string conversion at each ask).
    fn call_and_scope_kinds(&self) -> &'static [&'static str];

    /// Whether `node` is control flow whose blocks may declare (Python's `if`, `try`,
    /// `with`…): its declarations are found inside it.
    fn is_compound(&self, _node: Node<'_>) -> bool {
        false
    }

    /// The body of a macro invocation in item position, when its expansion is items as
    /// written (Rust's `cfg_rt! { mod x; pub use x::Y; }`, as tokio declares much of its
    /// code): the token tree, to be parsed again as items.
    fn item_macro_body<'t>(&self, _node: Node<'t>) -> Option<Node<'t>> {
        None
    }

    /// Whether `node` is a comment.
    fn is_comment(&self, node: Node<'_>) -> bool {
        node.kind().contains("comment")
    }

    /// Nodes that belong to the declaration below them as comments do (Rust's `#[…]`).
    fn is_prefix(&self, _node: Node<'_>) -> bool {
        false
    }

    /// A comment that never belongs to the node below it (Rust's `//!`, a module's own).
    fn stands_alone(&self, _comment: &str) -> bool {
        false
    }

    /// The doc text of the comments attached above a declaration, markers removed: `None`
    /// when they are not doc comments.
    fn doc_comment(&self, comments: &[&str]) -> Option<String>;

    /// Whether a node of this kind is an identifier that may use an import's binding.
    fn is_identifier(&self, kind: &str) -> bool;
}

/// A name an import binds, and what it names in the imported module: an item of it
/// (`Some`), or the module itself (`None`).
struct Bound {
    local: String,
    item: Option<String>,
}

impl Bound {
    fn module(local: impl Into<String>) -> Self {
        Bound {
            local: local.into(),
            item: None,
        }
    }

    fn item(local: impl Into<String>, item: impl Into<String>) -> Self {
        Bound {
            local: local.into(),
            item: Some(item.into()),
        }
    }
}

/// Callee paths longer than this are not followed: no resolution reads that deep.
const MAX_CALL_PATH: usize = 4;

/// A declaration as a grammar reads it.
struct Declaration<'t> {
    kind: SymbolKind,
    name: String,
    /// Where the name is written.
    name_at: Option<u32>,
    /// The declaration itself, inside its wrapper (a Python decorated definition): its
    /// signature runs from here to the body.
    head: Node<'t>,
    /// What a parent's embedding text collapses (a block, a class body).
    body: Option<Node<'t>>,
    /// Whose children are walked for members: a class or `impl` body, a function's block.
    members: Option<Node<'t>>,
    modifiers: Vec<Modifier>,
    exported: bool,
    /// A doc string inside the declaration (Python): wins over comments above it.
    doc: Option<String>,
    /// The signature, when it is not the text from `head` to `body`: a long value's head.
    signature: Option<String>,
    /// The type a Go method is declared on: the symbol's `parent_name`, though the method
    /// stands outside the type's lines.
    receiver: Option<String>,
}

impl<'t> Declaration<'t> {
    /// A declaration of `kind` named `name`, written at `name_at`, whose signature starts at
    /// `head`: no body or members, no modifiers, not exported, no doc. Grammars set the rest.
    fn new(kind: SymbolKind, name: String, name_at: Node<'t>, head: Node<'t>) -> Self {
        Declaration {
            kind,
            name,
            name_at: Some(name_at.start_byte() as u32),
            head,
            body: None,
            members: None,
            modifiers: Vec::new(),
            exported: false,
            doc: None,
            signature: None,
            receiver: None,
        }
    }
}

fn grammar(language: Language) -> Option<&'static dyn Grammar> {
    match language {
        Language::Rust => Some(&rust::Rust),
        Language::Python => Some(&python::Python),
        Language::Go => Some(&go::Go),
        Language::TypeScript | Language::Tsx | Language::JavaScript | Language::Jsx => None,
    }
}

/// Whether `language` is read by tree-sitter (and so has no oxc program).
pub(crate) fn handles(language: Language) -> bool {
    grammar(language).is_some()
}

thread_local! {
    /// One parser per thread and language: a parser holds its allocations between files.
    static PARSERS: std::cell::RefCell<Vec<(Language, Parser)>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn parse_tree(language: Language, grammar: &dyn Grammar, source: &str) -> Option<Tree> {
    parse_range(language, grammar, source, None)
}

/// Parses `source`, or only `range` of it (a macro's body, whose nodes keep their offsets in
/// `source`).
fn parse_range(
    language: Language,
    grammar: &dyn Grammar,
    source: &str,
    range: Option<tree_sitter::Range>,
) -> Option<Tree> {
    PARSERS.with(|parsers| {
        let mut parsers = parsers.try_borrow_mut().ok()?;
        let at = match parsers.iter().position(|(l, _)| *l == language) {
            Some(at) => at,
            None => {
                let mut parser = Parser::new();
                parser.set_language(&grammar.language()).ok()?;
                parsers.push((language, parser));
                parsers.len() - 1
            }
        };
        let parser = &mut parsers[at].1;
        parser.set_included_ranges(range.as_slice()).ok()?;
        let tree = parser.parse(source, None);
        if range.is_some() {
            // Back to whole files for the next parse.
            parser.set_included_ranges(&[]).ok()?;
        }
        tree
    })
}

/// The macro bodies of a file that read as items, each parsed again in place, by the byte
/// where its body starts: what [`Grammar::item_macro_body`] finds in item position (at the
/// top level, in `mod`, `impl` and `trait` bodies, and in other such bodies), kept only when
/// the body parses without an error.
type Expansions = std::collections::HashMap<usize, Tree>;

fn expansions(
    language: Language,
    grammar: &dyn Grammar,
    source: &str,
    root: Node<'_>,
) -> Expansions {
    let mut out = Expansions::new();
    expand_within(language, grammar, source, root, 0, &mut out);
    out
}

/// Macro bodies nested deeper than this in one another stay tokens: real code nests two or
/// three (`cfg_rt! { cfg_net! { … } }`), and a crafted file must not exhaust the stack.
const MAX_EXPANSION_DEPTH: usize = 8;

fn expand_within(
    language: Language,
    grammar: &dyn Grammar,
    source: &str,
    container: Node<'_>,
    depth: usize,
    out: &mut Expansions,
) {
    if depth > MAX_EXPANSION_DEPTH {
        return;
    }
    for node in container.named_children(&mut container.walk()) {
        if let Some(body) = grammar.item_macro_body(node) {
            let (start, end) = (body.start_byte() + 1, body.end_byte().saturating_sub(1));
            if start >= end {
                continue;
            }
            let (mut from, mut to) = (body.start_position(), body.end_position());
            from.column += 1;
            to.column = to.column.saturating_sub(1);
            let range = tree_sitter::Range {
                start_byte: start,
                end_byte: end,
                start_point: from,
                end_point: to,
            };
            let Some(tree) = parse_range(language, grammar, source, Some(range)) else {
                continue;
            };
            let root = tree.root_node();
            // Items: a declaration, an import, or a macro that may hold them.
            let declares = root.named_children(&mut root.walk()).any(|n| {
                grammar.declaration(n, source, None).is_some()
                    || !grammar.imports(n, source).is_empty()
                    || grammar.item_macro_body(n).is_some()
            });
            if root.has_error() || !declares {
                continue;
            }
            expand_within(language, grammar, source, root, depth + 1, out);
            out.insert(body.start_byte(), tree);
        } else if let Some(body) = node.child_by_field_name("body")
            && body.kind() == "declaration_list"
        {
            expand_within(language, grammar, source, body, depth + 1, out);
        }
    }
}

/// Parses `source` as the file `path` in a tree-sitter `language`. `None` when `language`
/// is oxc's.
pub(crate) fn parse(path: &str, source: &str, language: Language) -> Option<ParsedFile> {
    let grammar = grammar(language)?;
    let lines = LineIndex::new(source);
    let Some(tree) = parse_tree(language, grammar, source) else {
        return Some(ParsedFile {
            path: path.to_string(),
            language,
            line_count: lines.line_count(),
            status: ParseStatus::Failed,
            symbols: crate::extract::unparsed_item(source, &lines),
            imports: Vec::new(),
            calls: Vec::new(),
            diagnostics: vec![Diagnostic {
                message: "tree-sitter gave no tree".into(),
                line: None,
            }],
            lines,
        });
    };
    let root = tree.root_node();
    let expansions = expansions(language, grammar, source, root);
    let walk = Walk {
        grammar,
        src: source,
        lines: &lines,
        expansions: &expansions,
    };
    let mut roots = merge_overlapping(walk.root_items(root));
    for item in &mut roots {
        let receiver = item.parent_name.take();
        set_hierarchy(item, None, 0);
        item.parent_name = receiver;
    }
    let mut imports = walk.imports(root);
    let calls = walk.uses_and_calls(root, &mut imports);
    let diagnostics = if root.has_error() {
        diagnostics(root, &lines)
    } else {
        Vec::new()
    };
    Some(ParsedFile {
        path: path.to_string(),
        language,
        line_count: lines.line_count(),
        status: ParseStatus::of_tree(&diagnostics),
        symbols: roots,
        imports,
        calls,
        diagnostics,
        lines,
    })
}

/// The top-level statements of a tree-sitter `language` file, each with the attributes in
/// front of it, comments left out: what the chunker's validation checks root items
/// against. `None` when `language` is oxc's.
pub fn top_level_statements(source: &str, language: Language) -> Option<Vec<ByteSpan>> {
    let grammar = grammar(language)?;
    let tree = parse_tree(language, grammar, source)?;
    let mut out = Vec::new();
    let mut prefix: Option<u32> = None;
    let root = tree.root_node();
    for node in root.named_children(&mut root.walk()) {
        if grammar.is_comment(node) {
            continue;
        }
        if grammar.is_prefix(node) {
            prefix.get_or_insert(node.start_byte() as u32);
            continue;
        }
        let start = prefix.take().unwrap_or(node.start_byte() as u32);
        out.push(ByteSpan::new(start, node.end_byte() as u32));
    }
    Some(out)
}

struct Walk<'g, 's> {
    grammar: &'g dyn Grammar,
    src: &'s str,
    lines: &'s LineIndex,
    expansions: &'s Expansions,
}

impl<'s> Walk<'_, 's> {
    /// The items `node`'s macro body expands to, when it is one of [`Expansions`].
    fn expansion(&self, node: Node<'_>) -> Option<Node<'s>> {
        // Asked at every node of the walks; most files have no macro body to read.
        if self.expansions.is_empty() {
            return None;
        }
        let body = self.grammar.item_macro_body(node)?;
        self.expansions
            .get(&body.start_byte())
            .map(|tree| tree.root_node())
    }

    fn text(&self, node: Node<'_>) -> &str {
        &self.src[node.start_byte()..node.end_byte()]
    }

    fn line_of(&self, offset: usize) -> u32 {
        self.lines.line_of(offset as u32)
    }

    fn line_range(&self, start: usize, end: usize) -> LineRange {
        LineRange {
            start: self.line_of(start),
            end: self.lines.end_line_of(start as u32, end as u32),
        }
    }

    /// Whether only whitespace precedes `offset` on its line.
    fn starts_line(&self, offset: usize) -> bool {
        self.src[..offset]
            .rsplit('\n')
            .next()
            .is_none_or(|before| before.trim().is_empty())
    }

    /// One root item per top-level node and per standalone comment block.
    fn root_items(&self, root: Node<'_>) -> Vec<ParsedSymbol> {
        let mut items = Vec::new();
        self.members(root, None, true, &mut items);
        items
    }

    /// The symbols among `parent`'s children. At the top level (`all`), every node is an
    /// item; inside a container only declarations are.
    fn members(
        &self,
        parent: Node<'_>,
        container: Option<SymbolKind>,
        all: bool,
        out: &mut Vec<ParsedSymbol>,
    ) {
        // Comments and prefixes waiting for the node below them; `alone` when they are
        // comments that never belong to it (Rust's `//!`).
        let mut pending: Vec<Node<'_>> = Vec::new();
        let mut alone = false;
        for node in parent.named_children(&mut parent.walk()) {
            let is_comment = self.grammar.is_comment(node);
            if is_comment || self.grammar.is_prefix(node) {
                let stands_alone = is_comment && self.grammar.stands_alone(self.text(node));
                // A comment after code on its line: part of what precedes it, be it a
                // pending attribute (`#[allow(x)] // why`) or the item before.
                let trailing = !self.starts_line(node.start_byte());
                if trailing && !pending.is_empty() {
                    pending.push(node);
                    continue;
                }
                if trailing || stands_alone != alone || !self.continues(&pending, node) {
                    self.flush(&mut pending, all, out);
                }
                if trailing {
                    if all {
                        // Merged into the item on its line by `merge_overlapping`.
                        out.push(self.standalone(&[node]));
                    }
                    continue;
                }
                alone = stands_alone;
                pending.push(node);
                continue;
            }
            if alone || !self.continues(&pending, node) {
                self.flush(&mut pending, all, out);
            }
            let leading = std::mem::take(&mut pending);
            if let Some(decl) = self.grammar.declaration(node, self.src, container) {
                out.push(self.symbol(node, decl, &leading));
            } else if all {
                let start = leading
                    .first()
                    .map_or(node.start_byte(), |n| n.start_byte());
                let kind = if node.is_error() {
                    SymbolKind::Statement
                } else {
                    self.grammar.item_kind(node)
                };
                let mut item = self.plain_item(kind, start, node.start_byte(), node.end_byte());
                if self.grammar.is_compound(node) {
                    // `if sys.platform == "win32": def f(): …`: the functions it declares.
                    self.members(node, container, false, &mut item.children);
                } else if let Some(body) = self.expansion(node) {
                    // `cfg_rt! { pub fn spawn(…) {…} }`: what its expansion declares.
                    self.members(body, container, false, &mut item.children);
                }
                out.push(item);
            } else if self.grammar.is_compound(node) {
                self.members(node, container, false, out);
            } else if let Some(body) = self.expansion(node) {
                self.members(body, container, false, out);
            }
        }
        self.flush(&mut pending, all, out);
    }

    /// Whether `node` starts on the line after the last of `pending` (or on it).
    fn continues(&self, pending: &[Node<'_>], node: Node<'_>) -> bool {
        pending
            .last()
            .is_some_and(|p| self.line_of(node.start_byte()) <= self.line_of(p.end_byte()) + 1)
    }

    /// Pending comments that belong to nothing below them become a standalone item (at the
    /// top level; inside a container they are part of its text).
    fn flush(&self, pending: &mut Vec<Node<'_>>, all: bool, out: &mut Vec<ParsedSymbol>) {
        if pending.is_empty() {
            return;
        }
        if all {
            out.push(self.standalone(pending));
        }
        pending.clear();
    }

    /// A comment block (or attributes with nothing under them) standing alone.
    fn standalone(&self, nodes: &[Node<'_>]) -> ParsedSymbol {
        let (start, end) = (nodes[0].start_byte(), nodes[nodes.len() - 1].end_byte());
        if nodes.iter().all(|n| self.grammar.is_comment(*n)) {
            leaf_item(
                comment_name(&self.src[start..end]),
                SymbolKind::Comment,
                self.line_range(start, end),
                ByteSpan::new(start as u32, end as u32),
            )
        } else {
            self.plain_item(SymbolKind::Statement, start, start, end)
        }
    }

    /// A root item that declares nothing, named by the first line of its statement (at
    /// `named_from`, after the comments above it).
    fn plain_item(
        &self,
        kind: SymbolKind,
        start: usize,
        named_from: usize,
        end: usize,
    ) -> ParsedSymbol {
        let text = &self.src[start..end];
        let statement = &self.src[named_from..end];
        let name = one_line(statement.lines().next().unwrap_or(statement), MAX_NAME);
        let mut item = leaf_item(
            name,
            kind,
            self.line_range(start, end),
            ByteSpan::new(start as u32, end as u32),
        );
        item.signature = one_line(text, MAX_SIGNATURE);
        item
    }

    fn symbol(&self, node: Node<'_>, decl: Declaration<'_>, leading: &[Node<'_>]) -> ParsedSymbol {
        let start = leading
            .first()
            .map_or(node.start_byte(), |n| n.start_byte());
        let end = node.end_byte();
        let head_end = decl.body.map_or(decl.head.end_byte(), |b| b.start_byte());
        let signature = decl.signature.unwrap_or_else(|| {
            one_line(&self.src[decl.head.start_byte()..head_end], MAX_SIGNATURE)
        });
        let comments: Vec<&str> = leading
            .iter()
            .filter(|n| self.grammar.is_comment(**n))
            .map(|n| self.text(*n))
            .collect();
        let doc = decl.doc.or_else(|| self.grammar.doc_comment(&comments));
        let mut children = Vec::new();
        if let Some(members) = decl.members {
            self.members(members, Some(decl.kind), false, &mut children);
        }
        ParsedSymbol {
            index: 0,
            name: one_line(&decl.name, MAX_NAME),
            declared_at: decl.name_at,
            naming: Default::default(),
            kind: decl.kind,
            depth: 0,
            parent_name: decl.receiver,
            range: self.line_range(start, end),
            span: ByteSpan::new(start as u32, end as u32),
            body: decl
                .body
                .map(|b| ByteSpan::new(b.start_byte() as u32, b.end_byte() as u32)),
            signature,
            modifiers: decl.modifiers,
            jsdoc: doc,
            exported: decl.exported,
            children,
        }
    }

    /// The file's import statements, in source order (their uses are found by
    /// [`Walk::uses_and_calls`]).
    fn imports(&self, root: Node<'_>) -> Vec<ImportInfo> {
        let mut imports: Vec<ImportInfo> = Vec::new();
        // Import statements sit at the top level, or in a function body (Python), or in a
        // macro body read as items (Rust): each such body is walked as a tree of its own.
        // A cursor, not a stack of children: this walk visits every named node.
        let mut trees = vec![root];
        while let Some(tree) = trees.pop() {
            let mut cursor = tree.walk();
            'walk: loop {
                let node = cursor.node();
                let mut descend = false;
                if node.is_named() {
                    let found = self.grammar.imports(node, self.src);
                    if found.is_empty() {
                        match self.expansion(node) {
                            Some(body) => trees.push(body),
                            None => descend = !node.is_error(),
                        }
                    }
                    for (written, source, bound) in found {
                        imports.push(ImportInfo {
                            span: ByteSpan::new(
                                written.start_byte() as u32,
                                written.end_byte() as u32,
                            ),
                            source,
                            local_names: bound.iter().map(|b| b.local.clone()).collect(),
                            imported: bound.into_iter().map(|b| b.item).collect(),
                            reference_offsets: Vec::new(),
                        });
                    }
                }
                if descend && cursor.goto_first_child() {
                    continue;
                }
                while !cursor.goto_next_sibling() {
                    if !cursor.goto_parent() {
                        break 'walk;
                    }
                }
            }
        }
        imports.sort_by_key(|i| i.span.start);
        imports
    }

    /// One walk of the tree outside the import statements: every identifier that spells a
    /// name `imports` bind is one of its uses (by name: a shadowing local counts, as there
    /// is no semantic model), and the calls whose callee is a path of names, in source
    /// order, each with what its first name denotes: the receiver inside a method, a
    /// parameter of a declared type, an import's binding (the first import binding it), or
    /// a plain name.
    fn uses_and_calls(&self, root: Node<'_>, imports: &mut [ImportInfo]) -> Vec<CallSyntax> {
        let mut bindings: Bindings = Default::default();
        for (i, import) in imports.iter().enumerate() {
            for (b, local) in import.local_names.iter().enumerate() {
                bindings
                    .entry(local.clone())
                    .or_default()
                    .push((i as u32, b as u32));
            }
        }
        // The spans are sorted and never nest: the last one starting at or before a node is
        // the only one that can hold it.
        let starts: Vec<(usize, usize)> = imports
            .iter()
            .map(|i| (i.span.start as usize, i.span.end as usize))
            .collect();
        let inside_import = |node: Node<'_>| {
            let at = starts.partition_point(|&(s, _)| s <= node.start_byte());
            at > 0 && node.end_byte() <= starts[at - 1].1
        };
        let mut uses: Vec<(u32, u32)> = Vec::new();
        let mut calls = Vec::new();
        // The file's tree, then each macro body parsed as items (the file's walk does not
        // enter them: their tokens are read once, as code).
        let roots = std::iter::once(root).chain(self.expansions.values().map(Tree::root_node));
        for root in roots {
            self.walk_uses_and_calls(root, &inside_import, &bindings, &mut uses, &mut calls);
        }
        uses.sort_unstable();
        for (i, offset) in uses {
            imports[i as usize].reference_offsets.push(offset);
        }
        // In source order; of calls starting at one byte (`a.b().c()`), the outer first, as
        // each walk found them.
        calls.sort_by_key(|c| c.at);
        calls
    }

    /// [`Walk::uses_and_calls`] in one tree.
    fn walk_uses_and_calls(
        &self,
        root: Node<'_>,
        inside_import: &dyn Fn(Node<'_>) -> bool,
        bindings: &Bindings,
        uses: &mut Vec<(u32, u32)>,
        calls: &mut Vec<CallSyntax>,
    ) {
        // The names of the functions around the cursor: nested functions and closures see
        // their method's receiver and their enclosing functions' parameters. `outer` holds,
        // for each function entered, the names around it, restored when the walk leaves it.
        let mut names = Names::default();
        let mut outer: Vec<(usize, Names)> = Vec::new();
        // The grammar's identifier kinds by id: a node's kind name costs a string conversion.
        let language = root.language();
        let kinds = |wanted: &dyn Fn(&str) -> bool| -> Vec<u16> {
            (0..language.node_kind_count() as u16)
                .filter(|&id| {
                    language.node_kind_is_named(id)
                        && language.node_kind_for_id(id).is_some_and(wanted)
                })
                .collect()
        };
        let identifiers = kinds(&|kind| self.grammar.is_identifier(kind));
        let asked = kinds(&|kind| self.grammar.call_and_scope_kinds().contains(&kind));
        let mut cursor = root.walk();
        loop {
            let node = cursor.node();
            if !inside_import(node) {
                // The name a declaration declares (`def parse(…)`, `f(parse=…)`) uses nothing.
                if identifiers.contains(&node.kind_id()) && cursor.field_name() != Some("name") {
                    let bound = bindings.get(self.text(node)).map_or(&[][..], Vec::as_slice);
                    uses.extend(bound.iter().map(|&(i, _)| (i, node.start_byte() as u32)));
                }
                if asked.contains(&node.kind_id()) {
                    if let Some(call) = self.call(node, &names, bindings) {
                        calls.push(call);
                    }
                    if let Some(inner) = self.names_inside(node, &names) {
                        outer.push((node.id(), std::mem::replace(&mut names, inner)));
                    }
                }
                if self.expansion(node).is_none() && cursor.goto_first_child() {
                    continue;
                }
            }
            loop {
                if outer
                    .last()
                    .is_some_and(|(id, _)| *id == cursor.node().id())
                    && let Some((_, around)) = outer.pop()
                {
                    names = around;
                }
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return;
                }
            }
        }
    }

    /// The call `node` makes, if it is one whose callee is a path of names.
    fn call(&self, node: Node<'_>, names: &Names, bindings: &Bindings) -> Option<CallSyntax> {
        let path = self.grammar.call_path(node, self.src)?;
        let first = path.first()?.as_str();
        if path.len() > MAX_CALL_PATH {
            return None;
        }
        let head =
            if self.grammar.is_receiver_word(first) || names.receiver.as_deref() == Some(first) {
                CallHead::Receiver
            } else if let Some((_, type_name)) =
                names.typed.iter().rev().find(|(name, _)| name == first)
            {
                CallHead::Typed {
                    type_name: type_name.clone(),
                }
            } else if let Some(&(import, binding)) = bindings.get(first).and_then(|b| b.first()) {
                CallHead::Import { import, binding }
            } else {
                CallHead::Name
            };
        Some(CallSyntax {
            at: node.start_byte() as u32,
            path,
            head,
        })
    }

    /// The names inside `node` when it is a function that brings its own (a receiver, typed
    /// parameters); `None` when they are those around it.
    fn names_inside(&self, node: Node<'_>, around: &Names) -> Option<Names> {
        let receiver = self.grammar.receiver_name(node, self.src);
        let typed = self.grammar.typed_parameters(node, self.src);
        if receiver.is_none() && typed.is_empty() {
            return None;
        }
        let mut inner = around.clone();
        // A parameter shadows an outer one of its name, and the receiver's name.
        inner
            .typed
            .retain(|(name, _)| !typed.iter().any(|(n, _)| n == name));
        if let Some(receiver) = receiver {
            inner.receiver = Some(receiver);
        } else if typed
            .iter()
            .any(|(n, _)| inner.receiver.as_ref() == Some(n))
        {
            inner.receiver = None;
        }
        inner.typed.extend(typed);
        Some(inner)
    }
}

/// The names a call inside some functions can start from: the innermost method's receiver,
/// and the typed parameters of the functions around it, innermost last.
#[derive(Clone, Default)]
struct Names {
    receiver: Option<String>,
    typed: Vec<(String, String)>,
}

/// Each name the file's imports bind → (the import's index, the binding's index in it), for
/// every import binding it, in source order.
type Bindings = std::collections::HashMap<String, Vec<(u32, u32)>>;

/// One diagnostic per `ERROR` or missing node, outermost first.
fn diagnostics(root: Node<'_>, lines: &LineIndex) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if out.len() >= MAX_DIAGNOSTICS {
            break;
        }
        let line = Some(lines.line_of(node.start_byte() as u32));
        if node.is_error() {
            out.push(Diagnostic {
                message: "syntax error".into(),
                line,
            });
        } else if node.is_missing() {
            out.push(Diagnostic {
                message: format!("missing `{}`", node.kind()),
                line,
            });
        } else if node.has_error() {
            let mut children: Vec<Node<'_>> = node.children(&mut node.walk()).collect();
            children.reverse();
            stack.extend(children);
        }
    }
    out.sort_by_key(|d| d.line);
    out
}

/// The source text of `node`.
fn text<'s>(node: Node<'_>, src: &'s str) -> Option<&'s str> {
    node.utf8_text(src.as_bytes()).ok()
}

/// The source text of `node`, owned; empty if the node's bytes are not the source's.
fn owned_text(node: Node<'_>, src: &str) -> String {
    text(node, src).unwrap_or("").to_string()
}

/// The text of `node`'s field `field`, if it has one.
fn field_text<'s>(node: Node<'_>, field: &str, src: &'s str) -> Option<&'s str> {
    text(node.child_by_field_name(field)?, src)
}

/// `lines` of a comment block with their `marker` and one following space removed;
/// `None` when any line lacks the marker.
fn strip_markers(comments: &[&str], marker: &str) -> Option<String> {
    let mut out = Vec::new();
    for comment in comments {
        for line in comment.lines() {
            let rest = line.trim_start().strip_prefix(marker)?;
            out.push(rest.strip_prefix(' ').unwrap_or(rest).trim_end());
        }
    }
    let text = out.join("\n").trim().to_string();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use crate::{Language, SymbolKind, parse_source};

    #[test]
    fn each_grammar_loads() {
        for (path, language) in [
            ("a.rs", Language::Rust),
            ("a.py", Language::Python),
            ("a.go", Language::Go),
        ] {
            assert_eq!(Language::from_path(path), Some(language));
            assert!(super::handles(language));
        }
    }

    #[test]
    fn a_syntax_error_is_reported_and_loses_no_line() {
        let source =
            "def ok():\n    return 1\n\ndef broken(:\n    pass\n\nclass After:\n    x = 1\n";
        let parsed = parse_source("m.py", source);
        assert_eq!(parsed.status, crate::ParseStatus::Recovered);
        assert!(!parsed.diagnostics.is_empty());
        let names: Vec<_> = parsed
            .symbols
            .iter()
            .map(|s| (s.kind, s.name.as_str()))
            .collect();
        assert!(names.contains(&(SymbolKind::Function, "ok")), "{names:?}");
        assert!(names.contains(&(SymbolKind::Class, "After")), "{names:?}");
        for line in 1..=parsed.line_count {
            let text = parsed.lines.lines_text(source, line, line);
            if !text.trim().is_empty() {
                let holders = parsed
                    .symbols
                    .iter()
                    .filter(|s| s.range.start <= line && line <= s.range.end)
                    .count();
                assert_eq!(holders, 1, "line {line}: {text:?}");
            }
        }
    }

    #[test]
    fn a_macro_body_of_items_is_read_as_items_and_deep_nesting_stays_tokens() {
        let source = "cfg_rt! {\n    use crate::runtime::Handle;\n    pub fn spawn() { Handle::current(); }\n}\n\
                      not_items!(1 + );\n";
        let parsed = super::parse("src/lib.rs", source, Language::Rust).unwrap();
        let names: Vec<&str> = parsed.walk().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"spawn"), "{names:?}");
        assert_eq!(parsed.imports.len(), 1);
        assert_eq!(parsed.imports[0].source, "crate::runtime::Handle");
        assert!(parsed.calls.iter().any(|c| c.path == ["Handle", "current"]));
        // Macros nested in one another: read down to the limit, no deeper.
        let nested = |n: usize| {
            let source = format!("{}fn inner() {{}}{}", "m! { ".repeat(n), " }".repeat(n));
            let parsed = super::parse("src/deep.rs", &source, Language::Rust).unwrap();
            parsed.walk().any(|s| s.name == "inner")
        };
        assert!(nested(3));
        assert!(!nested(100));
    }

    #[test]
    fn one_statement_importing_several_modules_gives_one_import_each() {
        let parsed = crate::parse_source(
            "m.py",
            "import sys, os, collections.abc\n\nprint(sys, os)\n",
        );
        let shown: Vec<(&str, &[String], usize)> = parsed
            .imports
            .iter()
            .map(|i| {
                (
                    i.source.as_str(),
                    i.local_names.as_slice(),
                    i.reference_offsets.len(),
                )
            })
            .collect();
        let names = |n: &str| vec![n.to_string()];
        assert_eq!(
            shown,
            [
                ("sys", names("sys").as_slice(), 1),
                ("os", names("os").as_slice(), 1),
                ("collections.abc", names("collections").as_slice(), 0),
            ]
        );
    }
}
