//! Mermaid diagrams of a plan and of a run: a `flowchart` of the steps and
//! their dependencies, each node styled by its decision (`validate --format
//! mermaid`) or its status (the Markdown report and the step summary), and a
//! `gantt` of the step timings. GitHub and GitLab draw both from a
//! ```` ```mermaid ```` block.
//!
//! The text is built so that no name can change the diagram: node ids are
//! generated (`n0`, `n1`, …); a label holds only a step's id, tool, risk and
//! status, each redacted, cut at [`MAX_LABEL_CHARS`] and escaped (flowchart:
//! every character but letters, digits and ` _-.,/=+@[]()` becomes a
//! `#NNN;` entity, so no quote, bracket of the syntax, `%%` directive,
//! backtick, `<`, `#` or newline stays; gantt, whose task names take no
//! entities: the same characters kept, others replaced by `_`, and a status
//! mark first so that a name never starts with a keyword such as `click`).
//! A diagram that redaction would still change is not drawn. Pure: no I/O.

use std::fmt::Write as _;

use super::section::Section;
use crate::markdown::{At, code};
use crate::model::{Report, StepStatus};

/// More steps than this and the Markdown report shows a note instead of the graph.
pub(crate) const MAX_NODES: usize = 60;
/// More dependencies than this and the Markdown report shows a note instead of the graph.
pub(crate) const MAX_EDGES: usize = 150;
/// More steps that ran than this and the Markdown report shows a note instead of the timings.
pub(crate) const MAX_BARS: usize = 60;
/// Mermaid's default `maxTextSize`: renderers refuse a longer diagram.
pub(crate) const MERMAID_MAX_TEXT: usize = 50_000;
/// Mermaid's default `maxEdges`: renderers refuse a graph with more.
pub(crate) const MERMAID_MAX_EDGES: usize = 500;
/// A name longer than this is cut (with `…`) in a label.
pub(crate) const MAX_LABEL_CHARS: usize = 100;
/// Up to this span the time axis shows milliseconds too.
const MILLIS_AXIS_UP_TO_MS: u64 = 10_000;

/// How each decision and status looks (`classDef` styles).
const STYLES: &[(&str, &str)] = &[
    ("auto_approved", "fill:#dafbe1,stroke:#1a7f37,color:#0d3a1b"),
    ("success", "fill:#dafbe1,stroke:#1a7f37,color:#0d3a1b"),
    ("pre_approved", "fill:#ddf4ff,stroke:#0969da,color:#0a3069"),
    ("failed", "fill:#ffebe9,stroke:#cf222e,color:#82071e"),
    ("timed_out", "fill:#ffebe9,stroke:#cf222e,color:#82071e"),
    ("rejected", "fill:#ffebe9,stroke:#cf222e,color:#82071e"),
    ("denied", "fill:#fff8c5,stroke:#9a6700,color:#4d2d00"),
    (
        "blocked",
        "fill:#cf222e,stroke:#82071e,color:#ffffff,stroke-width:2px",
    ),
    (
        "skipped",
        "fill:#f6f8fa,stroke:#8c959f,color:#424a53,stroke-dasharray:4 3",
    ),
    (
        "not_run",
        "fill:#ffffff,stroke:#d0d7de,color:#6e7781,stroke-dasharray:2 2",
    ),
];

/// One step of the graph.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node<'a> {
    /// The step's id (any text: it is escaped).
    pub id: &'a str,
    /// Its tool.
    pub tool: &'a str,
    /// Its effective risk, when known.
    pub risk: Option<&'a str>,
    /// Its decision or status: the last word of the label and the node's style.
    pub state: &'static str,
}

/// The flowchart: one node per step, one edge per dependency (`from` → `to`,
/// indices into `nodes`; others are ignored), nodes styled by state.
pub(crate) fn flowchart(nodes: &[Node<'_>], edges: &[(usize, usize)]) -> String {
    let mut out = String::from("flowchart LR\n");
    for (i, n) in nodes.iter().enumerate() {
        let mut label = format!("{}<br>{}", label_text(n.id), label_text(n.tool));
        if let Some(risk) = n.risk {
            let _ = write!(label, " · {}", label_text(risk));
        }
        let _ = write!(label, " · {}", label_text(n.state));
        let _ = write!(out, "  n{i}[\"{label}\"]");
        if style(n.state).is_some() {
            let _ = write!(out, ":::{}", n.state);
        }
        out.push('\n');
    }
    for &(from, to) in edges {
        if from < nodes.len() && to < nodes.len() {
            let _ = writeln!(out, "  n{from} --> n{to}");
        }
    }
    for (name, css) in STYLES {
        if nodes.iter().any(|n| n.state == *name) {
            let _ = writeln!(out, "  classDef {name} {css}");
        }
    }
    out
}

fn style(state: &str) -> Option<&'static str> {
    STYLES.iter().find(|(n, _)| *n == state).map(|(_, s)| *s)
}

