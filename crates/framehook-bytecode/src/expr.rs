//! Stack-effect expressions of the opcode tables: a sum of terms over `oparg`
//! (`1-oparg`, `-1-(oparg&1)`, `(oparg&255)+(oparg>>8)`, `-1-popcount(oparg&15)`).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Atom {
    One,
    Oparg,
    And(u32),
    Shr(u32),
    ShrAnd(u32, u32),
    Popcount(u32),
    Equals(u32),
}

impl Atom {
    fn eval(self, oparg: u32) -> i64 {
        i64::from(match self {
            Atom::One => 1,
            Atom::Oparg => oparg,
            Atom::And(mask) => oparg & mask,
            Atom::Shr(shift) => oparg >> shift,
            Atom::ShrAnd(shift, mask) => (oparg >> shift) & mask,
            Atom::Popcount(mask) => (oparg & mask).count_ones(),
            Atom::Equals(value) => u32::from(oparg == value),
        })
    }
}

/// A stack effect as a function of the argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    terms: Vec<(i64, Atom)>,
}

impl Expr {
    pub fn eval(&self, oparg: u32) -> i64 {
        self.terms
            .iter()
            .map(|(factor, atom)| factor * atom.eval(oparg))
            .sum()
    }

    pub fn parse(text: &str) -> Result<Expr, String> {
        let bad = || format!("bad stack-effect expression {text:?}");
        let mut terms = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let sign = match rest.as_bytes()[0] {
                b'-' => {
                    rest = &rest[1..];
                    -1
                }
                b'+' => {
                    rest = &rest[1..];
                    1
                }
                _ if terms.is_empty() => 1,
                _ => return Err(bad()),
            };
            // The term runs to the next sign outside parentheses.
            let mut depth = 0usize;
            let end = rest
                .char_indices()
                .find(|&(i, c)| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth = depth.saturating_sub(1),
                        '+' | '-' if depth == 0 && i > 0 => return true,
                        _ => {}
                    }
                    false
                })
                .map_or(rest.len(), |(i, _)| i);
            let (term, tail) = rest.split_at(end);
            rest = tail;
            let (factor, atom) = match term.split_once('*') {
                Some((factor, atom)) => (factor.parse::<i64>().map_err(|_| bad())?, atom),
                None => (1, term),
            };
            let term = match term.parse::<i64>() {
                Ok(constant) => (sign * constant, Atom::One),
                Err(_) => (sign * factor, parse_atom(atom).ok_or_else(bad)?),
            };
            terms.push(term);
        }
        if terms.is_empty() {
            return Err(bad());
        }
        Ok(Expr { terms })
    }
}

fn number(text: &str) -> Option<u32> {
    text.parse().ok()
}

fn parse_atom(text: &str) -> Option<Atom> {
    if text == "oparg" {
        return Some(Atom::Oparg);
    }
    if let Some(mask) = text
        .strip_prefix("popcount(oparg&")
        .and_then(|t| t.strip_suffix(')'))
    {
        return Some(Atom::Popcount(number(mask)?));
    }
    if let Some(inner) = text.strip_prefix("((oparg>>").and_then(|t| t.strip_suffix(')')) {
        let (shift, mask) = inner.split_once(")&")?;
        return Some(Atom::ShrAnd(number(shift)?, number(mask)?));
    }
    let inner = text.strip_prefix("(oparg")?.strip_suffix(')')?;
    if let Some(mask) = inner.strip_prefix('&') {
        return Some(Atom::And(number(mask)?));
    }
    if let Some(shift) = inner.strip_prefix(">>") {
        return Some(Atom::Shr(number(shift)?));
    }
    Some(Atom::Equals(number(inner.strip_prefix("==")?)?))
}

#[cfg(test)]
mod tests {
    use super::Expr;

    #[test]
    fn evaluates_every_form() {
        let cases: [(&str, u32, i64); 9] = [
            ("0", 7, 0),
            ("1-oparg", 3, -2),
            ("-1-(oparg&1)", 3, -2),
            ("1-2*oparg", 4, -7),
            ("(oparg&255)+(oparg>>8)", 0x203, 5),
            ("-1-popcount(oparg&15)", 0b1011, -4),
            ("-1-(oparg==3)", 3, -2),
            ("-((oparg>>2)&1)", 4, -1),
            ("-2-oparg", 1, -3),
        ];
        for (text, oparg, expected) in cases {
            assert_eq!(
                Expr::parse(text).unwrap().eval(oparg),
                expected,
                "{text} at {oparg}"
            );
        }
    }

    #[test]
    fn refuses_malformed() {
        for text in ["", "1-", "oparg&1", "(oparg", "2*", "x", "popcount(oparg)"] {
            assert!(Expr::parse(text).is_err(), "{text:?} parsed");
        }
    }
}
