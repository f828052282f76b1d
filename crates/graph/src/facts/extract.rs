//! The extractor: one `Visit` over a file's program and semantic model, resolving names as
//! far as the file allows, into the owned [`FileFacts`] of the parent module.

use std::collections::HashMap;

use codectx_parser::{LineIndex, ParsedFile, ParsedProgram};
use oxc_ast::ast::*;
use oxc_ast_visit::{Visit, walk};
use oxc_semantic::{Scoping, SymbolId};
use oxc_span::{GetSpan, Span};
use oxc_syntax::scope::ScopeFlags;

use super::*;

/// Extracts the facts of one file, parsing it. Never panics on bad input: a file oxc
/// cannot parse at all gives empty facts with `syntax_errors > 0`. A caller that also
/// chunks the file takes both from one parse with [`facts_of`].
pub fn extract_facts(path: &str, source: &str) -> FileFacts {
    codectx_parser::parse_with(path, source, |parsed, program| facts_of(&parsed, program))
}

/// The facts of a file from its one parse ([`codectx_parser::parse_with`]): what oxc
/// recovered, or empty facts with `syntax_errors > 0` when no attempt parsed. A Rust,
/// Python or Go file's facts are its declarations and exports (`symbols.rs`).
pub fn facts_of(parsed: &ParsedFile, program: Option<&ParsedProgram<'_, '_>>) -> FileFacts {
    let errors = parsed.diagnostics.len() as u32;
    if !parsed.language.is_oxc() {
        return super::symbols::facts_from_symbols(parsed);
    }
    let Some(program) = program else {
        return FileFacts::empty(&parsed.path, parsed.line_count, errors.max(1));
    };
    let mut facts = FileFacts::empty(&parsed.path, parsed.line_count, errors);
    let (source, lines) = (program.text, &parsed.lines);
    let semantic = program.semantic;
    let scoping = semantic.scoping();
    let mut ex = Extractor {
        src: source,
        lines,
        last_line: std::cell::Cell::new(1),
        scoping,
        facts: &mut facts,
        symbol_at: symbol_by_declared_at(parsed),
        symbol_decl: BySymbol::new(scoping),
        symbol_import: BySymbol::new(scoping),
        symbol_type: BySymbol::new(scoping),
        symbol_param: BySymbol::new(scoping),
        contexts: HashMap::new(),
        contexts_raw: Vec::new(),
        context_ids: Vec::new(),
        returns: Vec::new(),
        callers: Vec::new(),
        containers: Vec::new(),
        classes: Vec::new(),
        export_start: None,
        exported: false,
        // Sized from the file's reference count: these grow with every identifier.
        pending_calls: Vec::with_capacity(scoping.references_len() / 4),
        named_expressions: 0,
        pending_refs: Vec::with_capacity(scoping.references_len()),
        pending_types: Vec::new(),
        pending_exports: Vec::new(),
        required: HashMap::new(),
        var_keyword: "var",
    };
    ex.collect_module_items(program.program);
    ex.visit_program(program.program);
    ex.finish();
    facts
}

/// The parser's symbols (index and kind) by [`codectx_parser::ParsedSymbol::declared_at`]:
/// where a declaration's name is written is what both walks of the one parse agree on.
fn symbol_by_declared_at(parsed: &ParsedFile) -> HashMap<u32, (u32, SymbolKind)> {
    let mut by_offset = HashMap::new();
    for symbol in parsed.walk() {
        if let Some(at) = symbol.declared_at {
            by_offset.entry(at).or_insert((symbol.index, symbol.kind));
        }
    }
    by_offset
}

// ---- extraction -------------------------------------------------------------------------

/// A map keyed by the file's symbols. oxc numbers them densely from 0, so a vector beats
/// hashing (the extractor looks up every identifier it meets).
struct BySymbol<T>(Vec<Option<T>>);

impl<T> BySymbol<T> {
    fn new(scoping: &Scoping) -> Self {
        Self(
            std::iter::repeat_with(|| None)
                .take(scoping.symbols_len())
                .collect(),
        )
    }

    fn get(&self, symbol: &SymbolId) -> Option<&T> {
        self.0.get(symbol.index()).and_then(Option::as_ref)
    }

    fn contains_key(&self, symbol: &SymbolId) -> bool {
        self.get(symbol).is_some()
    }

    fn insert(&mut self, symbol: SymbolId, value: T) {
        // Symbols are never added after semantic analysis; guard anyway rather than panic.
        if let Some(slot) = self.0.get_mut(symbol.index()) {
            *slot = Some(value);
        }
    }
}

/// A name seen during the walk, before the file's bindings are all known.
#[derive(Clone)]
enum Raw {
    Symbol(SymbolId),
    Global(String),
    /// Already resolved (a namespace member `ns.Foo` is an import of `Foo`).
    Resolved(Target),
}

#[derive(Clone)]
enum RawReceiver {
    /// `new X()`: a value of type X.
    Constructed(Raw),
    This(u32),
    Super(u32),
    Name(Raw),
    Member(Box<RawReceiver>, String),
    Returned(Box<RawReceiver>, String),
}

#[derive(Clone)]
enum RawContextual {
    Annotated(Raw),
    Argument(RawCallee, u32),
}

#[derive(Clone)]
enum RawCallee {
    Name(Raw),
    Member(RawReceiver, String),
}

/// Where a type slot must be written once names resolve.
enum TypeSlotRef {
    Param(u32, usize),
    /// Parameter `.2` of call signature `.1` of interface `.0`.
    CallParam(u32, usize, usize),
    Alternative(u32),
    Return(u32),
    Value(u32),
    Extends(u32),
    Implements(u32),
}

struct Extractor<'s, 'f> {
    src: &'s str,
    lines: &'s LineIndex,
    /// The line [`Self::line`] found last: the walk asks for nearby lines in order.
    last_line: std::cell::Cell<u32>,
    scoping: &'s Scoping,
    facts: &'f mut FileFacts,
    /// The parser's symbols by where their names are written.
    symbol_at: HashMap<u32, (u32, SymbolKind)>,
    symbol_decl: BySymbol<u32>,
    symbol_import: BySymbol<Target>,
    /// Declared or constructed type of parameters and locals, as raw names.
    symbol_type: BySymbol<Raw>,
    /// Unannotated parameters of contextually typed function expressions: (context, index).
    symbol_param: BySymbol<(usize, u32)>,
    /// Contexts of function expressions about to be walked, by the function's start offset
    /// (indexes into `contexts_raw`).
    contexts: HashMap<u32, usize>,
    contexts_raw: Vec<RawContextual>,
    /// `contexts_raw` index → [`FileFacts::contexts`] index, filled by `finish`.
    context_ids: Vec<Option<u32>>,
    /// Declared return types of the enclosing functions (for `return (c) => …`).
    returns: Vec<Option<Raw>>,
    callers: Vec<u32>,
    /// Enclosing classes and interfaces (for qualified names).
    containers: Vec<u32>,
    /// Enclosing classes (for `this` / `super`); `None` inside a non-arrow function that
    /// rebinds `this`.
    classes: Vec<Option<u32>>,
    export_start: Option<u32>,
    exported: bool,
    pending_calls: Vec<(Option<u32>, u32, SiteKind, RawCallee, bool)>,
    /// Named function expressions entered since the innermost caller declaration.
    named_expressions: u32,
    pending_refs: Vec<(u32, RawCallee)>,
    pending_types: Vec<(TypeSlotRef, Raw)>,
    pending_exports: Vec<(String, u32, Raw)>,
    /// Requests already made for top-level `require` calls, by the call's start offset.
    required: HashMap<u32, u32>,
    /// Keyword of the variable declaration being walked.
    var_keyword: &'static str,
}

