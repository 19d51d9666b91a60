//! Load-time checks of what flows between steps: `if:` conditions, prompt
//! templates, and `${{` where it must not be (bash commands), each problem
//! at its line and column.
//!
//! A step may name only its own dependencies (`steps.ID...`, like GitHub's
//! `needs`), the plan's inputs and its own matrix keys. A dependency with a
//! matrix must link to exactly one of its expansions (shared matrix keys),
//! so that `steps.ID` means one step. A bash dependency may set any output
//! name (it is known only when it runs); an agent dependency sets `result`
//! (`output: code | json`) or `status` and `summary` (`output: envelope`);
//! other tools set none.

use std::collections::{BTreeMap, HashMap};

use super::Step;
use super::diag::did_you_mean;
use super::inputs::{InputDef, InputType};
use super::matrix::{self, Expansion};
use super::node::{Node, NodeValue, Pos};
use crate::format::expr::{self, Condition, ExprError, Ref, Ty};
use crate::format::template;
use crate::model::Diagnostic;
use crate::tools::spec::{Outputs, Templates};

/// What the checks of one plan need.
pub(super) struct FlowCx<'a> {
    pub file: &'a str,
    /// The plan's text (for columns inside a value).
    pub text: &'a str,
    pub root: &'a Node,
    /// The lowered templates (dependencies are template indices).
    pub templates: &'a [Step],
    pub expansions: &'a [Expansion],
    /// Each template's matrix key types.
    pub matrix_types: &'a [BTreeMap<String, Ty>],
    pub inputs: &'a BTreeMap<String, InputDef>,
}

/// Check every template's `if:`, prompt templates and commands; returns each
/// template's condition, or every problem.
pub(super) fn check(cx: &FlowCx<'_>) -> Result<Vec<Option<Condition>>, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut conds = Vec::with_capacity(cx.templates.len());
    for t in 0..cx.templates.len() {
        conds.push(condition(cx, t, &mut diags));
        prompt(cx, t, &mut diags);
        commands(cx, t, &mut diags);
    }
    if diags.is_empty() {
        Ok(conds)
    } else {
        Err(diags)
    }
}

fn condition(cx: &FlowCx<'_>, t: usize, diags: &mut Vec<Diagnostic>) -> Option<Condition> {
    let node = cx.root.at_pointer(&format!("/steps/{t}/if"))?;
    let NodeValue::Str(value) = &node.value else {
        return None; // the schema reports it
    };
    let sid = &cx.templates[t].id;
    let (text, offset) = expr::unwrap_condition(value);
    let at = |e: &ExprError| place(cx.text, node, value, offset + e.at);
    let parsed = match expr::parse(text) {
        Ok(e) => e,
        Err(e) => {
            diags.push(
                Diagnostic::at(cx.file, at(&e), format!("`if` of step `{sid}`: {}", e.message))
                    .help("see \"Conditions\" in the README: `inputs.NAME`, `matrix.KEY`, `steps.ID.outputs.NAME | status | outcome`, 'strings', numbers, ==, !=, <, &&, ||, !, always(), success(), failure(), contains()"),
            );
            return None;
        }
    };
    let mut types: HashMap<String, Ty> = HashMap::new();
    let mut ok = true;
    for (r, off) in parsed.refs() {
        match resolve(cx, t, r) {
            Ok(ty) => {
                types.insert(r.to_string(), ty);
            }
            Err((msg, help)) => {
                ok = false;
                let e = ExprError {
                    at: off,
                    message: String::new(),
                };
                diags.push(
                    Diagnostic::at(cx.file, at(&e), format!("`if` of step `{sid}`: {msg}"))
                        .help(help),
                );
            }
        }
    }
    if !ok {
        return None;
    }
    let ty = |r: &Ref| types.get(&r.to_string()).copied().unwrap_or(Ty::Any);
    let errs = expr::check(&parsed, &ty, true);
    for e in &errs {
        diags.push(
            Diagnostic::at(
                cx.file,
                at(e),
                format!("`if` of step `{sid}`: {}", e.message),
            )
            .help("types are strict: compare values of one type; outputs are strings"),
        );
    }
    errs.is_empty().then(|| Condition {
        text: text.trim().to_owned(),
        uses_status: parsed.uses_status(),
        expr: parsed,
    })
}

