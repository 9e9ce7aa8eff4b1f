//! A small regular-expression engine for JSON Schema `pattern`.
//!
//! JSON Schema says a `pattern` is an ECMA-262 regular expression, matched unanchored: the
//! instance is valid if the expression matches *anywhere* in it (JSON Schema Validation
//! draft-07 §6.3.3; JSON Schema Core draft-07 §6.4). The reference validates with Python's
//! `jsonschema`, which runs `re.search`. This module implements the subset of ECMA-262 §22.2
//! ("RegExp Objects") that both dialects read the same way, over Unicode code points (as
//! with the `u` flag), and refuses the rest by name so a schema using it is refused rather than
//! silently misjudged.
//!
//! Supported, following the grammar of ECMA-262 §22.2.1 (Patterns):
//! - *Disjunction* `a|b`, *Alternative* (concatenation), groups `(…)` and `(?:…)` (nothing is
//!   captured: only a yes/no answer is needed);
//! - *Assertion* `^` and `$`, tied to the start and end of the whole string (no multiline);
//! - *Atom*: literal characters, `.`, character classes `[…]` and `[^…]` with ranges, and
//!   escapes `\d \D \w \W \s \S`, `\t \n \r \f \v \0`, `\xHH`, `\uHHHH`, and any escaped ASCII
//!   punctuation as itself (`\. \- \\ \/ \[ \] \( \) \{ \} \| \+ \* \? \^ \$` …);
//! - *Quantifier* `* + ? {n} {n,} {n,m}` and their lazy forms (`*?` …), which for a boolean
//!   match accept the same strings as the greedy ones.
//!
//! Where ECMA-262 and Python's `re` differ, the reference's reading (Python) is followed for the
//! character classes and ECMA-262 for the rest:
//! - `\s` is `str.isspace()`: [`char::is_whitespace`] plus U+001C..U+001F (ECMA adds U+FEFF);
//! - `\d` is a Unicode decimal digit (general category Nd, the table below, from Unicode 14.0
//!   as Python 3.11's `unicodedata` reports it; digits added in later Unicode versions are not
//!   matched, which fails closed); ECMA's `\d` is ASCII only;
//! - `\w` is `_` or [`char::is_alphanumeric`] (Python: `str.isalnum()`; Rust's Alphabetic also
//!   holds some combining vowel signs Python's `isalpha` leaves out); ECMA's is ASCII only;
//! - `.` matches anything but `\n`, as in Python (ECMA also excludes `\r`, U+2028, U+2029);
//! - `$` matches only at the very end. Python's `$` also matches before a final `\n`, so the
//!   reference accepts `"…\n"` where this engine, like ECMA-262, does not.
//!
//! Refused with an error naming the construct: backreferences (`\1`, `\k<n>`), lookaround
//! (`(?=`, `(?!`, `(?<=`, `(?<!`), named groups (`(?<n>`, `(?P<n>`), inline flags (`(?i)`),
//! Unicode property classes (`\p{…}`, `\P{…}`), word boundaries (`\b`, `\B`), control escapes
//! (`\cX`), `\u{…}`, unknown letter escapes (Python's `\A`, `\Z`), a `{` that does not start a
//! quantifier, and a class that opens with `]` (`[]`, `[^]`: ECMA and Python disagree).
//!
//! Matching is a backtracking machine over a compiled program with an explicit stack (no
//! recursion on the input) and a step budget: one step per instruction executed. A match that
//! would exceed [`STEP_BUDGET`] stops; [`Regex::try_match`] reports it as an error and
//! [`Regex::is_match`] as no match, so a pathological pattern or input cannot hang a worker.

use crate::json::python::str_repr;

/// Most steps one [`Regex::try_match`] may take: enough for a linear scan of a string of
/// several hundred thousand characters, far below a second of work.
pub(crate) const STEP_BUDGET: usize = 1_000_000;
/// Most instructions a compiled pattern may hold once counted repetitions are expanded.
const MAX_PROGRAM: usize = 10_000;
/// Largest `n` or `m` in `{n,m}`.
const MAX_COUNT: u32 = 1_000;
/// Deepest group nesting; the parser recurses once per level.
const MAX_NESTING: usize = 64;

/// Why a pattern could not be compiled, or a match not decided.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PatternError {
    /// The pattern is malformed, or uses a construct outside the subset.
    Invalid {
        /// The pattern as written.
        pattern: String,
        /// Which construct, and at which character.
        reason: String,
    },
    /// Deciding the match would take more than the step budget.
    StepBudget {
        /// The pattern as written.
        pattern: String,
    },
}

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatternError::Invalid { pattern, reason } => {
                write!(f, "pattern {}: {reason}", str_repr(pattern))
            }
            PatternError::StepBudget { pattern } => write!(
                f,
                "gave up matching pattern {} after exhausting its step budget",
                str_repr(pattern)
            ),
        }
    }
}

impl std::error::Error for PatternError {}

/// A compiled pattern.
#[derive(Clone, Debug)]
pub(crate) struct Regex {
    source: String,
    prog: Vec<Inst>,
    classes: Vec<Class>,
    /// For each class, which ASCII characters it matches, one bit each: the matcher tests a
    /// bit for an ASCII character (most of what patterns read: ids, hashes, timestamps) and
    /// asks the class itself for any other.
    ascii: Vec<[u64; 2]>,
    /// Loop-entry positions, one per unbounded repetition (see [`Inst::Progress`]).
    slots: usize,
    /// Every match must start at position 0 (the pattern begins with `^`).
    anchored: bool,
}