impl<'a> Extractor<'_, '_> {
    fn line(&self, offset: u32) -> u32 {
        let line = self.lines.line_of_near(offset, self.last_line.get());
        self.last_line.set(line);
        line
    }

    fn text(&self, span: Span) -> &str {
        let end = (span.end as usize).min(self.src.len());
        self.src.get(span.start as usize..end).unwrap_or("")
    }

    fn request(&mut self, specifier: &str, offset: u32, kind: RequestKind) -> u32 {
        let line = self.line(offset);
        self.facts.requests.push(ModuleRequest {
            specifier: specifier.to_string(),
            line,
            kind,
            names: Vec::new(),
            scope: Vec::new(),
        });
        (self.facts.requests.len() - 1) as u32
    }

    /// Imports and exports first: references may precede the import statement.
    fn collect_module_items(&mut self, program: &Program<'a>) {
        for stmt in &program.body {
            match stmt {
                Statement::ImportDeclaration(d) => {
                    let kind = if d.import_kind.is_type() {
                        RequestKind::TypeImport
                    } else {
                        RequestKind::Import
                    };
                    let request = self.request(&d.source.value, d.span.start, kind);
                    for s in d.specifiers.iter().flatten() {
                        let (local, target, name) = match s {
                            ImportDeclarationSpecifier::ImportSpecifier(s) => {
                                let name = s.imported.name().to_string();
                                (
                                    &s.local,
                                    Target::Import {
                                        request,
                                        name: name.clone(),
                                    },
                                    name,
                                )
                            }
                            ImportDeclarationSpecifier::ImportDefaultSpecifier(s) => (
                                &s.local,
                                Target::Import {
                                    request,
                                    name: "default".into(),
                                },
                                "default".into(),
                            ),
                            ImportDeclarationSpecifier::ImportNamespaceSpecifier(s) => {
                                (&s.local, Target::Namespace { request }, "*".into())
                            }
                        };
                        self.facts.requests[request as usize].names.push(name);
                        if let Some(symbol) = local.symbol_id.get() {
                            self.symbol_import.insert(symbol, target.clone());
                        }
                        // An import specifier is a reference to what it imports.
                        if !matches!(target, Target::Namespace { .. }) {
                            let line = self.line(s.span().start);
                            self.facts.refs.push(RefSite {
                                line,
                                to: Callee::Name { target },
                            });
                        }
                    }
                }
                Statement::TSImportEqualsDeclaration(d) => {
                    if let TSModuleReference::ExternalModuleReference(m) = &d.module_reference {
                        let request =
                            self.request(&m.expression.value, d.span.start, RequestKind::Require);
                        self.facts.requests[request as usize].names.push("*".into());
                        if let Some(symbol) = d.id.symbol_id.get() {
                            self.symbol_import
                                .insert(symbol, Target::Namespace { request });
                        }
                    }
                }
                Statement::ExportAllDeclaration(d) => {
                    let request =
                        self.request(&d.source.value, d.span.start, RequestKind::ReExport);
                    let line = self.line(d.span.start);
                    match &d.exported {
                        Some(name) => {
                            self.facts.requests[request as usize].names.push("*".into());
                            self.facts.exports.push(Export {
                                name: name.name().to_string(),
                                line,
                                target: ExportTarget::Namespace { request },
                            });
                        }
                        None => {
                            self.facts.requests[request as usize].names.push("*".into());
                            self.facts.star_exports.push(request);
                        }
                    }
                }
                Statement::ExportFromDeclaration(d) => {
                    let request =
                        self.request(&d.source.value, d.span.start, RequestKind::ReExport);
                    for s in &d.specifiers {
                        let local = s.local.name().to_string();
                        let line = self.line(s.span.start);
                        self.facts.requests[request as usize]
                            .names
                            .push(local.clone());
                        let target = if local == "*" {
                            ExportTarget::Namespace { request }
                        } else {
                            ExportTarget::Reexport {
                                request,
                                name: local.clone(),
                            }
                        };
                        self.facts.exports.push(Export {
                            name: s.exported.name().to_string(),
                            line,
                            target,
                        });
                        self.facts.refs.push(RefSite {
                            line,
                            to: Callee::Name {
                                target: Target::Import {
                                    request,
                                    name: local,
                                },
                            },
                        });
                    }
                }
                Statement::VariableDeclaration(v) => {
                    for d in &v.declarations {
                        self.required_binding(d);
                    }
                }
                _ => {}
            }
        }
    }

    /// `const x = require('y')` binds `x` to the module like `import * as x`;
    /// `const { a, b: c } = require('y')` and `const a = require('y').a` bind like
    /// `import { a, b as c }`.
    fn required_binding(&mut self, d: &VariableDeclarator<'a>) {
        let Some(mut init) = d.init.as_ref().map(|i| i.get_inner_expression()) else {
            return;
        };
        let mut member = None;
        if let Expression::StaticMemberExpression(m) = init {
            member = Some(m.property.name.to_string());
            init = m.object.get_inner_expression();
        }
        let Some(specifier) = codectx_parser::commonjs::require_source(init) else {
            return;
        };
        let call_start = init.span().start;
        let request = self.request(specifier, call_start, RequestKind::Require);
        self.required.insert(call_start, request);
        let bind = |ex: &mut Self, id: &BindingIdentifier<'a>, name: Option<String>| {
            let target = match name {
                Some(name) => {
                    ex.facts.requests[request as usize].names.push(name.clone());
                    let target = Target::Import { request, name };
                    let line = ex.line(id.span.start);
                    ex.facts.refs.push(RefSite {
                        line,
                        to: Callee::Name {
                            target: target.clone(),
                        },
                    });
                    target
                }
                None => {
                    ex.facts.requests[request as usize].names.push("*".into());
                    Target::Namespace { request }
                }
            };
            if let Some(symbol) = id.symbol_id.get() {
                ex.symbol_import.insert(symbol, target);
            }
        };
        match (&d.id, member) {
            (BindingPattern::BindingIdentifier(id), member) => bind(self, id, member),
            (BindingPattern::ObjectPattern(o), None) => {
                for p in &o.properties {
                    if let (Some(key), BindingPattern::BindingIdentifier(id)) =
                        (key_name(&p.key), &p.value)
                    {
                        bind(self, id, Some(key));
                    }
                }
            }
            _ => self.facts.requests[request as usize].names.push("*".into()),
        }
    }

    fn push_decl(&mut self, mut decl: Decl, symbol: Option<SymbolId>) -> u32 {
        decl.container = self.containers.last().copied();
        if let Some(c) = decl.container {
            decl.qualified_name = format!(
                "{}.{}",
                self.facts.decls[c as usize].qualified_name, decl.name
            );
            let index = self.facts.decls.len() as u32;
            self.facts.decls[c as usize].members.push(index);
        }
        let index = self.facts.decls.len() as u32;
        if let Some(symbol) = symbol {
            self.symbol_decl.insert(symbol, index);
        }
        self.facts.decls.push(decl);
        index
    }

    /// A declaration of `name`, written at `declared_at` (see
    /// [`codectx_parser::ParsedSymbol::declared_at`]: the same offset finds the parser's
    /// symbol for it).
    fn new_decl(
        &mut self,
        name: String,
        declared_at: Option<u32>,
        kind: SymbolKind,
        node: Span,
        sig: (u32, u32),
    ) -> Decl {
        let start = self
            .export_start
            .take()
            .map_or(node.start, |s| s.min(node.start));
        let exported = std::mem::take(&mut self.exported);
        Decl {
            exported,
            ..Decl::new(
                name,
                declared_at.and_then(|at| self.symbol_at.get(&at).map(|&(symbol, _)| symbol)),
                kind,
                (
                    self.line(start),
                    self.lines.end_line_of(node.start, node.end),
                ),
                (start, node.end),
                collapse(self.text(Span::new(sig.0, sig.1.max(sig.0)))),
            )
        }
    }

    fn constant_info(&self, d: &VariableDeclarator<'a>) -> ConstantInfo {
        let init = d.init.as_ref().map(|i| i.get_inner_expression());
        let literal_type = match init {
            Some(Expression::NumericLiteral(_)) => Some("number"),
            Some(Expression::StringLiteral(_) | Expression::TemplateLiteral(_)) => Some("string"),
            Some(Expression::BooleanLiteral(_)) => Some("boolean"),
            Some(Expression::BigIntLiteral(_)) => Some("bigint"),
            Some(Expression::RegExpLiteral(_)) => Some("RegExp"),
            _ => None,
        };
        let value = d
            .init
            .as_ref()
            .and_then(|i| collapse_within(self.text(i.span()), MAX_CONSTANT_VALUE));
        ConstantInfo {
            keyword: self.var_keyword.to_string(),
            type_text: d
                .type_annotation
                .as_ref()
                .map(|t| collapse(self.text(t.type_annotation.span())))
                .or(literal_type.map(str::to_string)),
            value,
        }
    }

    fn type_params(&self, tp: Option<&TSTypeParameterDeclaration<'a>>) -> Vec<TypeParam> {
        tp.map(|tp| {
            tp.params
                .iter()
                .map(|p| TypeParam {
                    name: p.name.name.to_string(),
                    constraint: p.constraint.as_ref().map(|c| collapse(self.text(c.span()))),
                    default: p.default.as_ref().map(|d| collapse(self.text(d.span()))),
                })
                .collect()
        })
        .unwrap_or_default()
    }

    /// Records parameter and return slots of a function-like declaration.
    fn signature_slots(
        &mut self,
        decl: u32,
        params: &FormalParameters<'a>,
        returns: Option<&TSTypeAnnotation<'a>>,
    ) {
        let slots = self.parameter_slots(params, |i| TypeSlotRef::Param(decl, i));
        self.facts.decls[decl as usize].params.extend(slots);
        for p in &params.items {
            if let Some(t) = &p.type_annotation
                && let BindingPattern::BindingIdentifier(id) = &p.pattern
                && let (Some(symbol), Some(first)) = (
                    id.symbol_id.get(),
                    primary_type(self.scoping, &t.type_annotation),
                )
            {
                self.symbol_type.insert(symbol, first);
            }
        }
        if let Some(r) = returns {
            self.facts.decls[decl as usize].returns = Some(TypedSlot {
                name: String::new(),
                type_text: collapse(self.text(r.type_annotation.span())),
                types: Vec::new(),
            });
            for raw in type_names(self.scoping, &r.type_annotation) {
                self.pending_types.push((TypeSlotRef::Return(decl), raw));
            }
        }
    }

    /// One slot per parameter, the rest parameter last (named `...name`); the type names
    /// each annotation mentions are resolved into `slot(i)` once the file's names are known.
    fn parameter_slots(
        &mut self,
        params: &FormalParameters<'a>,
        slot: impl Fn(usize) -> TypeSlotRef,
    ) -> Vec<TypedSlot> {
        let items = params.items.iter().map(|p| {
            let name = self.text(p.pattern.span()).to_string();
            (name, p.type_annotation.as_deref())
        });
        let rest = params.rest.as_ref().map(|r| {
            let name = format!("...{}", self.text(r.rest.argument.span()));
            (name, r.type_annotation.as_deref())
        });
        let all: Vec<(String, Option<&TSTypeAnnotation<'a>>)> = items.chain(rest).collect();
        let mut slots = Vec::new();
        for (i, (name, annotation)) in all.into_iter().enumerate() {
            let type_text = annotation
                .map(|t| collapse(self.text(t.type_annotation.span())))
                .unwrap_or_default();
            if let Some(t) = annotation {
                for raw in type_names(self.scoping, &t.type_annotation) {
                    self.pending_types.push((slot(i), raw));
                }
            }
            slots.push(TypedSlot {
                name,
                type_text,
                types: Vec::new(),
            });
        }
        slots
    }

    fn enclosing_class(&self) -> Option<u32> {
        self.classes.last().copied().flatten()
    }

    fn raw_of_expr(&self, e: &Expression<'a>) -> Option<RawReceiver> {
        match e.get_inner_expression() {
            Expression::Identifier(id) => Some(RawReceiver::Name(self.raw_ident(id))),
            Expression::ThisExpression(_) => self.enclosing_class().map(RawReceiver::This),
            Expression::Super(_) => self.enclosing_class().map(RawReceiver::Super),
            Expression::StaticMemberExpression(m) => Some(RawReceiver::Member(
                Box::new(self.raw_of_expr(&m.object)?),
                m.property.name.to_string(),
            )),
            Expression::PrivateFieldExpression(m) => Some(RawReceiver::Member(
                Box::new(self.raw_of_expr(&m.object)?),
                format!("#{}", m.field.name),
            )),
            Expression::CallExpression(c) => match c.callee.get_inner_expression() {
                Expression::StaticMemberExpression(m) => Some(RawReceiver::Returned(
                    Box::new(self.raw_of_expr(&m.object)?),
                    m.property.name.to_string(),
                )),
                _ => None,
            },
            Expression::NewExpression(n) => match n.callee.get_inner_expression() {
                Expression::Identifier(id) => Some(RawReceiver::Constructed(self.raw_ident(id))),
                _ => None,
            },
            _ => None,
        }
    }

    fn raw_ident(&self, id: &IdentifierReference<'a>) -> Raw {
        ident_raw(self.scoping, id)
    }

    fn callee_of(&self, e: &Expression<'a>) -> Option<RawCallee> {
        match e.get_inner_expression() {
            Expression::Identifier(id) => Some(RawCallee::Name(self.raw_ident(id))),
            Expression::StaticMemberExpression(m) => Some(RawCallee::Member(
                self.raw_of_expr(&m.object)?,
                m.property.name.to_string(),
            )),
            Expression::PrivateFieldExpression(m) => Some(RawCallee::Member(
                self.raw_of_expr(&m.object)?,
                format!("#{}", m.field.name),
            )),
            _ => None,
        }
    }

    fn call_site(&mut self, kind: SiteKind, callee: Option<RawCallee>, offset: u32) {
        if let Some(callee) = callee {
            let caller = self.callers.last().copied();
            let line = self.line(offset);
            let nested = self.named_expressions > 0;
            self.pending_calls
                .push((caller, line, kind, callee, nested));
        }
    }

    /// Opens a declaration scope for callers and `this`.
    fn scoped_caller(&mut self, decl: u32, f: impl FnOnce(&mut Self)) {
        self.callers.push(decl);
        let saved = std::mem::take(&mut self.named_expressions);
        f(self);
        self.named_expressions = saved;
        self.callers.pop();
    }

    fn function_like(&mut self, decl: u32, func: &Function<'a>, flags: ScopeFlags) {
        self.facts.decls[decl as usize].type_params =
            self.type_params(func.type_parameters.as_deref());
        self.signature_slots(decl, &func.params, func.return_type.as_deref());
        self.bind_contextual_params(func.span.start, &func.params);
        self.with_return_type(func.return_type.as_deref(), |s| {
            s.scoped_caller(decl, |s| walk::walk_function(s, func, flags));
        });
    }

    /// The arrow function declared as `decl`: its type parameters and signature, and its
    /// body with `decl` as the caller (an arrow keeps the enclosing `this`).
    fn arrow_like(&mut self, decl: u32, a: &ArrowFunctionExpression<'a>) {
        self.facts.decls[decl as usize].type_params =
            self.type_params(a.type_parameters.as_deref());
        self.signature_slots(decl, &a.params, a.return_type.as_deref());
        self.scoped_caller(decl, |s| s.arrow_body(a));
    }

    // ---- contextual typing of callback parameters ---------------------------------------

    /// Records where the function expression(s) `e` evaluates to take their parameter
    /// types from; `cond ? f : g` and `a ?? f` pass the context on to both sides.
    fn set_context(&mut self, e: &Expression<'a>, context: RawContextual) {
        match e.get_inner_expression() {
            Expression::ArrowFunctionExpression(a) => self.push_context(a.span.start, context),
            Expression::FunctionExpression(f) => self.push_context(f.span.start, context),
            Expression::ConditionalExpression(c) => {
                self.set_context(&c.consequent, context.clone());
                self.set_context(&c.alternate, context);
            }
            Expression::LogicalExpression(l) => {
                self.set_context(&l.left, context.clone());
                self.set_context(&l.right, context);
            }
            _ => {}
        }
    }

    fn push_context(&mut self, function_start: u32, context: RawContextual) {
        self.contexts_raw.push(context);
        self.contexts
            .insert(function_start, self.contexts_raw.len() - 1);
    }

    /// Binds the unannotated parameters of the function starting at `start` to its context.
    fn bind_contextual_params(&mut self, start: u32, params: &FormalParameters<'a>) {
        let Some(context) = self.contexts.remove(&start) else {
            return;
        };
        for (i, p) in params.items.iter().enumerate() {
            if p.type_annotation.is_none()
                && let BindingPattern::BindingIdentifier(id) = &p.pattern
                && let Some(symbol) = id.symbol_id.get()
            {
                self.symbol_param.insert(symbol, (context, i as u32));
            }
        }
    }

    /// `const h: Handler = (c) => …`: the annotation types the function's parameters.
    fn annotated_context(&mut self, d: &VariableDeclarator<'a>) {
        if let (Some(t), Some(init)) = (&d.type_annotation, &d.init)
            && let Some(raw) = primary_type(self.scoping, &t.type_annotation)
        {
            self.set_context(init, RawContextual::Annotated(raw));
        }
    }

    /// Walks a function with its declared return type as the context of the functions it
    /// returns.
    fn with_return_type(
        &mut self,
        returns: Option<&TSTypeAnnotation<'a>>,
        f: impl FnOnce(&mut Self),
    ) {
        let raw = returns.and_then(|r| primary_type(self.scoping, &r.type_annotation));
        self.returns.push(raw);
        f(self);
        self.returns.pop();
    }

    /// `return e` (or an arrow's expression body `e`) in the innermost function.
    fn returned(&mut self, e: &Expression<'a>) {
        if let Some(Some(raw)) = self.returns.last() {
            let raw = raw.clone();
            self.set_context(e, RawContextual::Annotated(raw));
        }
    }

    /// Walks an arrow function: binds its contextual parameters, and gives a function its
    /// expression body evaluates to the arrow's return type as context.
    fn arrow_body(&mut self, a: &ArrowFunctionExpression<'a>) {
        self.bind_contextual_params(a.span.start, &a.params);
        self.with_return_type(a.return_type.as_deref(), |s| {
            if let Some(e) = a.get_expression() {
                s.returned(e);
            }
            walk::walk_arrow_function_expression(s, a);
        });
    }

    // ---- finishing: raw names → targets -------------------------------------------------

    fn target(&self, raw: &Raw) -> Target {
        match raw {
            Raw::Symbol(symbol) => {
                if let Some(&decl) = self.symbol_decl.get(symbol) {
                    Target::Local { decl }
                } else if let Some(t) = self.symbol_import.get(symbol) {
                    t.clone()
                } else {
                    Target::Global {
                        name: self.scoping.symbol_name(*symbol).to_string(),
                    }
                }
            }
            Raw::Global(name) => Target::Global { name: name.clone() },
            Raw::Resolved(t) => t.clone(),
        }
    }

    fn receiver(&self, raw: &RawReceiver) -> Option<Receiver> {
        Some(match raw {
            RawReceiver::This(c) => Receiver::This { class: *c },
            RawReceiver::Super(c) => Receiver::Super { class: *c },
            RawReceiver::Constructed(raw) => Receiver::Typed {
                target: self.target(raw),
            },
            RawReceiver::Name(raw) => {
                if let Raw::Symbol(symbol) = raw
                    && !self.symbol_decl.contains_key(symbol)
                    && !self.symbol_import.contains_key(symbol)
                    && let Some(t) = self.symbol_type.get(symbol)
                {
                    return Some(Receiver::Typed {
                        target: self.target(t),
                    });
                }
                // A local variable with a declared/constructed type is a typed value.
                if let Raw::Symbol(symbol) = raw
                    && let Some(&decl) = self.symbol_decl.get(symbol)
                    && self.facts.decls[decl as usize].kind == SymbolKind::Variable
                    && let Some(t) = self.symbol_type.get(symbol)
                {
                    return Some(Receiver::Typed {
                        target: self.target(t),
                    });
                }
                if let Raw::Symbol(symbol) = raw
                    && let Some(&(context, index)) = self.symbol_param.get(symbol)
                    && let Some(Some(context)) = self.context_ids.get(context)
                {
                    return Some(Receiver::Parameter {
                        context: *context,
                        index,
                    });
                }
                if let Raw::Symbol(symbol) = raw
                    && !self.symbol_decl.contains_key(symbol)
                    && !self.symbol_import.contains_key(symbol)
                {
                    return Some(Receiver::Untyped);
                }
                Receiver::Value {
                    target: self.target(raw),
                }
            }
            RawReceiver::Member(r, name) => Receiver::Member {
                receiver: Box::new(self.receiver(r)?),
                name: name.clone(),
            },
            RawReceiver::Returned(r, name) => Receiver::Returned {
                receiver: Box::new(self.receiver(r)?),
                name: name.clone(),
            },
        })
    }

    fn callee(&self, raw: &RawCallee) -> Option<Callee> {
        Some(match raw {
            RawCallee::Name(raw) => Callee::Name {
                target: self.target(raw),
            },
            RawCallee::Member(r, name) => match self.own_export(r, name) {
                Some(decl) => Callee::Name {
                    target: Target::Local { decl },
                },
                None => Callee::Member {
                    receiver: self.receiver(r)?,
                    name: name.clone(),
                },
            },
        })
    }

    /// `exports.name` / `module.exports.name` inside a CommonJS file: the declaration the file
    /// exports under `name` (exports are resolved before calls in [`Self::finish`]).
    fn own_export(&self, receiver: &RawReceiver, name: &str) -> Option<u32> {
        let is_global = |r: &RawReceiver, global: &str| matches!(r, RawReceiver::Name(Raw::Global(g)) if g == global);
        let exports_object = is_global(receiver, "exports")
            || matches!(receiver, RawReceiver::Member(m, p) if p == "exports" && is_global(m, "module"));
        if !exports_object {
            return None;
        }
        self.facts.exports.iter().find_map(|e| match e.target {
            ExportTarget::Local { decl } if e.name == name => Some(decl),
            _ => None,
        })
    }

    fn finish(&mut self) {
        // Contexts first: receivers below refer to them.
        for raw in std::mem::take(&mut self.contexts_raw) {
            let context = match raw {
                RawContextual::Annotated(t) => Some(Contextual::Annotated {
                    target: self.target(&t),
                }),
                RawContextual::Argument(callee, arg) => self
                    .callee(&callee)
                    .map(|callee| Contextual::Argument { callee, arg }),
            };
            let id = context.map(|c| {
                self.facts.contexts.push(c);
                self.facts.contexts.len() as u32 - 1
            });
            self.context_ids.push(id);
        }
        for (name, line, raw) in std::mem::take(&mut self.pending_exports) {
            let target = match self.target(&raw) {
                Target::Local { decl } => ExportTarget::Local { decl },
                Target::Import { request, name } => ExportTarget::Reexport { request, name },
                Target::Namespace { request } => ExportTarget::Namespace { request },
                Target::Global { .. } => ExportTarget::Expression,
            };
            self.facts.exports.push(Export { name, line, target });
        }
        self.facts.calls.reserve(self.pending_calls.len());
        self.facts.refs.reserve(self.pending_refs.len());
        for (caller, line, kind, raw, nested) in std::mem::take(&mut self.pending_calls) {
            if let Some(callee) = self.callee(&raw) {
                self.facts.calls.push(CallSite {
                    caller,
                    line,
                    kind,
                    callee,
                    in_named_expression: nested,
                });
            }
        }
        for (line, raw) in std::mem::take(&mut self.pending_refs) {
            // A name bound to neither a declaration nor an import is a parameter or a local:
            // it refers to nothing another file could declare.
            if let RawCallee::Name(Raw::Symbol(symbol)) = &raw
                && !self.symbol_decl.contains_key(symbol)
                && !self.symbol_import.contains_key(symbol)
            {
                continue;
            }
            if let Some(to) = self.callee(&raw) {
                self.facts.refs.push(RefSite { line, to });
            }
        }
        for (slot, raw) in std::mem::take(&mut self.pending_types) {
            let target = self.target(&raw);
            let decls = &mut self.facts.decls;
            match slot {
                TypeSlotRef::Param(d, i) => decls[d as usize].params[i].types.push(target),
                TypeSlotRef::CallParam(d, sig, i) => {
                    decls[d as usize].call_signatures[sig][i].types.push(target)
                }
                TypeSlotRef::Alternative(d) => decls[d as usize].alternatives.push(target),
                TypeSlotRef::Return(d) => {
                    if let Some(r) = decls[d as usize].returns.as_mut() {
                        r.types.push(target);
                    }
                }
                TypeSlotRef::Value(d) => {
                    decls[d as usize].value_type.get_or_insert(target);
                }
                TypeSlotRef::Extends(d) => decls[d as usize].extends.push(target),
                TypeSlotRef::Implements(d) => decls[d as usize].implements.push(target),
            }
        }
    }

    /// `export { a as b }` / `export default a`: resolved in `finish`, once declarations
    /// further down the file are known too.
    fn export_local(&mut self, name: String, offset: u32, raw: Raw) {
        let line = self.line(offset);
        self.pending_exports.push((name, line, raw));
    }

    fn export_decl(&mut self, decl: u32, name: &str) {
        let line = self.facts.decls[decl as usize].start_line;
        self.facts.exports.push(Export {
            name: name.to_string(),
            line,
            target: ExportTarget::Local { decl },
        });
    }

    fn class_decl(
        &mut self,
        c: &Class<'a>,
        name: String,
        declared_at: Option<u32>,
        symbol: Option<SymbolId>,
    ) -> u32 {
        let node = decorated(c.span, &c.decorators);
        let mut decl = self.new_decl(
            name,
            declared_at,
            SymbolKind::Class,
            node,
            (node.start, c.body.span.start),
        );
        decl.is_abstract = c.r#abstract;
        decl.type_params = self.type_params(c.type_parameters.as_deref());
        let index = self.push_decl(decl, symbol);
        if let Some(h) = &c.heritage
            && let Some(raw) = self.heritage_raw(&h.expression)
        {
            self.pending_types.push((TypeSlotRef::Extends(index), raw));
        }
        for i in &c.implements {
            if let Some(raw) = self.type_name_raw(&i.expression) {
                self.pending_types
                    .push((TypeSlotRef::Implements(index), raw));
            }
        }
        index
    }

    fn heritage_raw(&self, e: &Expression<'a>) -> Option<Raw> {
        match e.get_inner_expression() {
            Expression::Identifier(id) => Some(self.raw_ident(id)),
            Expression::StaticMemberExpression(m) => {
                // `ns.Base`: only namespace imports resolve; keep the member name for them.
                let Expression::Identifier(ns) = m.object.get_inner_expression() else {
                    return None;
                };
                Some(self.member_of_namespace(ns, &m.property.name))
            }
            _ => None,
        }
    }

    fn type_name_raw(&self, n: &TSTypeName<'a>) -> Option<Raw> {
        match n {
            TSTypeName::IdentifierReference(id) => Some(self.raw_ident(id)),
            TSTypeName::QualifiedName(q) => match &q.left {
                TSTypeName::IdentifierReference(ns) => {
                    Some(self.member_of_namespace(ns, &q.right.name))
                }
                _ => None,
            },
            TSTypeName::ThisExpression(_) => None,
        }
    }

    /// `ns.Name` where `ns` is `import * as ns`: `Name` imported from that module.
    fn member_of_namespace(&self, ns: &IdentifierReference<'a>, member: &str) -> Raw {
        if let Raw::Symbol(symbol) = self.raw_ident(ns)
            && let Some(Target::Namespace { request }) = self.symbol_import.get(&symbol)
        {
            return Raw::Resolved(Target::Import {
                request: *request,
                name: member.to_string(),
            });
        }
        Raw::Global(member.to_string())
    }
}