/// The parameters whose templates are rendered (an agent step's inline
/// prompt): every `${{ }}` is one known reference.
fn prompt(cx: &FlowCx<'_>, t: usize, diags: &mut Vec<Diagnostic>) {
    for (param, use_) in cx.templates[t].action.spec().templates() {
        if let Templates::Rendered(what) = use_ {
            rendered(cx, t, param, what, diags);
        }
    }
}

fn rendered(cx: &FlowCx<'_>, t: usize, param: &str, what: &str, diags: &mut Vec<Diagnostic>) {
    let Some(node) = cx
        .root
        .at_pointer(&format!("/steps/{t}/parameters/{param}"))
    else {
        return;
    };
    let NodeValue::Str(value) = &node.value else {
        return;
    };
    let sid = &cx.templates[t].id;
    for p in template::pieces(value) {
        let (msg, help, off) = match p.r {
            Err(e) => (
                e.message,
                "write `${{ inputs.NAME }}`, `${{ matrix.KEY }}` or `${{ steps.ID.outputs.NAME }}`"
                    .to_owned(),
                e.at,
            ),
            Ok((r, at)) => match resolve(cx, t, &r) {
                Ok(_) => continue,
                Err((msg, help)) => (msg, help, at),
            },
        };
        diags.push(
            Diagnostic::at(
                cx.file,
                place(cx.text, node, value, off),
                format!("template in {what} of step `{sid}`: {msg}"),
            )
            .help(help),
        );
    }
}

/// `${{` in a command (a bash command) or a rollback command: refused.
fn commands(cx: &FlowCx<'_>, t: usize, diags: &mut Vec<Diagnostic>) {
    let sid = &cx.templates[t].id;
    let mut places = vec![(format!("/steps/{t}/rollback_command"), "`rollback_command`")];
    for (param, use_) in cx.templates[t].action.spec().templates() {
        if let Templates::Refused(what) = use_ {
            places.push((format!("/steps/{t}/parameters/{param}"), what));
        }
    }
    for (pointer, what) in places {
        let Some(node) = cx.root.at_pointer(&pointer) else {
            continue;
        };
        let NodeValue::Str(value) = &node.value else {
            continue;
        };
        if let Some(i) = value.find("${{") {
            diags.push(
                Diagnostic::at(
                    cx.file,
                    place(cx.text, node, value, i),
                    format!("`${{{{` in {what} of step `{sid}`: templates are rendered only in agent prompts, never in a command"),
                )
                .help("read the value from the step's environment: \"$PLANGATE_INPUT_<NAME>\", \"$PLANGATE_OUTPUT_<STEP>_<NAME>\", \"$PLANGATE_MATRIX_<KEY>\""),
            );
        }
    }
}

/// The type of a reference made by template `t`, or why it is refused (message, help).
fn resolve(cx: &FlowCx<'_>, t: usize, r: &Ref) -> Result<Ty, (String, String)> {
    let step = &cx.templates[t];
    match r {
        Ref::Input(name) => match cx.inputs.get(name) {
            Some(def) => Ok(match def.kind {
                InputType::Number => Ty::Num,
                InputType::Boolean => Ty::Bool,
                InputType::String | InputType::Choice => Ty::Str,
            }),
            None => Err((
                format!("unknown input `{name}`"),
                known(
                    "the plan's inputs",
                    name,
                    cx.inputs.keys().map(String::as_str),
                ),
            )),
        },
        Ref::Matrix(key) => match cx.matrix_types[t].get(key) {
            Some(ty) => Ok(*ty),
            None => Err((
                format!("step `{}` has no matrix key `{key}`", step.id),
                known(
                    "its matrix keys",
                    key,
                    cx.matrix_types[t].keys().map(String::as_str),
                ),
            )),
        },
        Ref::Output(id, _) | Ref::Status(id) | Ref::Outcome(id) => {
            let d = dependency(cx, t, id)?;
            if let Ref::Output(_, name) = r {
                outputs_of(&cx.templates[d], name)?;
            }
            Ok(Ty::Str)
        }
    }
}