impl Regex {
    /// Compile `pattern`, or say which construct is malformed or unsupported, and where.
    pub(crate) fn new(pattern: &str) -> Result<Regex, PatternError> {
        let fail = |fault: Fault| PatternError::Invalid {
            pattern: pattern.to_owned(),
            reason: fault.to_string(),
        };
        let mut parser = Parser {
            chars: pattern.chars().collect(),
            pos: 0,
            depth: 0,
            classes: Vec::new(),
        };
        let ast = parser.disjunction().map_err(fail)?;
        if parser.pos < parser.chars.len() {
            // Only an unmatched ')' stops the top-level disjunction early.
            return Err(fail(Fault::UnmatchedParen { at: parser.pos }));
        }
        let mut compiler = Compiler {
            prog: Vec::new(),
            slots: 0,
        };
        compiler.node(&ast).map_err(fail)?;
        compiler.emit(Inst::Match).map_err(fail)?;
        let ascii = parser.classes.iter().map(Class::ascii_bits).collect();
        Ok(Regex {
            source: pattern.to_owned(),
            prog: compiler.prog,
            classes: parser.classes,
            ascii,
            slots: compiler.slots,
            anchored: anchored(&ast),
        })
    }

    /// The pattern as written.
    pub(crate) fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern matches anywhere in `text`. A match that exhausts the step budget
    /// counts as no match; use [`Regex::try_match`] to tell the two apart. (The schema
    /// validator calls [`Regex::match_within`], which shares one budget across a document.)
    #[cfg(test)]
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.try_match(text).unwrap_or(false)
    }

    /// Whether the pattern matches anywhere in `text`, or an error if deciding it would take
    /// more than [`STEP_BUDGET`] steps.
    #[cfg(test)]
    pub(crate) fn try_match(&self, text: &str) -> Result<bool, PatternError> {
        let mut steps = STEP_BUDGET;
        self.match_within(text, &mut steps)
    }

    /// [`Regex::try_match`] with the caller's budget: `steps` is decremented by the steps
    /// taken, and the match fails with an error when it reaches zero. Lets a caller bound the
    /// work of many matches together.
    pub(crate) fn match_within(&self, text: &str, steps: &mut usize) -> Result<bool, PatternError> {
        let mut slots = vec![usize::MAX; self.slots];
        // Sized for the backtracking of a typical schema pattern (a repetition such as
        // `[0-9a-f]{64}` grew it six times from empty), small enough for the allocator's
        // per-thread cache.
        let mut stack = Vec::with_capacity(self.prog.len().min(16));
        let mut start = 0;
        loop {
            if self.run(text, start, steps, &mut slots, &mut stack)? {
                return Ok(true);
            }
            match text[start..].chars().next() {
                Some(c) if !self.anchored => start += c.len_utf8(),
                _ => return Ok(false),
            }
        }
    }

    /// Run the program from `start`, backtracking through `stack` until a `Match` or until
    /// every alternative has failed.
    fn run(
        &self,
        text: &str,
        start: usize,
        steps: &mut usize,
        slots: &mut [usize],
        stack: &mut Vec<Job>,
    ) -> Result<bool, PatternError> {
        stack.clear();
        stack.push(Job::Thread(0, start));
        while let Some(job) = stack.pop() {
            let (mut pc, mut pos) = match job {
                Job::Thread(pc, pos) => (pc, pos),
                Job::Restore(slot, value) => {
                    slots[slot] = value;
                    continue;
                }
            };
            loop {
                if *steps == 0 {
                    return Err(PatternError::StepBudget {
                        pattern: self.source.clone(),
                    });
                }
                *steps -= 1;
                let advance = match &self.prog[pc] {
                    Inst::Char(c) => take(text, pos, |next| next == *c),
                    Inst::Any => take(text, pos, |next| next != '\n'),
                    Inst::Class(i) => take(text, pos, |next| match u32::from(next) {
                        b @ 0..=127 => self.ascii[*i][(b >> 6) as usize] >> (b & 63) & 1 == 1,
                        _ => self.classes[*i].matches(next),
                    }),
                    Inst::Start => (pos == 0).then_some(0),
                    Inst::End => (pos == text.len()).then_some(0),
                    Inst::Split(first, second) => {
                        stack.push(Job::Thread(*second, pos));
                        pc = *first;
                        continue;
                    }
                    Inst::Jmp(to) => {
                        pc = *to;
                        continue;
                    }
                    Inst::Save(slot) => {
                        stack.push(Job::Restore(*slot, slots[*slot]));
                        slots[*slot] = pos;
                        Some(0)
                    }
                    Inst::Progress(slot) => (slots[*slot] != pos).then_some(0),
                    Inst::Match => return Ok(true),
                };
                match advance {
                    Some(len) => {
                        pos += len;
                        pc += 1;
                    }
                    None => break,
                }
            }
        }
        Ok(false)
    }
}

/// The length of the character of `text` at `pos` if there is one and `accept` takes it.
/// `pos` is always at a character boundary: the matcher moves by whole characters.
fn take(text: &str, pos: usize, accept: impl FnOnce(char) -> bool) -> Option<usize> {
    let next = match *text.as_bytes().get(pos)? {
        b if b.is_ascii() => char::from(b),
        _ => text[pos..].chars().next()?,
    };
    accept(next).then(|| next.len_utf8())
}

/// Backtracking work: resume a thread at `(pc, pos)`, or undo a [`Inst::Save`].
#[derive(Clone, Copy, Debug)]
enum Job {
    Thread(usize, usize),
    Restore(usize, usize),
}

/// One instruction of the compiled program.
#[derive(Clone, Copy, Debug)]
enum Inst {
    Char(char),
    Any,
    Class(usize),
    Start,
    End,
    /// Try the first target; on failure, the second.
    Split(usize, usize),
    Jmp(usize),
    /// Remember where an iteration of an unbounded loop began.
    Save(usize),
    /// Fail an iteration that consumed nothing, so `(a*)*` cannot loop forever (the same rule
    /// as ECMA-262's RepeatMatcher, §22.2.2.3.1).
    Progress(usize),
    Match,
}

/// A parsed pattern (ECMA-262 §22.2.1). Groups leave no node of their own: nothing is
/// captured.
#[derive(Debug)]
enum Node {
    Empty,
    Char(char),
    Any,
    Class(usize),
    Start,
    End,
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
        greedy: bool,
    },
}

/// A character class, `[…]` or a class escape such as `\d`.
#[derive(Clone, Debug)]
struct Class {
    negated: bool,
    items: Vec<Item>,
}