impl<'a> Visit<'a> for Extractor<'_, '_> {
    fn visit_export_declaration(&mut self, it: &ExportDeclaration<'a>) {
        self.export_start = Some(it.span.start);
        self.exported = true;
        let before = self.facts.decls.len() as u32;
        walk::walk_export_declaration(self, it);
        self.export_start = None;
        self.exported = false;
        // Every top-level declaration the statement introduced is exported under its name.
        let mut exported = Vec::new();
        for (i, d) in self.facts.decls.iter().enumerate().skip(before as usize) {
            if d.container.is_none() && d.owner.is_none() && d.exported {
                exported.push((i as u32, d.name.clone()));
            }
        }
        for (i, name) in exported {
            self.export_decl(i, &name);
        }
    }

    fn visit_export_default_declaration(&mut self, it: &ExportDefaultDeclaration<'a>) {
        // Only a declaration, or a function or class as the whole expression, is the
        // default export; the functions inside `export default defineConfig({ … })` are not.
        let declares = match &it.declaration {
            ExportDefaultDeclarationKind::FunctionDeclaration(_)
            | ExportDefaultDeclarationKind::ClassDeclaration(_)
            | ExportDefaultDeclarationKind::TSInterfaceDeclaration(_) => true,
            other => other.as_expression().is_some_and(|e| {
                matches!(
                    e.get_inner_expression(),
                    Expression::FunctionExpression(_) | Expression::ClassExpression(_)
                )
            }),
        };
        if declares {
            self.export_start = Some(it.span.start);
            self.exported = true;
        }
        let before = self.facts.decls.len();
        if let ExportDefaultDeclarationKind::Identifier(id) = &it.declaration {
            let raw = self.raw_ident(id);
            self.export_local("default".into(), it.span.start, raw);
        }
        walk::walk_export_default_declaration(self, it);
        self.export_start = None;
        self.exported = false;
        if declares && self.facts.decls.len() > before {
            self.export_decl(before as u32, "default");
        } else if !matches!(&it.declaration, ExportDefaultDeclarationKind::Identifier(_)) {
            let line = self.line(it.span.start);
            self.facts.exports.push(Export {
                name: "default".into(),
                line,
                target: ExportTarget::Expression,
            });
        }
    }

