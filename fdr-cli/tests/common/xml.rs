//! A small XML well-formedness checker, enough for the SVG that `fdr flame` writes: every
//! character is one XML allows, markup is balanced, `<` only opens markup, `&` only starts a
//! known entity or a character reference to an allowed character, attribute values are quoted.

fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

fn name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')
}

/// Checks the references in character data or an attribute value.
fn check_text(t: &str, at: usize) -> Result<(), String> {
    let mut rest = t;
    while let Some(i) = rest.find(['&', '<']) {
        if rest.as_bytes()[i] == b'<' {
            return Err(format!("raw '<' in text or attribute near byte {at}"));
        }
        let after = &rest[i + 1..];
        let end = after
            .find(';')
            .ok_or_else(|| format!("'&' without ';' near byte {at}"))?;
        let r = &after[..end];
        let ok = match r {
            "lt" | "gt" | "amp" | "quot" | "apos" => true,
            _ if r.starts_with("#x") => u32::from_str_radix(&r[2..], 16)
                .ok()
                .and_then(char::from_u32)
                .is_some_and(xml_char),
            _ if r.starts_with('#') => r[1..]
                .parse::<u32>()
                .ok()
                .and_then(char::from_u32)
                .is_some_and(xml_char),
            _ => false,
        };
        if !ok {
            return Err(format!("bad reference '&{r};' near byte {at}"));
        }
        rest = &after[end + 1..];
    }
    Ok(())
}

/// `Ok` if `s` is a well-formed XML document (one root element, balanced tags).
pub fn check_well_formed(s: &str) -> Result<(), String> {
    if let Some((i, c)) = s.char_indices().find(|&(_, c)| !xml_char(c)) {
        return Err(format!(
            "character U+{:04X} is not allowed in XML (byte {i})",
            c as u32
        ));
    }
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        let Some(lt) = rest.find('<') else {
            check_text(rest, i)?;
            if !rest.trim().is_empty() && stack.is_empty() {
                return Err(format!("text outside the root element at byte {i}"));
            }
            break;
        };
        check_text(&rest[..lt], i)?;
        if !rest[..lt].trim().is_empty() && stack.is_empty() {
            return Err(format!("text outside the root element at byte {i}"));
        }
        i += lt;
        let rest = &s[i..];
        let skip_to = |end: &str| -> Result<usize, String> {
            rest.find(end)
                .map(|k| k + end.len())
                .ok_or_else(|| format!("unterminated markup at byte {i}"))
        };
        if rest.starts_with("<?") {
            i += skip_to("?>")?;
        } else if rest.starts_with("<!--") {
            i += skip_to("-->")?;
        } else if rest.starts_with("<![CDATA[") {
            if stack.is_empty() {
                return Err(format!("CDATA outside the root element at byte {i}"));
            }
            i += skip_to("]]>")?;
        } else if rest.starts_with("<!") {
            i += skip_to(">")?;
        } else if let Some(close) = rest.strip_prefix("</") {
            let end = close
                .find('>')
                .ok_or_else(|| format!("unterminated end tag at byte {i}"))?;
            let name = close[..end].trim_end();
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("end tag </{name}> at byte {i} closes {other:?}")),
            }
            i += 2 + end + 1;
        } else {
            // A start tag: name, then attributes `name="value"`, then `>` or `/>`.
            let body = &rest[1..];
            let name_len = body.find(|c: char| !name_char(c)).unwrap_or(body.len());
            if name_len == 0 {
                return Err(format!("'<' not followed by a tag name at byte {i}"));
            }
            let name = &body[..name_len];
            let mut j = 1 + name_len;
            loop {
                let r = &rest[j..];
                let trimmed = r.trim_start();
                j += r.len() - trimmed.len();
                if let Some(t) = trimmed.strip_prefix("/>") {
                    let _ = t;
                    j += 2;
                    if stack.is_empty() {
                        roots += 1;
                    }
                    break;
                }
                if trimmed.starts_with('>') {
                    j += 1;
                    if stack.is_empty() {
                        roots += 1;
                    }
                    stack.push(name);
                    break;
                }
                let an = trimmed.find(|c: char| !name_char(c)).unwrap_or(0);
                if an == 0 {
                    return Err(format!("bad attribute in <{name}> at byte {}", i + j));
                }
                let after = trimmed[an..].trim_start();
                let Some(after) = after.strip_prefix('=') else {
                    return Err(format!(
                        "attribute without '=' in <{name}> at byte {}",
                        i + j
                    ));
                };
                let after = after.trim_start();
                let q = after.chars().next().unwrap_or(' ');
                if q != '"' && q != '\'' {
                    return Err(format!("unquoted attribute in <{name}> at byte {}", i + j));
                }
                let v_end = after[1..]
                    .find(q)
                    .ok_or_else(|| format!("unterminated attribute in <{name}>"))?;
                check_text(&after[1..1 + v_end], i + j)?;
                let consumed = trimmed.len() - after.len() + 1 + v_end + 1;
                j += consumed;
            }
            i += j;
        }
    }
    if let Some(open) = stack.last() {
        return Err(format!("<{open}> is never closed"));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(())
}