#[derive(Clone, Copy, Debug)]
enum Item {
    Range(char, char),
    /// `\d`, `\w` or `\s`; `true` for the negated `\D`, `\W`, `\S`.
    Perl(Perl, bool),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Perl {
    Digit,
    Word,
    Space,
}

impl Class {
    /// [`Class::matches`] for each ASCII character, as bits (character `b` is bit `b % 64` of
    /// word `b / 64`).
    fn ascii_bits(&self) -> [u64; 2] {
        let mut bits = [0u64; 2];
        for b in 0u8..128 {
            if self.matches(char::from(b)) {
                bits[usize::from(b >> 6)] |= 1 << (b & 63);
            }
        }
        bits
    }

    fn matches(&self, c: char) -> bool {
        let hit = self.items.iter().any(|item| match *item {
            Item::Range(lo, hi) => lo <= c && c <= hi,
            Item::Perl(perl, negated) => perl.matches(c) != negated,
        });
        hit != self.negated
    }
}

impl Perl {
    fn matches(self, c: char) -> bool {
        match self {
            Perl::Digit => is_decimal_digit(c),
            Perl::Word => c == '_' || c.is_alphanumeric(),
            // Python's str.isspace(): Unicode White_Space plus the four information separators.
            Perl::Space => c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c),
        }
    }
}

/// The code point of each run `0`..`9` of Unicode decimal digits (general category Nd),
/// Unicode 14.0. Every Nd character lies in such a run of ten.
const DIGIT_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66,
    0xDE6, 0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
    0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650,
    0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50,
    0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
];

/// Python `re`'s `\d`: `str.isdecimal()`.
fn is_decimal_digit(c: char) -> bool {
    let c = c as u32;
    // The greatest zero at or below `c`; `c` is a digit if it lies within ten of it.
    match DIGIT_ZEROS.binary_search(&c) {
        Ok(_) => true,
        Err(0) => false,
        Err(i) => c - DIGIT_ZEROS[i - 1] < 10,
    }
}

/// Whether every match must begin at position 0.
fn anchored(node: &Node) -> bool {
    match node {
        Node::Start => true,
        Node::Concat(items) => items.first().is_some_and(anchored),
        Node::Alt(alts) => alts.iter().all(anchored),
        Node::Repeat { node, min, .. } => *min > 0 && anchored(node),
        _ => false,
    }
}