    fn visit_export_named_declaration(&mut self, it: &ExportNamedDeclaration<'a>) {
        for s in &it.specifiers {
            if let ModuleExportName::IdentifierReference(id) = &s.local {
                let raw = self.raw_ident(id);
                self.export_local(s.exported.name().to_string(), s.span.start, raw.clone());
                let line = self.line(s.span.start);
                self.pending_refs.push((line, RawCallee::Name(raw)));
            }
        }
    }

    fn visit_expression_statement(&mut self, it: &ExpressionStatement<'a>) {
        match codectx_parser::commonjs::export_assignment(&it.expression) {
            Some((name, value)) if self.callers.is_empty() && self.containers.is_empty() => {
                self.commonjs_export(it, name, value)
            }
            _ => match codectx_parser::commonjs::method_assignment(&it.expression) {
                Some((member, function)) if self.is_parsed_method(member) => {
                    self.assigned_method(it, member, function)
                }
                _ => walk::walk_expression_statement(self, it),
            },
        }
    }

    fn visit_ts_export_assignment(&mut self, it: &TSExportAssignment<'a>) {
        if let Expression::Identifier(id) = it.expression.get_inner_expression() {
            let raw = self.raw_ident(id);
            self.export_local("default".into(), it.span.start, raw);
        }
        walk::walk_ts_export_assignment(self, it);
    }