/// One step that ran, on the time axis.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bar<'a> {
    /// The step's id (any text: it is sanitised).
    pub id: &'a str,
    /// How it ended.
    pub status: StepStatus,
    /// Milliseconds from the run's start to the step's.
    pub start_ms: u64,
    /// Its wall time (drawn as at least 1 ms).
    pub duration_ms: u64,
}

/// The gantt: one bar per step, in the given order, on an axis of seconds
/// since the run started (`dateFormat x`: milliseconds, counted from 0).
/// Failures are `crit` (red).
pub(crate) fn gantt(bars: &[Bar<'_>]) -> String {
    let span = bars
        .iter()
        .map(|b| b.start_ms.saturating_add(b.duration_ms.max(1)))
        .max()
        .unwrap_or(0);
    let axis = if span <= MILLIS_AXIS_UP_TO_MS {
        "%s.%L"
    } else {
        "%s"
    };
    let mut out = format!(
        "gantt\n  title Seconds since the run started\n  dateFormat x\n  axisFormat {axis}\n  todayMarker off\n"
    );
    for (i, b) in bars.iter().enumerate() {
        let (mark, tag) = match b.status {
            StepStatus::Success => ("✓", ""),
            s if s.is_failure() => ("✗", "crit, "),
            _ => ("•", ""),
        };
        let end = b.start_ms.saturating_add(b.duration_ms.max(1));
        let _ = writeln!(
            out,
            "  {mark} {} :{tag}n{i}, {}, {end}",
            task_text(b.id),
            b.start_ms
        );
    }
    out
}

/// Redacted, then cut at [`MAX_LABEL_CHARS`] characters (`…` marks a cut).
fn shown(s: &str) -> String {
    let clean = crate::redact::clean_str(s);
    let mut out: String = clean.chars().take(MAX_LABEL_CHARS).collect();
    if clean.chars().nth(MAX_LABEL_CHARS).is_some() {
        out.push('…');
    }
    if out.is_empty() {
        out.push('?');
    }
    out
}

/// Characters a label or task name keeps as they are.
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || " _-.,/=+@[]()".contains(c)
}

/// Text for inside a flowchart's `"…"` label: everything but [`plain`]
/// characters as a `#NNN;` entity (a control character as a space).
pub(crate) fn label_text(s: &str) -> String {
    let mut out = String::new();
    for c in shown(s).chars() {
        if plain(c) {
            out.push(c);
        } else if c.is_control() {
            out.push(' ');
        } else {
            let _ = write!(out, "#{};", u32::from(c));
        }
    }
    out
}

/// A gantt task name (no entities there): [`plain`] characters and other
/// letters and digits kept, everything else `_`.
pub(crate) fn task_text(s: &str) -> String {
    shown(s)
        .chars()
        .map(|c| {
            if plain(c) || c.is_alphanumeric() {
                c
            } else {
                '_'
            }
        })
        .collect::<String>()
        .trim_end()
        .to_owned()
}

/// Why a diagram is not drawn in the Markdown report, when it is not.
fn unfit(diagram: &str) -> Option<String> {
    if diagram.len() > MERMAID_MAX_TEXT {
        return Some(format!(
            "{} characters of Mermaid, more than the {MERMAID_MAX_TEXT} renderers accept",
            diagram.len()
        ));
    }
    if crate::redact::clean_str(diagram) != diagram {
        return Some("the redaction layer would change its text".to_owned());
    }
    None
}

/// A diagram in a fenced block under `### {title}`, or the one-line note
/// saying why it is not drawn and where to find it (`how`).
fn block(name: &'static str, title: &str, diagram: Result<String, String>, how: &str) -> Section {
    let diagram = diagram.and_then(|d| unfit(&d).map_or(Ok(d), Err));
    let head = match diagram {
        Ok(d) => format!("### {title}\n\n```mermaid\n{d}```\n\n"),
        Err(why) => format!("*{title} not drawn: {why}; {how}.*\n\n"),
    };
    Section::new(name, head)
}

/// The Markdown report's diagrams: the step graph coloured by status, and
/// the timings of the steps that ran (none when no step ran). Each is one
/// section with no rows: kept whole or dropped whole by `render::fit`.
pub(crate) fn sections(r: &Report) -> Vec<Section> {
    if r.steps.is_empty() {
        return Vec::new();
    }
    let mut out = vec![graph_section(r)];
    out.extend(timings_section(r));
    out
}

