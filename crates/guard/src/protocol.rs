//! The protocol texts: what plangate appends to a step's prompt so that the
//! agent's answer passes the fail-close parsers, and the retry prompt sent
//! after a rejection (design 001: Solution A escaping rules; LEI 5: retry with
//! feedback, never an identical prompt).
//!
//! Owns wording only; it parses nothing and decides nothing. Texts are short
//! on purpose (they are paid for in tokens on every step) and use Markdown
//! headings the models already follow. Pure: no I/O.

use super::Rejection;

/// The JSON string escaping rules (design 001, Solution A).
const ESCAPING: &str = "## JSON string escaping (every string, above all \"content\")\n\
\" -> \\\"   newline -> \\n   \\ -> \\\\   tab -> \\t   other control characters -> \\u00XX\n\
A raw newline or an unescaped \" inside a string makes the whole answer invalid.\n";

/// Shared opening of the JSON formats.
const ONE_JSON: &str = "nothing else: no text before or after it, no code fence, no comments, no trailing commas, \
no duplicate keys.";

/// Text appended to the prompt for `output: envelope`: the envelope shape `{"status":"OK"|"FAIL","summary":string,"artifacts":[{"path","content"}],"next_actions":[string]}` (`artifacts` and `next_actions` may be left out) and the JSON escaping rules of design 001 Solution A (" -> \", newline -> \n, \ -> \\, tab -> \t; paths relative to the workspace, no `..`, no `.git/`; exactly one JSON object; no comments/trailing commas).
pub fn envelope_instructions() -> String {
    format!(
        "## Answer format\n\
         Reply with exactly one JSON object and {ONE_JSON}\n\
         {{\"status\":\"OK\",\"summary\":\"...\",\"artifacts\":[{{\"path\":\"...\",\"content\":\"...\"}}],\"next_actions\":[\"...\"]}}\n\
         - \"status\": \"OK\" if the task is done, else \"FAIL\".\n\
         - \"summary\": one short sentence.\n\
         - \"artifacts\": each file you create or change, with its complete content; [] or leave it out if none. \
         \"path\" is relative to the workspace root with \"/\" separators: no leading \"/\", no \"..\", nothing in \".git/\".\n\
         - \"next_actions\": follow-up steps as strings; [] or leave it out if none.\n\
         \"status\" and \"summary\" are required; no other keys; each key once.\n\n\
         {ESCAPING}"
    )
}

/// Text appended for `output: code`: exactly one fenced block, tagged with `language` when given, nothing else needing a fence.
pub fn code_instructions(language: Option<&str>) -> String {
    let tag = language.map(str::trim).unwrap_or("");
    let tagged = if tag.is_empty() {
        String::new()
    } else {
        format!(" tagged {tag}")
    };
    format!(
        "## Answer format\n\
         Put the code in exactly one fenced code block{tagged}:\n\
         ```{tag}\n\
         <the code>\n\
         ```\n\
         Write the code verbatim (no escaping). Nothing else in the answer may use a fence: no examples, no sample \
         output. If the code itself has lines starting with ```, open and close the block with ```` (more backticks \
         than any run inside) or with ~~~.\n"
    )
}

/// Text appended for `output: json`: one JSON value that satisfies the schema (include the schema, pretty-printed), no prose needed, no comments.
pub fn json_instructions(schema: Option<&serde_json::Value>) -> String {
    let schema_text = match schema {
        Some(schema) => format!("It must validate against this JSON Schema:\n{schema:#}\n"),
        None => String::new(),
    };
    format!(
        "## Answer format\n\
         Reply with exactly one JSON value and {ONE_JSON}\n\
         {schema_text}\n\
         {ESCAPING}"
    )
}