/// Recursive-descent parser for the grammar subset (ECMA-262 §22.2.1).
struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    classes: Vec<Class>,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        self.pos += usize::from(c.is_some());
        c
    }

    fn eat(&mut self, c: char) -> bool {
        let hit = self.peek() == Some(c);
        self.pos += usize::from(hit);
        hit
    }

    fn class(&mut self, class: Class) -> Node {
        self.classes.push(class);
        Node::Class(self.classes.len() - 1)
    }

    /// *Disjunction* :: *Alternative* ( `|` *Alternative* )*
    fn disjunction(&mut self) -> Result<Node, Fault> {
        let mut alts = vec![self.alternative()?];
        while self.eat('|') {
            alts.push(self.alternative()?);
        }
        Ok(if alts.len() == 1 {
            alts.remove(0)
        } else {
            Node::Alt(alts)
        })
    }

    /// *Alternative* :: *Term**, up to `|`, `)` or the end.
    fn alternative(&mut self) -> Result<Node, Fault> {
        let mut terms = Vec::new();
        while !matches!(self.peek(), None | Some('|') | Some(')')) {
            terms.push(self.term()?);
        }
        Ok(match terms.len() {
            0 => Node::Empty,
            1 => terms.remove(0),
            _ => Node::Concat(terms),
        })
    }

    /// *Term* :: *Assertion* | *Atom* *Quantifier*?
    fn term(&mut self) -> Result<Node, Fault> {
        let at = self.pos;
        // ECMA-262 lets `(^)*` through (a group is an Atom) but not `^*` (an Assertion).
        let bare_assertion = matches!(self.peek(), Some('^' | '$'));
        let atom = match self.next() {
            Some('^') => Node::Start,
            Some('$') => Node::End,
            Some('.') => Node::Any,
            Some('(') => self.group(at)?,
            Some('[') => self.bracket(at)?,
            Some('\\') => match self.escape(false)? {
                Esc::Char(c) => Node::Char(c),
                Esc::Perl(perl, negated) => self.class(Class {
                    negated: false,
                    items: vec![Item::Perl(perl, negated)],
                }),
            },
            Some('*' | '+' | '?') => return Err(Fault::NothingToRepeat { at }),
            Some('{') if self.counts_follow(at + 1) => return Err(Fault::NothingToRepeat { at }),
            Some('{') => return Err(Fault::LoneBrace { at }),
            Some(c) => Node::Char(c),
            None => return Err(Fault::UnexpectedEnd),
        };
        self.quantifier(atom, bare_assertion)
    }

    /// *Quantifier* :: *QuantifierPrefix* `?`?, applied to `atom`.
    fn quantifier(&mut self, atom: Node, bare_assertion: bool) -> Result<Node, Fault> {
        let at = self.pos;
        let (min, max) = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') if self.counts_follow(at + 1) => {
                self.pos += 1;
                self.counts()?
            }
            Some('{') => return Err(Fault::LoneBrace { at }),
            _ => return Ok(atom),
        };
        if self.pos == at {
            self.pos += 1; // the one-character prefixes
        }
        if bare_assertion {
            return Err(Fault::RepeatedAnchor { at });
        }
        let greedy = !self.eat('?');
        if matches!(self.peek(), Some('*' | '+' | '?' | '{')) {
            return Err(Fault::QuantifierAfterQuantifier { at: self.pos });
        }
        Ok(Node::Repeat {
            node: Box::new(atom),
            min,
            max,
            greedy,
        })
    }

    /// Whether the characters from `start` (just after a `{`) read `n}`, `n,}` or `n,m}`.
    fn counts_follow(&self, start: usize) -> bool {
        let rest = self.chars.get(start..).unwrap_or_default();
        let digits = |from: usize| {
            rest.iter()
                .skip(from)
                .take_while(|c| c.is_ascii_digit())
                .count()
        };
        let n = digits(0);
        match rest.get(n) {
            Some('}') => n > 0,
            Some(',') => n > 0 && rest.get(n + 1 + digits(n + 1)) == Some(&'}'),
            _ => false,
        }
    }

    /// The inside of `{n}`, `{n,}` or `{n,m}` after the `{` (already checked by
    /// `counts_follow`).
    fn counts(&mut self) -> Result<(u32, Option<u32>), Fault> {
        let at = self.pos;
        let min = self.number()?;
        let max = if self.eat(',') {
            if self.peek() == Some('}') {
                None
            } else {
                Some(self.number()?)
            }
        } else {
            Some(min)
        };
        self.eat('}');
        if let Some(max) = max.filter(|max| *max < min) {
            return Err(Fault::CountsOutOfOrder { min, max, at });
        }
        Ok((min, max))
    }

    fn number(&mut self) -> Result<u32, Fault> {
        let at = self.pos;
        let mut n: u32 = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            self.pos += 1;
            n = n.saturating_mul(10).saturating_add(d);
        }
        if n > MAX_COUNT {
            return Err(Fault::CountTooLarge { at });
        }
        Ok(n)
    }

    /// After `(`: a group `(…)` or `(?:…)`; every other `(?` form is refused by name.
    fn group(&mut self, at: usize) -> Result<Node, Fault> {
        if self.eat('?') {
            let construct = match (self.peek(), self.peek_at(1)) {
                (Some(':'), _) => None,
                (Some('='), _) => Some("lookahead '(?=…)'"),
                (Some('!'), _) => Some("negative lookahead '(?!…)'"),
                (Some('<'), Some('=')) => Some("lookbehind '(?<=…)'"),
                (Some('<'), Some('!')) => Some("negative lookbehind '(?<!…)'"),
                (Some('<'), _) => Some("named group '(?<name>…)'"),
                (Some('P'), _) => Some("Python named group '(?P…)'"),
                _ => Some("inline flags or another '(?…)' extension"),
            };
            if let Some(construct) = construct {
                return Err(Fault::Unsupported { construct, at });
            }
            self.pos += 1;
        }
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Fault::NestedTooDeep { at });
        }
        let inner = self.disjunction()?;
        self.depth -= 1;
        if !self.eat(')') {
            return Err(Fault::UnclosedGroup { at });
        }
        Ok(inner)
    }

    /// After `[`: *CharacterClass* (ECMA-262 §22.2.1, *ClassContents*).
    fn bracket(&mut self, at: usize) -> Result<Node, Fault> {
        let negated = self.eat('^');
        if self.peek() == Some(']') {
            // ECMA reads `[]` as the empty class and `[^]` as any character; Python reads the
            // `]` as a literal. Refuse rather than pick one.
            return Err(Fault::AmbiguousClass { at });
        }
        let mut items = Vec::new();
        loop {
            let start = match self.next() {
                None => return Err(Fault::UnclosedClass { at }),
                Some(']') => break,
                Some('\\') => self.escape(true)?,
                Some(c) => Esc::Char(c),
            };
            // `-` between two atoms makes a range; first, last or after a range it is literal.
            let is_range = self.peek() == Some('-') && !matches!(self.peek_at(1), None | Some(']'));
            if !is_range {
                items.push(match start {
                    Esc::Char(c) => Item::Range(c, c),
                    Esc::Perl(perl, negated) => Item::Perl(perl, negated),
                });
                continue;
            }
            self.pos += 1;
            let end = match self.next() {
                Some('\\') => self.escape(true)?,
                Some(c) => Esc::Char(c),
                None => return Err(Fault::UnclosedClass { at }),
            };
            match (start, end) {
                (Esc::Char(lo), Esc::Char(hi)) if lo <= hi => items.push(Item::Range(lo, hi)),
                (Esc::Char(lo), Esc::Char(hi)) => {
                    return Err(Fault::RangeOutOfOrder { lo, hi, at });
                }
                _ => return Err(Fault::ClassEscapeInRange { at }),
            }
        }
        Ok(self.class(Class { negated, items }))
    }

    /// After `\`: *AtomEscape* or *ClassEscape*.
    fn escape(&mut self, in_class: bool) -> Result<Esc, Fault> {
        let at = self.pos.saturating_sub(1);
        let unsupported = |construct| Err(Fault::Unsupported { construct, at });
        let c = match self.next() {
            Some(c) => c,
            None => return Err(Fault::LoneBackslash),
        };
        Ok(match c {
            'd' => Esc::Perl(Perl::Digit, false),
            'D' => Esc::Perl(Perl::Digit, true),
            'w' => Esc::Perl(Perl::Word, false),
            'W' => Esc::Perl(Perl::Word, true),
            's' => Esc::Perl(Perl::Space, false),
            'S' => Esc::Perl(Perl::Space, true),
            't' => Esc::Char('\t'),
            'n' => Esc::Char('\n'),
            'r' => Esc::Char('\r'),
            'f' => Esc::Char('\u{c}'),
            'v' => Esc::Char('\u{b}'),
            '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => Esc::Char('\0'),
            '0'..='9' => return unsupported("backreference or octal escape '\\N'"),
            'x' => Esc::Char(self.hex(2, at)?),
            'u' if self.peek() == Some('{') => return unsupported("code point escape '\\u{…}'"),
            'u' => Esc::Char(self.hex(4, at)?),
            'b' if in_class => Esc::Char('\u{8}'),
            'b' | 'B' => return unsupported("word boundary '\\b' or '\\B'"),
            'p' | 'P' => return unsupported("Unicode property class '\\p{…}'"),
            'k' => return unsupported("named backreference '\\k<name>'"),
            'c' => return unsupported("control escape '\\cX'"),
            c if c.is_ascii_punctuation() => Esc::Char(c),
            c => return Err(Fault::UnknownEscape { escape: c, at }),
        })
    }

    /// `n` hex digits of `\xHH` or `\uHHHH`, as a character (lone surrogates are refused).
    fn hex(&mut self, n: usize, at: usize) -> Result<char, Fault> {
        let mut value = 0u32;
        for _ in 0..n {
            match self.next().and_then(|c| c.to_digit(16)) {
                Some(d) => value = value * 16 + d,
                None => return Err(Fault::HexDigits { n, at }),
            }
        }
        char::from_u32(value).ok_or(Fault::LoneSurrogate { at })
    }
}