fn graph_section(r: &Report) -> Section {
    let index = |id: &str| r.steps.iter().position(|s| s.id == id);
    let edges: Vec<(usize, usize)> = r
        .steps
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            s.dependencies
                .iter()
                .filter_map(move |d| index(d).map(|from| (from, i)))
        })
        .collect();
    let how = format!(
        "{} prints it",
        code(
            &format!("plangate validate --format mermaid {}", r.plan.path),
            At::Text
        )
    );
    let diagram = if r.steps.len() > MAX_NODES {
        Err(format!(
            "{} steps, more than {MAX_NODES} to draw usefully",
            r.steps.len()
        ))
    } else if edges.len() > MAX_EDGES {
        Err(format!(
            "{} dependencies, more than {MAX_EDGES} to draw usefully",
            edges.len()
        ))
    } else {
        let nodes: Vec<Node<'_>> = r
            .steps
            .iter()
            .map(|s| Node {
                id: &s.id,
                tool: &s.tool,
                risk: s.risk.map(|k| k.effective.as_str()),
                state: s.status.as_str(),
            })
            .collect();
        Ok(flowchart(&nodes, &edges))
    };
    block("step graph", "Step graph", diagram, &how)
}

fn timings_section(r: &Report) -> Option<Section> {
    let run_start = humantime::parse_rfc3339_weak(&r.started_at).ok()?;
    let mut bars: Vec<(usize, Bar<'_>)> = r
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.carried_over.is_none() && ran(s.status))
        .filter_map(|(i, s)| {
            let at = humantime::parse_rfc3339_weak(s.started_at.as_deref()?).ok()?;
            let start_ms = at
                .duration_since(run_start)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            Some((
                i,
                Bar {
                    id: &s.id,
                    status: s.status,
                    start_ms,
                    duration_ms: s.duration_ms,
                },
            ))
        })
        .collect();
    if bars.is_empty() {
        return None;
    }
    bars.sort_by_key(|(i, b)| (b.start_ms, *i));
    let how = "each step's `started_at` and `duration_ms` are in `report.json`";
    let diagram = if bars.len() > MAX_BARS {
        Err(format!(
            "{} steps ran, more than {MAX_BARS} to draw usefully",
            bars.len()
        ))
    } else {
        let bars: Vec<Bar<'_>> = bars.into_iter().map(|(_, b)| b).collect();
        Ok(gantt(&bars))
    };
    Some(block("step timings", "Step timings", diagram, how))
}

/// Whether a step with this status ran (and so has a bar).
fn ran(status: StepStatus) -> bool {
    matches!(
        status,
        StepStatus::Success | StepStatus::Failed | StepStatus::TimedOut | StepStatus::Rejected
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_keep_plain_names_and_escape_the_rest() {
        assert_eq!(label_text("build[package=cli]"), "build[package=cli]");
        assert_eq!(
            label_text("a\"]:::x --> n1\n%%{init}%%`<b>#;"),
            "a#34;]#58;#58;#58;x --#62; n1 #37;#37;#123;init#125;#37;#37;#96;#60;b#62;#35;#59;"
        );
        assert_eq!(label_text(""), "#63;");
        let long = "x".repeat(MAX_LABEL_CHARS + 5);
        assert_eq!(
            label_text(&long),
            format!("{}#8230;", "x".repeat(MAX_LABEL_CHARS))
        );
    }

    #[test]
    fn task_names_have_no_separator_comment_or_entity() {
        assert_eq!(task_text("build[package=cli]"), "build[package=cli]");
        assert_eq!(task_text("a:b#c;d%e\nf`g"), "a_b_c_d_e_f_g");
        assert_eq!(task_text("é"), "é");
    }

    #[test]
    fn a_flowchart_has_generated_ids_edges_and_used_styles_only() {
        let nodes = [
            Node {
                id: "a",
                tool: "bash",
                risk: Some("safe"),
                state: "success",
            },
            Node {
                id: "b",
                tool: "git",
                risk: None,
                state: "not_run",
            },
        ];
        let text = flowchart(&nodes, &[(0, 1), (5, 0)]);
        assert_eq!(
            text,
            "flowchart LR\n  n0[\"a<br>bash · safe · success\"]:::success\n  n1[\"b<br>git · not_run\"]:::not_run\n  n0 --> n1\n  classDef success fill:#dafbe1,stroke:#1a7f37,color:#0d3a1b\n  classDef not_run fill:#ffffff,stroke:#d0d7de,color:#6e7781,stroke-dasharray:2 2\n"
        );
    }

    #[test]
    fn a_gantt_counts_from_zero_and_draws_zero_durations() {
        let bars = [
            Bar {
                id: "click",
                status: StepStatus::Success,
                start_ms: 0,
                duration_ms: 0,
            },
            Bar {
                id: "t",
                status: StepStatus::Failed,
                start_ms: 12_000,
                duration_ms: 500,
            },
        ];
        let text = gantt(&bars);
        assert!(text.contains("  axisFormat %s\n"), "{text}");
        assert!(text.contains("  ✓ click :n0, 0, 1\n"), "{text}");
        assert!(text.contains("  ✗ t :crit, n1, 12000, 12500\n"), "{text}");
        assert!(gantt(&bars[..1]).contains("axisFormat %s.%L"));
    }
}