/// The template index of dependency `id` of template `t`, linked to one expansion.
fn dependency(cx: &FlowCx<'_>, t: usize, id: &str) -> Result<usize, (String, String)> {
    let step = &cx.templates[t];
    let Some(&d) = step.deps.iter().find(|&&d| cx.templates[d].id == id) else {
        let all = cx.templates.iter().map(|s| s.id.as_str());
        return Err(if cx.templates.iter().any(|s| s.id == id) {
            (
                format!("step `{id}` is not a dependency of step `{}`", step.id),
                format!(
                    "add `{id}` to the `dependencies` of `{}`: a step reads only the steps it depends on",
                    step.id
                ),
            )
        } else {
            (
                format!("no step `{id}` in this plan"),
                known("the steps", id, all),
            )
        });
    };
    let linked = matrix::link(&cx.expansions[t], &cx.expansions[d]);
    if let Some(n) = linked.iter().flatten().map(Vec::len).find(|&n| n != 1) {
        return Err((
            format!(
                "step `{}` depends on {n} expansions of `{id}`; `steps.{id}` must name one",
                step.id
            ),
            format!(
                "give `{}` the matrix keys of `{id}`, so each expansion depends on one; or read the outputs of each from the environment (PLANGATE_OUTPUT_<STEP>_<NAME>)",
                step.id
            ),
        ));
    }
    Ok(d)
}

/// Whether dependency `dep` can set output `name`.
fn outputs_of(dep: &Step, name: &str) -> Result<(), (String, String)> {
    match dep.action.spec().outputs() {
        Outputs::File if crate::tools::outputs::name_ok(name) => Ok(()),
        Outputs::File => Err((
            format!("`{name}` is not a valid output name"),
            "output names start with a letter or `_` and use letters, digits, `_` and `-`"
                .to_owned(),
        )),
        Outputs::Answer(names) => {
            if names.contains(&name) {
                Ok(())
            } else {
                Err((
                    format!("agent step `{}` sets no output `{name}`", dep.id),
                    format!(
                        "its outputs: {}",
                        names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ))
            }
        }
        Outputs::None => Err((
            format!(
                "step `{}` ({}) sets no outputs",
                dep.id,
                dep.tool.as_str()
            ),
            "bash steps set outputs through $PLANGATE_OUTPUT; agent steps set their accepted values"
                .to_owned(),
        )),
    }
}

fn known<'a>(what: &str, name: &str, all: impl Iterator<Item = &'a str>) -> String {
    let all: Vec<&str> = all.collect();
    match did_you_mean(name, all.iter().copied()) {
        Some(s) => format!("did you mean `{s}`?"),
        None if all.is_empty() => format!("{what}: none"),
        None => format!("{what}: {}", all.join(", ")),
    }
}

/// Where byte `at` of a scalar's `value` is in the plan file: exact for
/// plain and quoted scalars on one line and for literal blocks (`|`, whose
/// position is their first line's), the scalar's own position otherwise.
pub(super) fn place(text: &str, node: &Node, value: &str, at: usize) -> Pos {
    let (l, c) = template::line_col(value, at);
    let line = node.pos.line + (l as u64 - 1);
    let Some(src) = text
        .lines()
        .nth(usize::try_from(line).unwrap_or(0).wrapping_sub(1))
    else {
        return node.pos;
    };
    let col0 = usize::try_from(node.pos.column).unwrap_or(1).max(1);
    let rest: String = src.chars().skip(col0 - 1).collect();
    let value_line = value.split('\n').nth(l - 1).unwrap_or("");
    let before: String = value_line.chars().take(c - 1).collect();
    let at_col = |base: usize| Pos {
        line,
        column: (base + c - 1) as u64,
    };
    let quote = rest.chars().next().filter(|q| *q == '\'' || *q == '"');
    let quoted = quote.is_some_and(|q| !value.starts_with(q));
    if l == 1 && quoted && rest[1..].starts_with(&before) {
        return at_col(col0 + 1);
    }
    if !quoted && rest.starts_with(&before) {
        return at_col(col0);
    }
    node.pos
}