    fn visit_import_declaration(&mut self, _it: &ImportDeclaration<'a>) {
        // Collected up front; nothing inside needs walking.
    }

    fn visit_export_all_declaration(&mut self, _it: &ExportAllDeclaration<'a>) {}

    fn visit_export_from_declaration(&mut self, _it: &ExportFromDeclaration<'a>) {}

    fn visit_function(&mut self, f: &Function<'a>, flags: ScopeFlags) {
        let is_decl = matches!(
            f.r#type,
            FunctionType::FunctionDeclaration | FunctionType::TSDeclareFunction
        );
        // Function expressions and anonymous functions are not declarations of their own
        // (const-bound ones are handled by the declarator); they rebind `this`.
        let id = if is_decl { f.id.as_ref() } else { None };
        let name = id
            .map(|id| id.name.to_string())
            .or_else(|| self.exported.then(|| "default".to_string()));
        self.classes.push(None);
        match name {
            Some(name) if is_decl || self.export_start.is_some() => {
                let body = f.body.as_ref().map_or(f.span.end, |b| b.span.start);
                let mut decl = self.new_decl(
                    name,
                    Some(codectx_parser::declared_at(id, f.span)),
                    SymbolKind::Function,
                    f.span,
                    (f.span.start, body),
                );
                decl.container = None;
                let symbol = f.id.as_ref().and_then(|id| id.symbol_id.get());
                // Functions nested in a class body are not its members.
                let saved = std::mem::take(&mut self.containers);
                let index = self.push_decl(decl, symbol);
                self.containers = saved;
                self.function_like(index, f, flags);
            }
            _ => {
                let named = u32::from(f.id.is_some());
                self.named_expressions += named;
                self.bind_contextual_params(f.span.start, &f.params);
                self.with_return_type(f.return_type.as_deref(), |s| {
                    walk::walk_function(s, f, flags);
                });
                self.named_expressions -= named;
            }
        }
        self.classes.pop();
    }

    fn visit_variable_declaration(&mut self, it: &VariableDeclaration<'a>) {
        let saved = std::mem::replace(&mut self.var_keyword, it.kind.as_str());
        walk::walk_variable_declaration(self, it);
        self.var_keyword = saved;
    }

    fn visit_variable_declarator(&mut self, d: &VariableDeclarator<'a>) {
        let BindingPattern::BindingIdentifier(id) = &d.id else {
            return walk::walk_variable_declarator(self, d);
        };
        let name = id.name.to_string();
        let symbol = id.symbol_id.get();
        if symbol.is_some_and(|s| self.symbol_import.contains_key(&s)) {
            return; // a top-level `require`, bound like an import by `required_binding`
        }
        let init = d.init.as_ref().map(|i| i.get_inner_expression());
        match init {
            Some(Expression::ArrowFunctionExpression(a)) => {
                let body_start = a.body.span().start;
                let decl = self.new_decl(
                    name,
                    Some(id.span.start),
                    SymbolKind::Function,
                    d.span,
                    (d.span.start, body_start),
                );
                let saved = std::mem::take(&mut self.containers);
                let index = self.push_decl(decl, symbol);
                self.containers = saved;
                self.annotated_context(d);
                self.arrow_like(index, a);
            }
            Some(Expression::FunctionExpression(f)) => {
                let body_start = f.body.as_ref().map_or(f.span.end, |b| b.span.start);
                let decl = self.new_decl(
                    name,
                    Some(id.span.start),
                    SymbolKind::Function,
                    d.span,
                    (d.span.start, body_start),
                );
                let saved = std::mem::take(&mut self.containers);
                let index = self.push_decl(decl, symbol);
                self.containers = saved;
                self.annotated_context(d);
                self.classes.push(None);
                self.function_like(index, f, ScopeFlags::Function);
                self.classes.pop();
            }
            Some(Expression::ClassExpression(c)) => {
                let saved = std::mem::take(&mut self.containers);
                let index = self.class_decl(c, name, Some(id.span.start), symbol);
                self.containers = saved;
                self.walk_class_body(index, c);
            }
            _ => {
                let sig_end = d.init.as_ref().map_or(d.span.end, |i| {
                    if d.span.end - d.span.start > 160 {
                        i.span().start
                    } else {
                        d.span.end
                    }
                });
                let mut decl = self.new_decl(
                    name,
                    Some(id.span.start),
                    SymbolKind::Variable,
                    d.span,
                    (d.span.start, sig_end),
                );
                decl.constant = Some(self.constant_info(d));
                let saved = std::mem::take(&mut self.containers);
                let index = self.push_decl(decl, symbol);
                self.containers = saved;
                if let Some(t) = &d.type_annotation {
                    if let Some(raw) = primary_type(self.scoping, &t.type_annotation) {
                        if let Some(symbol) = symbol {
                            self.symbol_type.insert(symbol, raw.clone());
                        }
                        self.pending_types.push((TypeSlotRef::Value(index), raw));
                    }
                } else if let Some(Expression::NewExpression(n)) = init
                    && let Expression::Identifier(cls) = n.callee.get_inner_expression()
                {
                    let raw = self.raw_ident(cls);
                    if let Some(symbol) = symbol {
                        self.symbol_type.insert(symbol, raw.clone());
                    }
                    self.pending_types.push((TypeSlotRef::Value(index), raw));
                }
                self.annotated_context(d);
                if let Some(Expression::ObjectExpression(o)) = init {
                    self.object_literal(index, o);
                    if let Some(t) = &d.type_annotation {
                        self.visit_ts_type_annotation(t);
                    }
                } else {
                    walk::walk_variable_declarator(self, d);
                }
            }
        }
    }

    fn visit_class(&mut self, c: &Class<'a>) {
        let name =
            c.id.as_ref()
                .map(|id| id.name.to_string())
                .or_else(|| self.exported.then(|| "default".to_string()));
        match name {
            Some(name) => {
                let symbol = c.id.as_ref().and_then(|id| id.symbol_id.get());
                let saved = std::mem::take(&mut self.containers);
                let index = self.class_decl(
                    c,
                    name,
                    Some(codectx_parser::declared_at(c.id.as_ref(), c.span)),
                    symbol,
                );
                self.containers = saved;
                self.walk_class_body(index, c);
            }
            None => {
                self.classes.push(None);
                walk::walk_class(self, c);
                self.classes.pop();
            }
        }
    }

    fn visit_method_definition(&mut self, m: &MethodDefinition<'a>) {
        let kind = match m.kind {
            MethodDefinitionKind::Constructor => SymbolKind::Constructor,
            MethodDefinitionKind::Method => SymbolKind::Method,
            MethodDefinitionKind::Get => SymbolKind::Getter,
            MethodDefinitionKind::Set => SymbolKind::Setter,
        };
        // A computed key (`[kGetDispatcher] () {…}`) is named as the parser names it: the
        // method is a member all the same, and the calls in it are its own.
        let name = key_name(&m.key).or_else(|| {
            m.computed
                .then(|| codectx_parser::property_key_name(self.src, &m.key))
        });
        let Some(name) = name else {
            return walk::walk_method_definition(self, m);
        };
        let node = decorated(m.span, &m.decorators);
        let body = m.value.body.as_ref().map_or(m.span.end, |b| b.span.start);
        let mut decl = self.new_decl(
            name,
            Some(m.key.span().start),
            kind,
            node,
            (node.start, body),
        );
        decl.is_static = m.r#static;
        decl.is_abstract = m.r#type == MethodDefinitionType::TSAbstractMethodDefinition;
        let index = self.push_decl(decl, None);
        for dec in &m.decorators {
            self.visit_decorator(dec);
        }
        if kind == SymbolKind::Getter
            && let Some(r) = &m.value.return_type
            && let Some(raw) = primary_type(self.scoping, &r.type_annotation)
        {
            self.pending_types.push((TypeSlotRef::Value(index), raw));
        }
        if kind == SymbolKind::Constructor {
            // `constructor(private repo: Repo)` declares typed properties.
            for p in &m.value.params.items {
                if (p.accessibility.is_some() || p.readonly)
                    && let BindingPattern::BindingIdentifier(id) = &p.pattern
                {
                    let decl = self.new_decl(
                        id.name.to_string(),
                        Some(id.span.start),
                        SymbolKind::Property,
                        p.span,
                        (p.span.start, p.span.end),
                    );
                    let prop = self.push_decl(decl, None);
                    if let Some(t) = &p.type_annotation
                        && let Some(raw) = primary_type(self.scoping, &t.type_annotation)
                    {
                        self.pending_types.push((TypeSlotRef::Value(prop), raw));
                    }
                }
            }
        }
        self.classes.push(self.enclosing_class());
        let saved = std::mem::take(&mut self.containers);
        self.function_like(index, &m.value, ScopeFlags::Function);
        self.containers = saved;
        self.classes.pop();
    }

    fn visit_property_definition(&mut self, p: &PropertyDefinition<'a>) {
        let Some(name) = key_name(&p.key) else {
            return walk::walk_property_definition(self, p);
        };
        let node = decorated(p.span, &p.decorators);
        let sig_end = p.value.as_ref().map_or(p.span.end, |v| v.span().start);
        let mut decl = self.new_decl(
            name,
            Some(p.key.span().start),
            SymbolKind::Property,
            node,
            (node.start, sig_end),
        );
        decl.is_static = p.r#static;
        let index = self.push_decl(decl, None);
        if let Some(t) = &p.type_annotation
            && let Some(raw) = primary_type(self.scoping, &t.type_annotation)
        {
            self.pending_types.push((TypeSlotRef::Value(index), raw));
        } else if let Some(Expression::NewExpression(n)) =
            p.value.as_ref().map(|v| v.get_inner_expression())
            && let Expression::Identifier(cls) = n.callee.get_inner_expression()
        {
            let raw = self.raw_ident(cls);
            self.pending_types.push((TypeSlotRef::Value(index), raw));
        }
        // Initializers run as part of the class: the class is their caller.
        let saved = std::mem::take(&mut self.containers);
        walk::walk_property_definition(self, p);
        self.containers = saved;
    }

    fn visit_ts_interface_declaration(&mut self, it: &TSInterfaceDeclaration<'a>) {
        let name = it.id.name.to_string();
        let mut decl = self.new_decl(
            name,
            Some(it.id.span.start),
            SymbolKind::Interface,
            it.span,
            (it.span.start, it.body.span.start),
        );
        decl.type_params = self.type_params(it.type_parameters.as_deref());
        let saved = std::mem::take(&mut self.containers);
        let index = self.push_decl(decl, it.id.symbol_id.get());
        self.containers = saved;
        for h in &it.extends {
            if let Some(raw) = self.type_name_raw(&h.type_name) {
                self.pending_types.push((TypeSlotRef::Extends(index), raw));
            }
        }
        self.containers.push(index);
        walk::walk_ts_interface_declaration(self, it);
        self.containers.pop();
    }

    fn visit_ts_call_signature_declaration(&mut self, it: &TSCallSignatureDeclaration<'a>) {
        if let Some(&interface) = self.containers.last()
            && self.facts.decls[interface as usize].kind == SymbolKind::Interface
        {
            let sig = self.facts.decls[interface as usize].call_signatures.len();
            let slots =
                self.parameter_slots(&it.params, |i| TypeSlotRef::CallParam(interface, sig, i));
            self.facts.decls[interface as usize]
                .call_signatures
                .push(slots);
        }
        walk::walk_ts_call_signature_declaration(self, it);
    }

    fn visit_ts_method_signature(&mut self, it: &TSMethodSignature<'a>) {
        if let Some(name) = key_name(&it.key) {
            let kind = match it.kind {
                TSMethodSignatureKind::Get => SymbolKind::Getter,
                TSMethodSignatureKind::Set => SymbolKind::Setter,
                TSMethodSignatureKind::Method => SymbolKind::Method,
            };
            let decl = self.new_decl(
                name,
                Some(it.key.span().start),
                kind,
                it.span,
                (it.span.start, it.span.end),
            );
            let index = self.push_decl(decl, None);
            self.facts.decls[index as usize].type_params =
                self.type_params(it.type_parameters.as_deref());
            self.signature_slots(index, &it.params, it.return_type.as_deref());
            if let Some(r) = &it.return_type
                && let Some(raw) = primary_type(self.scoping, &r.type_annotation)
            {
                self.pending_types.push((TypeSlotRef::Value(index), raw));
            }
        }
        walk::walk_ts_method_signature(self, it);
    }

    fn visit_ts_property_signature(&mut self, it: &TSPropertySignature<'a>) {
        if let Some(name) = key_name(&it.key) {
            let decl = self.new_decl(
                name,
                Some(it.key.span().start),
                SymbolKind::Property,
                it.span,
                (it.span.start, it.span.end),
            );
            let index = self.push_decl(decl, None);
            if let Some(t) = &it.type_annotation
                && let Some(raw) = primary_type(self.scoping, &t.type_annotation)
            {
                self.pending_types.push((TypeSlotRef::Value(index), raw));
            }
        }
        walk::walk_ts_property_signature(self, it);
    }

    fn visit_ts_type_alias_declaration(&mut self, it: &TSTypeAliasDeclaration<'a>) {
        let name = it.id.name.to_string();
        let mut decl = self.new_decl(
            name,
            Some(it.id.span.start),
            SymbolKind::Type,
            it.span,
            (it.span.start, it.span.end),
        );
        if decl.signature.len() > 200 {
            decl.signature =
                collapse(self.text(Span::new(it.span.start, it.type_annotation.span().start)));
        }
        decl.type_params = self.type_params(it.type_parameters.as_deref());
        let saved = std::mem::take(&mut self.containers);
        let index = self.push_decl(decl, it.id.symbol_id.get());
        self.containers = saved;
        if let TSType::TSTypeReference(r) = &it.type_annotation
            && let Some(raw) = self.type_name_raw(&r.type_name)
        {
            self.pending_types.push((TypeSlotRef::Value(index), raw));
        }
        if let TSType::TSUnionType(u) = it.type_annotation.without_parenthesized() {
            for t in &u.types {
                if let TSType::TSTypeReference(r) = t.without_parenthesized()
                    && let Some(raw) = self.type_name_raw(&r.type_name)
                {
                    self.pending_types
                        .push((TypeSlotRef::Alternative(index), raw));
                }
            }
        }
        // A function type's parameters type the callbacks written against it.
        if let TSType::TSFunctionType(f) = it.type_annotation.without_parenthesized() {
            self.signature_slots(index, &f.params, Some(&f.return_type));
        }
        walk::walk_ts_type_alias_declaration(self, it);
    }

    fn visit_ts_enum_declaration(&mut self, it: &TSEnumDeclaration<'a>) {
        let name = it.id.name.to_string();
        let decl = self.new_decl(
            name,
            Some(it.id.span.start),
            SymbolKind::Enum,
            it.span,
            (it.span.start, it.body.span.start),
        );
        let saved = std::mem::take(&mut self.containers);
        self.push_decl(decl, it.id.symbol_id.get());
        self.containers = saved;
        walk::walk_ts_enum_declaration(self, it);
    }

    fn visit_ts_namespace_declaration(&mut self, it: &TSNamespaceDeclaration<'a>) {
        let name = it.id.name.to_string();
        let body_start = match &it.body {
            TSNamespaceDeclarationBody::TSModuleBlock(b) => b.span.start,
            TSNamespaceDeclarationBody::TSNamespaceDeclaration(n) => n.span.start,
        };
        let decl = self.new_decl(
            name,
            Some(it.id.span.start),
            SymbolKind::Namespace,
            it.span,
            (it.span.start, body_start),
        );
        let saved = std::mem::take(&mut self.containers);
        self.push_decl(decl, it.id.symbol_id.get());
        walk::walk_ts_namespace_declaration(self, it);
        self.containers = saved;
    }

    fn visit_arrow_function_expression(&mut self, a: &ArrowFunctionExpression<'a>) {
        // Anonymous arrows keep `this` and belong to the enclosing caller.
        self.arrow_body(a);
    }

    fn visit_return_statement(&mut self, it: &ReturnStatement<'a>) {
        if let Some(e) = &it.argument {
            self.returned(e);
        }
        walk::walk_return_statement(self, it);
    }

    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        let callee = self.callee_of(&it.callee);
        if let Some(c) = &callee {
            for (i, arg) in it.arguments.iter().enumerate() {
                if let Some(e) = arg.as_expression() {
                    self.set_context(e, RawContextual::Argument(c.clone(), i as u32));
                }
            }
        }
        self.call_site(SiteKind::Call, callee, it.span.start);
        // `require('x')` is a module request.
        if let Expression::Identifier(id) = it.callee.get_inner_expression()
            && id.name == "require"
            && let [Argument::StringLiteral(s)] = it.arguments.as_slice()
            && !self.required.contains_key(&it.span.start)
        {
            let request = self.request(&s.value, it.span.start, RequestKind::Require);
            self.facts.requests[request as usize].names.push("*".into());
        }
        // The callee member itself is not an extra access site.
        match it.callee.get_inner_expression() {
            Expression::StaticMemberExpression(m) => {
                self.member_ref(
                    &m.object,
                    m.property.name.to_string(),
                    m.property.span.start,
                );
                self.visit_expression(&m.object);
            }
            Expression::PrivateFieldExpression(m) => {
                self.member_ref(&m.object, format!("#{}", m.field.name), m.field.span.start);
                self.visit_expression(&m.object);
            }
            _ => self.visit_expression(&it.callee),
        }
        if let Some(t) = &it.type_arguments {
            self.visit_ts_type_parameter_instantiation(t);
        }
        for arg in &it.arguments {
            self.visit_argument(arg);
        }
    }

    fn visit_new_expression(&mut self, it: &NewExpression<'a>) {
        let callee = self.callee_of(&it.callee);
        self.call_site(SiteKind::New, callee, it.span.start);
        walk::walk_new_expression(self, it);
    }

    fn visit_tagged_template_expression(&mut self, it: &TaggedTemplateExpression<'a>) {
        let callee = self.callee_of(&it.tag);
        self.call_site(SiteKind::TaggedTemplate, callee, it.span.start);
        walk::walk_tagged_template_expression(self, it);
    }

    fn visit_decorator(&mut self, it: &Decorator<'a>) {
        let target = match it.expression.get_inner_expression() {
            Expression::CallExpression(c) => &c.callee,
            e => e,
        };
        let callee = self.callee_of(target);
        self.call_site(SiteKind::Decorator, callee, it.span.start);
        walk::walk_decorator(self, it);
    }

    fn visit_jsx_opening_element(&mut self, it: &JSXOpeningElement<'a>) {
        if let JSXElementName::IdentifierReference(id) = &it.name {
            let raw = self.raw_ident(id);
            self.call_site(SiteKind::Jsx, Some(RawCallee::Name(raw)), it.span.start);
        }
        walk::walk_jsx_opening_element(self, it);
    }

    fn visit_import_expression(&mut self, it: &ImportExpression<'a>) {
        if let Expression::StringLiteral(s) = &it.source {
            let request = self.request(&s.value, it.span.start, RequestKind::Dynamic);
            self.facts.requests[request as usize].names.push("*".into());
        }
        walk::walk_import_expression(self, it);
    }

    fn visit_static_member_expression(&mut self, it: &StaticMemberExpression<'a>) {
        // A member read (not a call's callee, which visit_call_expression handles).
        let callee = self
            .raw_of_expr(&it.object)
            .map(|r| RawCallee::Member(r, it.property.name.to_string()));
        if let Some(c) = callee.clone() {
            self.call_site(SiteKind::Access, Some(c.clone()), it.span.start);
            let line = self.line(it.property.span.start);
            self.pending_refs.push((line, c));
        }
        walk::walk_static_member_expression(self, it);
    }

    fn visit_private_field_expression(&mut self, it: &PrivateFieldExpression<'a>) {
        let callee = self
            .raw_of_expr(&it.object)
            .map(|r| RawCallee::Member(r, format!("#{}", it.field.name)));
        if let Some(c) = callee {
            self.call_site(SiteKind::Access, Some(c.clone()), it.span.start);
            let line = self.line(it.field.span.start);
            self.pending_refs.push((line, c));
        }
        walk::walk_private_field_expression(self, it);
    }

    fn visit_identifier_reference(&mut self, it: &IdentifierReference<'a>) {
        let raw = self.raw_ident(it);
        if let Raw::Symbol(_) = raw {
            let line = self.line(it.span.start);
            self.pending_refs.push((line, RawCallee::Name(raw)));
        }
    }

    fn visit_ts_qualified_name(&mut self, it: &TSQualifiedName<'a>) {
        if let TSTypeName::IdentifierReference(ns) = &it.left {
            let raw = self.member_of_namespace(ns, &it.right.name);
            if let Raw::Resolved(_) = &raw {
                let line = self.line(it.right.span.start);
                self.pending_refs.push((line, RawCallee::Name(raw)));
            }
        }
        walk::walk_ts_qualified_name(self, it);
    }
}

impl<'a> Extractor<'_, '_> {
    fn walk_class_body(&mut self, index: u32, c: &Class<'a>) {
        for dec in &c.decorators {
            self.visit_decorator(dec);
        }
        if let Some(h) = &c.heritage {
            self.visit_expression(&h.expression);
            if let Some(t) = &h.type_arguments {
                self.visit_ts_type_parameter_instantiation(t);
            }
        }
        for i in &c.implements {
            self.visit_ts_class_implements(i);
        }
        if let Some(tp) = &c.type_parameters {
            self.visit_ts_type_parameter_declaration(tp);
        }
        self.containers.push(index);
        self.classes.push(Some(index));
        self.callers.push(index);
        self.visit_class_body(&c.body);
        self.callers.pop();
        self.classes.pop();
        self.containers.pop();
    }