/// What is wrong with a pattern, and at which character (counted in code points from 0).
#[derive(Clone, Copy, Debug)]
enum Fault {
    UnmatchedParen {
        at: usize,
    },
    NothingToRepeat {
        at: usize,
    },
    /// A `{` that does not start `{n}`, `{n,}` or `{n,m}`.
    LoneBrace {
        at: usize,
    },
    UnexpectedEnd,
    RepeatedAnchor {
        at: usize,
    },
    QuantifierAfterQuantifier {
        at: usize,
    },
    CountsOutOfOrder {
        min: u32,
        max: u32,
        at: usize,
    },
    CountTooLarge {
        at: usize,
    },
    /// A construct outside the subset, named as the message names it.
    Unsupported {
        construct: &'static str,
        at: usize,
    },
    NestedTooDeep {
        at: usize,
    },
    UnclosedGroup {
        at: usize,
    },
    /// `[]` or `[^]`, which ECMA-262 and Python read differently.
    AmbiguousClass {
        at: usize,
    },
    UnclosedClass {
        at: usize,
    },
    RangeOutOfOrder {
        lo: char,
        hi: char,
        at: usize,
    },
    ClassEscapeInRange {
        at: usize,
    },
    LoneBackslash,
    UnknownEscape {
        escape: char,
        at: usize,
    },
    HexDigits {
        n: usize,
        at: usize,
    },
    LoneSurrogate {
        at: usize,
    },
    /// The program would exceed [`MAX_PROGRAM`] instructions.
    TooLong,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Fault::UnmatchedParen { at } => write!(f, "unmatched ')' at character {at}"),
            Fault::NothingToRepeat { at } => write!(f, "nothing to repeat at character {at}"),
            Fault::LoneBrace { at } => write!(
                f,
                "'{{' at character {at} does not start a quantifier {{n}}, {{n,}} or {{n,m}} \
                 (write \\{{ for a literal brace)"
            ),
            Fault::UnexpectedEnd => f.write_str("unexpected end"),
            Fault::RepeatedAnchor { at } => {
                write!(f, "an anchor cannot be repeated (character {at})")
            }
            Fault::QuantifierAfterQuantifier { at } => {
                write!(
                    f,
                    "a quantifier cannot follow a quantifier (character {at})"
                )
            }
            Fault::CountsOutOfOrder { min, max, at } => write!(
                f,
                "quantifier {{{min},{max}}} is out of order (character {at})"
            ),
            Fault::CountTooLarge { at } => {
                write!(f, "repetition count above {MAX_COUNT} at character {at}")
            }
            Fault::Unsupported { construct, at } => {
                write!(f, "{construct} is not supported (character {at})")
            }
            Fault::NestedTooDeep { at } => write!(
                f,
                "groups nested deeper than {MAX_NESTING} levels (character {at})"
            ),
            Fault::UnclosedGroup { at } => {
                write!(f, "group opened at character {at} is not closed")
            }
            Fault::AmbiguousClass { at } => write!(
                f,
                "a class that opens with ']' is ambiguous (character {at}); write \\]"
            ),
            Fault::UnclosedClass { at } => {
                write!(f, "character class opened at character {at} is not closed")
            }
            Fault::RangeOutOfOrder { lo, hi, at } => {
                write!(
                    f,
                    "range {lo}-{hi} is out of order (class at character {at})"
                )
            }
            Fault::ClassEscapeInRange { at } => write!(
                f,
                "a class escape cannot bound a range (class at character {at})"
            ),
            Fault::LoneBackslash => f.write_str("pattern ends with a lone backslash"),
            Fault::UnknownEscape { escape, at } => {
                write!(f, "unknown escape '\\{escape}' (character {at})")
            }
            Fault::HexDigits { n, at } => {
                write!(f, "escape at character {at} needs {n} hex digits")
            }
            Fault::LoneSurrogate { at } => {
                write!(f, "escape at character {at} is a lone surrogate")
            }
            Fault::TooLong => write!(f, "pattern expands to more than {MAX_PROGRAM} instructions"),
        }
    }
}

/// An escape read by [`Parser::escape`]: one character or a class escape.
#[derive(Clone, Copy)]
enum Esc {
    Char(char),
    Perl(Perl, bool),
}

/// Turns the tree into a program; counted repetitions are expanded, bounded by [`MAX_PROGRAM`].
struct Compiler {
    prog: Vec<Inst>,
    slots: usize,
}

impl Compiler {
    fn emit(&mut self, inst: Inst) -> Result<usize, Fault> {
        if self.prog.len() >= MAX_PROGRAM {
            return Err(Fault::TooLong);
        }
        self.prog.push(inst);
        Ok(self.prog.len() - 1)
    }

    /// A `Split` to be aimed once its targets are known.
    fn patch_split(&mut self, at: usize, exit: usize, greedy: bool) {
        self.prog[at] = if greedy {
            Inst::Split(at + 1, exit)
        } else {
            Inst::Split(exit, at + 1)
        };
    }

