//! The regular expressions of compressed-tensors' `targets` and `ignore` (`re:` entries),
//! matched as Python's `re.match` does (anchored at the start, not at the end): literals,
//! `.`, escapes (`\d \w \s \D \W \S` and escaped punctuation), classes `[a-z0-9_]` and
//! `[^…]`, groups `(…)` / `(?:…)`, alternation `|`, the greedy quantifiers `* + ? {m} {m,}
//! {m,n}` and the anchors `^ $`. A pattern using anything else is refused (`None`), never
//! guessed. Matching is backtracking with a step budget, so a pathological pattern fails
//! instead of running away.

#[derive(Debug, Clone)]
enum Atom {
    Char(char),
    Any,
    Class(Vec<(char, char)>, bool),
    Group(Vec<Vec<Piece>>),
    Start,
    End,
}

#[derive(Debug, Clone)]
struct Piece {
    atom: Atom,
    min: usize,
    max: usize,
}

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    _src: &'a str,
}

fn class_escape(c: char) -> Option<(Vec<(char, char)>, bool)> {
    let digits = vec![('0', '9')];
    let word = vec![('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')];
    let space = vec![(' ', ' '), ('\t', '\r')];
    Some(match c {
        'd' => (digits, false),
        'D' => (digits, true),
        'w' => (word, false),
        'W' => (word, true),
        's' => (space, false),
        'S' => (space, true),
        _ => return None,
    })
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn alternatives(&mut self) -> Option<Vec<Vec<Piece>>> {
        let mut alts = vec![self.sequence()?];
        while self.peek() == Some('|') {
            self.pos += 1;
            alts.push(self.sequence()?);
        }
        Some(alts)
    }

    fn sequence(&mut self) -> Option<Vec<Piece>> {
        let mut seq = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            let (min, max) = self.quantifier()?;
            seq.push(Piece { atom, min, max });
        }
        Some(seq)
    }

    fn atom(&mut self) -> Option<Atom> {
        Some(match self.next()? {
            '.' => Atom::Any,
            '^' => Atom::Start,
            '$' => Atom::End,
            '(' => {
                if self.peek() == Some('?') {
                    self.pos += 1;
                    if self.next()? != ':' {
                        return None;
                    }
                }
                let alts = self.alternatives()?;
                if self.next()? != ')' {
                    return None;
                }
                Atom::Group(alts)
            }
            '[' => self.class()?,
            '\\' => {
                let c = self.next()?;
                match class_escape(c) {
                    Some((ranges, negated)) => Atom::Class(ranges, negated),
                    None if c.is_ascii_alphanumeric() => return None,
                    None => Atom::Char(c),
                }
            }
            '*' | '+' | '?' | '{' | ')' => return None,
            c => Atom::Char(c),
        })
    }

    fn class(&mut self) -> Option<Atom> {
        let negated = self.peek() == Some('^');
        if negated {
            self.pos += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let c = self.next()?;
            if c == ']' && !first {
                break;
            }
            first = false;
            let lo = if c == '\\' {
                let e = self.next()?;
                if let Some((r, false)) = class_escape(e) {
                    ranges.extend(r);
                    continue;
                }
                if e.is_ascii_alphanumeric() {
                    return None;
                }
                e
            } else {
                c
            };
            if self.peek() == Some('-') && self.chars.get(self.pos + 1).is_some_and(|&n| n != ']') {
                self.pos += 1;
                let hi = self.next()?;
                if hi == '\\' || hi < lo {
                    return None;
                }
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        Some(Atom::Class(ranges, negated))
    }

    fn number(&mut self) -> Option<usize> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.chars[start..self.pos]
            .iter()
            .collect::<String>()
            .parse()
            .ok()
    }

    fn quantifier(&mut self) -> Option<(usize, usize)> {
        let q = match self.peek() {
            Some('*') => (0, usize::MAX),
            Some('+') => (1, usize::MAX),
            Some('?') => (0, 1),
            Some('{') => {
                self.pos += 1;
                let min = self.number()?;
                let max = match self.next()? {
                    '}' => return Some((min, min)),
                    ',' if self.peek() == Some('}') => usize::MAX,
                    ',' => self.number()?,
                    _ => return None,
                };
                if self.next()? != '}' || max < min {
                    return None;
                }
                return Some((min, max));
            }
            _ => return Some((1, 1)),
        };
        self.pos += 1;
        if matches!(self.peek(), Some('?' | '+')) {
            return None; // lazy and possessive quantifiers are not supported
        }
        Some(q)
    }
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub(super) struct Pattern(Vec<Vec<Piece>>);

impl Pattern {
    /// Compile `source`; `None` for syntax this matcher does not support.
    pub fn new(source: &str) -> Option<Pattern> {
        let mut p = Parser {
            chars: source.chars().collect(),
            pos: 0,
            _src: source,
        };
        let alts = p.alternatives()?;
        (p.pos == p.chars.len()).then_some(Pattern(alts))
    }

    /// Whether the pattern matches at the start of `text` (Python's `re.match`); `None` when
    /// the step budget ran out.
    pub fn matches_start(&self, text: &str) -> Option<bool> {
        let chars: Vec<char> = text.chars().collect();
        let mut budget = 200_000usize;
        let mut m = Matcher {
            text: &chars,
            budget: &mut budget,
        };
        let found = m.alts(&self.0, 0, &mut |_, _| true);
        (*m.budget > 0).then_some(found)
    }
}

struct Matcher<'a> {
    text: &'a [char],
    budget: &'a mut usize,
}