    /// `exports.name = value`, `module.exports.name = value`, `module.exports = value`:
    /// declares `name` (the whole-module one is named like its chunk,
    /// [`codectx_parser::commonjs::declared_name`]) and exports it under `name` (`default`
    /// for the whole module, as TypeScript's `export =`), like `export const name = value`.
    /// An identifier or an object of identifiers exports what they name instead.
    fn commonjs_export(
        &mut self,
        stmt: &ExpressionStatement<'a>,
        name: String,
        value: &Expression<'a>,
    ) {
        let whole = name == codectx_parser::commonjs::MODULE_EXPORTS;
        let export_name = if whole {
            "default".to_string()
        } else {
            name.clone()
        };
        let value = value.get_inner_expression();
        let name = codectx_parser::commonjs::declared_name(name, value);
        match value {
            Expression::Identifier(id) => {
                let raw = self.raw_ident(id);
                self.export_local(export_name, stmt.span.start, raw);
                return self.visit_expression(value);
            }
            Expression::ObjectExpression(o)
                if whole
                    && o.properties.iter().all(|p| {
                        matches!(p, ObjectPropertyKind::ObjectProperty(p)
                            if matches!(p.value.get_inner_expression(), Expression::Identifier(_)))
                    }) =>
            {
                for p in &o.properties {
                    if let ObjectPropertyKind::ObjectProperty(p) = p
                        && let Expression::Identifier(id) = p.value.get_inner_expression()
                        && let Some(key) = key_name(&p.key)
                    {
                        let raw = self.raw_ident(id);
                        self.export_local(key, p.span.start, raw);
                    }
                }
                return self.visit_expression(value);
            }
            _ => {}
        }
        self.export_start = Some(stmt.span.start);
        self.exported = true;
        let index = match value {
            Expression::ArrowFunctionExpression(a) => {
                let sig = (stmt.span.start, a.body.span().start);
                let decl = self.new_decl(
                    name,
                    Some(stmt.span.start),
                    SymbolKind::Function,
                    stmt.span,
                    sig,
                );
                let index = self.push_decl(decl, None);
                self.arrow_like(index, a);
                index
            }
            Expression::FunctionExpression(f) => {
                let body = f.body.as_ref().map_or(f.span.end, |b| b.span.start);
                let decl = self.new_decl(
                    name,
                    Some(stmt.span.start),
                    SymbolKind::Function,
                    stmt.span,
                    (stmt.span.start, body),
                );
                let index = self.push_decl(decl, None);
                self.classes.push(None);
                self.function_like(index, f, ScopeFlags::Function);
                self.classes.pop();
                index
            }
            Expression::ClassExpression(c) => {
                let index = self.class_decl(c, name, Some(stmt.span.start), None);
                self.walk_class_body(index, c);
                index
            }
            _ => {
                let sig_end = if stmt.span.size() > 160 {
                    value.span().start
                } else {
                    stmt.span.end
                };
                let decl = self.new_decl(
                    name,
                    Some(stmt.span.start),
                    SymbolKind::Variable,
                    stmt.span,
                    (stmt.span.start, sig_end),
                );
                let index = self.push_decl(decl, None);
                match value {
                    Expression::ObjectExpression(o) => self.object_literal(index, o),
                    _ => self.visit_expression(value),
                }
                index
            }
        };
        self.export_start = None;
        self.exported = false;
        self.export_decl(index, &export_name);
    }