/// The retry prompt after a rejected answer: the original prompt, then a section quoting each rejection (category, line, column, message), then the relevant instructions again with the escaping rules, and the attempt number ("attempt 2 of 3"). Must never equal any earlier prompt: include the attempt number and the rejections.
pub fn retry_prompt(
    original_prompt: &str,
    attempt: u32,
    max_attempts: u32,
    rejections: &[Rejection],
    instructions: &str,
) -> String {
    let mut problems = String::new();
    for rejection in rejections {
        // One line per rejection, whatever the message contains.
        let line = rejection.to_string().replace(['\r', '\n'], " ");
        problems.push_str("- ");
        problems.push_str(&line);
        problems.push('\n');
    }
    if problems.is_empty() {
        problems.push_str("- the answer could not be read with certainty\n");
    }
    // True for every provider: an agent CLI worked on a staged copy that was
    // reset, and no other provider changes files before an answer is accepted.
    let files = "Every change you made to files was discarded too: the workspace is as it was before your first \
                 attempt, so make the changes again. ";
    format!(
        "{original_prompt}\n\n\
         ## Attempt {attempt} of {max_attempts}: your previous answer was rejected\n\
         It was not used. {files}Lines and columns below refer to that answer. Fix every problem and send the complete \
         answer again:\n\
         {problems}\n\
         {instructions}"
    )
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;
    use plangate_model::Category;

    fn rejections() -> Vec<Rejection> {
        vec![
            Rejection {
                category: Category::Ambiguous,
                line: 7,
                column: 3,
                message: "nested fence;\nuse ````".into(),
            },
            Rejection::whole(Category::NotFound, "no block"),
        ]
    }

    #[test]
    fn retries_never_repeat_a_prompt() {
        let instructions = code_instructions(Some("python"));
        let first = format!("Write hello world.\n\n{instructions}");
        let second = retry_prompt(&first, 2, 3, &rejections(), &instructions);
        let third = retry_prompt(&first, 3, 3, &rejections(), &instructions);
        assert_ne!(second, first);
        assert_ne!(third, first);
        assert_ne!(second, third);
        for prompt in [&second, &third] {
            assert!(prompt.starts_with(&first));
            assert!(
                prompt.contains("ambiguous at line 7 column 3: nested fence; use ````"),
                "{prompt}"
            );
            assert!(prompt.contains("not_found: no block"));
            assert!(prompt.ends_with(&instructions));
        }
        assert!(second.contains("Attempt 2 of 3"));
        assert!(third.contains("Attempt 3 of 3"));
        assert!(third.contains("was discarded too"));
    }

    #[test]
    fn retry_without_rejections_still_differs() {
        let first = "p";
        let retry = retry_prompt(first, 2, 2, &[], "");
        assert_ne!(retry, first);
        assert!(retry.contains("Attempt 2 of 2"));
    }

    #[test]
    fn envelope_has_shape_and_escaping() {
        let text = envelope_instructions();
        for needle in [
            r#"{"status":"OK","summary":"...","artifacts":[{"path":"...","content":"..."}],"next_actions":["..."]}"#,
            r#"" -> \""#,
            r"newline -> \n",
            r"\ -> \\",
            r"tab -> \t",
            r#"no "..""#,
            ".git/",
            "no trailing commas",
            "leave it out if none",
            r#""status" and "summary" are required; no other keys"#,
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
    }

    #[test]
    fn code_instructions_show_the_fence() {
        let text = code_instructions(Some("python"));
        assert!(text.contains("```python\n<the code>\n```\n"), "{text}");
        assert!(text.contains("tagged python"));
        let untagged = code_instructions(None);
        assert!(
            untagged.contains("block:\n```\n<the code>\n```\n"),
            "{untagged}"
        );
    }

    #[test]
    fn json_instructions_embed_pretty_schema() {
        let schema = serde_json::json!({"type":"object","required":["a"]});
        let text = json_instructions(Some(&schema));
        assert!(
            text.contains("{\n  \"required\": [\n    \"a\"\n  ],\n  \"type\": \"object\"\n}"),
            "{text}"
        );
        assert!(text.contains(r"newline -> \n"));
        assert!(!json_instructions(None).contains("Schema"));
    }

    #[test]
    fn the_example_fence_in_code_instructions_parses() {
        let text = code_instructions(Some("rust"));
        assert_eq!(
            crate::code::parse_code(&text, Some("rust")).unwrap(),
            "<the code>"
        );
    }
}