type Cont<'c> = dyn FnMut(&mut Matcher, usize) -> bool + 'c;

impl Matcher<'_> {
    fn alts(&mut self, alts: &[Vec<Piece>], at: usize, k: &mut Cont) -> bool {
        alts.iter().any(|seq| self.seq(seq, at, k))
    }

    fn seq(&mut self, seq: &[Piece], at: usize, k: &mut Cont) -> bool {
        if *self.budget == 0 {
            return false;
        }
        *self.budget -= 1;
        match seq.split_first() {
            None => k(self, at),
            Some((p, rest)) => self.repeat(p, 0, at, &mut |m, next| m.seq(rest, next, k)),
        }
    }

    /// Match `p` at least `p.min − done` more times (greedy), then `k`.
    fn repeat(&mut self, p: &Piece, done: usize, at: usize, k: &mut Cont) -> bool {
        if *self.budget == 0 {
            return false;
        }
        *self.budget -= 1;
        if done < p.max {
            let more = self.atom(&p.atom, at, &mut |m, next| {
                // An empty iteration cannot repeat forever.
                (next != at || done < p.min) && m.repeat(p, done + 1, next, k)
            });
            if more {
                return true;
            }
        }
        done >= p.min && k(self, at)
    }

    fn atom(&mut self, atom: &Atom, at: usize, k: &mut Cont) -> bool {
        let here = self.text.get(at).copied();
        match atom {
            Atom::Char(c) => here == Some(*c) && k(self, at + 1),
            Atom::Any => here.is_some_and(|c| c != '\n') && k(self, at + 1),
            Atom::Class(ranges, negated) => {
                here.is_some_and(|c| ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated)
                    && k(self, at + 1)
            }
            Atom::Group(alts) => self.alts(alts, at, k),
            Atom::Start => at == 0 && k(self, at),
            Atom::End => at == self.text.len() && k(self, at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    fn m(p: &str, t: &str) -> bool {
        Pattern::new(p).unwrap().matches_start(t).unwrap()
    }

    #[test]
    fn python_re_match_semantics() {
        assert!(m(".*lm_head", "lm_head"));
        assert!(m(".*mlp.gate$", "model.layers.0.mlp.gate"));
        assert!(!m(".*mlp.gate$", "model.layers.0.mlp.gate_proj"));
        assert!(m(
            ".*self_attn.(q|k|v)_proj$",
            "model.layers.3.self_attn.k_proj"
        ));
        assert!(!m(
            ".*self_attn.(q|k|v)_proj$",
            "model.layers.3.self_attn.o_proj"
        ));
        assert!(m(
            "model\\.layers\\.[0-9]+\\.mlp",
            "model.layers.12.mlp.up_proj"
        ));
        assert!(!m("layers", "model.layers"));
        assert!(m("a{2,3}b", "aab"));
        assert!(!m("a{2,3}b", "ab"));
        assert!(m("(?:x|y)+z", "xyxz"));
        assert!(m("[^.]+\\.w", "abc.w"));
        assert!(Pattern::new("a(?=b)").is_none());
        assert!(Pattern::new("(a").is_none());
        assert!(Pattern::new("a*?").is_none());
        // A pathological pattern runs out of budget instead of hanging.
        let p = Pattern::new("(a*)*b").unwrap();
        let _ = p.matches_start(&"a".repeat(40));
    }
}