    /// Methods of an object literal bound to a constant: `obj.m()` resolves to them.
    fn object_literal(&mut self, owner: u32, o: &ObjectExpression<'a>) {
        for prop in &o.properties {
            let ObjectPropertyKind::ObjectProperty(p) = prop else {
                self.visit_object_property_kind(prop);
                continue;
            };
            let value = p.value.get_inner_expression();
            let func = match value {
                Expression::FunctionExpression(f) if p.method || p.kind != PropertyKind::Init => {
                    Some(f)
                }
                _ => None,
            };
            match (func, key_name(&p.key)) {
                (Some(f), Some(name)) => {
                    let kind = match p.kind {
                        PropertyKind::Get => SymbolKind::Getter,
                        PropertyKind::Set => SymbolKind::Setter,
                        PropertyKind::Init => SymbolKind::Method,
                    };
                    let body = f.body.as_ref().map_or(p.span.end, |b| b.span.start);
                    let mut decl = self.new_decl(
                        name,
                        Some(p.key.span().start),
                        kind,
                        p.span,
                        (p.span.start, body),
                    );
                    decl.owner = Some(owner);
                    let index = self.push_decl(decl, None);
                    self.classes.push(None);
                    let saved = std::mem::take(&mut self.containers);
                    self.function_like(index, f, ScopeFlags::Function);
                    self.containers = saved;
                    self.classes.pop();
                }
                _ => self.visit_object_property(p),
            }
        }
    }

