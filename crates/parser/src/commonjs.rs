//! What makes a statement CommonJS: `require('x')` and the assignments to `exports`. The
//! parser names chunks after them and the graph facts export declarations by them, so
//! the rule lives here once.

use oxc_ast::ast::{
    Argument, AssignmentOperator, AssignmentTarget, Expression, StaticMemberExpression,
};

/// The name of the whole-module CommonJS export, as the chunk of `module.exports = …` is
/// named.
pub const MODULE_EXPORTS: &str = "module.exports";

/// `require('x')` (parentheses and TypeScript casts around it allowed) → `x`.
pub fn require_source<'b>(e: &'b Expression<'_>) -> Option<&'b str> {
    let Expression::CallExpression(call) = e.get_inner_expression() else {
        return None;
    };
    let Expression::Identifier(callee) = &call.callee else {
        return None;
    };
    if callee.name != "require" || call.arguments.len() != 1 {
        return None;
    }
    match call.arguments.first()? {
        Argument::StringLiteral(s) => Some(s.value.as_str()),
        _ => None,
    }
}

/// `module.exports = x` → ([`MODULE_EXPORTS`], x); `exports.foo = x` and
/// `module.exports.foo = x` → ("foo", x).
pub fn export_assignment<'b, 'a>(e: &'b Expression<'a>) -> Option<(String, &'b Expression<'a>)> {
    let (m, right) = member_assignment(e)?;
    let prop = m.property.name.as_str();
    match &m.object {
        Expression::Identifier(obj) if obj.name == "module" && prop == "exports" => {
            Some((MODULE_EXPORTS.into(), right))
        }
        Expression::Identifier(obj) if obj.name == "exports" => Some((prop.to_string(), right)),
        Expression::StaticMemberExpression(inner)
            if inner.property.name == "exports"
                && matches!(&inner.object, Expression::Identifier(o) if o.name == "module") =>
        {
            Some((prop.to_string(), right))
        }
        _ => None,
    }
}

/// What `target = value` declares is called: the target's name (`module.exports`, or the
/// property of `exports.foo`), except that a class or function with a name of its own,
/// given to `module.exports` whole, is called by it (`module.exports = class Application …`
/// declares `Application`): that is what its readers, its methods' names and a lookup say.
pub fn declared_name(target: String, value: &Expression<'_>) -> String {
    if target != MODULE_EXPORTS {
        return target;
    }
    let own = match value.get_inner_expression() {
        Expression::ClassExpression(c) => c.id.as_ref(),
        Expression::FunctionExpression(f) => f.id.as_ref(),
        _ => None,
    };
    own.map_or(target, |id| id.name.to_string())
}

/// `A.prototype.m = function …` or `app.m = (…) => …` (parentheses and casts around the
/// function allowed) → (`A.prototype.m`, the function): how code before classes declares a
/// method. The parser makes a top-level one a method; the graph's facts follow the parser.
pub fn method_assignment<'b, 'a>(
    e: &'b Expression<'a>,
) -> Option<(&'b StaticMemberExpression<'a>, &'b Expression<'a>)> {
    let (member, right) = member_assignment(e)?;
    let right = right.get_inner_expression();
    is_function(right).then_some((member, right))
}

/// Whose method `member` is, and whether it is on its prototype: `A.prototype.m` → (`A`,
/// true), `app.m` → (`app`, false).
pub fn method_owner<'b, 'a>(member: &'b StaticMemberExpression<'a>) -> (&'b Expression<'a>, bool) {
    match &member.object {
        Expression::StaticMemberExpression(inner) if inner.property.name == "prototype" => {
            (&inner.object, true)
        }
        object => (object, false),
    }
}

/// A function or arrow expression: what an assignment must give to declare a method.
pub fn is_function(e: &Expression<'_>) -> bool {
    matches!(
        e,
        Expression::FunctionExpression(_) | Expression::ArrowFunctionExpression(_)
    )
}

/// `a.b = x` (a plain assignment to a named property) → (`a.b`, x): an export above, a
/// method when `x` is a function.
pub fn member_assignment<'b, 'a>(
    e: &'b Expression<'a>,
) -> Option<(&'b StaticMemberExpression<'a>, &'b Expression<'a>)> {
    let Expression::AssignmentExpression(a) = e else {
        return None;
    };
    match &a.left {
        AssignmentTarget::StaticMemberExpression(m) if a.operator == AssignmentOperator::Assign => {
            Some((m, &a.right))
        }
        _ => None,
    }
}