    fn node(&mut self, node: &Node) -> Result<(), Fault> {
        match node {
            Node::Empty => {}
            Node::Char(c) => _ = self.emit(Inst::Char(*c))?,
            Node::Any => _ = self.emit(Inst::Any)?,
            Node::Class(i) => _ = self.emit(Inst::Class(*i))?,
            Node::Start => _ = self.emit(Inst::Start)?,
            Node::End => _ = self.emit(Inst::End)?,
            Node::Concat(items) => {
                for item in items {
                    self.node(item)?;
                }
            }
            Node::Alt(alts) => {
                // Split(this, next alternative) … this … Jmp(end), for all but the last.
                let mut jumps = Vec::new();
                for (i, alt) in alts.iter().enumerate() {
                    if i + 1 == alts.len() {
                        self.node(alt)?;
                        break;
                    }
                    let split = self.emit(Inst::Split(0, 0))?;
                    self.node(alt)?;
                    jumps.push(self.emit(Inst::Jmp(0))?);
                    self.prog[split] = Inst::Split(split + 1, self.prog.len());
                }
                let end = self.prog.len();
                for jump in jumps {
                    self.prog[jump] = Inst::Jmp(end);
                }
            }
            Node::Repeat {
                node,
                min,
                max,
                greedy,
            } => {
                for _ in 0..*min {
                    self.node(node)?;
                }
                match max {
                    None => {
                        // loop: Split(body, exit); body: Save, node, Progress, Jmp loop; exit.
                        let slot = self.slots;
                        self.slots += 1;
                        let split = self.emit(Inst::Split(0, 0))?;
                        self.emit(Inst::Save(slot))?;
                        self.node(node)?;
                        self.emit(Inst::Progress(slot))?;
                        self.emit(Inst::Jmp(split))?;
                        self.patch_split(split, self.prog.len(), *greedy);
                    }
                    Some(max) => {
                        // Each optional copy may be skipped, which ends the repetition.
                        let mut splits = Vec::new();
                        for _ in *min..*max {
                            splits.push(self.emit(Inst::Split(0, 0))?);
                            self.node(node)?;
                        }
                        let exit = self.prog.len();
                        for split in splits {
                            self.patch_split(split, exit, *greedy);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(p: &str) -> Regex {
        Regex::new(p).unwrap_or_else(|e| panic!("{e}"))
    }

    fn refused(p: &str) -> String {
        Regex::new(p)
            .err()
            .unwrap_or_else(|| panic!("{p:?} was accepted"))
            .to_string()
    }

    const UUID7: &str = "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";

    #[test]
    fn a_uuid7_pattern_accepts_version_7_and_refuses_version_4() {
        let r = re(UUID7);
        assert!(r.is_match("01890a5d-ac96-774b-bcce-b302099a8057"));
        assert!(
            !r.is_match("9c5b94b1-35ad-49bb-b118-8e8fc24abf80"),
            "version 4"
        );
        assert!(
            !r.is_match("01890a5d-ac96-774b-7cce-b302099a8057"),
            "variant must be 8, 9, a or b"
        );
        assert!(
            !r.is_match("01890A5D-AC96-774B-BCCE-B302099A8057"),
            "upper case"
        );
        assert!(!r.is_match("x01890a5d-ac96-774b-bcce-b302099a8057"));
        assert!(!r.is_match("01890a5d-ac96-774b-bcce-b302099a8057x"));
    }

    #[test]
    fn a_sha256_pattern_accepts_exactly_64_lowercase_hex_digits() {
        let r = re("^[0-9a-f]{64}$");
        let hash = "ab".repeat(32);
        assert!(r.is_match(&hash));
        assert!(!r.is_match(&hash[1..]));
        assert!(!r.is_match(&format!("{hash}0")));
        assert!(!r.is_match(&hash.replace('a', "A")));
    }

    #[test]
    fn the_principal_iri_pattern_needs_a_scheme_and_no_whitespace() {
        let r = re(r"^[a-z][a-z0-9+.-]*:\S+$");
        assert!(r.is_match("https://orcid.org/0000-0002-1825-0097"));
        assert!(r.is_match("urn:x-dd:role+1.a-b"));
        assert!(
            !r.is_match("0000-0002-1825-0097"),
            "a bare ORCID has no scheme"
        );
        assert!(
            !r.is_match("https://example.org/a b"),
            "an IRI with a space"
        );
        assert!(!r.is_match("https:"));
        assert!(!r.is_match("Https://x"));
    }

    #[test]
    fn the_name_pattern_needs_one_non_whitespace_character_anywhere() {
        let r = re(r"\S");
        assert!(r.is_match("Josiah Carberry"));
        assert!(
            r.is_match("   x   "),
            "search semantics: a match anywhere is enough"
        );
        assert!(!r.is_match(""));
        assert!(!r.is_match(" \t\n\u{a0}\u{3000}"));
    }

    #[test]
    fn the_profile_ref_pattern_accepts_versioned_profiles_only() {
        let r = re("^profile:[a-z0-9][a-z0-9.-]*@v[0-9]+$");
        assert!(r.is_match("profile:default@v1"));
        assert!(r.is_match("profile:r3.univ-x@v12"));
        assert!(!r.is_match("profile:-x@v1"));
        assert!(!r.is_match("profile:default@v"));
        assert!(!r.is_match("profile:default@1"));
    }

    #[test]
    fn the_semver_pattern_uses_alternation_in_groups_to_refuse_leading_zeros() {
        let r = re(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$");
        for ok in ["0.7.0", "1.12.300", "10.0.1"] {
            assert!(r.is_match(ok), "{ok}");
        }
        for bad in ["0.6", "01.0.0", "0.07.0", "1.2.3.4", "1.2.x", "v1.2.3"] {
            assert!(!r.is_match(bad), "{bad}");
        }
    }

    #[test]
    fn the_class_name_pattern_wants_a_capital_then_letters_and_digits() {
        let r = re("^[A-Z][A-Za-z0-9]*$");
        assert!(r.is_match("Message"));
        assert!(r.is_match("R3Advice"));
        assert!(!r.is_match("message"));
        assert!(!r.is_match("Con_Turn"));
    }

    #[test]
    fn search_semantics_find_a_match_anywhere_unless_the_pattern_anchors_itself() {
        assert!(re("b+").is_match("aaabbbccc"));
        assert!(re("c$").is_match("abc"));
        assert!(!re("^b").is_match("abc"));
        assert!(re("").is_match(""));
        assert!(re("").is_match("anything"));
        assert!(re("^$").is_match(""));
        assert!(!re("^$").is_match("x"));
        // Top-level alternation binds loosest: `^a|b$` is `(^a)|(b$)`.
        let r = re("^a|b$");
        assert!(r.is_match("ax") && r.is_match("xb") && !r.is_match("xax"));
    }

    #[test]
    fn dollar_matches_only_at_the_very_end_not_before_a_final_newline() {
        // Python's `$` would also accept "abc\n"; ECMA-262's does not, and neither do we.
        assert!(!re("^abc$").is_match("abc\n"));
        assert!(re("^abc\n$").is_match("abc\n"));
    }

    #[test]
    fn dot_matches_any_code_point_but_newline() {
        let r = re("^.{3}$");
        assert!(r.is_match("é😀x"), "counts code points, not bytes");
        assert!(r.is_match("a\rb"));
        assert!(!r.is_match("a\nb"));
    }

    #[test]
    fn classes_support_ranges_negation_and_a_literal_dash_at_either_end() {
        let r = re("^[a-c-]+$");
        assert!(r.is_match("ab-c") && !r.is_match("abd"));
        assert!(re("^[-x]$").is_match("-"));
        assert!(
            re("^[a-z-0]+$").is_match("q-0"),
            "a dash after a range is literal"
        );
        let neg = re("^[^0-9a-f]$");
        assert!(neg.is_match("g") && neg.is_match("é") && !neg.is_match("7"));
        assert!(re(r"^[\-\]\\\[]+$").is_match(r"-]\["));
        assert!(re(r"^[.]$").is_match(".") && !re(r"^[.]$").is_match("x"));
    }

    #[test]
    fn class_escapes_work_inside_and_outside_classes() {
        assert!(!re(r"^\d\D\w\W\s\S$").is_match("1a_ !x"));
        assert!(re(r"^\d\D\w\W\s\S$").is_match("1ab! x"));
        assert!(re(r"^[\d\s]+$").is_match("1 2\t3"));
        assert!(!re(r"^[\d\s]+$").is_match("1 a"));
        assert!(
            re(r"^[^\S]+$").is_match(" \t"),
            "a negated class escape in a negated class"
        );
        assert!(!re(r"^[^\S]+$").is_match(" x"));
        assert!(re(r"^[\W]$").is_match("-") && !re(r"^[\W]$").is_match("é"));
    }

    #[test]
    fn backslash_s_is_pythons_isspace_including_the_information_separators() {
        let r = re(r"^\s$");
        for c in [
            '\t', '\n', '\u{b}', '\u{c}', '\r', '\u{1c}', '\u{1f}', ' ', '\u{85}', '\u{a0}',
            '\u{2028}', '\u{3000}',
        ] {
            assert!(r.is_match(&c.to_string()), "{c:?}");
        }
        for c in ['\u{feff}', '\u{200b}', 'x', '\0'] {
            assert!(!r.is_match(&c.to_string()), "{c:?}");
        }
    }

    #[test]
    fn backslash_d_matches_unicode_decimal_digits_but_not_other_numerals() {
        let r = re(r"^\d+$");
        assert!(r.is_match("0123456789"));
        assert!(r.is_match("٠٣٩"), "Arabic-Indic digits are Nd");
        assert!(r.is_match("１２"), "fullwidth digits are Nd");
        assert!(r.is_match("𝟎𝟿"), "mathematical digits are Nd");
        for not_nd in ["½", "²", "Ⅻ", "①", "a", "٪"] {
            assert!(!r.is_match(not_nd), "{not_nd}");
        }
    }

    #[test]
    fn backslash_w_is_underscore_letters_and_digits_in_any_script() {
        let r = re(r"^\w+$");
        assert!(r.is_match("snake_case_1"));
        assert!(r.is_match("Größe"));
        assert!(!r.is_match("a-b") && !r.is_match("a b"));
    }

    #[test]
    fn escaped_metacharacters_stand_for_themselves() {
        let r = re(r"^\.\-\\\/\[\]\(\)\{\}\|\+\*\?\^\$$");
        assert!(r.is_match(r".-\/[](){}|+*?^$"));
        assert!(!re(r"^a\.b$").is_match("axb"));
        assert!(
            re(r"^a\:b\@c$").is_match("a:b@c"),
            "any escaped ASCII punctuation is literal"
        );
    }

    #[test]
    fn control_hex_and_unicode_escapes_name_single_characters() {
        assert!(re(r"^\t\n\r\f\v\0$").is_match("\t\n\r\u{c}\u{b}\0"));
        assert!(re(r"^\x41\u00e9$").is_match("Aé"));
        assert!(re(r"^[\x30-\x39]+$").is_match("42"));
        assert!(
            re(r"^[\b]$").is_match("\u{8}"),
            "\\b in a class is backspace"
        );
    }

    #[test]
    fn alternation_works_inside_groups_and_non_capturing_groups() {
        let r = re("^(?:cat|dog)s?( (and|or) (?:cat|dog)s?)*$");
        assert!(r.is_match("cats and dog or dogs"));
        assert!(!r.is_match("cats and"));
        assert!(!r.is_match("cow"));
        assert!(re("^(a|)b$").is_match("b"), "an empty alternative");
        assert!(re("^(|a)b$").is_match("ab"));
    }

    #[test]
    fn quantifiers_cover_star_plus_question_and_counted_forms() {
        assert!(re("^ab*c$").is_match("ac") && re("^ab*c$").is_match("abbbc"));
        assert!(!re("^ab+c$").is_match("ac") && re("^ab+c$").is_match("abc"));
        assert!(re("^ab?c$").is_match("ac") && !re("^ab?c$").is_match("abbc"));
        let exact = re("^a{3}$");
        assert!(exact.is_match("aaa") && !exact.is_match("aa") && !exact.is_match("aaaa"));
        let at_least = re("^a{2,}$");
        assert!(!at_least.is_match("a") && at_least.is_match("aaaaaa"));
        let between = re("^a{2,3}$");
        assert!(!between.is_match("a") && between.is_match("aa") && between.is_match("aaa"));
        assert!(!between.is_match("aaaa"));
        assert!(re("^(ab){2}$").is_match("abab"));
        assert!(re("^x{0}$").is_match(""));
        assert!(
            re("(^)*a").is_match("ba"),
            "a group holding an anchor may be repeated"
        );
    }

    #[test]
    fn lazy_quantifiers_accept_the_same_strings_as_greedy_ones() {
        for (lazy, greedy) in [
            ("^a*?b$", "^a*b$"),
            ("^a+?b$", "^a+b$"),
            ("^a??b$", "^a?b$"),
            ("^a{1,3}?b$", "^a{1,3}b$"),
            ("^a{2,}?$", "^a{2,}$"),
        ] {
            let (l, g) = (re(lazy), re(greedy));
            for text in ["b", "ab", "aab", "aaab", "aaaab", "a", "aa", ""] {
                assert_eq!(
                    l.is_match(text),
                    g.is_match(text),
                    "{lazy} vs {greedy} on {text:?}"
                );
            }
        }
    }

    #[test]
    fn nested_quantifiers_terminate_even_when_an_iteration_matches_nothing() {
        assert!(re("^(a*)*b$").is_match("aaab"));
        assert!(!re("^(a*)*b$").is_match("aaac"));
        assert!(re("^(a|)+$").is_match("aaa"));
        assert!(re("^(a?){3,}$").is_match("a"));
        assert!(re("^((ab)*c)+$").is_match("abcababcc"));
        assert!(re("^(x*)*$").is_match(""));
    }

    #[test]
    fn unsupported_constructs_are_refused_by_name() {
        for (pattern, named) in [
            ("(a)\\1", "backreference"),
            ("\\k<n>", "named backreference"),
            ("(?=a)", "lookahead"),
            ("(?!a)", "negative lookahead"),
            ("(?<=a)b", "lookbehind"),
            ("(?<!a)b", "negative lookbehind"),
            ("(?<n>a)", "named group"),
            ("(?P<n>a)", "Python named group"),
            ("(?i)abc", "inline flags"),
            ("\\p{L}", "Unicode property class"),
            ("\\P{L}", "Unicode property class"),
            ("\\bword", "word boundary"),
            ("\\cJ", "control escape"),
            ("\\u{1F600}", "code point escape"),
            ("\\Aabc", "unknown escape"),
        ] {
            let err = refused(pattern);
            assert!(err.contains(named), "{pattern}: {err}");
            assert!(
                err.contains(&str_repr(pattern)),
                "the error quotes the pattern: {err}"
            );
        }
    }

    #[test]
    fn malformed_patterns_are_refused_with_a_reason() {
        for (pattern, reason) in [
            ("(ab", "not closed"),
            ("ab)", "unmatched ')'"),
            ("*a", "nothing to repeat"),
            ("a**", "quantifier cannot follow"),
            ("a{2}{3}", "quantifier cannot follow"),
            ("^*", "anchor cannot be repeated"),
            ("{2}", "nothing to repeat"),
            ("a{,3}", "does not start a quantifier"),
            ("a{", "does not start a quantifier"),
            ("a{3,2}", "out of order"),
            ("[z-a]", "out of order"),
            ("[\\d-z]", "class escape cannot bound a range"),
            ("[abc", "not closed"),
            ("[]", "opens with ']'"),
            ("[^]", "opens with ']'"),
            ("abc\\", "lone backslash"),
            ("\\x4", "hex digits"),
            ("\\ud800", "surrogate"),
            ("a{1001}", "above 1000"),
        ] {
            let err = refused(pattern);
            assert!(err.contains(reason), "{pattern}: {err}");
        }
    }

    #[test]
    fn a_pattern_too_large_once_expanded_is_refused() {
        assert!(refused("(a{1000}){1000}").contains("more than 10000 instructions"));
    }

    #[test]
    fn deep_group_nesting_is_refused_rather_than_overflowing_the_stack() {
        let deep = format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(refused(&deep).contains("nested deeper than 64"));
        let ok = format!("{}a{}", "(".repeat(64), ")".repeat(64));
        assert!(re(&ok).is_match("a"));
    }

    #[test]
    fn a_catastrophic_pattern_exhausts_the_step_budget_observably() {
        let r = re("^(a+)+$");
        let text = format!("{}b", "a".repeat(40));
        let err = r.try_match(&text).unwrap_err();
        assert!(err.to_string().contains("step budget"), "{err}");
        assert_eq!(
            err,
            PatternError::StepBudget {
                pattern: "^(a+)+$".into()
            }
        );
        assert!(
            !r.is_match(&text),
            "exhausting the budget counts as no match"
        );
        assert_eq!(
            r.try_match("aaaa"),
            Ok(true),
            "the same pattern is fine on easy input"
        );
    }

    #[test]
    fn an_ascii_character_is_in_a_class_exactly_when_the_class_reads_it_so() {
        let classes = [
            r"[0-9a-f]",
            r"[^0-9a-f]",
            r"\d",
            r"\D",
            r"\w",
            r"\W",
            r"\s",
            r"\S",
            r"[\s\d_]",
            r"[^\W\d]",
            r"[ -~]",
            r"[\x00-\x1f\x7f]",
            r"[-.]",
            r"[\]\\^]",
        ];
        for class in classes {
            let re = Regex::new(&format!("^{class}$")).unwrap();
            assert_eq!(re.classes.len(), 1, "{class}");
            for c in (0u8..128)
                .map(char::from)
                .chain(['é', '٣', '\u{2028}', '😀'])
            {
                assert_eq!(
                    re.try_match(&c.to_string()),
                    Ok(re.classes[0].matches(c)),
                    "{class} on {c:?}"
                );
            }
        }
    }

    #[test]
    fn match_within_charges_the_callers_budget() {
        let r = re("b");
        let mut steps = 1_000;
        assert_eq!(r.match_within("aaab", &mut steps), Ok(true));
        assert!(steps < 1_000 && steps > 900, "{steps}");
        let mut steps = 2;
        assert!(r.match_within("aaab", &mut steps).is_err());
        assert_eq!(steps, 0);
    }

    #[test]
    fn an_anchored_pattern_on_a_long_string_fails_fast_within_budget() {
        let long = "f".repeat(2_000_000);
        assert_eq!(re("^[0-9a-f]{64}$").try_match(&long), Ok(false));
        assert_eq!(re(r"\S").try_match(&long), Ok(true));
    }
}