    /// Whether the parser made a method of `A.prototype.m = function …` (or `app.m = …`):
    /// the parser decides which assignments declare methods, the facts follow it.
    fn is_parsed_method(&self, member: &StaticMemberExpression<'a>) -> bool {
        self.symbol_at
            .get(&member.property.span.start)
            .is_some_and(|&(_, kind)| kind == SymbolKind::Method)
    }

    /// `A.prototype.m = function …` declares the method `m` of `A`'s instances: a member of
    /// `A` (`new A().m()` and `this.m()` resolve to it). `app.m = function …` declares a
    /// method owned by the value `app` (`app.m()` resolves to it) and a member for `this`.
    /// An owner declared in no statement of this file (a global, an import) only names it.
    fn assigned_method(
        &mut self,
        stmt: &ExpressionStatement<'a>,
        member: &StaticMemberExpression<'a>,
        function: &Expression<'a>,
    ) {
        let (owner, on_prototype) = codectx_parser::commonjs::method_owner(member);
        let owner_decl = match owner.get_inner_expression() {
            Expression::Identifier(id) => match self.raw_ident(id) {
                Raw::Symbol(symbol) => self.symbol_decl.get(&symbol).copied(),
                _ => None,
            },
            _ => None,
        };
        let body_start = match function {
            Expression::FunctionExpression(f) => f.body.as_ref().map(|b| b.span.start),
            Expression::ArrowFunctionExpression(a) => Some(a.body.span().start),
            _ => None,
        }
        .unwrap_or(stmt.span.end);
        let name = member.property.name.to_string();
        let mut decl = self.new_decl(
            name.clone(),
            Some(member.property.span.start),
            SymbolKind::Method,
            stmt.span,
            (stmt.span.start, body_start),
        );
        let index = match owner_decl {
            Some(o) => {
                if !on_prototype {
                    decl.owner = Some(o);
                }
                self.containers.push(o);
                let index = self.push_decl(decl, None);
                self.containers.pop();
                index
            }
            None => {
                decl.qualified_name = format!("{}.{name}", collapse(self.text(owner.span())));
                self.push_decl(decl, None)
            }
        };
        // The owner written on the left is a reference to it.
        self.visit_expression(owner);
        match function {
            Expression::FunctionExpression(f) => {
                self.classes.push(owner_decl);
                self.function_like(index, f, ScopeFlags::Function);
                self.classes.pop();
            }
            Expression::ArrowFunctionExpression(a) => self.arrow_like(index, a),
            _ => self.visit_expression(function),
        }
    }

    fn member_ref(&mut self, object: &Expression<'a>, name: String, offset: u32) {
        if let Some(r) = self.raw_of_expr(object) {
            let line = self.line(offset);
            self.pending_refs.push((line, RawCallee::Member(r, name)));
        }
    }
}

/// The type names an annotation mentions (`Promise<User | Admin>` → Promise, User, Admin).
fn type_names(scoping: &Scoping, t: &TSType<'_>) -> Vec<Raw> {
    struct Names<'s>(&'s Scoping, Vec<Raw>);
    impl<'a> Visit<'a> for Names<'_> {
        fn visit_ts_type_name(&mut self, it: &TSTypeName<'a>) {
            if let TSTypeName::IdentifierReference(id) = it {
                self.1.push(ident_raw(self.0, id));
            }
        }
    }
    let mut names = Names(scoping, Vec::new());
    names.visit_ts_type(t);
    names.1
}

fn ident_raw(scoping: &Scoping, id: &IdentifierReference<'_>) -> Raw {
    id.reference_id
        .get()
        .and_then(|r| scoping.get_reference(r).symbol_id())
        .map_or_else(|| Raw::Global(id.name.to_string()), Raw::Symbol)
}

/// The type a value of this annotation has, when it names one: `Foo`, `Foo<T>`,
/// `Foo | undefined`.
fn primary_type(scoping: &Scoping, t: &TSType<'_>) -> Option<Raw> {
    match t {
        TSType::TSTypeReference(r) => match &r.type_name {
            TSTypeName::IdentifierReference(id) => Some(ident_raw(scoping, id)),
            _ => None,
        },
        TSType::TSUnionType(u) => {
            let mut named = u
                .types
                .iter()
                .filter(|t| !matches!(t, TSType::TSUndefinedKeyword(_) | TSType::TSNullKeyword(_)));
            let first = named.next()?;
            if named.next().is_some() {
                return None;
            }
            primary_type(scoping, first)
        }
        TSType::TSParenthesizedType(p) => primary_type(scoping, &p.type_annotation),
        _ => None,
    }
}

fn decorated(span: Span, decorators: &[Decorator<'_>]) -> Span {
    let start = decorators
        .iter()
        .map(|d| d.span.start)
        .min()
        .unwrap_or(span.start);
    Span::new(start.min(span.start), span.end)
}

fn key_name(key: &PropertyKey<'_>) -> Option<String> {
    match key {
        PropertyKey::PrivateIdentifier(id) => Some(format!("#{}", id.name)),
        _ => key.static_name().map(|n| n.to_string()),
    }
}

/// Whitespace-normalized text when it is at most `max` bytes long; stops reading as soon as it
/// is longer (initializers can be whole objects).
fn collapse_within(text: &str, max: usize) -> Option<String> {
    let mut out = String::new();
    for word in text.split_ascii_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() > max {
            return None;
        }
    }
    trim_head_end(&mut out);
    Some(out)
}

/// Drops what ends a declaration head: a trailing `{`, `=` and whitespace.
fn trim_head_end(out: &mut String) {
    let trimmed = out
        .trim_end_matches(|c: char| c == '{' || c == '=' || c.is_whitespace())
        .len();
    out.truncate(trimmed);
}

/// Longest signature or type text kept, in characters.
const MAX_SHOWN: usize = 400;

/// Whitespace-normalized text, capped for display, as the parser shows signatures.
fn collapse(text: &str) -> String {
    let mut out = codectx_parser::one_line(text, MAX_SHOWN);
    trim_head_end(&mut out);
    out
}
